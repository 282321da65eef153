"""Benchmark metrics with reference answers, vectorized: ``relaxed_accuracy`` (ChartQA), ``anls`` (DocVQA),
``vqa_accuracy`` (TextVQA / VQAv2).

Reference answers come from ``expected_output`` (one answer, or a JSON list of answers) or from a list column
named by ``answers_column``. Answers are exploded to one row per (sample, answer), scored as columns, and
grouped back (max over answers; VQA counts matching annotators).
"""

from __future__ import annotations

from typing import Any, ClassVar

import polars as pl

from vision_eval.evaluator import EvalOutput, Evaluator, EvaluatorSettings
from vision_eval.evaluators._benchmark_text import ROW, collapse_ws, details_json, pairs_frame, vqa_normalize
from vision_eval.registry import register
from vision_eval.results import ERROR, PROCESSED, RESULT_ROW_SCHEMA, conform


class ReferenceSettings(EvaluatorSettings):
    """Settings shared by metrics that compare ``output`` with reference answers."""

    answers_column: str | None = None
    """Column holding the reference answers as a list (e.g. ``answers``); default: ``expected_output``,
    which holds one answer, or a JSON list of answers when it starts with ``[`` (one that then does not
    parse is a row error)."""


class ReferenceMetric(Evaluator):
    """Base of the metrics scored against one or more reference answers."""

    required_columns = ("output", "expected_output")

    def columns_needed(self) -> tuple[str, ...]:
        column = self.settings.answers_column  # type: ignore[attr-defined]
        return ("output", column) if column else self.required_columns

    @property
    def reference_column(self) -> str:
        """The column the reference answers are read from."""
        return self.settings.answers_column or "expected_output"  # type: ignore[attr-defined]

    def finish(self, rows: pl.DataFrame, scored: pl.DataFrame) -> EvalOutput:
        """Result rows: ``rows`` (``_row, sample_id, gold_error``) joined with ``scored`` (``_row, score, details``)."""
        out = rows.join(scored, on=ROW, how="left").sort(ROW)
        failed = pl.col("gold_error").is_not_null()
        results = out.select(
            "sample_id",
            pl.when(failed).then(pl.lit(ERROR)).otherwise(pl.lit(PROCESSED)).alias("status"),
            pl.when(~failed).then(pl.col("score")).alias("score"),
            pl.when(~failed).then(pl.col("details")).alias("details"),
            pl.col("gold_error").alias("error"),
        )
        return EvalOutput(conform(results, RESULT_ROW_SCHEMA))

    def summarize(self, results: pl.DataFrame) -> dict[str, Any]:
        processed = results.filter(pl.col("status") == PROCESSED)
        mean = processed["score"].mean() if processed.height else None
        return {self.type_name: mean, "n": processed.height, "errors": int((results["status"] == ERROR).sum())}


def best_answer(pairs: pl.DataFrame, score: str = "score") -> pl.DataFrame:
    """Per ``_row``: the highest ``score`` and the reference answer (``best``) that reached it."""
    return pairs.group_by(ROW).agg(
        pl.col(score).max().alias(score), pl.col("gold").get(pl.col(score).arg_max()).alias("best")
    )


# --- relaxed_accuracy (ChartQA) --------------------------------------------------------------------------

_NUMBER = r"^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$"


