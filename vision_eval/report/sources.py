"""Where a report's data comes from: an ``EvalResult``, or run directories on disk.

The frames are lazy (scans of the run's files, or frames in memory): the report reads every row only through
streaming aggregates and reads whole rows only for the samples it shows, so a run larger than memory gets a report.
Several run directories (a multirun, shard folders) are concatenated. Runs whose configs differ
only in where and which shard they ran are one *group* (shards of one run); each group gets a
label (its Hydra overrides when known) stored in a ``run`` column of every frame.
"""

from __future__ import annotations

import glob
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from vision_eval.config import parse_shard
from vision_eval.results import DIMENSION_SCHEMA, FIELD_SCHEMA, RESULT_SCHEMA

RUN_COLUMN = "run"
POSITION = "_position"
"""A sample's position in the rows its run selected, shards put back together (so merged shards show in order)."""
RESULTS_FILE = "results.parquet"
CHECKPOINT = "checkpoint"
LEADERBOARD = "leaderboard"
# Run settings that do not change what a run measures: shards of one run differ only in these.
_PLACEMENT_KEYS = (
    "output_dir",
    "shard",
    "resume",
    "progress",
    "write_report",
    "checkpoint",
    "concurrency",
    "batch_size",
)
_PLACEMENT_OVERRIDES = (
    "run.shard",
    "dataset.shard",
    "run.output_dir",
    "run.resume",
    "run.progress",
    "run.write_report",
    "run.checkpoint",
    "hydra.",
)
# What names a dataset's rows: runs reading the same source compare their samples by id.
_DATASET_IDENTITY = ("source", "path", "name", "split", "revision", "data_files", "image_root")


@dataclass
class RunSource:
    """One run directory (or an in-memory result) that feeds the report."""

    label: str
    """The group label (shards of one run share it)."""
    directory: str | None
    """Where the run was read from (``None`` in memory)."""
    info: dict[str, Any]
    """Its run.json."""


@dataclass
class ReportInput:
    """Everything the report shows, each frame with a ``run`` column (lazy: read when the report needs it)."""

    results: pl.LazyFrame
    dimensions: pl.LazyFrame
    fields: pl.LazyFrame
    samples: pl.LazyFrame
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)
    runs: list[RunSource] = field(default_factory=list)

    @property
    def labels(self) -> list[str]:
        """Distinct group labels in order of appearance."""
        return list(dict.fromkeys(run.label for run in self.runs))

    @property
    def datasets(self) -> dict[str, int]:
        """The dataset of each group label, numbered: groups reading the same rows share a number, and only their
        samples with the same id are compared (a sweep over datasets does not pair unrelated rows)."""
        identities: dict[str, int] = {}
        out: dict[str, int] = {}
        for run in self.runs:
            if run.label not in out:
                out[run.label] = identities.setdefault(dataset_identity(run.info), len(identities))
        return out or {"": 0}


def columns_of(frame: pl.DataFrame | pl.LazyFrame) -> list[str]:
    """The column names of a frame, lazy or not (a lazy one's schema is resolved, nothing read)."""
    return frame.collect_schema().names() if isinstance(frame, pl.LazyFrame) else frame.columns


def conform_lazy(frame: pl.LazyFrame, schema: dict[str, pl.DataType]) -> pl.LazyFrame:
    """``frame`` with exactly ``schema``'s columns, cast, missing ones null (as ``results.conform``, lazily)."""
    present = set(columns_of(frame))
    return frame.select(
        pl.col(name).cast(dtype, strict=False) if name in present else pl.lit(None, dtype).alias(name)
        for name, dtype in schema.items()
    )


def _with_run(frame: pl.LazyFrame, label: str) -> pl.LazyFrame:
    if not columns_of(frame):  # a missing file: nothing to label (a literal would make one row)
        return frame
    return frame.with_columns(pl.lit(label, dtype=pl.Utf8).alias(RUN_COLUMN))


def _lazy(result: Any, name: str) -> pl.LazyFrame:
    """An ``EvalResult`` frame as a lazy frame (a scan of its file once written; never read whole here)."""
    if hasattr(result, "lazy"):
        lazy: pl.LazyFrame = result.lazy(name)
        return lazy
    frame: pl.DataFrame = getattr(result, name)
    return frame.lazy()


