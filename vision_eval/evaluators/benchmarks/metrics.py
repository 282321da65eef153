"""Benchmark metrics with reference answers, vectorized: ``relaxed_accuracy`` (ChartQA), ``anls`` (DocVQA),
``vqa_accuracy`` (TextVQA / VQAv2).

Each takes ``protocol``: ``official`` (the benchmark authors' script, the default), ``lmms_eval`` (lmms-eval's task
code) or ``lenient`` (this project's forgiving reading, not comparable with published numbers); see
``docs/benchmarks.md``. Reference answers come from ``expected_output`` (one answer, or a JSON list of answers) or
from a list column named by ``answers_column``. Answers are exploded to one row per (sample, answer), scored as
columns, and grouped back (best over answers; VQA counts matching annotators).
"""

from __future__ import annotations

from typing import Any, ClassVar

import polars as pl
from pydantic import field_validator
from typing_extensions import TypeVar

from vision_eval.evaluator import EvalOutput, Evaluator, EvaluatorSettings
from vision_eval.evaluators.benchmarks import anls as _anls
from vision_eval.evaluators.benchmarks import relaxed as _relaxed
from vision_eval.evaluators.benchmarks import vqa_answers as _vqa_answers
from vision_eval.evaluators.benchmarks.protocols import Protocol, check_protocol, describe_protocol
from vision_eval.evaluators.benchmarks.text import ROW, collapse_ws, details_json, pairs_frame
from vision_eval.example import Example
from vision_eval.results import ERROR, PROCESSED, RESULT_ROW_SCHEMA, conform


class ReferenceSettings(EvaluatorSettings):
    """Settings shared by metrics that compare ``output`` with reference answers."""

    protocol: Protocol = "official"
    """Whose scoring to reproduce: ``official`` (the benchmark authors' evaluation script), ``lmms_eval``
    (lmms-eval's task code) or ``lenient`` (more forgiving, not comparable with published numbers). Recorded in
    every row's ``details``, in run.json and in the leaderboard; see docs/benchmarks.md."""
    answers_column: str | None = None
    """Column holding the reference answers as a list (e.g. ``answers``); default: ``expected_output``,
    which holds one answer, or a JSON list of answers when it starts with ``[`` (one that then does not
    parse is a row error)."""


ReferenceSettingsT = TypeVar("ReferenceSettingsT", bound=ReferenceSettings, default=ReferenceSettings, covariant=True)


class ReferenceMetric(Evaluator[ReferenceSettingsT]):
    """Base of the metrics scored against one or more reference answers."""

    required_columns = ("output", "expected_output")

    def columns_needed(self) -> tuple[str, ...]:
        column = self.settings.answers_column
        return ("output", column) if column else self.required_columns

    @property
    def protocol(self) -> str:
        """The scoring protocol in use."""
        return self.settings.protocol

    @property
    def reference_column(self) -> str:
        """The column the reference answers are read from."""
        return self.settings.answers_column or "expected_output"

    def details(self, **fields: pl.Expr) -> pl.Expr:
        """A ``details`` JSON object naming the protocol, with ``fields``."""
        return details_json(protocol=pl.lit(self.protocol), **fields)

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
        # Every reply is compared as text by these metrics: none is left unread.
        return {
            "protocol": self.protocol,
            self.type_name: mean,
            "n": processed.height,
            "errors": int((results["status"] == ERROR).sum()),
            "unparseable": 0,
        }

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), **describe_protocol(self.type_name, self.protocol)}


def best_answer(pairs: pl.DataFrame, score: str = "score", *carried: str) -> pl.DataFrame:
    """Per ``_row``: the highest ``score``, the reference answer (``best``) that reached it and ``carried``."""
    at_best = pl.col(score).arg_max()
    return pairs.group_by(ROW).agg(
        pl.col(score).max().alias(score),
        pl.col("gold").get(at_best).alias("best"),
        *(pl.col(c).get(at_best) for c in carried),
    )


# --- relaxed_accuracy (ChartQA) --------------------------------------------------------------------------


class RelaxedAccuracySettings(ReferenceSettings):
    """Settings of ``relaxed_accuracy``."""

    tolerance: float = 0.05
    """Largest relative difference |pred - gold| / |gold| at which a numeric answer counts as correct."""

    @field_validator("protocol")
    @classmethod
    def _offered(cls, value: str) -> str:
        return check_protocol("relaxed_accuracy", value)


