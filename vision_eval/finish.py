"""What a run adds up to once every batch is done, read back from its parts (:mod:`vision_eval.parts`), never from
frames held in memory: the summary (one streaming pass per evaluator), the dataset-level metrics and tables (only
evaluators that define ``summarize`` / ``finalize`` get their rows, and only their own), the gates, run.json's
contents, and the :class:`~vision_eval.output.EvalResult` whose files are the parts streamed into one file each.
"""

from __future__ import annotations

import shutil
import weakref
from pathlib import Path
from typing import Any

import polars as pl

from vision_eval.checkpoint import Checkpoints
from vision_eval.data.canonical import describe
from vision_eval.engine import StackRun
from vision_eval.errors import NOT_WRITTEN, OutputsNotWritten
from vision_eval.evaluator import Evaluator
from vision_eval.gates import Gate, candidate_gate, judge_outcome, nothing_scored_gate
from vision_eval.output import EvalResult, package_versions, status_counts, totals
from vision_eval.parts import Ledger
from vision_eval.wording import counted


def evaluator_tables_and_metrics(ledger: Ledger, evaluators: list[Evaluator]) -> dict[str, Any]:
    """Each evaluator's dataset-level metrics (``summarize``) after its run-wide tables (``finalize``, kept in the
    ledger), each computed from that evaluator's rows read back from its parts."""
    metrics: dict[str, Any] = {}
    for evaluator in evaluators:
        kind = type(evaluator)
        finalizes = kind.finalize is not Evaluator.finalize
        summarizes = kind.summarize is not Evaluator.summarize or kind.summarize_from is not Evaluator.summarize_from
        metrics[evaluator.name] = {}
        if not (finalizes or summarizes):
            continue
        results = ledger.frame("results", evaluator.name).collect()
        if finalizes:
            dimensions = ledger.frame("dimensions", evaluator.name).collect()
            ledger.finalized[evaluator.name] = dict(evaluator.finalize(results, dimensions))
        if summarizes:
            inputs = ledger.metric_inputs(evaluator.name)
            try:
                metrics[evaluator.name] = (
                    evaluator.summarize_from(results, inputs) if inputs else evaluator.summarize(results)
                )
            except Exception as exc:  # a metric failure must not lose the results
                metrics[evaluator.name] = {"error": f"{type(exc).__name__}: {exc}"}
    return metrics


def run_gates(scheduler: Any, ledger: Ledger, limit: float) -> list[Gate]:
    """The run-level stops: a spent budget, tripped circuit breakers, a failing candidate."""
    gates: list[Gate] = []
    budget = scheduler.budget
    if budget.exhausted:
        refused = pl.col("details").str.json_path_match("$.not_attempted") == "budget"
        left = ledger.frame("results").filter(refused).select(pl.len()).collect(engine="streaming").item()
        message = (
            f"run: {budget.message()}; {counted(left, 'result row')} skipped; resume with a larger "
            "run.max_cost_usd to finish (finished calls are not paid twice)"
        )
        gates.append(Gate("run", "budget", budget.spent, budget.limit, False, 3, message))
    for model, reason in scheduler.tripped.items():
        message = f"run: circuit breaker stopped calling {model}: {reason}"
        gates.append(Gate("run", "circuit_breaker", None, None, False, 3, message))
    candidate = candidate_gate(ledger.samples(), limit)
    if candidate is not None:
        gates.append(candidate)
    return gates


def dataset_counts(stack: StackRun, head: pl.DataFrame, root: Path | None) -> dict[str, Any]:
    """run.json's ``dataset``: rows, images and columns of what was evaluated, and the image root."""
    counts = dict(stack.dataset) if stack.dataset.get("rows") else describe(head)
    return {**counts, "root": str(root) if root else None}


