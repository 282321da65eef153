"""The result of a run (Polars frames, read from the run's files when first used) and how it is written."""

from __future__ import annotations

import json
import platform
import warnings
from importlib import metadata
from pathlib import Path
from typing import Any

import polars as pl

from vision_eval.config import redact, redact_override
from vision_eval.errors import OutputsNotWritten
from vision_eval.results import DIMENSION_SCHEMA, FIELD_SCHEMA, RESULT_SCHEMA, conform
from vision_eval.storage import io_failure, write_atomically
from vision_eval.summary import summarize

VERSIONED_PACKAGES = ("vision-eval", "polars", "pyarrow", "pydantic", "datasets", "hydra-core", "litellm", "rapidfuzz")
SCHEMAS: dict[str, dict[str, pl.DataType] | None] = {
    "results": RESULT_SCHEMA,
    "dimensions": DIMENSION_SCHEMA,
    "fields": FIELD_SCHEMA,
    "samples": None,
}
Frame = pl.DataFrame | pl.LazyFrame


def package_versions() -> dict[str, str | None]:
    """Versions of the packages that shape results (read from metadata, nothing imported)."""
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in VERSIONED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


class EvalResult:
    """Everything a run produced.

    ``results``, ``dimensions``, ``fields``, ``samples`` and ``tables`` are Polars frames. A run written to a
    directory holds them as lazy scans of its files, read when first used (a run larger than memory is never
    loaded unless asked for); frames given to the constructor are used as they are."""

    def __init__(
        self,
        results: Frame,
        dimensions: Frame,
        fields: Frame,
        samples: Frame,
        tables: dict[str, Frame] | None = None,
        run_info: dict[str, Any] | None = None,
        output_dir: Path | None = None,
        summary_table: pl.DataFrame | None = None,
    ) -> None:
        self.run_info: dict[str, Any] = run_info if run_info is not None else {}
        """What run.json holds: run id, exit code and problems, gates, config (redacted), versions, counts,
        timings, totals, spending, metrics."""
        self.output_dir = output_dir
        """Where the run was written (``None`` for a run kept in memory or a dry run)."""
        self.summary_table = summary_table
        """The per-evaluator summary when the run already computed it (else computed from ``results``)."""
        self._frames: dict[str, Frame] = {}
        self._tables: dict[str, Frame] = dict(tables or {})
        self._written: dict[str, Path] = {}
        for name, frame in (("results", results), ("dimensions", dimensions), ("fields", fields), ("samples", samples)):
            self._set(name, frame)

    def _set(self, name: str, frame: Frame) -> None:
        schema = SCHEMAS[name]
        if isinstance(frame, pl.DataFrame) and schema is not None:
            frame = _with_run_id(conform(frame, schema), self.run_id)
        self._frames[name] = frame

    def _get(self, name: str) -> pl.DataFrame:
        frame = self._frames[name]
        if isinstance(frame, pl.LazyFrame):
            frame = frame.collect()
            schema = SCHEMAS[name]
            self._frames[name] = frame = _with_run_id(conform(frame, schema), self.run_id) if schema else frame
        return frame

    @property
    def results(self) -> pl.DataFrame:
        """One row per sample x evaluator (``RESULT_SCHEMA``)."""
        return self._get("results")

    @results.setter
    def results(self, frame: Frame) -> None:
        self._set("results", frame)

    @property
    def dimensions(self) -> pl.DataFrame:
        """Per-dimension scores (``DIMENSION_SCHEMA``)."""
        return self._get("dimensions")

    @dimensions.setter
    def dimensions(self, frame: Frame) -> None:
        self._set("dimensions", frame)

    @property
    def fields(self) -> pl.DataFrame:
        """Per-field comparisons (``FIELD_SCHEMA``)."""
        return self._get("fields")

    @fields.setter
    def fields(self, frame: Frame) -> None:
        self._set("fields", frame)

    @property
    def samples(self) -> pl.DataFrame:
        """The evaluated rows (image paths and hashes, no bytes)."""
        return self._get("samples")

    @samples.setter
    def samples(self, frame: Frame) -> None:
        self._set("samples", frame)

    @property
    def tables(self) -> dict[str, pl.DataFrame]:
        """Extra tables written as ``<name>.parquet`` (rankings, feedback, calibration...)."""
        for name, frame in self._tables.items():
            if isinstance(frame, pl.LazyFrame):
                self._tables[name] = frame.collect()
        return self._tables  # type: ignore[return-value]

    @tables.setter
    def tables(self, tables: dict[str, Frame]) -> None:
        self._tables = dict(tables)

    def lazy(self, name: str) -> pl.LazyFrame:
        """``results``, ``dimensions``, ``fields``, ``samples`` or a table's name as a lazy frame, without
        reading it into memory (a scan of the run's file once it is written)."""
        frame = self._frames[name] if name in self._frames else self._tables[name]
        return frame.lazy()

    @property
    def written(self) -> list[str]:
        """The files :meth:`write` has written, in order."""
        return [path.name for path in self._written.values()]

    @property
    def table_names(self) -> list[str]:
        """The names of the extra tables."""
        return list(self._tables)

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

    @property
    def summary(self) -> pl.DataFrame:
        """Per evaluator: counts by status, mean score, pass rate, tokens, cost."""
        if self.summary_table is None:
            self.summary_table = summarize(self.results)
        return self.summary_table

    @property
    def metrics(self) -> dict[str, dict[str, Any]]:
        """Dataset-level metrics per evaluator (AP, F1, agreement...)."""
        metrics: dict[str, dict[str, Any]] = self.run_info.get("metrics", {})
        return metrics

    def __repr__(self) -> str:
        return f"EvalResult(run_id={self.run_id!r}, output_dir={self.output_dir!r}, exit_code={self.exit_code})"

    def write(self, directory: str | Path) -> Path:
        """Write the Parquet files, report.html and, last, run.json into ``directory`` (created if needed): a
        run.json says every output is there. A file this result was already written to there is not written
        again. Each file is written under a temporary name and renamed into place (a lazy frame streamed, a part
        at a time), so a failure (a full disk) never leaves a truncated or temporary file and never damages a
        file written before it; it raises :class:`~vision_eval.errors.OutputsNotWritten`."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        for name in [*SCHEMAS, *self._tables]:
            path = out / f"{name}.parquet"
            if self._written.get(name) == path:
                continue
            frame = self._frames[name] if name in SCHEMAS else self._tables[name]
            write_atomically(path, lambda target, frame=frame: _write_frame(frame, target))  # type: ignore[misc]
            self._written[name] = path
            if isinstance(frame, pl.LazyFrame):  # read from the written file from now on
                scan = pl.scan_parquet(path)
                if name in SCHEMAS:
                    self._frames[name] = scan
                else:
                    self._tables[name] = scan
        info = dict(self.run_info)
        info["summary"] = self.summary.to_dicts()
        info["config"] = redact(info.get("config", {}))
        info["overrides"] = [redact_override(o) for o in info.get("overrides", [])]
        if ((info["config"].get("run") or {}).get("write_report", True)) is not False:
            try:
                from vision_eval.report import write_report

                self._written["report.html"] = write_report(self, out)
            except Exception as exc:  # the Parquet results are written; a report failure must not lose them
                reason = io_failure(exc)
                if reason is not None:
                    raise OutputsNotWritten(str(out / "report.html"), reason) from exc
                warnings.warn(f"report.html not written: {type(exc).__name__}: {exc}", stacklevel=2)
        text = json.dumps(info, indent=2, default=str) + "\n"
        write_atomically(out / "run.json", lambda path: path.write_text(text, encoding="utf-8"))
        self._written["run.json"] = out / "run.json"
        return out


def _write_frame(frame: Frame, path: Path) -> None:
    if isinstance(frame, pl.LazyFrame):
        frame.sink_parquet(path)
    else:
        frame.write_parquet(path)


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


def totals(summary: pl.DataFrame, cache_hits: int) -> dict[str, Any]:
    """Token and cost totals over all result rows (cost null when no evaluator knows its price)."""
    cost = summary["cost_usd"]
    return {
        "input_tokens": int(summary["input_tokens"].sum() or 0),
        "output_tokens": int(summary["output_tokens"].sum() or 0),
        "cost_usd": float(cost.sum()) if cost.is_not_null().any() else None,
        "cache_hits": int(cache_hits),
    }
