"""Checkpoints: each finished batch of each evaluator is saved, so a killed run resumes where it stopped.

The saved parts are also the run's storage: a run holds no result in memory, and its output files are the parts
streamed into one file each at the end (:mod:`vision_eval.parts`). With ``run.checkpoint: false`` the same parts go
to a temporary folder that nothing resumes from (:meth:`Checkpoints.temporary`).

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
from vision_eval.results import DIMENSION_SCHEMA, FIELD_SCHEMA, RESULT_SCHEMA, conform
from vision_eval.storage import write_atomically, writing

MANIFEST = "manifest.json"
JOURNAL = "calls.sqlite"
SAMPLES = ".samples"
"""Folder (beside the evaluators' folders) of each batch's evaluated rows, as samples.parquet holds them."""
OPEN = ".open-"
"""Prefix of a part kept for the outputs but not for a resume (its batch had calls the budget refused)."""
TABLE = "table-"
"""File name prefix of a part's extra tables."""
INPUT = "input-"
"""File name prefix of a part's metric inputs."""
PART_LIST = "part.json"
"""The file of a part listing its files and their sizes (checked before a resume relies on them)."""
KINDS = {"results": RESULT_SCHEMA, "dimensions": DIMENSION_SCHEMA, "fields": FIELD_SCHEMA}
"""The files of a part and the schema each is saved in (``run_id`` left null: the run fills it when it writes)."""
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
    """Extra tables written as output files (``EvalOutput.tables``)."""
    inputs: dict[str, pl.DataFrame] = field(default_factory=dict)
    """The tables its dataset-level metrics need (``EvalOutput.metric_inputs``), never written as outputs."""

    def conformed(self) -> Part:
        """The part with its results, dimensions and fields in the schemas of the output files."""
        return Part(
            results=conform(self.results, RESULT_SCHEMA),
            dimensions=conform(self.dimensions, DIMENSION_SCHEMA),
            fields=conform(self.fields, FIELD_SCHEMA),
            tables=dict(self.tables),
            inputs=dict(self.inputs),
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
    matched: dict[str, Any] = json.loads(
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
    return matched


class Checkpoints:
    """Batch parts under ``<run dir>/checkpoint`` (disabled when the directory is ``None``); ``resumable=False``
    for a temporary folder of parts that no run resumes from."""

    def __init__(self, directory: str | Path | None, resumable: bool = True) -> None:
        self.directory = Path(directory) if directory is not None else None
        self.resumable = resumable and self.directory is not None
        self._fingerprints: dict[int, str] = {}

    @classmethod
    def temporary(cls, run_dir: Path | None) -> Checkpoints:
        """A folder of parts inside the run directory, removed when the outputs are written (``None``: in the
        system's temporary folder, for a run without an output directory)."""
        prefix = ".parts-" if run_dir is not None else "vision-eval-parts-"
        return cls(Path(tempfile.mkdtemp(prefix=prefix, dir=run_dir)), resumable=False)

    @property
    def enabled(self) -> bool:
        """True when a resume can reuse the saved batches."""
        return self.resumable

    @property
    def started(self) -> bool:
        """True once the run's manifest is written: a resume can find this checkpoint."""
        return self.resumable and self.directory is not None and (self.directory / MANIFEST).is_file()

    @property
    def on_disk(self) -> bool:
        """True when parts are saved to files (resumable or not)."""
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

    def find(self, evaluator: Evaluator, batch: pl.DataFrame) -> Path | None:
        """The folder of this batch's saved part, when a resume can reuse one."""
        if not self.resumable:
            return None
        folder = self._folder(evaluator, batch)
        return folder if (folder / "results.part").is_file() else None

    def load(self, evaluator: Evaluator, batch: pl.DataFrame) -> Part | None:
        """The saved part for this batch, or ``None``."""
        folder = self.find(evaluator, batch)
        return read_part(folder) if folder is not None else None

    def save(self, evaluator: Evaluator, batch: pl.DataFrame, part: Part, final: bool = True) -> Path:
        """Save ``part`` (conformed) atomically and return its folder. A part that is not ``final`` (its batch
        had refused calls) is kept for the outputs under a name no resume reads. A write the disk refuses is
        :class:`~vision_eval.errors.OutputsNotWritten` and leaves nothing behind."""
        assert self.directory is not None
        folder = self._folder(evaluator, batch)
        if not final:
            folder = folder.with_name(OPEN + folder.name)
        staging = None
        try:
            with writing(folder):
                folder.parent.mkdir(parents=True, exist_ok=True)
                staging = Path(tempfile.mkdtemp(prefix=".tmp-", dir=folder.parent))
                _write_part(staging, part)
        except BaseException:
            if staging is not None:
                shutil.rmtree(staging, ignore_errors=True)
            raise
        if not final:
            shutil.rmtree(folder, ignore_errors=True)
        try:
            os.rename(staging, folder)
        except OSError:  # another process finished the same batch first: keep theirs
            shutil.rmtree(staging, ignore_errors=True)
        if final:
            shutil.rmtree(folder.with_name(OPEN + folder.name), ignore_errors=True)
        return folder

    def save_samples(self, index: int, frame: pl.DataFrame) -> Path:
        """Save batch ``index``'s evaluated rows (replacing what an earlier attempt saved) and return the file."""
        assert self.directory is not None
        path = self.directory / SAMPLES / f"{index:09d}.part"
        write_atomically(path, frame.write_parquet)
        return path

    # --- the run as a whole ----------------------------------------------------------------------------
    def start(self, run_id: str, fingerprint: dict[str, Any]) -> None:
        """Record the run id and the config a resume must match (kept when already there)."""
        if self.directory is None or (self.directory / MANIFEST).is_file():
            return
        text = json.dumps({"run_id": run_id, "config": fingerprint}, indent=1)
        write_atomically(self.directory / MANIFEST, lambda path: path.write_text(text, encoding="utf-8"))

    def manifest(self) -> dict[str, Any] | None:
        """The recorded run id and config, or ``None`` when there is no checkpoint."""
        if self.directory is None or not (self.directory / MANIFEST).is_file():
            return None
        recorded: dict[str, Any] = json.loads((self.directory / MANIFEST).read_text(encoding="utf-8"))
        return recorded

    @property
    def journal_dir(self) -> Path | None:
        """Where the run's call journal lives (``calls.sqlite``)."""
        return self.directory

    def remove(self) -> None:
        """Delete every part of the run (it completed: nothing is left to resume)."""
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)


def _write_part(folder: Path, part: Part) -> None:
    """The part's files, then ``part.json`` listing each with its size (what a resume checks them against)."""
    for name in KINDS:
        getattr(part, name).write_parquet(folder / f"{name}.part")
    for name, table in part.tables.items():
        table.write_parquet(folder / f"{TABLE}{name}.part")
    for name, table in part.inputs.items():
        table.write_parquet(folder / f"{INPUT}{name}.part")
    files = {p.name: p.stat().st_size for p in sorted(folder.glob("*.part"))}
    (folder / PART_LIST).write_text(json.dumps({"files": files}), encoding="utf-8")


def saved_tables(folder: Path, prefix: str) -> dict[str, Path]:
    """The files of a saved part's extra tables (``prefix`` :data:`TABLE`) or metric inputs (:data:`INPUT`),
    by name."""
    return {p.name[len(prefix) : -len(".part")]: p for p in sorted(folder.glob(f"{prefix}*.part"))}


def read_part(folder: Path) -> Part:
    """A part saved by :meth:`Checkpoints.save`."""
    results, dimensions, fields = (pl.read_parquet(folder / f"{name}.part") for name in KINDS)
    tables = {name: pl.read_parquet(path) for name, path in saved_tables(folder, TABLE).items()}
    inputs = {name: pl.read_parquet(path) for name, path in saved_tables(folder, INPUT).items()}
    return Part(results, dimensions, fields, tables=tables, inputs=inputs)
