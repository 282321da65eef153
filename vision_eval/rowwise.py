"""Rules scored one row at a time: each distinct input scored once, large batches on a process pool.

A per-row rule (a code validator, field_accuracy, bbox_iou) is one plain function of a row's input values that
returns a :class:`RowResult`: the rule's definition. A rule may also be written on columns beside it, in its own
module, where a benchmark shows that pays (``ocr_validator`` on ASCII rows, the benchmark metrics'
``column_scores``); the rows that path cannot read as the definition does come here (:func:`handed_over`).
:class:`RowRule` turns the function into an evaluator: the batch's input columns are reduced to their distinct
combinations, each is scored once (in this process, or in chunks on :func:`vision_eval.pool.process_pool` when there
are many), and the verdicts are gathered back onto the rows by Polars.

The function must be picklable (a module-level function, or a ``functools.partial`` of one over plain settings) and
must not touch Polars: it may run in a worker process.
"""

from __future__ import annotations

import gc
import json
import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, NamedTuple

import polars as pl

from vision_eval.evaluator import EvalOutput, Evaluator, EvaluatorSettings, SettingsT
from vision_eval.pool import default_workers, process_pool
from vision_eval.pool import shutdown as shutdown_pool

POOL_MIN_ROWS = 20_000
"""Distinct inputs below which a batch is scored in this process: a pool's hand-over (pickling the inputs and the
verdicts) costs more than it saves on smaller batches (``benchmarks/bench_code_validators.py``)."""
CHUNKS_PER_WORKER = 4
"""Chunks handed to each worker of the pool: enough that a slow chunk does not leave the other workers idle."""


class FieldRow(NamedTuple):
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


class RowResult(NamedTuple):
    """The verdict on one row (a named tuple: cheap to build, and a batch of them is cheap to hand back from a
    worker process)."""

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


RESULT_COLUMNS = {"status": pl.Utf8, "score": pl.Float64, "details": pl.Utf8, "error": pl.Utf8, "passed": pl.Boolean}
"""The columns of the verdicts, in :class:`RowResult` order."""
FIELD_COLUMNS = {
    "_code": pl.UInt32,
    "path": pl.Utf8,
    "match": pl.Utf8,
    "expected": pl.Utf8,
    "actual": pl.Utf8,
    "score": pl.Float64,
    "hit": pl.Boolean,
    "reason": pl.Utf8,
}
"""The columns of the compared fields: the index of the verdict they belong to, then :class:`FieldRow`'s."""


@dataclass
class Verdicts:
    """A run of verdicts as columns."""

    columns: list[list[Any]]
    """One list per :data:`RESULT_COLUMNS` entry."""
    fields: list[list[Any]]
    """One list per :data:`FIELD_COLUMNS` entry (the index of the verdict each field belongs to first), in verdict
    order; empty when the rule compared no fields."""

    def frames(self) -> tuple[pl.DataFrame, pl.DataFrame | None]:
        """The verdicts and the compared fields as frames."""
        results = pl.DataFrame(dict(zip(RESULT_COLUMNS, self.columns)), schema=RESULT_COLUMNS)
        if not self.fields:
            return results, None
        return results, pl.DataFrame(dict(zip(FIELD_COLUMNS, self.fields)), schema=FIELD_COLUMNS)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused: a batch's verdicts are hundreds of thousands of small objects without
    cycles, and every full collection would walk all of them again (scoring 100k rows took ~3x longer)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _score_chunk(function: Callable[..., RowResult], rows: Sequence[tuple[Any, ...]], start: int = 0) -> Verdicts:
    """``function`` on each row; the fields' owner indexes count from ``start``."""
    with _collector_paused():
        verdicts = [function(*row) for row in rows]
        columns = [list(column) for column in zip(*verdicts)] or [[] for _ in RowResult._fields]
        owned = columns.pop()  # each verdict's fields
        flat = [f for compared in owned if compared for f in compared]
        if not flat:
            return Verdicts(columns, [])
        owners = [start + index for index, compared in enumerate(owned) if compared for _ in compared]
        return Verdicts(columns, [owners, *(list(column) for column in zip(*flat))])


def _arrow_table(schema: dict[str, Any], columns: list[list[Any]]) -> Any:
    """Columns of plain values as an Arrow table of ``schema``'s types."""
    import pyarrow as pa

    types = {pl.Utf8: pa.string(), pl.Float64: pa.float64(), pl.Boolean: pa.bool_(), pl.UInt32: pa.uint32()}
    return pa.table(
        {name: pa.array(column, type=types[dtype]) for (name, dtype), column in zip(schema.items(), columns)}
    )


