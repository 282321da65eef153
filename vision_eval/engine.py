"""The engine: config -> dataset frame -> evaluators -> result frames.

Guarantees, whatever an evaluator does: every selected sample gets exactly one result row
per evaluator; rows the dataset marks bad, rows missing a required value and rows whose
images are unusable are ``error`` rows with the reason, without reaching the evaluator
(:mod:`vision_eval.prechecks`); an evaluator that raises is retried on halves of the batch, down
to single rows, so only the rows that make it raise are errors (:mod:`vision_eval.isolation`).
Model-graded evaluators run in small batches, a few at a time in dataset order, so progress and
checkpoints advance steadily; rows whose calls the budget refused are ``skipped`` and their batch
is not checkpointed, so a resume finishes them.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import polars as pl

from vision_eval.checkpoint import Checkpoints, Part
from vision_eval.evaluator import EvalOutput, Evaluator
from vision_eval.isolation import arun_guarded, run_guarded
from vision_eval.llm.budget import BUDGET
from vision_eval.prechecks import in_batch_order, split
from vision_eval.results import (
    DIMENSION_ROW_SCHEMA,
    ERROR,
    FIELD_ROW_SCHEMA,
    PROCESSED,
    RESULT_ROW_SCHEMA,
    SKIPPED,
    conform,
    empty,
)
from vision_eval.summary import summarize_one

ASYNC_BATCH_ROWS = 64
"""Most rows per batch of a model-graded evaluator (its calls are what progress and a resume count)."""
ASYNC_STEPS = 50
"""Fewest batches a model-graded evaluator's run is split into (when it has the rows), so progress moves."""
ASYNC_WINDOW_CALLS = 4
"""Batches of a model-graded evaluator in flight: enough rows for this many times the run's concurrency."""


class Reporter(Protocol):
    """What the engine tells about progress (see :class:`vision_eval.progress.Progress`)."""

    def begin(self, name: str) -> None: ...
    def advance_batch(self, name: str, results: pl.DataFrame) -> None: ...
    def end(self, name: str) -> None: ...


class _Silent:
    def begin(self, name: str) -> None:
        return None

    def advance_batch(self, name: str, results: pl.DataFrame) -> None:
        return None

    def end(self, name: str) -> None:
        return None


def _align(ids: pl.Series, results: pl.DataFrame) -> pl.DataFrame:
    """One row per id, in ``ids`` order: unknown ids dropped, repeats after the first dropped, gaps null."""
    known = pl.DataFrame({"sample_id": ids})
    results = results.unique("sample_id", keep="first", maintain_order=True)
    return known.join(results, on="sample_id", how="left", maintain_order="left")


def _finish(evaluator: Evaluator, results: pl.DataFrame) -> pl.DataFrame:
    """Well-formed rows: gaps become errors, bad scores are rejected, ``passed`` is derived."""
    score = pl.col("score")
    bad = (
        pl.when(pl.col("status").is_null() & score.is_null())
        .then(pl.lit("evaluator returned no result for this row"))
        .when((pl.col("status") == PROCESSED) & score.is_null())
        .then(pl.lit("evaluator marked the row processed without a score"))
        .when(score.is_not_null() & (score.is_nan() | (score < 0) | (score > 1)))
        .then(pl.format("evaluator returned score {} outside 0..1", score))
        .when(pl.col("status").is_not_null() & ~pl.col("status").is_in([PROCESSED, ERROR, SKIPPED]))
        .then(pl.format("evaluator returned unknown status {}", pl.col("status")))
    )
    results = results.with_columns(bad.alias("_bad"))
    status = pl.when(pl.col("_bad").is_not_null()).then(pl.lit(ERROR)).otherwise(pl.col("status").fill_null(PROCESSED))
    results = results.with_columns(status.alias("status"), pl.coalesce("_bad", "error").alias("error")).drop("_bad")
    processed = pl.col("status") == PROCESSED
    threshold = evaluator.threshold
    derived = pl.col("score") >= threshold if threshold is not None else pl.col("score") >= 1.0
    return results.with_columns(
        pl.when(processed).then(pl.col("score")).alias("score"),
        pl.when(processed).then(pl.coalesce("passed", derived)).alias("passed"),
        pl.when(pl.col("status") == ERROR).then(pl.col("error")).alias("error"),
    )


