"""Benchmark metrics that extract a closed answer from free text, vectorized: ``pope`` (yes/no) and
``exact_count`` (CountBench). A reply the answer cannot be extracted from is a row ``error`` with the raw
text in ``details``, never a guess.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import polars as pl

from vision_eval.evaluator import EvalOutput, Evaluator, EvaluatorSettings
from vision_eval.evaluators._benchmark_text import NUMBER_PATTERN, details_json, number_token_value
from vision_eval.registry import register
from vision_eval.results import ERROR, PROCESSED, RESULT_ROW_SCHEMA, conform

RAW_CHARS = 500
"""How much of an unparseable reply is kept in ``details.raw``."""


def yes_no(text: pl.Expr) -> pl.Expr:
    """``yes`` / ``no`` from free text, or null: a leading yes/no word wins; otherwise the reply must contain
    exactly one of the two words."""
    t = text.str.to_lowercase()
    leading = t.str.extract(r"^[^a-z0-9]*(yes|no)\b", 1)
    has_yes = t.str.contains(r"\byes\b").fill_null(False)
    has_no = t.str.contains(r"\bno\b").fill_null(False)
    single = pl.when(has_yes & ~has_no).then(pl.lit("yes")).when(has_no & ~has_yes).then(pl.lit("no"))
    return pl.coalesce(leading, single)


def _results(
    batch: pl.DataFrame, error: pl.Expr, score: pl.Expr, details: pl.Expr, error_details: pl.Expr
) -> EvalOutput:
    """Result rows in batch order; each kind of details is only built for the rows that carry it."""
    batch = batch.with_row_index("_pos").with_columns(error.alias("_error"))
    failed = pl.col("_error").is_not_null()
    processed = batch.filter(~failed).select(
        "_pos",
        pl.col("id").alias("sample_id"),
        pl.lit(PROCESSED).alias("status"),
        score.alias("score"),
        details.alias("details"),
    )
    errors = batch.filter(failed).select(
        "_pos",
        pl.col("id").alias("sample_id"),
        pl.lit(ERROR).alias("status"),
        error_details.alias("details"),
        pl.col("_error").alias("error"),
    )
    frame = pl.concat([processed, errors], how="diagonal_relaxed").sort("_pos")
    return EvalOutput(conform(frame, RESULT_ROW_SCHEMA))


def _fast_gold(expected: pl.Series, parse: pl.Expr, kind: Literal["yes_no", "number"]) -> pl.Expr:
    """``_gold``: the reference parsed by ``parse``, skipped when every reference of the batch already is a bare
    answer (``yes``/``no``, or a plain number), as benchmark references almost always are."""
    bare = expected.str.strip_chars().str.to_lowercase()
    if kind == "yes_no" and bare.is_in(["yes", "no"]).all():
        return pl.lit(bare).alias("_gold")
    if kind == "number" and bare.str.contains(r"^[0-9]+(?:\.[0-9]+)?$").all():
        return pl.lit(bare.cast(pl.Float64)).alias("_gold")
    return parse.alias("_gold")


def _raw(column: str) -> pl.Expr:
    return pl.col(column).cast(pl.Utf8).str.slice(0, RAW_CHARS)


@register
class Pope(Evaluator):
    """POPE: the yes/no answer extracted from ``output`` equals ``expected_output`` (``yes``/``no``).

    The summary has accuracy, precision, recall and F1 (``yes`` is the positive class) and the share of
    ``yes`` among the predictions; unparseable replies are errors and are counted, not guessed.
    """

    type_name: ClassVar[str] = "pope"
    settings_model = EvaluatorSettings
    required_columns = ("output", "expected_output")
    default_threshold = 1.0

    def evaluate(self, batch: pl.DataFrame) -> EvalOutput:
        batch = batch.select(
            "id",
            "output",
            "expected_output",
            yes_no(pl.col("output")).alias("_pred"),
            _fast_gold(batch["expected_output"], yes_no(pl.col("expected_output")), "yes_no"),
        )
        error = (
            pl.when(pl.col("_gold").is_null())
            .then(pl.lit("expected_output is not yes or no"))
            .when(pl.col("_pred").is_null())
            .then(pl.lit("cannot extract yes or no from the output"))
        )
        return _results(
            batch,
            error,
            (pl.col("_pred") == pl.col("_gold")).cast(pl.Float64),
            # Both values are "yes" or "no": no escaping needed, and far cheaper than a struct encode.
            pl.concat_str(pl.lit('{"prediction":"'), "_pred", pl.lit('","expected":"'), "_gold", pl.lit('"}')),
            details_json(raw=_raw("output"), expected=_raw("expected_output")),
        )

    def summarize(self, results: pl.DataFrame) -> dict[str, Any]:
        processed = results.filter(pl.col("status") == PROCESSED)
        unparseable = results.filter(
            (pl.col("status") == ERROR) & pl.col("error").str.starts_with("cannot extract").fill_null(False)
        ).height
        if processed.height == 0:
            return {"n": 0, "unparseable": unparseable}
        labels = processed["details"].str.json_decode(pl.Struct({"prediction": pl.Utf8, "expected": pl.Utf8}))
        pred = labels.struct.field("prediction") == "yes"
        gold = labels.struct.field("expected") == "yes"
        tp = int((pred & gold).sum())
        fp = int((pred & ~gold).sum())
        fn = int((~pred & gold).sum())
        tn = int((~pred & ~gold).sum())
        n = processed.height
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        return {
            "accuracy": (tp + tn) / n,
            "precision": precision,
            "recall": recall,
            "f1": f1,
            "yes_ratio": (tp + fp) / n,
            "n": n,
            "unparseable": unparseable,
            "tp": tp,
            "fp": fp,
            "tn": tn,
            "fn": fn,
        }


class ExactCountSettings(EvaluatorSettings):
    """Settings of ``exact_count``."""

    pick: Literal["first", "last", "only"] = "first"
    """Which number of the reply is the answer: the ``first``, the ``last``, or ``only`` (a reply with
    several different numbers is then an error)."""


@register
class ExactCount(Evaluator):
    """CountBench: the count in ``output`` (digits or number words, e.g. ``seven`` = ``7``) equals the count
    in ``expected_output``."""

    type_name: ClassVar[str] = "exact_count"
    settings_model = ExactCountSettings
    required_columns = ("output", "expected_output")
    default_threshold = 1.0

    def evaluate(self, batch: pl.DataFrame) -> EvalOutput:
        s: ExactCountSettings = self.settings  # type: ignore[assignment]
        found = pl.col("output").str.to_lowercase().str.extract_all(NUMBER_PATTERN)
        gold = pl.col("expected_output").str.to_lowercase().str.extract(f"({NUMBER_PATTERN})", 1)
        # Staged: each list is computed once and then read by several expressions.
        batch = batch.select(
            "id",
            "output",
            "expected_output",
            found.list.eval(number_token_value(pl.element())).alias("_values"),
            _fast_gold(batch["expected_output"], number_token_value(gold), "number"),
        ).with_columns(pl.col("_values").list.n_unique().alias("_distinct"))
        values = pl.col("_values")
        if s.pick == "first":
            pred = values.list.first()
        elif s.pick == "last":
            pred = values.list.last()
        else:
            pred = pl.when(pl.col("_distinct") == 1).then(values.list.first())
        batch = batch.with_columns(pred.alias("_pred"))
        error = (
            pl.when(pl.col("_gold").is_null())
            .then(pl.lit("expected_output holds no count"))
            .when(pl.col("_distinct") == 0)
            .then(pl.lit("cannot extract a count from the output"))
            .when(pl.col("_pred").is_null())
            .then(pl.lit("the output gives several different counts"))
        )
        return _results(
            batch,
            error,
            (pl.col("_pred") == pl.col("_gold")).cast(pl.Float64),
            details_json(predicted=pl.col("_pred"), expected=pl.col("_gold")),
            details_json(raw=_raw("output"), expected=_raw("expected_output")),
        )

    def summarize(self, results: pl.DataFrame) -> dict[str, Any]:
        processed = results.filter(pl.col("status") == PROCESSED)
        if processed.height == 0:
            return {"n": 0}
        counts = processed["details"].str.json_decode(pl.Struct({"predicted": pl.Float64, "expected": pl.Float64}))
        error = (counts.struct.field("predicted") - counts.struct.field("expected")).abs()
        return {
            "accuracy": float(processed["score"].mean()),  # type: ignore[arg-type]
            "mae": float(error.mean()),  # type: ignore[arg-type]
            "n": processed.height,
        }
