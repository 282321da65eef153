"""Checkpoints: each finished batch of each evaluator is saved, so a killed run resumes where it stopped.

A batch is keyed by the evaluator's name, type and settings, the run's judge, and the ids of the batch's
rows: a resumed run with the same config reuses every finished batch and evaluates only the rest (model
calls that finished inside an unfinished batch come back from the call cache, not the provider).
Each batch is written to a temporary folder and renamed into place, so a kill never leaves half a batch.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from vision_eval.evaluator import Evaluator

ASYNC_BATCH_ROWS = 64
"""Rows per checkpointed batch for model-graded evaluators (their calls are what a resume must not repeat)."""


@dataclass
class Part:
    """The finished output of one batch of one evaluator."""

    results: pl.DataFrame
    dimensions: pl.DataFrame
    fields: pl.DataFrame
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)

    @staticmethod
    def concat(parts: list[Part]) -> Part:
        """All parts of one evaluator, in order."""
        names = {name for part in parts for name in part.tables}
        return Part(
            results=pl.concat([p.results for p in parts], how="vertical_relaxed"),
            dimensions=pl.concat([p.dimensions for p in parts], how="vertical_relaxed"),
            fields=pl.concat([p.fields for p in parts], how="vertical_relaxed"),
            tables={n: pl.concat([p.tables[n] for p in parts if n in p.tables], how="diagonal_relaxed") for n in names},
        )


def _fingerprint(evaluator: Evaluator) -> dict[str, Any]:
    judge = evaluator.context.judge
    return {
        "name": evaluator.name,
        "type": evaluator.type_name,
        "settings": evaluator.settings.model_dump(mode="json"),
        "judge": judge.model_dump(mode="json", exclude={"api_key"}) if judge is not None else None,
    }


class Checkpoints:
    """Batch checkpoints under ``<run dir>/checkpoint`` (disabled when the directory is ``None``)."""

    def __init__(self, directory: str | Path | None, async_batch_rows: int = ASYNC_BATCH_ROWS) -> None:
        self.directory = Path(directory) if directory is not None else None
        self.async_batch_rows = async_batch_rows
        self._fingerprints: dict[int, str] = {}

    @property
    def enabled(self) -> bool:
        """True when batches are saved."""
        return self.directory is not None

    def _key(self, evaluator: Evaluator, batch: pl.DataFrame) -> str:
        fingerprint = self._fingerprints.get(id(evaluator))
        if fingerprint is None:
            fingerprint = json.dumps(_fingerprint(evaluator), sort_keys=True, default=str)
            self._fingerprints[id(evaluator)] = fingerprint
        digest = hashlib.sha256(fingerprint.encode())
        digest.update("\x1f".join(batch["id"].to_list()).encode())
        return digest.hexdigest()[:32]

    def _folder(self, evaluator: Evaluator, batch: pl.DataFrame) -> Path:
        assert self.directory is not None
        return self.directory / evaluator.name / self._key(evaluator, batch)

    def load(self, evaluator: Evaluator, batch: pl.DataFrame) -> Part | None:
        """The saved part for this batch, or ``None``."""
        if self.directory is None:
            return None
        folder = self._folder(evaluator, batch)
        if not (folder / "results.parquet").is_file():
            return None
        tables = {p.stem.removeprefix("table-"): pl.read_parquet(p) for p in folder.glob("table-*.parquet")}
        return Part(
            results=pl.read_parquet(folder / "results.parquet"),
            dimensions=pl.read_parquet(folder / "dimensions.parquet"),
            fields=pl.read_parquet(folder / "fields.parquet"),
            tables=tables,
        )

    def save(self, evaluator: Evaluator, batch: pl.DataFrame, part: Part) -> Part:
        """Save ``part`` atomically and return it."""
        if self.directory is None:
            return part
        folder = self._folder(evaluator, batch)
        folder.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".tmp-", dir=folder.parent))
        part.results.write_parquet(staging / "results.parquet")
        part.dimensions.write_parquet(staging / "dimensions.parquet")
        part.fields.write_parquet(staging / "fields.parquet")
        for name, table in part.tables.items():
            table.write_parquet(staging / f"table-{name}.parquet")
        try:
            os.rename(staging, folder)
        except OSError:  # another process finished the same batch first: keep theirs
            shutil.rmtree(staging, ignore_errors=True)
        return part