def _label(frame: pl.DataFrame, evaluator: Evaluator, with_type: bool) -> pl.DataFrame:
    columns = [pl.lit(evaluator.name).alias("evaluator")]
    if with_type:
        columns += [
            pl.lit(evaluator.type_name).alias("type"),
            pl.lit(evaluator.threshold, pl.Float64).alias("threshold"),
        ]
    return frame.with_columns(columns)


@dataclass
class EvaluatorRun:
    """All output of one evaluator over the dataset."""

    evaluator: Evaluator
    results: pl.DataFrame
    dimensions: pl.DataFrame
    fields: pl.DataFrame
    tables: dict[str, pl.DataFrame]
    seconds: float
    resumed_batches: int = 0
    summary: pl.DataFrame | None = None
    """Its summary row (counts by status, mean score, pass rate, tokens, cost)."""


def _part(
    evaluator: Evaluator,
    batch: pl.DataFrame,
    ready: pl.DataFrame,
    positions: pl.Series,
    pre: pl.DataFrame,
    out: EvalOutput,
) -> Part:
    """The finished, labelled output of one batch, in batch order."""
    rows = conform(out.results, RESULT_ROW_SCHEMA)
    if rows.height == ready.height and rows["sample_id"].equals(ready["id"], check_names=False):
        # The usual case: one row per ready sample, in order. The held-back rows are final already; a gather
        # by position restores batch order (no join).
        finished = _finish(evaluator, rows).with_columns(positions)
        combined = in_batch_order(batch, pl.concat([pre, finished], how="vertical_relaxed"))
    else:
        combined = _finish(evaluator, _align(batch["id"], pl.concat([pre.drop("_pos"), rows], how="vertical_relaxed")))
    dims = out.dimensions if out.dimensions is not None else empty(DIMENSION_ROW_SCHEMA)
    fields = out.fields if out.fields is not None else empty(FIELD_ROW_SCHEMA)
    return Part(
        results=_label(combined, evaluator, with_type=True),
        dimensions=_label(dims, evaluator, with_type=False),
        fields=_label(fields, evaluator, with_type=False),
        tables=dict(out.tables),
    )


def _refusals(results: pl.DataFrame) -> tuple[pl.DataFrame, bool]:
    """Rows whose calls were refused (``details.not_attempted``): budget refusals become ``skipped`` rows
    saying so; returns the rows and whether any call was refused (such a batch is not checkpointed)."""
    if results["details"].null_count() == results.height:
        return results, False
    kind = pl.col("details").str.json_path_match("$.not_attempted")
    flags = results.select(kind.alias("kind"))["kind"]
    if flags.null_count() == flags.len():
        return results, False
    budget = (pl.col("status") == ERROR) & (kind == BUDGET)
    reason = pl.struct(pl.col("error").alias("reason"), kind.alias("not_attempted")).struct.json_encode()
    results = results.with_columns(
        pl.when(budget).then(pl.lit(SKIPPED)).otherwise(pl.col("status")).alias("status"),
        pl.when(budget).then(reason).otherwise(pl.col("details")).alias("details"),
        pl.when(budget).then(pl.lit(None, pl.Utf8)).otherwise(pl.col("error")).alias("error"),
    )
    return results, True


def _empty_output() -> EvalOutput:
    return EvalOutput(empty(RESULT_ROW_SCHEMA)).conformed()


def _collect(evaluator: Evaluator, parts: list[Part], seconds: float, resumed: int) -> EvaluatorRun:
    merged = Part.concat(parts)
    tables = dict(merged.tables)
    tables.update(evaluator.finalize(merged.results, merged.dimensions))
    summary = summarize_one(merged.results, evaluator.name, evaluator.type_name)
    return EvaluatorRun(evaluator, merged.results, merged.dimensions, merged.fields, tables, seconds, resumed, summary)


def _batches(frame: pl.DataFrame, size: int) -> list[pl.DataFrame]:
    return [frame[i : i + size] for i in range(0, max(frame.height, 1), max(size, 1))] if frame.height else [frame]


def _identity(frame: pl.DataFrame) -> pl.DataFrame:
    return frame