class RelaxedAccuracy(ReferenceMetric[RelaxedAccuracySettings]):
    """ChartQA relaxed accuracy, the best over the reference answers.

    ``official`` / ``lmms_eval``: both sides read by Python's ``float`` (a trailing ``%`` divides by 100); numbers
    within ``tolerance`` relative difference of a non-zero gold are correct, anything else needs the same lowercased
    text. ``lenient``: also ``12%`` = ``12`` = ``0.12``, ``1,000``, currency signs, a gold of 0 needs a reply of 0,
    text compared trimmed and whitespace-collapsed.
    """

    type_name: ClassVar[str] = "relaxed_accuracy"
    example: ClassVar[Example] = Example(
        {"type": "relaxed_accuracy"},
        [
            {"id": "a", "output": "12.3", "expected_output": "12"},
            {"id": "b", "output": "15", "expected_output": '["12", "twelve"]'},
        ],
    )
    default_threshold = 1.0

    def evaluate(self, batch: pl.DataFrame) -> EvalOutput:
        s = self.settings
        if s.protocol == "lenient":
            rows, pairs = self._lenient_pairs(batch, s.tolerance)
        else:
            p = _relaxed.python_floats(batch["output"].cast(pl.Utf8))
            rows, pairs = pairs_frame(batch, self.reference_column, p=p, a=pl.col("output").str.to_lowercase())
            pairs = _relaxed.relaxed_pairs(pairs, s.tolerance)
        best = best_answer(pairs, "score", "numeric", "a", "p", "g")
        # What was compared: the reply and the deciding reference answer, each as a number when it reads as one
        # (the comparison then is numeric) and as the compared text otherwise.
        details = self.details(
            prediction=pl.col("a"),
            prediction_number=pl.col("p"),
            answer=pl.col("best"),
            answer_number=pl.col("g"),
            numeric=pl.col("numeric"),
            matched=pl.when(pl.col("score") > 0).then("best"),
        )
        return self.finish(rows, best.select(ROW, "score", details.alias("details")))

    def _lenient_pairs(self, batch: pl.DataFrame, tolerance: float) -> tuple[pl.DataFrame, pl.DataFrame]:
        pred, pred_pct = _relaxed.lenient_number(pl.col("output"))
        rows, pairs = pairs_frame(batch, self.reference_column, p=pred, pp=pred_pct, a=collapse_ws(pl.col("output")))
        gold, gold_pct = _relaxed.lenient_number(pl.col("gold"))
        pairs = pairs.with_columns(gold.alias("g"), gold_pct.alias("gp"))
        p, g, close = pl.col("p"), pl.col("g"), _relaxed.lenient_close
        numeric = p.is_not_null() & g.is_not_null()
        near = (
            close(p, g, tolerance)
            | (pl.col("pp") & close(p / 100, g, tolerance))
            | (pl.col("gp") & close(p, g / 100, tolerance))
        )
        text_equal = (pl.col("a") == collapse_ws(pl.col("gold"))).fill_null(False)
        correct = pl.when(numeric).then(near).otherwise(text_equal)
        return rows, pairs.with_columns(correct.cast(pl.Float64).alias("score"), numeric.alias("numeric"))


# --- anls (DocVQA) -----------------------------------------------------------------------------------------


class AnlsSettings(ReferenceSettings):
    """Settings of ``anls``."""

    cutoff: float = 0.5
    """A similarity (1 - normalized Levenshtein distance) below this scores 0."""
    workers: int = 1
    """Threads rapidfuzz uses for the distances (-1: all cores)."""

    @field_validator("protocol")
    @classmethod
    def _offered(cls, value: str) -> str:
        return check_protocol("anls", value)


class Anls(ReferenceMetric[AnlsSettings]):
    """Average Normalized Levenshtein Similarity (DocVQA): 1 - the smallest normalized edit distance over the
    reference answers, 0 below ``cutoff``. Both texts are stripped, lowercased and whitespace-collapsed; the
    distance is divided by the longer *raw* text (``official`` / ``lmms_eval``, as the RRC script does) or by the
    longer normalized text (``lenient``)."""

    type_name: ClassVar[str] = "anls"
    example: ClassVar[Example] = Example(
        {"type": "anls"},
        [
            {"id": "a", "output": "ACME Corp", "expected_output": "Acme Corp."},
            {"id": "b", "output": "May 3", "expected_output": '["5 June", "June 5th"]'},
        ],
    )
    default_threshold = 0.5

    def evaluate(self, batch: pl.DataFrame) -> EvalOutput:
        s = self.settings
        if s.protocol == "lenient":
            rows, pairs = pairs_frame(batch, self.reference_column, a=collapse_ws(pl.col("output")))
            pairs = pairs.with_columns(self._lenient_distances(pairs, s.workers))
        else:
            rows, pairs = pairs_frame(batch, self.reference_column, **_anls.official_row_columns())
            pairs = pairs.with_columns(_anls.official_distances(pairs, s.workers))
        # The cut-off is monotonic, so it can be applied after taking the most similar answer.
        best = best_answer(pairs.with_columns((1.0 - pl.col("nl")).alias("similarity")), "similarity", "a")
        similarity = pl.col("similarity")
        normalize = collapse_ws if s.protocol == "lenient" else _anls.normalized
        details = self.details(
            prediction=pl.col("a"),
            closest=pl.col("best"),
            closest_normalized=normalize(pl.col("best")),
            similarity=similarity,
        )
        scored = best.select(
            ROW, pl.when(similarity < s.cutoff).then(0.0).otherwise(similarity).alias("score"), details.alias("details")
        )
        return self.finish(rows, scored)

    @staticmethod
    def _lenient_distances(pairs: pl.DataFrame, workers: int) -> pl.Series:
        import numpy as np
        from rapidfuzz.distance import Levenshtein
        from rapidfuzz.process import cpdist

        if pairs.height == 0:
            return pl.Series("nl", [], dtype=pl.Float64)
        golds = pairs.select(collapse_ws(pl.col("gold")))["gold"].to_list()
        scorer = Levenshtein.normalized_distance
        distance = cpdist(pairs["a"].to_list(), golds, scorer=scorer, workers=workers, dtype=np.float64)
        return pl.Series("nl", distance, dtype=pl.Float64)