def _score_chunk_arrow(
    function: Callable[..., RowResult], rows: Sequence[tuple[Any, ...]], start: int
) -> tuple[Any, Any]:
    """:func:`_score_chunk` in a worker process, handed back as Arrow tables (verdicts; fields or ``None``): their
    buffers pickle as a few large copies, where lists of Python values are pickled and unpickled one object at a
    time, the unpickling in the run's process while the workers wait for it."""
    verdicts = _score_chunk(function, rows, start)
    with _collector_paused():
        fields = _arrow_table(FIELD_COLUMNS, verdicts.fields) if verdicts.fields else None
        return _arrow_table(RESULT_COLUMNS, verdicts.columns), fields


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


def _score_on_pool(
    function: Callable[..., RowResult], rows: list[tuple[Any, ...]], workers: int
) -> tuple[pl.DataFrame, pl.DataFrame | None]:
    """:func:`_score_chunk` over chunks of ``rows`` on the process pool, as frames in ``rows`` order."""
    from concurrent.futures.process import BrokenProcessPool

    import pyarrow  # noqa: F401  # the verdicts come back as Arrow tables: imported before the pool forks its workers

    size = math.ceil(len(rows) / (workers * CHUNKS_PER_WORKER))
    starts = range(0, len(rows), size)
    chunks = [rows[start : start + size] for start in starts]
    try:
        parts = list(process_pool(workers).map(_score_chunk_arrow, [function] * len(chunks), chunks, starts))
    except BrokenProcessPool:
        shutdown_pool()  # a worker died (killed, out of memory): the next call starts a fresh pool
        raise
    results = pl.concat([pl.DataFrame(verdicts) for verdicts, _ in parts])
    compared = [pl.DataFrame(fields) for _, fields in parts if fields is not None]
    return results, pl.concat(compared) if compared else None


def score_rows(
    ids: pl.Series,
    inputs: pl.DataFrame,
    function: Callable[..., RowResult],
    workers: int = 1,
    pool_min_rows: int | None = None,
) -> EvalOutput:
    """``function`` on each row of ``inputs`` (its columns, in order, as the arguments), each distinct row once.

    Args:
        ids: the sample ids, one per row of ``inputs``.
        inputs: the columns the rule reads.
        function: the rule (picklable; no Polars inside).
        workers: processes to spread a large batch over (1: this process only).
        pool_min_rows: distinct rows from which the pool is used (default :data:`POOL_MIN_ROWS`).

    Returns:
        The result rows, and the ``fields`` rows when the rule compared any.
    """
    distinct, codes = _distinct(inputs)
    rows = distinct.rows()
    if workers > 1 and len(rows) >= (POOL_MIN_ROWS if pool_min_rows is None else pool_min_rows):
        results, fields = _score_on_pool(function, rows, workers)
    else:
        results, fields = _score_chunk(function, rows).frames()
    if codes is not None:
        results = results[codes]
    results = results.with_columns(ids.alias("sample_id"))
    if fields is None:
        return EvalOutput(results)
    owners = pl.DataFrame({"_code": codes if codes is not None else pl.Series(range(len(ids)), dtype=pl.UInt32)})
    owners = owners.with_columns(ids.alias("sample_id")).with_row_index("_row")
    # every owner's fields, owners in row order and each one's fields in the order the rule listed them
    fields = owners.join(fields.with_row_index("_order"), on="_code", how="inner").sort("_row", "_order")
    return EvalOutput(results, fields=fields.drop("_row", "_code", "_order"))


def handed_over(
    rows: pl.DataFrame, inputs: Sequence[str], function: Callable[..., RowResult], workers: int
) -> pl.DataFrame:
    """The result rows of the ``rows`` a column path leaves to its row function (``rows`` has ``_pos``,
    ``sample_id`` and the ``inputs`` columns, handed to ``function`` in that order), with their ``_pos``."""
    return score_rows(rows["sample_id"], rows.select(inputs), function, workers).results.with_columns(rows["_pos"])


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


__all__ = ["EvaluatorSettings", "FieldRow", "RowResult", "RowRule", "failed", "handed_over", "processed", "score_rows"]