def parse_number(text: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """(value, is_percent) of an answer that is a number: currency signs, thousands commas, a trailing
    ``%`` and a final period are tolerated; anything else gives a null value."""
    t = text.str.strip_chars().str.strip_chars_start("$€£").str.strip_chars_end(".").str.strip_chars()
    percent = t.str.ends_with("%").fill_null(False)
    t = t.str.strip_chars_end("%").str.strip_chars().str.replace_all(r"(\d),(\d{3})", "${1}${2}")
    t = t.str.replace_all(r"(\d),(\d{3})", "${1}${2}")  # "1,000,000": the first pass skips overlapping groups
    value = pl.when(t.str.contains(_NUMBER)).then(t.cast(pl.Float64, strict=False))
    return value, percent


def _close(pred: pl.Expr, gold: pl.Expr, tolerance: float) -> pl.Expr:
    relative = (pred - gold).abs() / gold.abs()
    return pl.when(gold == 0).then(pred == 0).otherwise(relative <= tolerance + 1e-12).fill_null(False)


class RelaxedAccuracySettings(ReferenceSettings):
    """Settings of ``relaxed_accuracy``."""

    tolerance: float = 0.05
    """Largest relative difference |pred - gold| / |gold| at which a numeric answer counts as correct."""


@register
class RelaxedAccuracy(ReferenceMetric):
    """ChartQA relaxed accuracy: numbers within ``tolerance`` relative difference (a gold of 0 needs 0),
    otherwise case-insensitive exact match; the best over the reference answers.

    Unlike the reference implementation, ``12%`` matches both ``12`` and ``0.12``, thousands separators
    (``1,000``) and currency signs are understood, and a gold of 0 does not fall back to string comparison.
    """

    type_name: ClassVar[str] = "relaxed_accuracy"
    settings_model = RelaxedAccuracySettings
    default_threshold = 1.0

    def evaluate(self, batch: pl.DataFrame) -> EvalOutput:
        s: RelaxedAccuracySettings = self.settings  # type: ignore[assignment]
        pred, pred_pct = parse_number(pl.col("output"))
        rows, pairs = pairs_frame(batch, self.reference_column, p=pred, pp=pred_pct, a=collapse_ws(pl.col("output")))
        gold, gold_pct = parse_number(pl.col("gold"))
        pairs = pairs.with_columns(gold.alias("g"), gold_pct.alias("gp"))
        p, g = pl.col("p"), pl.col("g")
        numeric = p.is_not_null() & g.is_not_null()
        close = (
            _close(p, g, s.tolerance)
            | (pl.col("pp") & _close(p / 100, g, s.tolerance))
            | (pl.col("gp") & _close(p, g / 100, s.tolerance))
        )
        text_equal = (pl.col("a") == collapse_ws(pl.col("gold"))).fill_null(False)
        correct = pl.when(numeric).then(close).otherwise(text_equal)
        pairs = pairs.with_columns(correct.cast(pl.Float64).alias("score"), numeric.alias("numeric"))
        best = pairs.group_by(ROW).agg(
            pl.col("score").max(),
            pl.col("gold").get(pl.col("score").arg_max()).alias("best"),
            pl.col("numeric").get(pl.col("score").arg_max()),
        )
        scored = best.select(
            ROW,
            "score",
            details_json(matched=pl.when(pl.col("score") > 0).then("best"), numeric=pl.col("numeric")).alias("details"),
        )
        return self.finish(rows, scored)


# --- anls (DocVQA) -----------------------------------------------------------------------------------------


class AnlsSettings(ReferenceSettings):
    """Settings of ``anls``."""

    cutoff: float = 0.5
    """A similarity (1 - normalized Levenshtein distance) below this scores 0."""
    workers: int = 1
    """Threads rapidfuzz uses for the distances (-1: all cores)."""


@register
class Anls(ReferenceMetric):
    """Average Normalized Levenshtein Similarity (DocVQA): 1 - distance / max(length) over answers that are
    lowercased, trimmed and whitespace-collapsed (lengths taken after normalization), 0 below ``cutoff``,
    the best over the reference answers."""

    type_name: ClassVar[str] = "anls"
    settings_model = AnlsSettings
    default_threshold = 0.5

    def evaluate(self, batch: pl.DataFrame) -> EvalOutput:
        import numpy as np
        from rapidfuzz.distance import Levenshtein
        from rapidfuzz.process import cpdist

        s: AnlsSettings = self.settings  # type: ignore[assignment]
        rows, pairs = pairs_frame(batch, self.reference_column, a=collapse_ws(pl.col("output")))
        pairs = pairs.with_columns(collapse_ws(pl.col("gold")).alias("b"))
        if pairs.height:
            distance = cpdist(
                pairs["a"].to_list(),
                pairs["b"].to_list(),
                scorer=Levenshtein.normalized_distance,
                workers=s.workers,
                dtype=np.float64,
            )
            pairs = pairs.with_columns(pl.Series("nl", distance, dtype=pl.Float64))
        else:
            pairs = pairs.with_columns(pl.lit(None, pl.Float64).alias("nl"))
        # The cut-off is monotonic, so it can be applied after taking the most similar answer.
        best = best_answer(pairs.with_columns((1.0 - pl.col("nl")).alias("similarity")), "similarity")
        similarity = pl.col("similarity")
        scored = best.select(
            ROW,
            pl.when(similarity < s.cutoff).then(0.0).otherwise(similarity).alias("score"),
            details_json(closest=pl.col("best"), similarity=similarity).alias("details"),
        )
        return self.finish(rows, scored)


# --- vqa_accuracy (TextVQA / VQAv2) -----------------------------------------------------------------------


@register
class VqaAccuracy(ReferenceMetric):
    """VQA accuracy: answers normalized as the official evaluation does (punctuation, articles, number words,
    contractions); with N reference answers of which M equal the prediction, the mean over the N leave-one-out
    subsets of min(1, matches / 3). With one reference answer it is exact match after normalization.

    The normalization is applied to every reference answer (the official script only re-processes
    punctuation when annotators disagree), and typographic apostrophes count as ``'``.
    Default threshold 0.9: a prediction passes when at least 3 annotators gave it.
    """

    type_name: ClassVar[str] = "vqa_accuracy"
    settings_model = ReferenceSettings
    default_threshold = 0.9

    def evaluate(self, batch: pl.DataFrame) -> EvalOutput:
        rows, pairs = pairs_frame(batch, self.reference_column)
        predictions = rows.select(ROW, pl.Series("pred", vqa_normalize(rows["output"])))
        pairs = pairs.with_columns(pl.Series("g", vqa_normalize(pairs["gold"]))).join(predictions, on=ROW)
        counts = pairs.group_by(ROW).agg(
            pl.len().cast(pl.Float64).alias("n"),
            (pl.col("g") == pl.col("pred")).fill_null(False).sum().cast(pl.Float64).alias("m"),
            pl.col("pred").first(),
        )
        n, m = pl.col("n"), pl.col("m")
        # A subset that leaves out a matching answer has m - 1 matches; the other n - m subsets have m.
        loo = (m * pl.min_horizontal(1.0, (m - 1) / 3) + (n - m) * pl.min_horizontal(1.0, m / 3)) / n
        score = pl.when(n == 1).then(m).otherwise(loo)
        scored = counts.select(
            ROW,
            score.alias("score"),
            details_json(prediction=pl.col("pred"), matches=m.cast(pl.Int64), answers=n.cast(pl.Int64)).alias(
                "details"
            ),
        )
        return self.finish(rows, scored)
