"""Plain text assertions, vectorized: ``exact_match``, ``contains``, ``regex``."""

from __future__ import annotations

import re
from typing import ClassVar, Literal

import polars as pl

from vision_eval.evaluator import EvalContext, EvalOutput, Evaluator, EvaluatorSettings
from vision_eval.example import Example
from vision_eval.results import PROCESSED


def normalized(expr: pl.Expr, case_sensitive: bool, collapse_whitespace: bool) -> pl.Expr:
    """Text normalized for comparison: optional lowercasing, whitespace collapsed and trimmed."""
    if not case_sensitive:
        expr = expr.str.to_lowercase()
    if collapse_whitespace:
        expr = expr.str.replace_all(r"\s{2,}|[^\S ]", " ").str.strip_chars()  # same as \s+ -> " ", faster
    return expr


class ExactMatchSettings(EvaluatorSettings):
    """Settings of ``exact_match``."""

    case_sensitive: bool = False
    """Compare case-sensitively."""
    collapse_whitespace: bool = True
    """Collapse runs of whitespace and trim both ends before comparing."""


_TEXT_ROWS = [
    {"id": "a", "output": "5 bottles", "expected_output": "5 bottles"},
    {"id": "b", "output": "three cans", "expected_output": "3 cans"},
]


class ExactMatch(Evaluator[ExactMatchSettings]):
    """1 when ``output`` equals ``expected_output`` after normalization, else 0."""

    type_name: ClassVar[str] = "exact_match"
    example: ClassVar[Example] = Example({"type": "exact_match"}, _TEXT_ROWS)
    required_columns = ("output", "expected_output")

    def evaluate(self, batch: pl.DataFrame) -> EvalOutput:
        s = self.settings
        got = normalized(pl.col("output"), s.case_sensitive, s.collapse_whitespace)
        want = normalized(pl.col("expected_output"), s.case_sensitive, s.collapse_whitespace)
        equal = got == want
        return EvalOutput(
            batch.select(
                pl.col("id").alias("sample_id"),
                pl.lit(PROCESSED).alias("status"),
                equal.cast(pl.Float64).alias("score"),
                pl.struct(equal.alias("equal")).struct.json_encode().alias("details"),
            )
        )


class ContainsSettings(EvaluatorSettings):
    """Settings of ``contains``."""

    value: str | list[str]
    """Text (or texts) the output must contain."""
    mode: Literal["all", "any"] = "all"
    """``all``: score is the share of values found; ``any``: 1 when at least one is found."""
    case_sensitive: bool = False
    """Match case-sensitively."""


class Contains(Evaluator[ContainsSettings]):
    """Share of the configured strings that occur in ``output``."""

    type_name: ClassVar[str] = "contains"
    example: ClassVar[Example] = Example(
        {"type": "contains", "value": ["total", "due"]},
        [
            {"id": "a", "output": "Total due: $42"},
            {"id": "b", "output": "Total: $42"},
        ],
    )

    def evaluate(self, batch: pl.DataFrame) -> EvalOutput:
        s = self.settings
        values = [s.value] if isinstance(s.value, str) else list(s.value)
        text = pl.col("output") if s.case_sensitive else pl.col("output").str.to_lowercase()
        found = [
            text.str.contains(v if s.case_sensitive else v.lower(), literal=True).fill_null(False).alias(f"f{i}")
            for i, v in enumerate(values)
        ]
        hits = pl.sum_horizontal([f.cast(pl.Float64) for f in found])
        score = (hits > 0).cast(pl.Float64) if s.mode == "any" else hits / max(len(values), 1)
        missing = pl.concat_list(
            [pl.when(~f).then(pl.lit(v)) for f, v in zip(found, values, strict=True)]
        ).list.drop_nulls()
        return EvalOutput(
            batch.select(
                pl.col("id").alias("sample_id"),
                pl.lit(PROCESSED).alias("status"),
                score.alias("score"),
                pl.struct(missing.alias("missing")).struct.json_encode().alias("details"),
            )
        )


class RegexSettings(EvaluatorSettings):
    """Settings of ``regex``."""

    pattern: str
    """Regular expression (Rust regex syntax) that ``output`` must match somewhere."""


class Regex(Evaluator[RegexSettings]):
    """1 when ``output`` matches the pattern, else 0."""

    type_name: ClassVar[str] = "regex"
    example: ClassVar[Example] = Example(
        {"type": "regex", "pattern": "^[0-9]+ (bottles|cans)$"},
        [{"id": "a", "output": "5 bottles"}, {"id": "b", "output": "five bottles"}],
    )

    def __init__(self, name: str, settings: RegexSettings, context: EvalContext | None = None) -> None:
        super().__init__(name, settings, context)
        try:
            re.compile(settings.pattern)
        except re.error as exc:
            raise ValueError(f"pattern: invalid regular expression: {exc}") from None

    def evaluate(self, batch: pl.DataFrame) -> EvalOutput:
        matched = pl.col("output").str.contains(self.settings.pattern).fill_null(False)
        return EvalOutput(
            batch.select(
                pl.col("id").alias("sample_id"),
                pl.lit(PROCESSED).alias("status"),
                matched.cast(pl.Float64).alias("score"),
                pl.struct(matched.alias("matched")).struct.json_encode().alias("details"),
            )
        )