def from_result(result: Any, label: str = "", directory: str | None = None) -> ReportInput:
    """A report input from an ``EvalResult`` (or anything with the same attributes)."""
    info = dict(getattr(result, "run_info", {}) or {})
    return ReportInput(
        results=_with_run(conform_lazy(_lazy(result, "results"), RESULT_SCHEMA), label),
        dimensions=_with_run(conform_lazy(_lazy(result, "dimensions"), DIMENSION_SCHEMA), label),
        fields=_with_run(conform_lazy(_lazy(result, "fields"), FIELD_SCHEMA), label),
        samples=_with_run(_lazy(result, "samples"), label),
        tables={name: _with_run(table.lazy(), label).collect() for name, table in (result.tables or {}).items()},
        runs=[RunSource(label, directory, info)],
    )


def dataset_identity(info: dict[str, Any]) -> str:
    """What names the rows a run read: its dataset source (not the shard, limit or sample it took)."""
    dataset = (info.get("config") or {}).get("dataset") or {}
    identity = {key: dataset.get(key) for key in _DATASET_IDENTITY}
    identity["id"] = (dataset.get("columns") or {}).get("id")
    return json.dumps(identity, sort_keys=True, default=str)


def find_run_dirs(paths: Iterable[str | Path]) -> list[Path]:
    """Run directories named by ``paths``: run dirs, folders holding runs (searched recursively), globs.

    A glob may name directories or Parquet files (a file stands for its directory).
    """
    found: list[Path] = []
    for raw in paths:
        text = str(raw)
        matches = [Path(m) for m in sorted(glob.glob(text, recursive=True))] if glob.has_magic(text) else [Path(text)]
        for match in matches:
            if match.is_file() and match.suffix == ".parquet":
                match = match.parent
            if not match.is_dir():
                continue
            if (match / RESULTS_FILE).is_file():
                found.append(match)
            else:  # batch checkpoints of a run hold results files too: not runs of their own
                found.extend(
                    sorted(p.parent for p in match.rglob(RESULTS_FILE) if CHECKPOINT not in p.relative_to(match).parts)
                )
    return list(dict.fromkeys(p.resolve() for p in found))


def read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _overrides(directory: Path, info: dict[str, Any]) -> list[str]:
    """The overrides of a run (run.json, else Hydra's ``.hydra/overrides.yaml``), placement ones left out."""
    values: Any = info.get("overrides")
    path = directory / ".hydra" / "overrides.yaml"
    if not values and path.is_file():
        try:
            import yaml

            values = yaml.safe_load(path.read_text(encoding="utf-8")) or []
        except Exception:
            values = []
    kept = []
    for value in values if isinstance(values, list) else []:
        key = str(value).lstrip("+~").split("=", 1)[0]
        if not any(key == p or key.startswith(p) for p in _PLACEMENT_OVERRIDES):
            kept.append(str(value).lstrip("+~"))
    return kept


def _group_key(info: dict[str, Any]) -> str:
    config = json.loads(json.dumps(info.get("config") or {}, default=str))
    run = config.get("run") or {}
    for key in _PLACEMENT_KEYS:
        run.pop(key, None)
    (config.get("dataset") or {}).pop("shard", None)
    return json.dumps(config, sort_keys=True)


def run_labels(dirs: list[Path], infos: list[dict[str, Any]]) -> list[str]:
    """One label per group of runs: the overrides that tell it from the others, else its folder."""
    keys = [_group_key(info) for info in infos]
    if len(set(keys)) <= 1:
        return [""] * len(dirs)
    root = Path(os.path.commonpath([str(d) for d in dirs]))
    overrides = [_overrides(d, info) for d, info in zip(dirs, infos)]
    common = set.intersection(*(set(o) for o in overrides))
    by_key: dict[str, str] = {}
    for directory, key, own in zip(dirs, keys, overrides):
        if key not in by_key:
            name = " ".join(o for o in own if o not in common) or str(directory.relative_to(root)) or directory.name
            taken = set(by_key.values())
            label, n = name, 2
            while label in taken:
                label, n = f"{name} ({n})", n + 1
            by_key[key] = label
    return [by_key[key] for key in keys]


