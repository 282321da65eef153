"""The engine: config -> dataset frame -> evaluators -> result frames.

Guarantees, whatever an evaluator does: every selected sample gets exactly one result row
per evaluator; rows the dataset marks bad, rows missing a required value and rows whose
images are unusable are ``error`` rows with the reason, without reaching the evaluator; an
evaluator that raises is retried on halves of the batch, down to single rows, so only the rows
that make it raise are errors. Model-graded evaluators run in small batches, a few at a time
in dataset order, so progress and checkpoints advance steadily; rows whose calls the budget
refused are ``skipped`` and their batch is not checkpointed, so a resume finishes them.
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
from vision_eval.data import ROW_ERROR, check_columns
from vision_eval.errors import ConfigError
from vision_eval.evaluator import EvalOutput, Evaluator
from vision_eval.images.refs import image_error_expr
from vision_eval.llm.budget import BUDGET
from vision_eval.results import (
    DIMENSION_ROW_SCHEMA,
    ERROR,
    FIELD_ROW_SCHEMA,
    PROCESSED,
    RESULT_ROW_SCHEMA,
    SKIPPED,
    conform,
    empty,
    error_rows,
)

ROW_BY_ROW = 8
"""A failing sub-batch this small is re-run one row at a time (halving further costs more calls)."""
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


def _where_expr(evaluator: Evaluator) -> pl.Expr | None:
    where = evaluator.settings.where
    return pl.sql_expr(where) if where else None


def check_stack(frame: pl.DataFrame, evaluators: list[Evaluator], dataset_cfg: Any) -> None:
    """Fail before any work when a column is missing or a ``where`` filter is invalid."""
    check_columns(frame, {e.name: e.columns_needed() for e in evaluators}, dataset_cfg)
    for evaluator in evaluators:
        if not evaluator.settings.where:
            continue
        try:
            frame.head(0).filter(_where_expr(evaluator))  # type: ignore[arg-type]
        except Exception as exc:  # Polars raises several kinds for a bad predicate
            raise ConfigError(f"evaluators.{evaluator.name}.where", f"invalid filter: {exc}") from None


def _precheck(evaluator: Evaluator, batch: pl.DataFrame) -> pl.DataFrame:
    """``batch`` with ``_pre_status`` / ``_pre_reason`` set for rows that must not reach the evaluator."""
    checks: list[tuple[pl.Expr, str, pl.Expr]] = []
    if "candidate_error" in batch.columns:
        failed = pl.format("candidate generation failed: {}", pl.col("candidate_error"))
        checks.append((pl.col("candidate_error").is_not_null(), SKIPPED, failed))
    where = _where_expr(evaluator)
    if where is not None:
        reason = f"row not selected by where: {evaluator.settings.where}"
        checks.append((~where.fill_null(False), SKIPPED, pl.lit(reason)))
    if ROW_ERROR in batch.columns:
        checks.append((pl.col(ROW_ERROR).is_not_null(), ERROR, pl.col(ROW_ERROR)))
    for column in evaluator.columns_needed():
        if column == "images":
            checks.append((pl.col("images").list.len().fill_null(0) == 0, ERROR, pl.lit("row has no images")))
            checks.append((image_error_expr().is_not_null(), ERROR, image_error_expr()))
        else:
            checks.append((pl.col(column).is_null(), ERROR, pl.lit(f"{column} is missing")))
    if not checks:
        return batch.with_columns(
            pl.lit(None, pl.Utf8).alias("_pre_status"), pl.lit(None, pl.Utf8).alias("_pre_reason")
        )
    status: Any = pl
    reason: Any = pl
    for condition, label, why in checks:
        status = status.when(condition).then(pl.lit(label))
        reason = reason.when(condition).then(why)
    return batch.with_columns(
        status.otherwise(pl.lit(None, pl.Utf8)).alias("_pre_status"),
        reason.otherwise(pl.lit(None, pl.Utf8)).cast(pl.Utf8).alias("_pre_reason"),
    )


def _pre_rows(pre: pl.DataFrame) -> pl.DataFrame:
    rows = pre.select(
        pl.col("id").alias("sample_id"),
        pl.col("_pre_status").alias("status"),
        pl.when(pl.col("_pre_status") == ERROR).then(pl.col("_pre_reason")).alias("error"),
        pl.when(pl.col("_pre_status") == SKIPPED)
        .then(pl.struct(pl.col("_pre_reason").alias("reason")).struct.json_encode())
        .alias("details"),
    )
    return conform(rows, RESULT_ROW_SCHEMA)


def _concat(outputs: list[EvalOutput]) -> EvalOutput:
    return EvalOutput(
        results=pl.concat([o.results for o in outputs], how="vertical_relaxed"),
        dimensions=pl.concat([o.dimensions for o in outputs if o.dimensions is not None], how="vertical_relaxed"),
        fields=pl.concat([o.fields for o in outputs if o.fields is not None], how="vertical_relaxed"),
        tables={
            k: pl.concat([o.tables[k] for o in outputs if k in o.tables], how="diagonal_relaxed")
            for k in {k for o in outputs for k in o.tables}
        },
    )


def _failure(batch: pl.DataFrame, exc: BaseException) -> EvalOutput:
    reason = f"evaluator raised {type(exc).__name__}: {exc}"
    return EvalOutput(error_rows(batch["id"], reason, exception=type(exc).__name__)).conformed()


def _pieces(batch: pl.DataFrame) -> list[pl.DataFrame]:
    """How a failing batch is split: halves, or single rows once it is small."""
    if batch.height <= ROW_BY_ROW:
        return [batch[i : i + 1] for i in range(batch.height)]
    middle = batch.height // 2
    return [batch[:middle], batch[middle:]]


def _run_sync(evaluator: Evaluator, batch: pl.DataFrame) -> EvalOutput:
    try:
        return evaluator.evaluate(batch).conformed()
    except Exception as exc:  # an evaluator bug or bad row must not stop the run, nor cost a good row
        if batch.height <= 1:
            return _failure(batch, exc)
        return _concat([_run_sync(evaluator, piece) for piece in _pieces(batch)])


async def _run_async(evaluator: Evaluator, batch: pl.DataFrame) -> EvalOutput:
    try:
        return (await evaluator.aevaluate(batch)).conformed()
    except Exception as exc:
        if batch.height <= 1:
            return _failure(batch, exc)
        parts = await asyncio.gather(*(_run_async(evaluator, piece) for piece in _pieces(batch)))
        return _concat(list(parts))


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


def _split(evaluator: Evaluator, batch: pl.DataFrame) -> tuple[pl.DataFrame, pl.Series, pl.DataFrame]:
    """Rows for the evaluator, their positions in the batch, and the finished rows of the others."""
    checked = _precheck(evaluator, batch).with_row_index("_pos")
    held = pl.col("_pre_status").is_not_null()
    ready = checked.filter(~held).drop("_pre_status", "_pre_reason")
    held_rows = checked.filter(held)
    pre = _pre_rows(held_rows).with_columns(held_rows["_pos"])
    return ready.drop("_pos"), ready["_pos"], pre


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
        # The usual case: one row per ready sample, in order. Merge by position, no join needed.
        combined = pl.concat([pre, rows.with_columns(positions)], how="vertical_relaxed").sort("_pos").drop("_pos")
    else:
        combined = _align(batch["id"], pl.concat([pre.drop("_pos"), rows], how="vertical_relaxed"))
    dims = out.dimensions if out.dimensions is not None else empty(DIMENSION_ROW_SCHEMA)
    fields = out.fields if out.fields is not None else empty(FIELD_ROW_SCHEMA)
    return Part(
        results=_label(_finish(evaluator, combined), evaluator, with_type=True),
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
    return EvaluatorRun(evaluator, merged.results, merged.dimensions, merged.fields, tables, seconds, resumed)


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
            ready, positions, pre = _split(evaluator, batch)
            out = _run_sync(evaluator, ready) if ready.height else _empty_output()
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
                ready, positions, pre = _split(evaluator, batch)
                out = await _run_async(evaluator, ready) if ready.height else _empty_output()
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
