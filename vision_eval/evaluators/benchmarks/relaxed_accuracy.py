"""``relaxed_accuracy`` (ChartQA): the reply against each reference answer, the best over them.

``official`` and ``lmms_eval`` score a (reply, label) pair the same way (lmms-eval's ``relaxed_correctness`` is
pix2struct's), ``official`` on the reply as given and ``lmms_eval`` on the reply stripped (as lmms-eval hands every
reply to its task): each side is read as a number by Python's ``float`` (a trailing ``%`` divides by 100); when both are
numbers and the label's is not zero, the pair is correct within ``tolerance`` relative difference, otherwise the
lowercased texts must be equal. A label of 0 therefore needs the text ``0`` itself (``0.0`` is wrong), ``1,000``
and ``$12`` are text, and ``nan`` never equals ``nan``. ``lenient`` is this project's forgiving reading, on columns.

``official`` and ``lmms_eval`` are defined row by row (:func:`score_row`); ``evaluate`` runs the same reading as Polars
expressions (:func:`column_scores`) and hands the rows Polars may read otherwise to :func:`score_row`
(``tests/test_benchmark_protocols_rows.py`` checks both give the same rows).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import ClassVar

import polars as pl
from pydantic import field_validator

from vision_eval.evaluator import EvalOutput
from vision_eval.evaluators.benchmarks import lenient
from vision_eval.evaluators.benchmarks.protocols import LENIENT, ReferenceMetric, ReferenceSettings, check_protocol
from vision_eval.evaluators.benchmarks.text import json_float, json_text, reference_answers
from vision_eval.example import Example
from vision_eval.rowwise import RowResult, failed, handed_over

# --- official / lmms_eval -------------------------------------------------------------------------------------


def python_float(text: str) -> float | None:
    """The reference's reading of an answer as a number (``None`` when it is not one)."""
    try:
        return float(text.rstrip("%")) / 100.0 if text.endswith("%") else float(text)
    except ValueError:
        return None


def score_row(protocol: str, column: str, tolerance: float, output: str, answers: str) -> RowResult:
    """One row: the best relaxed correctness over the reference answers, and what was compared (the reply and the
    deciding answer, each as a number when it reads as one)."""
    golds, error = reference_answers(answers, column)
    if golds is None:
        return failed(str(error))
    predicted, prediction = python_float(output), output.lower()
    best = -1.0
    for gold in golds:
        expected = python_float(gold)
        # Numbers within the tolerance of a non-zero label, else the same lowercased text.
        if predicted is not None and expected:  # a label of 0 is compared as text; NaN is a number
            numeric, correct = True, abs(predicted - expected) / abs(expected) <= tolerance
        else:
            numeric, correct = False, prediction == gold.lower()
        if correct > best:
            best, answer, answer_number, compared_as_numbers = float(correct), gold, expected, numeric
    shown = json_text(answer)
    details = (
        f'{{"protocol":"{protocol}","prediction":{json_text(prediction)},"prediction_number":{json_float(predicted)},'
        f'"answer":{shown},"answer_number":{json_float(answer_number)},'
        f'"numeric":{"true" if compared_as_numbers else "false"},"matched":{shown if best else "null"}}}'
    )
    return RowResult("processed", best, details)


_PLAIN_NUMBER = r"^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$"
_NEVER_IN_A_FLOAT = r"[^0-9+\-._eEiInNfFtTyYaA\t\n\x0b\x0c\r\x1c-\x1f ]"
"""An ASCII character no text Python's ``float`` reads holds (digits, signs, ``_``, ``inf``/``nan`` and the white
space it strips)."""


