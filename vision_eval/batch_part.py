"""One batch of one evaluator, finished: exactly one row per sample in batch order, scores checked, ``passed``
derived, rows whose calls were refused marked; the part the engine saves (:class:`~vision_eval.checkpoint.Part`).

Guarantees, whatever an evaluator does: every sample of the batch gets exactly one result row; rows the dataset
marks bad, rows missing a required value and rows whose images are unusable are ``error`` rows with the reason,
without reaching the evaluator (:mod:`vision_eval.prechecks`); an evaluator that raises is retried on chunks of
the batch, then single rows, so only the rows that make it raise are errors (:mod:`vision_eval.isolation`).
"""

from __future__ import annotations

import polars as pl

from vision_eval.checkpoint import Part
from vision_eval.evaluator import EvalOutput, Evaluator
from vision_eval.isolation import Report, arun_guarded, run_guarded
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


def make_part(
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
        inputs=dict(out.metric_inputs),
    )


def refusals(results: pl.DataFrame) -> tuple[pl.DataFrame, bool]:
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


def evaluate_batch(evaluator: Evaluator, batch: pl.DataFrame, report: Report | None = None) -> Part:
    """A vectorized evaluator's finished part for ``batch`` (``report``: told the rows settled while isolating)."""
    ready, positions, pre = split(evaluator, batch)
    out = run_guarded(evaluator, ready, report) if ready.height else _empty_output()
    return make_part(evaluator, batch, ready, positions, pre, out)


async def aevaluate_batch(evaluator: Evaluator, batch: pl.DataFrame, report: Report | None = None) -> Part:
    """An async evaluator's finished part for ``batch`` (``report``: as :func:`evaluate_batch`)."""
    ready, positions, pre = split(evaluator, batch)
    out = await arun_guarded(evaluator, ready, report) if ready.height else _empty_output()
    return make_part(evaluator, batch, ready, positions, pre, out)


def join_parts(parts: list[Part]) -> Part:
    """The parts of consecutive pieces of one batch as one part (rows in piece order, tables and metric inputs
    joined by name)."""
    if len(parts) == 1:
        return parts[0]

    def joined(frames: list[pl.DataFrame]) -> pl.DataFrame:
        return pl.concat(frames, how="diagonal_relaxed")

    def by_name(tables: list[dict[str, pl.DataFrame]]) -> dict[str, pl.DataFrame]:
        names = dict.fromkeys(name for table in tables for name in table)
        return {name: joined([t[name] for t in tables if name in t]) for name in names}

    conformed = [part.conformed() for part in parts]
    return Part(
        results=joined([p.results for p in conformed]),
        dimensions=joined([p.dimensions for p in conformed]),
        fields=joined([p.fields for p in conformed]),
        tables=by_name([p.tables for p in conformed]),
        inputs=by_name([p.inputs for p in conformed]),
    )
