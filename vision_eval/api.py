"""The entry points: run a validated config, or evaluate Python data directly.

A run: build the stack (config errors first), load the dataset, check the columns, check every model
(keys, prices for a budget, one tiny request: :mod:`vision_eval.llm.preflight`), claim the run directory,
generate candidate outputs, run the evaluators, judge the gates (:mod:`vision_eval.gates`) and write the
files. ``run.dry_run`` stops after building the requests (:mod:`vision_eval.dryrun`).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

from vision_eval.checkpoint import Checkpoints, config_fingerprint
from vision_eval.columns import image_columns as evaluator_image_columns
from vision_eval.config import AppConfig, ConfigSources, JudgeConfig, validate_config
from vision_eval.data import load_dataset, samples_frame
from vision_eval.data.canonical import describe
from vision_eval.dryrun import evaluator_lines, plan_table
from vision_eval.engine import EvaluatorRun, run_stack
from vision_eval.errors import ConfigError
from vision_eval.evaluator import EvalContext
from vision_eval.gates import EXIT_INCOMPLETE, Gate, candidate_gate, judge_outcome, worst
from vision_eval.llm.budget import Budget
from vision_eval.llm.preflight import key_problems, model_uses, preflight
from vision_eval.llm.scheduler import get_scheduler
from vision_eval.output import EvalResult, package_versions, status_counts, totals
from vision_eval.prechecks import check_stack
from vision_eval.progress import Progress
from vision_eval.results import DIMENSION_SCHEMA, FIELD_SCHEMA, RESULT_SCHEMA, conform
from vision_eval.rundir import CHECKPOINT, RunDir, claim, claim_resume, new_run_id
from vision_eval.secrets import Secrets
from vision_eval.stack import build_stack
from vision_eval.summary import summarize


def _concat(frames: list[pl.DataFrame], schema: dict[str, pl.DataType]) -> pl.DataFrame:
    return pl.concat([conform(f, schema) for f in frames] or [conform(pl.DataFrame(), schema)])


def _tables(runs: list[EvaluatorRun]) -> dict[str, pl.DataFrame]:
    tables: dict[str, list[pl.DataFrame]] = {}
    for run in runs:
        for name, table in run.tables.items():
            tables.setdefault(name, []).append(table.with_columns(pl.lit(run.evaluator.name).alias("evaluator")))
    return {name: pl.concat(parts, how="diagonal_relaxed") for name, parts in tables.items()}


def _metrics(runs: list[EvaluatorRun]) -> dict[str, Any]:
    metrics = {}
    for run in runs:
        try:
            metrics[run.evaluator.name] = run.evaluator.summarize(run.results)
        except Exception as exc:  # a metric failure must not lose the results
            metrics[run.evaluator.name] = {"error": f"{type(exc).__name__}: {exc}"}
    return metrics


def _run_gates(scheduler: Any, frame: pl.DataFrame, limit: float, results: pl.DataFrame) -> list[Gate]:
    """The run-level stops: a spent budget, tripped circuit breakers, a failing candidate."""
    gates: list[Gate] = []
    budget = scheduler.budget
    if budget.exhausted:
        left = results.filter(pl.col("details").str.json_path_match("$.not_attempted") == "budget").height
        message = (
            f"run: {budget.message()}; {left} result rows skipped; resume with a larger run.max_cost_usd to finish "
            "(finished calls are not paid twice)"
        )
        gates.append(Gate("run", "budget", budget.spent, budget.limit, False, 3, message))
    for model, reason in scheduler.tripped.items():
        message = f"run: circuit breaker stopped calling {model}: {reason}"
        gates.append(Gate("run", "circuit_breaker", None, None, False, 3, message))
    candidate = candidate_gate(frame, limit)
    if candidate is not None:
        gates.append(candidate)
    return gates


def _dry_run(
    config: AppConfig, context: EvalContext, evaluators: list[Any], candidate: Any, frame: pl.DataFrame, uses: list
) -> EvalResult:
    from vision_eval.candidate import plan_outputs
    from vision_eval.dryrun import _line

    context.dry_run = True
    lines = []
    warnings = key_problems(uses)
    if candidate is not None:
        planned = plan_outputs(frame, candidate, context)
        lines.append(_line("candidate", candidate, planned["calls"], planned["estimated_input_tokens"]))
        warnings += [f"candidate request cannot be built for {e}" for e in planned["errors"][:5]]
    graded = [e for e in evaluators if e.is_async]
    runs = run_stack(graded, frame, config.run.batch_size) if graded else []
    for run in runs:
        lines += evaluator_lines(run.evaluator, run.results)
    plan = plan_table(lines)
    results = _concat([r.results for r in runs], RESULT_SCHEMA)
    info = {"dry_run": True, "plan": plan, "warnings": warnings, "exit_code": 0, "problems": []}
    return EvalResult(results, _concat([], DIMENSION_SCHEMA), _concat([], FIELD_SCHEMA), samples_frame(frame),
                      run_info=info)  # fmt: skip


def _claim(config: AppConfig) -> tuple[RunDir | None, str]:
    if config.run.resume:
        return claim_resume(config.run.resume, config_fingerprint(config))
    if config.run.output_dir:
        return claim(config.run.output_dir), new_run_id()
    return None, new_run_id()


def run_config(config: AppConfig, data: Any = None, sources: ConfigSources | None = None) -> EvalResult:
    """Run a validated config (``data`` replaces the configured dataset when given).

    Raises ``ConfigError`` / ``PreflightError`` (exit 2) before anything is evaluated; otherwise returns the
    result, whose ``exit_code`` and ``problems`` say whether every gate held."""
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
    image_columns = evaluator_image_columns(evaluators, candidate.images if candidate is not None else ())
    frame, root = load_dataset(config.dataset, data, config.run.limit, config.run.shard, image_columns, context=context)
    context.dataset_root = root
    if candidate is not None and "output" not in frame.columns:
        frame = frame.with_columns(pl.lit(None, pl.Utf8).alias("output"))
    check_stack(frame, evaluators, config.dataset, sources)  # still before any paid call
    uses = model_uses(evaluators, candidate)
    secrets = Secrets.of_models([u.config for u in uses] + [config.judge])
    context.services["secrets"] = secrets
    if config.run.dry_run:
        return _dry_run(config, context, evaluators, candidate, frame, uses)

    rundir, run_id = _claim(config)
    try:
        return _run(config, sources, context, evaluators, candidate, frame, uses, secrets, rundir, run_id, started)
    finally:
        if rundir is not None:
            rundir.release()


def _run(
    config: AppConfig,
    sources: ConfigSources | None,
    context: EvalContext,
    evaluators: list[Any],
    candidate: Any,
    frame: pl.DataFrame,
    uses: list[Any],
    secrets: Secrets,
    rundir: RunDir | None,
    run_id: str,
    started: float,
) -> EvalResult:
    scheduler = get_scheduler(context)
    preflight(
        uses, scheduler, budget=config.run.max_cost_usd is not None, send=config.run.preflight, scrub=secrets.scrub
    )
    output_dir = rundir.path if rundir is not None else None
    store = Checkpoints(output_dir / CHECKPOINT if output_dir is not None and config.run.checkpoint else None)
    if store.enabled:
        assert store.journal_dir is not None
        scheduler.use_journal(store.journal_dir, config.run.max_cost_usd)
        store.start(run_id, config_fingerprint(config))
    else:
        scheduler.budget = Budget(config.run.max_cost_usd)
    loaded = time.perf_counter()
    progress = Progress.choose(config.run.progress, config.run.progress_interval_s)
    progress.jobs = scheduler.batch_jobs
    for evaluator in evaluators:
        progress.add(evaluator.name, frame.height)
    try:
        with progress:
            if candidate is not None:
                from vision_eval.candidate import generate_outputs

                frame = generate_outputs(frame, candidate, context, progress)
                frame = secrets.scrub_frame(frame, ["candidate_error"])
            runs = run_stack(evaluators, frame, config.run.batch_size, progress, store, secrets.scrub_frame)
    except KeyboardInterrupt:
        if store.enabled:
            print(f"interrupted: finished work is kept; resume with run.resume={output_dir}", file=sys.stderr)
        raise

    results = _concat([r.results for r in runs], RESULT_SCHEMA)
    summary = pl.concat([r.summary for r in runs if r.summary is not None]) if runs else summarize(results)
    run_gates = _run_gates(scheduler, frame, config.run.max_error_rate, results)
    outcome = judge_outcome(summary, results, evaluators, config.run.max_error_rate, run_gates)
    finished = time.perf_counter()
    complete = not scheduler.budget.exhausted and not scheduler.tripped
    run_info = {
        "run_id": run_id,
        "exit_code": outcome.exit_code,
        "problems": outcome.problems,
        "complete": complete,
        "gates": [g.as_dict() for g in outcome.gates],
        "top_errors": outcome.as_dict()["top_errors"],
        "config": config.model_dump(mode="json"),
        "overrides": list(sources.overrides) if sources else [],
        "moved_from": str(rundir.moved_from) if rundir is not None and rundir.moved_from else None,
        "versions": package_versions(),
        "dataset": {**describe(frame), "root": str(context.dataset_root) if context.dataset_root else None},
        "evaluators": {r.evaluator.name: r.evaluator.describe() for r in runs},
        "counts": {"samples": frame.height, "result_rows": results.height, "status": status_counts(summary)},
        "timings": {
            "load_s": round(loaded - started, 4),
            "evaluate_s": round(finished - loaded, 4),
            "total_s": round(finished - started, 4),
            "per_evaluator_s": {r.evaluator.name: round(r.seconds, 4) for r in runs},
        },
        "resumed_batches": {r.evaluator.name: r.resumed_batches for r in runs},
        "totals": totals(summary, results),
        "spending": {"spent_usd": round(scheduler.budget.spent, 6), "budget_usd": config.run.max_cost_usd},
        "scheduler": scheduler.stats.as_dict(),
        "metrics": _metrics(runs),
    }
    result = EvalResult(
        results=results,
        dimensions=_concat([r.dimensions for r in runs], DIMENSION_SCHEMA),
        fields=_concat([r.fields for r in runs], FIELD_SCHEMA),
        samples=samples_frame(frame),
        tables=_tables(runs),
        run_info=run_info,
        output_dir=output_dir,
        summary_table=summary,
    )
    try:
        if output_dir is not None:
            result.write(output_dir)
        if config.run.junit:
            from vision_eval.junit import write_junit

            junit = Path(config.run.junit)
            write_junit(result.results, run_info["gates"], output_dir / junit if output_dir else junit)
    except OSError as exc:  # a full disk, a read-only folder: say so, keep what resumes the run
        where = output_dir or config.run.junit
        problem = f"run: could not write the outputs to {where}: {exc}"
        if store.enabled:
            problem += f"; finished work is kept: free the space and resume with run.resume={output_dir}"
        run_info["problems"].append(problem)
        run_info["exit_code"] = worst([run_info["exit_code"], EXIT_INCOMPLETE])
        return result
    if complete and output_dir is not None:
        store.remove()
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

    Raises ``ConfigError`` or ``PreflightError`` when nothing could be evaluated; otherwise the result's
    ``exit_code`` and ``problems`` say whether the run's gates held (as ``vision-eval``'s exit code does).
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
