"""``field_accuracy``: structured extraction (invoices, forms, receipts) scored field by field.

A per-row rule (:class:`~vision_eval.rowwise.RowRule`): :func:`vision_eval.structured.field_row.field_row` scores
each distinct (output, expected_output) pair and writes one ``fields`` row per sample × field.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ClassVar, Literal

import polars as pl
from pydantic import Field

from vision_eval.evaluator import EvalOutput
from vision_eval.pool import process_pool
from vision_eval.registry import register
from vision_eval.rowwise import POOL_MIN_ROWS, EvaluatorSettings, RowResult, RowRule
from vision_eval.structured.field_row import RAW_LIMIT, FieldPlan, row_function
from vision_eval.structured.matching import FieldSpec

__all__ = ["RAW_LIMIT", "FieldAccuracy", "FieldAccuracySettings"]


class FieldAccuracySettings(EvaluatorSettings):
    """Settings of ``field_accuracy``."""

    fields: list[FieldSpec] = Field(min_length=1)
    """The fields to compare: ``path``, ``match``, ``required``, ``weight`` plus the match's own settings."""
    aggregation: Literal["weighted_average", "all_or_nothing"] = "weighted_average"
    """``weighted_average`` of field scores, or 1 only when every counted field is a hit."""


@register
class FieldAccuracy(RowRule[FieldAccuracySettings]):
    """Weighted share of fields of the JSON response that match the expected JSON object."""

    type_name: ClassVar[str] = "field_accuracy"
    settings_model = FieldAccuracySettings
    required_columns = ("output", "expected_output")
    row_columns = ("output", "expected_output")
    default_threshold = 0.8

    def row_function(self) -> Callable[..., RowResult]:
        return row_function(self.settings.fields, self.settings.aggregation)

    def workers(self) -> int:
        """``run.workers`` when set, else 1: handing a verdict over from a worker (pickling it with its fields,
        then reading it back in this process) costs about as much as scoring the row, so on two cores the pool
        scored 100k rows 1.5-2.5x slower than this process (``benchmarks/bench_field_accuracy.py --workers``)."""
        run = self.context.run
        configured = getattr(run, "workers", None) if run is not None else None
        return configured if configured is not None else 1

    def evaluate(self, batch: pl.DataFrame) -> EvalOutput:
        workers = self.workers()
        if workers > 1 and batch.height >= POOL_MIN_ROWS:
            # The pool's workers are forked before the collector is paused, so they keep theirs.
            process_pool(workers).submit(int).result()
        with _collector_paused():
            return super().evaluate(batch)

    def warm_up(self) -> None:
        """Prepare the fields (each date format's expression) and import what their rules use: rapidfuzz for
        fuzzy fields, python-dateutil for dates no format reads."""
        FieldPlan(self.settings.fields, self.settings.aggregation)
        if any(spec.match == "date" for spec in self.settings.fields):
            import dateutil.parser  # noqa: F401


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused: a batch's verdicts are hundreds of thousands of small objects
    without cycles, and every full collection would walk all of them again (scoring 100k rows took ~3x longer)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
