"""Checkpoints: each finished batch of each evaluator is saved, so a killed run resumes where it stopped.

A batch is keyed by the evaluator's name, type and result-shaping settings, the run's judge, and the ids of
the batch's rows: a resumed run reuses every finished batch and evaluates only the rest (model calls that
finished inside an unfinished batch come back from the run's call journal, ``calls.sqlite``, never from the
provider). Each batch is written to a temporary folder and renamed into place, so a kill never leaves half a
batch; its files end in ``.part`` so no glob for a run's outputs (``**/results.parquet``) counts them.
``manifest.json`` records the run id and the config a resume must match. A run that completes removes the
whole folder.
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

from vision_eval.config import redact
from vision_eval.evaluator import Evaluator

MANIFEST = "manifest.json"
JOURNAL = "calls.sqlite"
NEUTRAL_SETTINGS = frozenset({"description", "min_pass_rate", "min_mean_score", "max_error_rate"})
"""Evaluator settings that do not change a result row (gates, text): changing them reuses finished work."""
NEUTRAL_JUDGE = frozenset(
    {"api_key", "api_key_env", "timeout_s", "max_retries", "max_retry_after_s", "circuit_breaker",
     "max_concurrency", "rpm", "tpm", "cache", "cache_dir", "batch_size", "batch_poll_s", "batch_max_wait_h"}
)  # fmt: skip
"""Judge settings that change how calls are made, not what they return."""


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


def judge_fingerprint(judge: Any) -> dict[str, Any] | None:
    """What of a judge (or candidate) config shapes its replies."""
    return judge.model_dump(mode="json", exclude=set(NEUTRAL_JUDGE)) if judge is not None else None


def _fingerprint(evaluator: Evaluator) -> dict[str, Any]:
    return {
        "name": evaluator.name,
        "type": evaluator.type_name,
        "settings": evaluator.settings.model_dump(mode="json", exclude=set(NEUTRAL_SETTINGS)),
        "judge": judge_fingerprint(evaluator.context.judge),
    }


def config_fingerprint(config: Any) -> dict[str, Any]:
    """The parts of a run's config a resume must match: dataset, evaluators, judge and candidate."""
    evaluators = {
        name: {k: v for k, v in redact(spec).items() if k not in NEUTRAL_SETTINGS}
        for name, spec in config.evaluators.items()
    }
    return json.loads(
        json.dumps(
            {
                "dataset": config.dataset.model_dump(mode="json"),
                "evaluators": evaluators,
                "judge": judge_fingerprint(config.judge),
                "candidate": judge_fingerprint(config.candidate),
            },
            sort_keys=True,
            default=str,
        )
    )


class Checkpoints:
    """Batch checkpoints under ``<run dir>/checkpoint`` (disabled when the directory is ``None``)."""

    def __init__(self, directory: str | Path | None) -> None:
        self.directory = Path(directory) if directory is not None else None
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
        if not (folder / "results.part").is_file():
            return None
        tables = {p.name[len("table-") : -len(".part")]: pl.read_parquet(p) for p in folder.glob("table-*.part")}
        return Part(
            results=pl.read_parquet(folder / "results.part"),
            dimensions=pl.read_parquet(folder / "dimensions.part"),
            fields=pl.read_parquet(folder / "fields.part"),
            tables=tables,
        )

    def save(self, evaluator: Evaluator, batch: pl.DataFrame, part: Part) -> Part:
        """Save ``part`` atomically and return it."""
        if self.directory is None:
            return part
        folder = self._folder(evaluator, batch)
        folder.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".tmp-", dir=folder.parent))
        part.results.write_parquet(staging / "results.part")
        part.dimensions.write_parquet(staging / "dimensions.part")
        part.fields.write_parquet(staging / "fields.part")
        for name, table in part.tables.items():
            table.write_parquet(staging / f"table-{name}.part")
        try:
            os.rename(staging, folder)
        except OSError:  # another process finished the same batch first: keep theirs
            shutil.rmtree(staging, ignore_errors=True)
        return part

    # --- the run as a whole ----------------------------------------------------------------------------
    def start(self, run_id: str, fingerprint: dict[str, Any]) -> None:
        """Record the run id and the config a resume must match (kept when already there)."""
        if self.directory is None or (self.directory / MANIFEST).is_file():
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        staging = self.directory / f".{MANIFEST}.{os.getpid()}"
        staging.write_text(json.dumps({"run_id": run_id, "config": fingerprint}, indent=1), encoding="utf-8")
        os.replace(staging, self.directory / MANIFEST)

    def manifest(self) -> dict[str, Any] | None:
        """The recorded run id and config, or ``None`` when there is no checkpoint."""
        if self.directory is None or not (self.directory / MANIFEST).is_file():
            return None
        return json.loads((self.directory / MANIFEST).read_text(encoding="utf-8"))

    @property
    def journal_dir(self) -> Path | None:
        """Where the run's call journal lives (``calls.sqlite``)."""
        return self.directory

    def remove(self) -> None:
        """Delete every checkpoint of the run (it completed: nothing is left to resume)."""
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