def python_floats(text: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """(value, exact): :func:`python_float` of a column where ``exact``: plain ASCII numbers (Polars reads them
    correctly rounded, as Python does) and ASCII text that cannot be a number. Not exact: non-ASCII text, a number
    with a trailing ``%`` (Polars divides by 100 as a multiplication by 0.01) and texts only ``float`` may read."""
    plain = text.str.contains(_PLAIN_NUMBER)
    never = text.str.strip_chars_end("%").str.contains(_NEVER_IN_A_FLOAT)
    exact = ~text.str.contains(r"[^\x00-\x7f]") & (plain | never)
    return pl.when(plain).then(text.cast(pl.Float64, strict=False)), exact


def column_scores(batch: pl.DataFrame, protocol: str, column: str, tolerance: float, workers: int) -> EvalOutput:
    """The rows of a batch (``output``: the reply as the protocol hands it), as :func:`score_row` gives them. The
    rows where Polars may not read a text as Python does (see :func:`python_floats`) are handed to it."""
    value, exact = python_floats(pl.col("output"))
    rows, pairs = lenient.pairs_frame(batch, column, p=value, a=pl.col("output").str.to_lowercase(), exact=exact)
    gold, gold_exact = python_floats(pl.col("gold"))
    pairs = pairs.with_columns(gold.alias("g"), (pl.col("exact") & gold_exact).alias("exact"))
    p, g = pl.col("p"), pl.col("g")
    numeric = p.is_not_null() & g.is_not_null() & (g != 0)  # a label of 0 is compared as text
    close, same_text = (p - g).abs() / g.abs() <= tolerance, pl.col("a") == pl.col("gold").str.to_lowercase()
    correct = pl.when(numeric).then(close).otherwise(same_text)
    pairs = pairs.with_columns(correct.cast(pl.Float64).alias("score"), numeric.alias("numeric"))
    handed = pairs.filter(~pl.col("exact")).select(lenient.ROW).unique()
    best = lenient.best_answer(pairs.join(handed, on=lenient.ROW, how="anti"), "score", "numeric", "a", "p", "g")
    details = pl.struct(
        pl.lit(protocol).alias("protocol"),
        pl.col("a").alias("prediction"),
        pl.col("p").alias("prediction_number"),
        pl.col("best").alias("answer"),
        pl.col("g").alias("answer_number"),
        pl.col("numeric"),
        pl.when(pl.col("score") > 0).then("best").alias("matched"),
    ).struct.json_encode()
    scored = best.select(lenient.ROW, "score", details.alias("details"))
    if handed.height == 0:
        return lenient.finish(rows, scored)
    by_row = rows.join(handed, on=lenient.ROW, how="semi").rename({lenient.ROW: "_pos"})
    function = partial(score_row, protocol, column, tolerance)
    others = handed_over(by_row, ("output", "answers"), function, workers).rename({"_pos": lenient.ROW})
    return lenient.finish(rows.join(handed, on=lenient.ROW, how="anti"), scored, others)


# --- lenient --------------------------------------------------------------------------------------------------

_NUMBER = r"^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$"


def lenient_number(text: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """(value, is_percent) of an answer that is a number: currency signs, thousands commas, a trailing
    ``%`` and a final period are tolerated; anything else gives a null value."""
    t = text.str.strip_chars().str.strip_chars_start("$€£").str.strip_chars_end(".").str.strip_chars()
    percent = t.str.ends_with("%").fill_null(False)
    t = t.str.strip_chars_end("%").str.strip_chars().str.replace_all(r"(\d),(\d{3})", "${1}${2}")
    t = t.str.replace_all(r"(\d),(\d{3})", "${1}${2}")  # "1,000,000": the first pass skips overlapping groups
    value = pl.when(t.str.contains(_NUMBER)).then(t.cast(pl.Float64, strict=False))
    return value, percent


def lenient_close(pred: pl.Expr, gold: pl.Expr, tolerance: float) -> pl.Expr:
    """Within ``tolerance`` relative difference (a gold of 0 needs exactly 0)."""
    relative = (pred - gold).abs() / gold.abs()
    return pl.when(gold == 0).then(pred == 0).otherwise(relative <= tolerance + 1e-12).fill_null(False)


def lenient_scores(batch: pl.DataFrame, column: str, tolerance: float) -> EvalOutput:
    """The ``lenient`` protocol on a batch."""
    pred, pred_pct = lenient_number(pl.col("output"))
    a = lenient.collapse_ws(pl.col("output"))
    rows, pairs = lenient.pairs_frame(batch, column, p=pred, pp=pred_pct, a=a)
    gold, gold_pct = lenient_number(pl.col("gold"))
    pairs = pairs.with_columns(gold.alias("g"), gold_pct.alias("gp"))
    p, g, close = pl.col("p"), pl.col("g"), lenient_close
    numeric = p.is_not_null() & g.is_not_null()
    near = (
        close(p, g, tolerance)
        | (pl.col("pp") & close(p / 100, g, tolerance))
        | (pl.col("gp") & close(p, g / 100, tolerance))
    )
    text_equal = (pl.col("a") == lenient.collapse_ws(pl.col("gold"))).fill_null(False)
    correct = pl.when(numeric).then(near).otherwise(text_equal)
    pairs = pairs.with_columns(correct.cast(pl.Float64).alias("score"), numeric.alias("numeric"))
    best = lenient.best_answer(pairs, "score", "numeric", "a", "p", "g")
    details = lenient.details(
        prediction=pl.col("a"),
        prediction_number=pl.col("p"),
        answer=pl.col("best"),
        answer_number=pl.col("g"),
        numeric=pl.col("numeric"),
        matched=pl.when(pl.col("score") > 0).then("best"),
    )
    return lenient.finish(rows, best.select(lenient.ROW, "score", details.alias("details")))


# --- the evaluator -------------------------------------------------------------------------------------------------


class RelaxedAccuracySettings(ReferenceSettings):
    """Settings of ``relaxed_accuracy``."""

    tolerance: float = 0.05
    """Largest relative difference |pred - gold| / |gold| at which a numeric answer counts as correct."""

    @field_validator("protocol")
    @classmethod
    def _offered(cls, value: str) -> str:
        return check_protocol(RelaxedAccuracy, value)


class RelaxedAccuracy(ReferenceMetric[RelaxedAccuracySettings]):
    """ChartQA relaxed accuracy, the best over the reference answers.

    ``official`` / ``lmms_eval`` (the reply stripped first): both sides read by Python's ``float`` (a trailing ``%``
    divides by 100); numbers within ``tolerance`` relative difference of a non-zero gold are correct, anything else
    needs the same lowercased text. ``lenient``: also ``12%`` = ``12`` = ``0.12``, ``1,000``, currency signs, a gold
    of 0 needs a reply of 0, text compared trimmed and whitespace-collapsed.
    """

    type_name: ClassVar[str] = "relaxed_accuracy"
    protocols: ClassVar[dict[str, str]] = {
        "official": "google-research/pix2struct pix2struct/metrics.py @945f27e: relaxed_correctness, the best over "
        "the labels (aggregate_metrics), on the reply as given; the ChartQA paper's relaxed accuracy (Masry et al. "
        "2022, sec. 5.1)",
        "lmms_eval": "EvolvingLMMs-Lab/lmms-eval v0.7.2 @cb45ac4 "
        "lmms_eval/tasks/chartqa/utils.py chartqa_process_results (relaxed_correctness, "
        "pix2struct's via Qwen-VL) "
        "on the reply stripped by lmms_eval/api/task.py ConfigurableTask.process_results",
        "lenient": LENIENT,
    }
    example: ClassVar[Example] = Example(
        {"type": "relaxed_accuracy"},
        [
            {"id": "a", "output": "12.3", "expected_output": "12"},
            {"id": "b", "output": "15", "expected_output": '["12", "twelve"]'},
        ],
    )
    default_threshold = 1.0

    def row_function(self) -> Callable[..., RowResult]:
        if self.protocol == "lenient":
            raise NotImplementedError(f"{self.type_name}'s lenient protocol is defined on columns (lenient_scores)")
        return partial(score_row, self.protocol, self.reference_column, self.settings.tolerance)

    def evaluate(self, batch: pl.DataFrame) -> EvalOutput:
        column, tolerance = self.reference_column, self.settings.tolerance
        if self.protocol == "lenient":
            return lenient_scores(batch, column, tolerance)
        return column_scores(batch.with_columns(self.reply()), self.protocol, column, tolerance, self.workers())
