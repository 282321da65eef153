"""``field_accuracy``: structured extraction (invoices, forms, receipts) scored field by field.

A per-row rule (:class:`~vision_eval.rowwise.RowRule`): :func:`vision_eval.evaluators.fields.field_row.field_row` scores
each distinct (output, expected_output) pair and writes one ``fields`` row per sample × field.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar, Literal

from pydantic import Field

from vision_eval.evaluators.fields.field_row import RAW_LIMIT, FieldPlan, row_function
from vision_eval.evaluators.fields.matching import FieldSpec
from vision_eval.example import Example
from vision_eval.rowwise import EvaluatorSettings, RowResult, RowRule

__all__ = ["RAW_LIMIT", "FieldAccuracy", "FieldAccuracySettings"]


class FieldAccuracySettings(EvaluatorSettings):
    """Settings of ``field_accuracy``."""

    fields: list[FieldSpec] = Field(min_length=1)
    """The fields to compare: ``path``, ``match``, ``required``, ``weight`` plus the match's own settings."""
    aggregation: Literal["weighted_average", "all_or_nothing"] = "weighted_average"
    """``weighted_average`` of field scores, or 1 only when every counted field is a hit."""


class FieldAccuracy(RowRule[FieldAccuracySettings]):
    """Weighted share of fields of the JSON response that match the expected JSON object."""

    type_name: ClassVar[str] = "field_accuracy"
    example: ClassVar[Example] = Example(
        {
            "type": "field_accuracy",
            "fields": [
                {"path": "vendor", "match": "fuzzy"},
                {"path": "total", "match": "numeric_tolerance", "tolerance": 0.01},
                {"path": "date", "match": "date"},
            ],
        },
        [
            {
                "id": "a",
                "output": '```json\n{"vendor": "ACME Corp", "total": 42.0, "date": "2024-03-05"}\n```',
                "expected_output": '{"vendor": "Acme Corp.", "total": 42, "date": "March 5, 2024"}',
            },
            {
                "id": "b",
                "output": '{"vendor": "Acme", "total": 40}',
                "expected_output": '{"vendor": "Acme Corp.", "total": 42, "date": "2024-03-05"}',
            },
        ],
    )
    settings_model = FieldAccuracySettings
    required_columns = ("output", "expected_output")
    row_columns = ("output", "expected_output")
    default_threshold = 0.8

    def row_function(self) -> Callable[..., RowResult]:
        return row_function(self.settings.fields, self.settings.aggregation)

    def warm_up(self) -> None:
        """Prepare the fields (each date format's expression) and import what their rules use: rapidfuzz for
        fuzzy fields, python-dateutil for dates no format reads."""
        FieldPlan(self.settings.fields, self.settings.aggregation)
        if any(spec.match == "date" for spec in self.settings.fields):
            import dateutil.parser  # noqa: F401
