"""Code validators: ``count_validator``, ``ocr_validator``, ``json_validator``, ``chart_validator``.

Each is a :class:`~vision_eval.rowwise.RowRule`: one function of a row's values in :mod:`vision_eval.validators`
(``count_row``, ``ocr_row``, ``json_row``, ``chart_row``), its only implementation, shared with the standalone
scripts in ``evaluators/code-validators/``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from typing import Any, ClassVar, Literal

import polars as pl

from vision_eval.evaluator import EvalContext, Evaluator, EvaluatorSettings
from vision_eval.registry import register
from vision_eval.rowwise import RowResult, RowRule
from vision_eval.validators.chart import ChartOptions, chart_row
from vision_eval.validators.count import count_row
from vision_eval.validators.json_check import JsonOptions, json_row
from vision_eval.validators.ocr import OcrOptions, ocr_row


class CountValidatorSettings(EvaluatorSettings):
    """Settings of ``count_validator``."""


@register
class CountValidator(RowRule[CountValidatorSettings]):
    """Share of the expected (number, object) counts the response states exactly."""

    type_name: ClassVar[str] = "count_validator"
    required_columns = ("output", "expected_output")
    default_threshold = 1.0

    def row_function(self) -> Callable[..., RowResult]:
        return count_row


class OcrValidatorSettings(EvaluatorSettings):
    """Settings of ``ocr_validator``."""

    case_sensitive: bool = False
    """Compare case-sensitively."""
    normalize_whitespace: bool = True
    """Collapse runs of whitespace (including newlines) and trim before comparing."""
    strip_punctuation: bool = True
    """Ignore punctuation when comparing."""
    scorer: Literal["ratio", "token_sort_ratio", "token_set_ratio"] = "ratio"
    """rapidfuzz similarity: ``ratio`` (character level, order matters) or a token-based one."""
    similarity_weight: float = 0.7
    """Weight of text similarity in the score when keywords are given."""
    keyword_weight: float = 0.3
    """Weight of keyword accuracy (share of keywords found) when keywords are given."""
    keywords: list[str] | None = None
    """Keywords for every row; ``None`` reads the row's ``keywords`` column when there is one."""


@register
class OcrValidator(RowRule[OcrValidatorSettings]):
    """Normalized text similarity with ``expected_output``, blended with keyword accuracy."""

    type_name: ClassVar[str] = "ocr_validator"
    required_columns = ("output", "expected_output")
    row_columns = ("output", "expected_output", "keywords")
    default_threshold = 0.9

    def row_inputs(self, batch: pl.DataFrame) -> pl.DataFrame:
        inputs = super().row_inputs(batch)
        # Configured keywords replace the column: without it, equal texts are scored once.
        return inputs.with_columns(pl.lit(None).alias("keywords")) if self.settings.keywords is not None else inputs

    def row_function(self) -> Callable[..., RowResult]:
        s = self.settings
        opts = OcrOptions(
            case_sensitive=s.case_sensitive,
            normalize_whitespace=s.normalize_whitespace,
            strip_punctuation=s.strip_punctuation,
            scorer=s.scorer,
            similarity_weight=s.similarity_weight,
            keyword_weight=s.keyword_weight,
            keywords=tuple(s.keywords) if s.keywords is not None else None,
        )
        return partial(ocr_row, opts=opts)


class JsonValidatorSettings(EvaluatorSettings):
    """Settings of ``json_validator``."""

    json_schema: dict[str, Any] | None = None
    """JSON Schema the response must satisfy; ``None`` infers one from ``expected_output``
    (its keys required, its types enforced)."""
    compare_values: bool = True
    """Compare leaf values with ``expected_output`` (otherwise only presence and types count)."""
    number_tolerance: float = 0.0
    """Relative tolerance for numbers (0: equal as numbers, so 960 == 960.0)."""
    case_sensitive: bool = False
    """Compare strings case-sensitively (whitespace is always collapsed)."""
    require_valid_schema: bool = True
    """A response that breaks the schema does not pass, whatever its score."""
    require_expected: bool = False
    """Error rows without ``expected_output`` instead of validating them against ``json_schema`` alone."""


@register
class JsonValidator(RowRule[JsonValidatorSettings]):
    """JSON in the response: parses, satisfies the schema, and matches ``expected_output`` field by field."""

    type_name: ClassVar[str] = "json_validator"
    required_columns = ("output",)
    default_threshold = 1.0

    def __init__(self, name: str, settings: JsonValidatorSettings, context: EvalContext | None = None) -> None:
        super().__init__(name, settings, context)
        s = settings
        if s.json_schema is not None:
            from jsonschema import Draft202012Validator
            from jsonschema.exceptions import SchemaError

            try:
                Draft202012Validator.check_schema(s.json_schema)
            except SchemaError as exc:
                raise ValueError(f"json_schema: invalid JSON Schema: {exc.message}") from None

    def columns_needed(self) -> tuple[str, ...]:
        s = self.settings
        return ("output", "expected_output") if s.json_schema is None or s.require_expected else ("output",)

    def row_function(self) -> Callable[..., RowResult]:
        s = self.settings
        opts = JsonOptions(
            schema=json.dumps(s.json_schema, sort_keys=True) if s.json_schema is not None else None,
            compare_values=s.compare_values,
            number_tolerance=s.number_tolerance,
            case_sensitive=s.case_sensitive,
            require_valid_schema=s.require_valid_schema,
        )
        return partial(json_row, opts=opts)


class ChartValidatorSettings(EvaluatorSettings):
    """Settings of ``chart_validator``."""

    currency_tolerance: float = 0.15
    """Relative tolerance for currency values (0.15: within 15% of the expected value)."""
    percent_tolerance: float = 0.0
    """Absolute tolerance for percentages, in percentage points (0: exact)."""
    zero_tolerance: float = 0.0
    """Absolute tolerance for an expected currency value of 0 (a relative one is meaningless there)."""


@register
class ChartValidator(RowRule[ChartValidatorSettings]):
    """Share of the expected currency values, percentages and dates the response states."""

    type_name: ClassVar[str] = "chart_validator"
    required_columns = ("output", "expected_output")
    default_threshold = 0.9

    def row_function(self) -> Callable[..., RowResult]:
        s = self.settings
        return partial(chart_row, opts=ChartOptions(s.currency_tolerance, s.percent_tolerance, s.zero_tolerance))


VALIDATOR_TYPES: dict[str, type[Evaluator]] = {
    "count": CountValidator,
    "ocr": OcrValidator,
    "json": JsonValidator,
    "chart": ChartValidator,
}
"""Script name -> built-in evaluator class (used by the standalone scripts)."""
