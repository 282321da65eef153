"""Run folders on disk, read without Polars: finding them (:func:`find_run_dirs`), reading their JSON files
(:func:`read_json`) and labelling groups of runs (:func:`run_labels`; shards of one run share a label). Both the
report and the leaderboard read runs this way."""

from __future__ import annotations

import glob
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

RESULTS_FILE = "results.parquet"
CHECKPOINT = "checkpoint"

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


def group_key(info: dict[str, Any]) -> str:
    config = json.loads(json.dumps(info.get("config") or {}, default=str))
    run = config.get("run") or {}
    for key in _PLACEMENT_KEYS:
        run.pop(key, None)
    (config.get("dataset") or {}).pop("shard", None)
    return json.dumps(config, sort_keys=True)


def run_labels(dirs: list[Path], infos: list[dict[str, Any]]) -> list[str]:
    """One label per group of runs: the overrides that tell it from the others, else its folder."""
    keys = [group_key(info) for info in infos]
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
