"""Rules scored one row at a time: each distinct input scored once, large batches on a process pool.

A per-row rule (a code validator, field_accuracy, bbox_iou) is one plain function of a row's input values that
returns a :class:`RowResult`. It is the rule's only implementation. :class:`RowRule` turns it into an evaluator:
the batch's input columns are reduced to their distinct combinations, each is scored once (in this process, or in
chunks on :func:`vision_eval.pool.process_pool` when there are many), and the verdicts are gathered back onto the
rows by Polars.

The function must be picklable (a module-level function, or a ``functools.partial`` of one over plain settings) and
must not touch Polars: it may run in a worker process.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import polars as pl

from vision_eval.evaluator import EvalOutput, Evaluator, EvaluatorSettings, SettingsT
from vision_eval.pool import default_workers, process_pool

POOL_MIN_ROWS = 20_000
"""Distinct inputs below which a batch is scored in this process: a pool's hand-over (pickling the inputs and the
verdicts) costs more than it saves on smaller batches (``benchmarks/bench_code_validators.py``)."""
CHUNKS_PER_WORKER = 4
"""Chunks handed to each worker of the pool: enough that a slow chunk does not leave the other workers idle."""


@dataclass(frozen=True)
class FieldRow:
    """One compared field of a row (a row of ``fields.parquet``)."""

    path: str
    match: str
    expected: str | None
    """The expected value as JSON text (``None``: absent)."""
    actual: str | None
    """The response's value as JSON text (``None``: absent)."""
    score: float | None
    """1 or 0 for a compared field, ``None`` when the field is left out."""
    hit: bool | None
    reason: str


@dataclass(frozen=True)
class RowResult:
    """The verdict on one row."""

    status: Literal["processed", "error", "skipped"]
    score: float | None = None
    """In 0..1 when processed."""
    details: str | None = None
    """JSON text (see each rule's details)."""
    error: str | None = None
    """Why the row could not be scored."""
    passed: bool | None = None
    """False when the rule fails the row whatever its score (json_validator's schema); else unset."""
    fields: tuple[FieldRow, ...] = ()
    """The fields the rule compared (field_accuracy), in order."""


def failed(reason: str) -> RowResult:
    """An ``error`` verdict with its reason."""
    return RowResult("error", error=reason)


def processed(score: float, details: dict[str, Any] | str, passed: bool | None = None) -> RowResult:
    """A scored verdict; ``details`` as a dict is written as JSON once here."""
    text = details if isinstance(details, str) else json.dumps(details, ensure_ascii=False)
    return RowResult("processed", score, text, passed=passed)


def _score_chunk(function: Callable[..., RowResult], rows: Sequence[tuple[Any, ...]]) -> list[RowResult]:
    return [function(*row) for row in rows]


_DEDUPABLE = (pl.Utf8, pl.String, pl.Int64, pl.Int32, pl.Float64, pl.Boolean, pl.Null)


def _distinct(inputs: pl.DataFrame) -> tuple[pl.DataFrame, pl.Series | None]:
    """The distinct input combinations and each row's index among them (``None``: every row is its own).

    Only plain columns (text, numbers, booleans) are joined on; inputs with nested values are scored row by row."""
    if inputs.height < 2 or not all(isinstance(dtype, _DEDUPABLE) for dtype in inputs.dtypes):
        return inputs, None
    distinct = inputs.unique(maintain_order=True)
    if distinct.height == inputs.height:
        return inputs, None
    index = distinct.with_row_index("_code")
    codes = inputs.join(index, on=inputs.columns, how="left", nulls_equal=True, maintain_order="left")["_code"]
    return distinct, codes


