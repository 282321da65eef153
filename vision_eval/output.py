"""The result of a run (Polars frames) and how it is written to a run directory."""

from __future__ import annotations

import json
import os
import platform
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import polars as pl

from vision_eval.config import redact, redact_override
from vision_eval.results import DIMENSION_SCHEMA, FIELD_SCHEMA, RESULT_SCHEMA, conform
from vision_eval.summary import summarize

VERSIONED_PACKAGES = ("vision-eval", "polars", "pyarrow", "pydantic", "datasets", "hydra-core", "litellm", "rapidfuzz")


def package_versions() -> dict[str, str | None]:
    """Versions of the packages that shape results (read from metadata, nothing imported)."""
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in VERSIONED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


@dataclass
class EvalResult:
    """Everything a run produced."""

    results: pl.DataFrame
    """One row per sample x evaluator (``RESULT_SCHEMA``)."""
    dimensions: pl.DataFrame
    """Per-dimension scores (``DIMENSION_SCHEMA``)."""
    fields: pl.DataFrame
    """Per-field comparisons (``FIELD_SCHEMA``)."""
    samples: pl.DataFrame
    """The evaluated rows (image paths and hashes, no bytes)."""
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)
    """Extra tables written as ``<name>.parquet`` (rankings, feedback, calibration...)."""
    run_info: dict[str, Any] = field(default_factory=dict)
    """What run.json holds: run id, exit code and problems, gates, config (redacted), versions, counts,
    timings, totals, spending, metrics."""
    output_dir: Path | None = None
    """Where the run was written (``None`` for a run kept in memory or a dry run)."""
    summary_table: pl.DataFrame | None = field(default=None, repr=False)
    """The per-evaluator summary when the engine already computed it (else computed from ``results``)."""

    @property
    def run_id(self) -> str | None:
        """The run's id (also a column of the results, dimensions and fields tables)."""
        return self.run_info.get("run_id")

    @property
    def exit_code(self) -> int:
        """What ``vision-eval`` exits with for this run (see :mod:`vision_eval.gates`)."""
        return int(self.run_info.get("exit_code", 0))

    @property
    def problems(self) -> list[str]:
        """Why the exit code is not 0: failed gates, a spent budget, a tripped circuit breaker."""
        return list(self.run_info.get("problems", []))

    def __post_init__(self) -> None:
        run_id = self.run_info.get("run_id")
        self.results = _with_run_id(conform(self.results, RESULT_SCHEMA), run_id)
        self.dimensions = _with_run_id(conform(self.dimensions, DIMENSION_SCHEMA), run_id)
        self.fields = _with_run_id(conform(self.fields, FIELD_SCHEMA), run_id)

    @property
    def summary(self) -> pl.DataFrame:
        """Per evaluator: counts by status, mean score, pass rate, tokens, cost."""
        if self.summary_table is None:
            self.summary_table = summarize(self.results)
        return self.summary_table

    @property
    def metrics(self) -> dict[str, dict[str, Any]]:
        """Dataset-level metrics per evaluator (AP, F1, agreement...)."""
        return self.run_info.get("metrics", {})

    def write(self, directory: str | Path) -> Path:
        """Write the Parquet files and run.json into ``directory`` (created if needed). Each file is written
        under a temporary name and renamed into place, so a failure (a full disk) never leaves a truncated file
        and never damages a file written before it; the ``OSError`` is raised."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        frames = {"results": self.results, "dimensions": self.dimensions, "fields": self.fields}
        for name, frame in {**frames, "samples": self.samples, **self.tables}.items():
            _atomic(out / f"{name}.parquet", frame.write_parquet)
        info = dict(self.run_info)
        info["summary"] = self.summary.to_dicts()
        info["config"] = redact(info.get("config", {}))
        info["overrides"] = [redact_override(o) for o in info.get("overrides", [])]
        text = json.dumps(info, indent=2, default=str) + "\n"
        _atomic(out / "run.json", lambda path: path.write_text(text, encoding="utf-8"))
        if ((info["config"].get("run") or {}).get("write_report", True)) is not False:
            try:
                from vision_eval.report import write_report

                write_report(self, out)
            except Exception as exc:  # the Parquet results are written; a report failure must not lose them
                warnings.warn(f"report.html not written: {type(exc).__name__}: {exc}", stacklevel=2)
        return out


def _atomic(path: Path, write: Callable[[Path], Any]) -> None:
    """``write`` to a temporary file beside ``path``, then rename it into place."""
    staging = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write(staging)
        os.replace(staging, path)
    except BaseException:
        staging.unlink(missing_ok=True)
        raise


def _with_run_id(frame: pl.DataFrame, run_id: str | None) -> pl.DataFrame:
    """``frame`` with its ``run_id`` filled in (so several runs' files can be read as one table)."""
    if run_id is None:
        return frame
    return frame.with_columns(pl.col("run_id").fill_null(pl.lit(run_id)))


def status_counts(summary: pl.DataFrame) -> dict[str, int]:
    """How many result rows have each status (from the per-evaluator summary)."""
    counts = {"processed": int(summary["processed"].sum()), "error": int(summary["errors"].sum()),
              "skipped": int(summary["skipped"].sum())}  # fmt: skip
    return {status: n for status, n in counts.items() if n}


def totals(summary: pl.DataFrame, results: pl.DataFrame) -> dict[str, Any]:
    """Token and cost totals over all result rows (cost null when no evaluator knows its price)."""
    cost = summary["cost_usd"]
    return {
        "input_tokens": int(summary["input_tokens"].sum() or 0),
        "output_tokens": int(summary["output_tokens"].sum() or 0),
        "cost_usd": float(cost.sum()) if cost.is_not_null().any() else None,
        "cache_hits": int(results["cached"].sum() or 0),
    }