# --- vqa_accuracy (TextVQA / VQAv2) -----------------------------------------------------------------------


class VqaSettings(ReferenceSettings):
    """Settings of ``vqa_accuracy``."""

    @field_validator("protocol")
    @classmethod
    def _offered(cls, value: str) -> str:
        return check_protocol("vqa_accuracy", value)


class VqaAccuracy(ReferenceMetric[VqaSettings]):
    """VQA accuracy: with N reference answers of which M equal the processed reply, the mean over the N
    leave-one-out subsets of min(1, matches / 3) (so one reference answer scores 0).

    ``official``: the VQA script's processing of the reply; references compared raw, or after its punctuation step
    when the annotators disagree. ``lmms_eval``: lmms-eval's (EvalAI's) processing of the reply and of every
    reference. ``lenient``: both fully normalized, typographic apostrophes, ``im``/``ive``, and with one reference
    answer an exact match. Default threshold 0.9: a prediction passes when at least 3 annotators gave it.
    """

    type_name: ClassVar[str] = "vqa_accuracy"
    example: ClassVar[Example] = Example(
        {"type": "vqa_accuracy"},
        [
            {"id": "a", "output": "Red", "expected_output": '["red", "red", "red", "red", "dark red"]'},
            {"id": "b", "output": "two", "expected_output": '["2", "2", "two", "3"]'},
        ],
    )
    default_threshold = 0.9

    def evaluate(self, batch: pl.DataFrame) -> EvalOutput:
        rows, pairs = pairs_frame(batch, self.reference_column)
        if self.protocol == "official":
            predicted = _vqa_answers.official_answers(rows["output"])
            disagree = pl.col("gold").n_unique().over(ROW) > 1
            punctuated = _vqa_answers.official_punctuations(pairs["gold"])
            golds = pairs.select(pl.when(disagree).then(punctuated).otherwise(pl.col("gold")))["gold"]
        elif self.protocol == "lmms_eval":
            predicted = _vqa_answers.evalai_answers(rows["output"])
            golds = _vqa_answers.evalai_answers(pairs["gold"])
        else:
            predicted = _vqa_answers.lenient_answers(rows["output"])
            golds = _vqa_answers.lenient_answers(pairs["gold"])
        predictions = rows.select(ROW, predicted.alias("pred"))
        pairs = pairs.with_columns(golds.alias("g")).join(predictions, on=ROW)
        counts = pairs.group_by(ROW).agg(
            pl.len().cast(pl.Float64).alias("n"),
            (pl.col("g") == pl.col("pred")).fill_null(False).sum().cast(pl.Float64).alias("m"),
            pl.col("pred").first(),
            pl.col("g").alias("references"),
        )
        n, m = pl.col("n"), pl.col("m")
        # A subset that leaves out a matching answer has m - 1 matches; the other n - m subsets have m.
        loo = (m * pl.min_horizontal(1.0, (m - 1) / 3) + (n - m) * pl.min_horizontal(1.0, m / 3)) / n
        score = pl.when(n == 1).then(m).otherwise(loo) if self.protocol == "lenient" else loo
        details = self.details(
            prediction=pl.col("pred"),
            matches=m.cast(pl.Int64),
            answers=n.cast(pl.Int64),
            references=pl.col("references"),  # each reference answer as compared with the prediction
        )
        return self.finish(rows, counts.select(ROW, score.alias("score"), details.alias("details")))