def run_sync(
    evaluator: Evaluator,
    frame: pl.DataFrame,
    batch_size: int,
    progress: Reporter | None = None,
    store: Checkpoints | None = None,
    scrub: Callable[[pl.DataFrame], pl.DataFrame] = _identity,
) -> EvaluatorRun:
    """Run a vectorized evaluator over the frame in batches (each checkpointed when a store is given)."""
    start = time.perf_counter()
    store = store or Checkpoints(None)
    progress = progress or _Silent()
    progress.begin(evaluator.name)
    parts, resumed = [], 0
    for batch in _batches(frame, batch_size):
        part = store.load(evaluator, batch)
        if part is None:
            ready, positions, pre = split(evaluator, batch)
            out = run_guarded(evaluator, ready) if ready.height else _empty_output()
            part = _part(evaluator, batch, ready, positions, pre, out)
            part.results = scrub(part.results)
            store.save(evaluator, batch, part)
        else:
            resumed += 1
        parts.append(part)
        progress.advance_batch(evaluator.name, part.results)
    progress.end(evaluator.name)
    return _collect(evaluator, parts, time.perf_counter() - start, resumed)


async def run_async(
    evaluator: Evaluator,
    frame: pl.DataFrame,
    batch_size: int,
    progress: Reporter | None = None,
    store: Checkpoints | None = None,
    scrub: Callable[[pl.DataFrame], pl.DataFrame] = _identity,
) -> EvaluatorRun:
    """Run an async evaluator over the frame, a few batches in flight in dataset order, each checkpointed once
    every row in it is final; an evaluator that calls models gets small batches."""
    start = time.perf_counter()
    store = store or Checkpoints(None)
    progress = progress or _Silent()
    progress.begin(evaluator.name)
    resumed = 0
    size = batch_size
    if evaluator.calls_models:
        size = max(1, min(batch_size, ASYNC_BATCH_ROWS, math.ceil(frame.height / ASYNC_STEPS)))
    concurrency = getattr(evaluator.context.run, "concurrency", 16) if evaluator.context.run is not None else 16
    batches = _batches(frame, size)
    window = asyncio.Semaphore(max(3, math.ceil(ASYNC_WINDOW_CALLS * concurrency / size) + 1))
    if evaluator.calls_models and any(getattr(m, "batch", False) for m in evaluator.models()):
        from vision_eval.llm.batches import joins_batch_jobs

        if joins_batch_jobs(evaluator.models()):  # a provider batch job is sent once its rows are in: all may wait
            window = asyncio.Semaphore(len(batches))

    async def one(batch: pl.DataFrame) -> Part:
        nonlocal resumed
        async with window:
            part = store.load(evaluator, batch)
            if part is None:
                ready, positions, pre = split(evaluator, batch)
                out = await arun_guarded(evaluator, ready) if ready.height else _empty_output()
                part = _part(evaluator, batch, ready, positions, pre, out)
                part.results, refused = _refusals(scrub(part.results))
                if not refused:
                    store.save(evaluator, batch, part)
            else:
                resumed += 1
        progress.advance_batch(evaluator.name, part.results)
        return part

    parts = await asyncio.gather(*(one(batch) for batch in batches))
    progress.end(evaluator.name)
    return _collect(evaluator, list(parts), time.perf_counter() - start, resumed)


def run_coroutine(factory: Callable[[], Any]) -> Any:
    """``asyncio.run`` that also works when called from inside a running loop (notebooks)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(factory())
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(lambda: asyncio.run(factory())).result()


def run_stack(
    evaluators: list[Evaluator],
    frame: pl.DataFrame,
    batch_size: int,
    progress: Reporter | None = None,
    store: Checkpoints | None = None,
    scrub: Callable[[pl.DataFrame], pl.DataFrame] = _identity,
) -> list[EvaluatorRun]:
    """Every evaluator over the frame: vectorized ones first, then all async ones on one loop."""
    runs: dict[str, EvaluatorRun] = {}
    for evaluator in evaluators:
        if not evaluator.is_async:
            runs[evaluator.name] = run_sync(evaluator, frame, batch_size, progress, store, scrub)
    pending = [e for e in evaluators if e.is_async]
    if pending:

        async def all_async() -> list[EvaluatorRun]:
            return list(
                await asyncio.gather(*(run_async(e, frame, batch_size, progress, store, scrub) for e in pending))
            )

        for run in run_coroutine(all_async):
            runs[run.evaluator.name] = run
    return [runs[e.name] for e in evaluators]
