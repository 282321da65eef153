"""Where a report's data comes from: an ``EvalResult``, or run directories on disk.

The frames are lazy (scans of the run's files, or frames in memory): the report reads every row only through
streaming aggregates and reads whole rows only for the samples it shows, so a run larger than memory gets a report.
Several run directories (a multirun, shard folders) are concatenated. Runs whose configs differ
only in where and which shard they ran are one *group* (shards of one run); each group gets a
label (its Hydra overrides when known) stored in a ``run`` column of every frame.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from vision_eval.results import DIMENSION_SCHEMA, FIELD_SCHEMA, RESULT_SCHEMA
from vision_eval.runs import RESULTS_FILE, read_json, run_labels

RUN_COLUMN = "run"
POSITION = "_position"
"""A sample's position in the rows its run selected, shards put back together (so merged shards show in order)."""
LEADERBOARD = "leaderboard"


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


def _shard_position(frame: pl.LazyFrame, info: dict[str, Any]) -> pl.LazyFrame:
    """``frame`` (a run's samples) with where its rows were among the rows selected before any shard: a shard's
    rows are consecutive from run.json's ``dataset.first`` (see ``data.canonical.Selection``)."""
    first = (info.get("dataset") or {}).get("first")
    offset = first if isinstance(first, int) and not isinstance(first, bool) else 0
    return frame.with_row_index(POSITION).with_columns(pl.col(POSITION).cast(pl.Int64) + offset)


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
