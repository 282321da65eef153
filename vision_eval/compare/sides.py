"""The two sides of a comparison: each a run directory, or a folder holding the shards of one run (a sweep folder of
``run.shard`` jobs), read lazily from their Parquet files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from vision_eval.runs import find_run_dirs, read_json, run_labels

RESULT_COLUMNS = ("sample_id", "evaluator", "type", "status", "score", "passed")


class NotARun(ValueError):
    """A side that cannot be compared: not a run, or more than one run's samples (exit code 2)."""


@dataclass
class Side:
    """One side of a comparison: the run directories of one run (several when sharded)."""

    path: Path
    """What was named on the command line."""
    dirs: list[Path]
    infos: list[dict[str, Any]]
    """Each directory's run.json."""

    @property
    def results(self) -> pl.LazyFrame:
        """The results of every directory (:data:`RESULT_COLUMNS`), as one lazy scan."""
        frames = [pl.scan_parquet(d / "results.parquet").select(RESULT_COLUMNS) for d in self.dirs]
        return pl.concat(frames, how="vertical_relaxed")

    @property
    def samples(self) -> pl.LazyFrame:
        """The samples of every directory, as one lazy scan (an empty frame when none recorded them)."""
        frames = [pl.scan_parquet(d / "samples.parquet") for d in self.dirs if (d / "samples.parquet").is_file()]
        return pl.concat(frames, how="diagonal_relaxed") if frames else pl.LazyFrame(schema={"id": pl.Utf8})

    def evaluator_info(self, name: str) -> dict[str, Any]:
        """What the first run.json says about evaluator ``name`` (type, threshold, protocol...)."""
        for info in self.infos:
            described = (info.get("evaluators") or {}).get(name)
            if isinstance(described, dict):
                return described
        return {}


def load_side(path: str | Path) -> Side:
    """The run directories named by ``path``; :class:`NotARun` when there is none, or when they are several
    different runs (a sweep's variants: name one of them)."""
    given = Path(path)
    dirs = find_run_dirs([given])
    if not dirs:
        raise NotARun(f"{given}: not a run directory (no results.parquet in it or under it)")
    infos = [read_json(d / "run.json") for d in dirs]
    labels = list(dict.fromkeys(run_labels(dirs, infos)))
    if len(labels) > 1:
        shown = "; ".join(labels[:5]) + ("; ..." if len(labels) > 5 else "")
        raise NotARun(
            f"{given} holds {len(labels)} different runs ({shown}): a side is one run, or the shards of one run; "
            "name one run's folder"
        )
    return Side(given, dirs, infos)