def _shard_position(frame: pl.LazyFrame, info: dict[str, Any]) -> pl.LazyFrame:
    """``frame`` (a shard's samples) with where its rows were in the selection they were taken from: ``dataset.shard``
    then ``run.shard`` each keep the rows at positions ``i, i + n, i + 2n...`` (see ``data.canonical.Selection``)."""
    config = info.get("config") or {}
    position = pl.col(POSITION).cast(pl.Int64)
    for text in ((config.get("run") or {}).get("shard"), (config.get("dataset") or {}).get("shard")):
        if text:
            try:
                index, count = parse_shard(str(text))
            except ValueError:
                continue
            position = position * count + index
    return frame.with_row_index(POSITION).with_columns(position.alias(POSITION))


def _read_frame(path: Path, schema: dict[str, pl.DataType] | None) -> pl.LazyFrame:
    if path.is_file():
        frame = pl.scan_parquet(path)
        return conform_lazy(frame, schema) if schema else frame
    return pl.LazyFrame(schema=schema) if schema else pl.LazyFrame()


def _concat(frames: list[pl.LazyFrame]) -> pl.LazyFrame:
    frames = [f for f in frames if columns_of(f)]
    if not frames:
        return pl.LazyFrame(schema={RUN_COLUMN: pl.Utf8})
    return frames[0] if len(frames) == 1 else pl.concat(frames, how="diagonal_relaxed")


def load_runs(dirs: Iterable[str | Path], leaderboard: str | Path | pl.DataFrame | None = None) -> ReportInput:
    """Read and concatenate run directories (each with results.parquet, run.json...).

    ``leaderboard``: a leaderboard frame or Parquet file to show (a ``leaderboard.parquet`` inside a
    run directory is picked up as one of its tables).
    """
    paths = [Path(d).resolve() for d in dirs]
    if not paths:
        raise FileNotFoundError("no run directories given")
    missing = [str(p) for p in paths if not (p / RESULTS_FILE).is_file()]
    if missing:
        raise FileNotFoundError(f"not a run directory (no {RESULTS_FILE}): {', '.join(missing)}")
    infos = [read_json(p / "run.json") for p in paths]
    labels = run_labels(paths, infos)
    parts: dict[str, list[pl.LazyFrame]] = {"results": [], "dimensions": [], "fields": [], "samples": []}
    tables: dict[str, list[pl.LazyFrame]] = {}
    schemas = {"results": RESULT_SCHEMA, "dimensions": DIMENSION_SCHEMA, "fields": FIELD_SCHEMA, "samples": None}
    for path, label, info in zip(paths, labels, infos):
        for name, schema in schemas.items():
            frame = _read_frame(path / f"{name}.parquet", schema)
            if name == "samples" and columns_of(frame):
                frame = _shard_position(frame, info)
            parts[name].append(_with_run(frame, label))
        for extra in sorted(path.glob("*.parquet")):
            if extra.stem not in schemas:
                tables.setdefault(extra.stem, []).append(_with_run(pl.scan_parquet(extra), label))
    merged = {name: _concat(frames).collect() for name, frames in tables.items()}
    if isinstance(leaderboard, pl.DataFrame):
        merged[LEADERBOARD] = leaderboard
    elif leaderboard is not None and Path(leaderboard).is_file():
        merged[LEADERBOARD] = pl.read_parquet(leaderboard)
    return ReportInput(
        results=conform_lazy(_concat(parts["results"]), {**RESULT_SCHEMA, RUN_COLUMN: pl.Utf8()}),
        dimensions=conform_lazy(_concat(parts["dimensions"]), {**DIMENSION_SCHEMA, RUN_COLUMN: pl.Utf8()}),
        fields=conform_lazy(_concat(parts["fields"]), {**FIELD_SCHEMA, RUN_COLUMN: pl.Utf8()}),
        samples=_concat(parts["samples"]),
        tables=merged,
        runs=[RunSource(label, str(path), info) for path, label, info in zip(paths, labels, infos)],
    )