def score_rows(
    ids: pl.Series,
    inputs: pl.DataFrame,
    function: Callable[..., RowResult],
    workers: int = 1,
    pool_min_rows: int = POOL_MIN_ROWS,
) -> EvalOutput:
    """``function`` on each row of ``inputs`` (its columns, in order, as the arguments), each distinct row once.

    Args:
        ids: the sample ids, one per row of ``inputs``.
        inputs: the columns the rule reads.
        function: the rule (picklable; no Polars inside).
        workers: processes to spread a large batch over (1: this process only).
        pool_min_rows: distinct rows from which the pool is used.

    Returns:
        The result rows, and the ``fields`` rows when the rule compared any.
    """
    distinct, codes = _distinct(inputs)
    rows = distinct.rows()
    if workers > 1 and len(rows) >= pool_min_rows:
        size = math.ceil(len(rows) / (workers * CHUNKS_PER_WORKER))
        chunks = [rows[i : i + size] for i in range(0, len(rows), size)]
        pool = process_pool(workers)
        verdicts = [v for part in pool.map(_score_chunk, [function] * len(chunks), chunks) for v in part]
    else:
        verdicts = _score_chunk(function, rows)
    results = pl.DataFrame(
        {
            "status": [v.status for v in verdicts],
            "score": [v.score for v in verdicts],
            "passed": [v.passed for v in verdicts],
            "details": [v.details for v in verdicts],
            "error": [v.error for v in verdicts],
        },
        schema={"status": pl.Utf8, "score": pl.Float64, "passed": pl.Boolean, "details": pl.Utf8, "error": pl.Utf8},
    )
    fields = _fields(verdicts)
    if codes is not None:
        results = results[codes]
    results = results.with_columns(ids.alias("sample_id"))
    if fields is None:
        return EvalOutput(results)
    owners = pl.DataFrame({"_code": codes if codes is not None else pl.Series(range(len(ids)), dtype=pl.UInt32)})
    owners = owners.with_columns(ids.alias("sample_id")).with_row_index("_row")
    fields = owners.join(fields, on="_code", how="inner").sort("_row", "_order").drop("_row", "_code", "_order")
    return EvalOutput(results, fields=fields)


def _fields(verdicts: list[RowResult]) -> pl.DataFrame | None:
    """The compared fields of every distinct row, keyed by its index (``_code``) and their order (``_order``)."""
    if not any(v.fields for v in verdicts):
        return None
    owned = [(code, order, f) for code, v in enumerate(verdicts) for order, f in enumerate(v.fields)]
    return pl.DataFrame(
        {
            "_code": [code for code, _, _ in owned],
            "_order": [order for _, order, _ in owned],
            "path": [f.path for _, _, f in owned],
            "match": [f.match for _, _, f in owned],
            "expected": [f.expected for _, _, f in owned],
            "actual": [f.actual for _, _, f in owned],
            "score": [f.score for _, _, f in owned],
            "hit": [f.hit for _, _, f in owned],
            "reason": [f.reason for _, _, f in owned],
        },
        schema={
            "_code": pl.UInt32,
            "_order": pl.Int64,
            "path": pl.Utf8,
            "match": pl.Utf8,
            "expected": pl.Utf8,
            "actual": pl.Utf8,
            "score": pl.Float64,
            "hit": pl.Boolean,
            "reason": pl.Utf8,
        },
    )


class RowRule(Evaluator[SettingsT]):
    """An evaluator whose rule is one function of each row's values (see the module docstring).

    Subclasses set ``row_columns`` (the columns handed to the function, in order; a column the batch lacks is
    handed as ``None``) and implement :meth:`row_function`."""

    row_columns: ClassVar[tuple[str, ...]] = ("output", "expected_output")

    def row_function(self) -> Callable[..., RowResult]:
        """The rule over one row's values, settings bound (picklable)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement row_function()")

    def row_inputs(self, batch: pl.DataFrame) -> pl.DataFrame:
        """The columns handed to the function (``row_columns``; absent ones as nulls)."""
        return batch.select(
            pl.col(name) if name in batch.columns else pl.lit(None).alias(name) for name in self.row_columns
        )

    def workers(self) -> int:
        """Processes a large batch is spread over: ``run.workers``, else the machine's cores."""
        run = self.context.run
        configured = getattr(run, "workers", None) if run is not None else None
        return configured if configured is not None else default_workers()

    def evaluate(self, batch: pl.DataFrame) -> EvalOutput:
        return score_rows(batch["id"], self.row_inputs(batch), self.row_function(), self.workers())


__all__ = ["EvaluatorSettings", "FieldRow", "RowResult", "RowRule", "failed", "processed", "score_rows"]
