"""The entry points: run a validated config, or evaluate Python data directly."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import polars as pl

from vision_eval.checkpoint import Checkpoints
from vision_eval.config import AppConfig, ConfigSources, JudgeConfig, validate_config
from vision_eval.data import load_dataset, samples_frame
from vision_eval.data.canonical import describe
from vision_eval.engine import check_stack, run_stack
from vision_eval.errors import ConfigError
from vision_eval.evaluator import EvalContext
from vision_eval.output import EvalResult, package_versions, status_counts, totals
from vision_eval.results import DIMENSION_SCHEMA, FIELD_SCHEMA, RESULT_SCHEMA, conform
from vision_eval.stack import build_stack


def _progress(enabled: bool | None, evaluators: list[Any], rows: int) -> tuple[Callable[[str, int], None], Any]:
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled or not evaluators:
        return (lambda name, n: None), None
    from rich.progress import Progress

    progress = Progress(transient=False)
    tasks = {e.name: progress.add_task(e.name, total=rows) for e in evaluators}
    progress.start()
    return (lambda name, n: progress.advance(tasks[name], n)), progress


def run_config(config: AppConfig, data: Any = None, sources: ConfigSources | None = None) -> EvalResult:
    """Run a validated config (``data`` replaces the configured dataset when given)."""
    started = time.perf_counter()
    context = EvalContext(judge=config.judge if config.judge.enabled else None, run=config.run)
    evaluators = build_stack(config.evaluators, context, sources)  # config errors surface before any loading
    candidate = config.candidate if config.candidate.enabled else None
    if candidate is not None:
        from vision_eval.candidate import check_candidate

        try:
            check_candidate(candidate)
        except ValueError as exc:
            raise ConfigError(
                "candidate.prompt", str(exc), sources.file_for("candidate") if sources else None
            ) from None
    frame, root = load_dataset(config.dataset, data, limit=config.run.limit, shard=config.run.shard, context=context)
    context.dataset_root = root
    if candidate is not None and "output" not in frame.columns:
        frame = frame.with_columns(pl.lit(None, pl.Utf8).alias("output"))
    check_stack(frame, evaluators, config.dataset)  # still before any paid call
    if candidate is not None:
        from vision_eval.candidate import generate_outputs

        frame = generate_outputs(frame, candidate, context)
    loaded = time.perf_counter()

    output_dir = config.run.resume or config.run.output_dir
    store = Checkpoints(Path(output_dir) / "checkpoint" if output_dir and config.run.checkpoint else None)
    tick, progress = _progress(config.run.progress, evaluators, frame.height)
    try:
        runs = run_stack(evaluators, frame, config.run.batch_size, tick, store)
    except KeyboardInterrupt:
        if store.enabled:
            print(f"interrupted: finished batches are kept; resume with run.resume={output_dir}", file=sys.stderr)
        raise
    finally:
        if progress is not None:
            progress.stop()

    results = pl.concat([conform(r.results, RESULT_SCHEMA) for r in runs] or [conform(pl.DataFrame(), RESULT_SCHEMA)])
    dimensions = pl.concat(
        [conform(r.dimensions, DIMENSION_SCHEMA) for r in runs] or [conform(pl.DataFrame(), DIMENSION_SCHEMA)]
    )
    fields = pl.concat([conform(r.fields, FIELD_SCHEMA) for r in runs] or [conform(pl.DataFrame(), FIELD_SCHEMA)])
    tables: dict[str, list[pl.DataFrame]] = {}
    for run in runs:
        for name, table in run.tables.items():
            tables.setdefault(name, []).append(table.with_columns(pl.lit(run.evaluator.name).alias("evaluator")))
    metrics = {}
    for run in runs:
        try:
            metrics[run.evaluator.name] = run.evaluator.summarize(run.results)
        except Exception as exc:  # a metric failure must not lose the results
            metrics[run.evaluator.name] = {"error": f"{type(exc).__name__}: {exc}"}
    finished = time.perf_counter()
    run_info = {
        "config": config.model_dump(mode="json"),
        "overrides": list(sources.overrides) if sources else [],
        "versions": package_versions(),
        "dataset": describe(frame),
        "evaluators": {r.evaluator.name: r.evaluator.describe() for r in runs},
        "counts": {"samples": frame.height, "result_rows": results.height, "status": status_counts(results)},
        "timings": {
            "load_s": round(loaded - started, 4),
            "evaluate_s": round(finished - loaded, 4),
            "total_s": round(finished - started, 4),
            "per_evaluator_s": {r.evaluator.name: round(r.seconds, 4) for r in runs},
        },
        "resumed_batches": {r.evaluator.name: r.resumed_batches for r in runs},
        "totals": totals(results),
        "metrics": metrics,
    }
    result = EvalResult(
        results=results,
        dimensions=dimensions,
        fields=fields,
        samples=samples_frame(frame),
        tables={name: pl.concat(parts, how="diagonal_relaxed") for name, parts in tables.items()},
        run_info=run_info,
    )
    if output_dir:
        result.write(Path(output_dir))
    return result


def evaluate(
    data: Any,
    evaluators: Mapping[str, Mapping[str, Any]],
    judge: JudgeConfig | Mapping[str, Any] | str | None = None,
    *,
    dataset: Mapping[str, Any] | None = None,
    run: Mapping[str, Any] | None = None,
    output_dir: str | Path | None = None,
    candidate: Mapping[str, Any] | str | None = None,
) -> EvalResult:
    """Evaluate ``data`` with a stack of evaluators.

    ``data``: a Polars frame, a list of dicts, a file or folder path, a hub id or an HF Dataset.
    ``evaluators``: name -> settings (each with ``type`` or ``_target_``).
    ``judge``: a ``JudgeConfig``, its settings as a mapping, a litellm model id, or ``None``.
    ``dataset`` / ``run``: extra dataset options (``columns``, ``limit``...) and run options.
    ``candidate``: a model under test (settings or a litellm model id) that first produces ``output``.
    """
    if isinstance(judge, str):
        judge = {"model": judge}
    elif isinstance(judge, JudgeConfig):
        judge = judge.model_dump()
    run_options = dict(run or {})
    if output_dir is not None:
        run_options["output_dir"] = str(output_dir)
    raw: dict[str, Any] = {
        "dataset": dict(dataset or {}),
        "evaluators": {name: dict(spec) for name, spec in evaluators.items()},
        "judge": dict(judge or {}),
        "run": run_options,
        "candidate": {"model": candidate} if isinstance(candidate, str) else dict(candidate or {}),
    }
    if isinstance(data, str | Path) and "path" not in raw["dataset"]:
        raw["dataset"]["path"] = str(data)
        data = None
    return run_config(validate_config(raw), data)
