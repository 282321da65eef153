"""An evaluator that raises is re-run on halves of the batch, down to single rows, so only the rows that make it
raise are ``error`` rows (each with its own exception) and no good row ever carries another row's error."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import polars as pl

from vision_eval.evaluator import EvalOutput, Evaluator
from vision_eval.results import ERROR, to_json

ROW_BY_ROW = 8
"""A failing sub-batch this small is re-run one row at a time (halving further costs more calls)."""


def concat_outputs(outputs: list[EvalOutput]) -> EvalOutput:
    """One output from the outputs of several sub-batches (each may have its own columns), conformed once."""
    return EvalOutput(
        results=pl.concat([o.results for o in outputs], how="diagonal_relaxed"),
        dimensions=pl.concat([o.dimensions for o in outputs if o.dimensions is not None], how="diagonal_relaxed")
        if any(o.dimensions is not None for o in outputs)
        else None,
        fields=pl.concat([o.fields for o in outputs if o.fields is not None], how="diagonal_relaxed")
        if any(o.fields is not None for o in outputs)
        else None,
        tables={
            k: pl.concat([o.tables[k] for o in outputs if k in o.tables], how="diagonal_relaxed")
            for k in {k for o in outputs for k in o.tables}
        },
        metric_inputs={
            k: pl.concat([o.metric_inputs[k] for o in outputs if k in o.metric_inputs], how="diagonal_relaxed")
            for k in {k for o in outputs for k in o.metric_inputs}
        },
    ).conformed()


@dataclass
class _Isolation:
    """What isolating the rows that make an evaluator raise collects: the sub-batches' outputs and, per row
    that raises on its own, its id and exception (frames are built once, at the end)."""

    outputs: list[EvalOutput]
    ids: list[str]
    errors: list[BaseException]

    def output(self) -> EvalOutput:
        if self.ids:
            reasons = [f"evaluator raised {type(e).__name__}: {e}" for e in self.errors]
            details = [to_json({"exception": type(e).__name__}) for e in self.errors]
            frame = pl.DataFrame({"sample_id": self.ids, "error": reasons, "details": details})
            self.outputs.append(EvalOutput(frame.with_columns(pl.lit(ERROR).alias("status"))))
        return concat_outputs(self.outputs)


def _pieces(batch: pl.DataFrame) -> list[pl.DataFrame]:
    """How a failing batch is split: halves, or single rows once it is small."""
    if batch.height <= ROW_BY_ROW:
        return [batch[i : i + 1] for i in range(batch.height)]
    middle = batch.height // 2
    return [batch[:middle], batch[middle:]]


def run_guarded(evaluator: Evaluator, batch: pl.DataFrame) -> EvalOutput:
    try:
        return evaluator.evaluate(batch).conformed()
    except Exception:  # an evaluator bug or bad row must not stop the run, nor cost a good row
        found = _Isolation([], [], [])
        for piece in _pieces(batch):
            _isolate_sync(evaluator, piece, found)
        return found.output()


def _isolate_sync(evaluator: Evaluator, batch: pl.DataFrame, found: _Isolation) -> None:
    try:
        found.outputs.append(evaluator.evaluate(batch))
    except Exception as exc:
        if batch.height <= 1:
            found.ids.append(str(batch["id"][0]))
            found.errors.append(exc)
            return
        for piece in _pieces(batch):
            _isolate_sync(evaluator, piece, found)


async def arun_guarded(evaluator: Evaluator, batch: pl.DataFrame) -> EvalOutput:
    try:
        return (await evaluator.aevaluate(batch)).conformed()
    except Exception:
        found = _Isolation([], [], [])
        await asyncio.gather(*(_isolate_async(evaluator, piece, found) for piece in _pieces(batch)))
        return found.output()


async def _isolate_async(evaluator: Evaluator, batch: pl.DataFrame, found: _Isolation) -> None:
    try:
        found.outputs.append(await evaluator.aevaluate(batch))
    except Exception as exc:
        if batch.height <= 1:
            found.ids.append(str(batch["id"][0]))
            found.errors.append(exc)
            return
        await asyncio.gather(*(_isolate_async(evaluator, piece, found) for piece in _pieces(batch)))