def build_result(
    ledger: Ledger,
    evaluators: list[Evaluator],
    stack: StackRun,
    scheduler: Any,
    max_error_rate: float,
    info: dict[str, Any],
    output_dir: Path | None,
    allow_nothing_scored: bool = False,
) -> EvalResult:
    """The run's result: summary, metrics, gates and run.json's counts; its frames are the ledger's lazy queries
    (collected when the parts are in memory already; a large run without an output directory keeps its temporary
    folder of parts as long as the result lives)."""
    summary, cache_hits = ledger.summary(evaluators)
    metrics = evaluator_tables_and_metrics(ledger, evaluators)
    gates = run_gates(scheduler, ledger, max_error_rate)
    nothing = nothing_scored_gate(summary, ledger.frame("results"), allow_nothing_scored)
    gates += [nothing] if nothing is not None else []
    outcome = judge_outcome(summary, ledger.frame("results"), evaluators, max_error_rate, gates)
    complete = not scheduler.budget.exhausted and not scheduler.tripped
    info.update(
        exit_code=outcome.exit_code,
        problems=outcome.problems,
        complete=complete,
        gates=[g.as_dict() for g in outcome.gates],
        top_errors=outcome.as_dict()["top_errors"],
    )
    info["evaluators"] = {e.name: e.describe() for e in evaluators}
    info["counts"] = {
        "samples": int(info["dataset"]["rows"]),
        "result_rows": int(summary["rows"].sum() or 0),
        "status": status_counts(summary),
    }
    info["resumed_batches"] = dict(stack.resumed_batches)
    info["totals"] = totals(summary, cache_hits)
    info["metrics"] = metrics
    frames: dict[str, Any] = {
        "results": ledger.frame("results"),
        "dimensions": ledger.frame("dimensions"),
        "fields": ledger.frame("fields"),
        "samples": ledger.samples(),
    }
    tables: dict[str, Any] = ledger.tables()
    if not ledger.store.on_disk:  # the parts are in memory already
        frames = {name: frame.collect() for name, frame in frames.items()}
        tables = {name: frame.collect() for name, frame in tables.items()}
    result = EvalResult(**frames, tables=tables, run_info=info, output_dir=output_dir, summary_table=summary)
    if output_dir is None and ledger.store.directory is not None:  # a large run without an output directory
        weakref.finalize(result, shutil.rmtree, ledger.store.directory, True)
    return result


def run_info_head(config: Any, sources: Any, run_id: str, rundir: Any) -> dict[str, Any]:
    """The parts of run.json known before the run: id, config, overrides, where it moved from, versions."""
    return {
        "run_id": run_id,
        "exit_code": 0,
        "problems": [],
        "config": config.model_dump(mode="json"),
        "overrides": list(sources.overrides) if sources else [],
        "moved_from": str(rundir.moved_from) if rundir is not None and rundir.moved_from else None,
        "versions": package_versions(),
    }


def not_written(
    failure: OutputsNotWritten, store: Checkpoints, output_dir: Path | None, written: list[str], ledger: Any = None
) -> str:
    """The one line a run says when one of its files could not be written: which file and why, which output
    files were written, what is kept and how to go on."""
    text = f"{NOT_WRITTEN}: {failure.path}: {failure.reason}"
    text += f"; written: {', '.join(written)}" if written else "; no output file was written"
    if store.started and output_dir is not None:
        kept = f" ({_batches(ledger.saved_parts())})" if ledger is not None else ""
        resume = f"free some space and resume with run.resume={output_dir}"
        return f"{text}; finished work is kept in {store.directory}{kept}: {resume}"
    return f"{text}; nothing is kept to resume from: free some space and run again"


def interrupted_hint(store: Checkpoints, ledger: Any, output_dir: Path | None) -> str:
    """What an interrupted run says: what is kept and how to resume."""
    if store.started and output_dir is not None:
        return (
            f"interrupted: finished work is kept ({_batches(ledger.saved_parts())}); "
            f"resume with run.resume={output_dir}"
        )
    if output_dir is None:
        return "interrupted: nothing is kept to resume from (the run has no output directory)"
    return "interrupted: nothing is kept to resume from" + ("" if store.enabled else " (run.checkpoint is off)")


def _batches(count: int) -> str:
    return counted(count, "finished batch", "finished batches")
