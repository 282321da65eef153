"""``anls`` (DocVQA): 1 - the smallest normalized edit distance between the reply and the reference answers.

``official`` and ``lmms_eval`` (lmms-eval's ``anls`` is the RRC script's computation): both texts are stripped,
lowercased and whitespace-collapsed for the edit distance, but the distance is divided by the longer of the *raw*
texts (their ``upper()`` lengths), so ``"i  a"`` against ``"a"`` scores 1 - 2/4 = 0.5; the row's value is
1 - the smallest normalized distance over the answers, 0 below the threshold. ``lmms_eval`` gets the reply
stripped (as lmms-eval hands every reply to its metric), so its raw length is the stripped reply's. ``lenient``
divides by the normalized lengths, on columns.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import ClassVar

import polars as pl
from pydantic import field_validator

from vision_eval.evaluator import EvalOutput
from vision_eval.evaluators.benchmarks import lenient
from vision_eval.evaluators.benchmarks.protocols import LENIENT, ReferenceMetric, ReferenceSettings, check_protocol
from vision_eval.evaluators.benchmarks.text import json_number, json_text, reference_answers
from vision_eval.example import Example
from vision_eval.rowwise import RowResult, failed

# --- official / lmms_eval -------------------------------------------------------------------------------------


def _levenshtein(a: str, b: str) -> int:
    from rapidfuzz.distance import Levenshtein

    return int(Levenshtein.distance(a, b))


def normalized(text: str) -> str:
    """A text as the reference protocols compare it: stripped, lowercased, whitespace runs collapsed."""
    return " ".join(text.strip().lower().split())


def score_row(protocol: str, column: str, cutoff: float, output: str, answers: str) -> RowResult:
    """One row: the similarity to the closest reference answer (0 below ``cutoff``), and what was compared. The
    distance between the normalized texts is divided by the longer raw text (``upper()`` length; 0 when both are
    empty)."""
    golds, error = reference_answers(answers, column)
    if golds is None:
        return failed(str(error))
    prediction, output_length = normalized(output), len(output.upper())
    similarity = -math.inf  # the first answer is the closest until one is closer (a distance may exceed 1)
    for gold in golds:
        length = max(len(gold.upper()), output_length)
        compared = normalized(gold)
        distance = 0.0 if length == 0 else _levenshtein(compared, prediction) / length
        if 1.0 - distance > similarity:
            similarity, closest, closest_normalized = 1.0 - distance, gold, compared
    details = (
        f'{{"protocol":"{protocol}","prediction":{json_text(prediction)},"closest":{json_text(closest)},'
        f'"closest_normalized":{json_text(closest_normalized)},"similarity":{json_number(similarity)}}}'
    )
    return RowResult("processed", 0.0 if similarity < cutoff else similarity, details)


# --- lenient --------------------------------------------------------------------------------------------------


def lenient_scores(batch: pl.DataFrame, column: str, cutoff: float, workers: int) -> EvalOutput:
    """The ``lenient`` protocol on a batch: the distance divided by the longer normalized text."""
    import numpy as np
    from rapidfuzz.distance import Levenshtein
    from rapidfuzz.process import cpdist

    rows, pairs = lenient.pairs_frame(batch, column, a=lenient.collapse_ws(pl.col("output")))
    if pairs.height:
        golds = pairs.select(lenient.collapse_ws(pl.col("gold")))["gold"].to_list()
        scorer = Levenshtein.normalized_distance
        distance = cpdist(pairs["a"].to_list(), golds, scorer=scorer, workers=workers, dtype=np.float64)
        pairs = pairs.with_columns(pl.Series("nl", distance, dtype=pl.Float64))
    else:
        pairs = pairs.with_columns(pl.lit(None, pl.Float64).alias("nl"))
    # The cut-off is monotonic, so it can be applied after taking the most similar answer.
    best = lenient.best_answer(pairs.with_columns((1.0 - pl.col("nl")).alias("similarity")), "similarity", "a")
    similarity = pl.col("similarity")
    details = lenient.details(
        prediction=pl.col("a"),
        closest=pl.col("best"),
        closest_normalized=lenient.collapse_ws(pl.col("best")),
        similarity=similarity,
    )
    scored = best.select(
        lenient.ROW,
        pl.when(similarity < cutoff).then(0.0).otherwise(similarity).alias("score"),
        details.alias("details"),
    )
    return lenient.finish(rows, scored)


# --- the evaluator -------------------------------------------------------------------------------------------------


class AnlsSettings(ReferenceSettings):
    """Settings of ``anls``."""

    cutoff: float = 0.5
    """A similarity (1 - normalized Levenshtein distance) below this scores 0."""
    workers: int = 1
    """Threads rapidfuzz uses for the ``lenient`` distances (-1: all cores); the other protocols score large
    batches on the run's process pool (``run.workers``)."""

    @field_validator("protocol")
    @classmethod
    def _offered(cls, value: str) -> str:
        return check_protocol(Anls, value)


class Anls(ReferenceMetric[AnlsSettings]):
    """Average Normalized Levenshtein Similarity (DocVQA): 1 - the smallest normalized edit distance over the
    reference answers, 0 below ``cutoff``. Both texts are stripped, lowercased and whitespace-collapsed; the
    distance is divided by the longer *raw* text (``official`` / ``lmms_eval``, as the RRC script does; ``lmms_eval``
    strips the reply first) or by the longer normalized text (``lenient``)."""

    type_name: ClassVar[str] = "anls"
    protocols: ClassVar[dict[str, str]] = {
        "official": "the RRC DocVQA / InfographicVQA evaluation script (docvqa.org), in the public copy lmms-eval "
        "cites, QwenLM/Qwen-VL eval_mm/infographicsvqa_eval.py @aa00ed0: ANLS with raw lengths, threshold 0.5, on "
        "the reply as given",
        "lmms_eval": "EvolvingLMMs-Lab/lmms-eval v0.7.2 @cb45ac4 "
        "lmms_eval/api/metrics.py anls (the RRC script's computation) "
        "on the reply stripped by lmms_eval/api/task.py ConfigurableTask.process_results",
        "lenient": LENIENT,
    }
    example: ClassVar[Example] = Example(
        {"type": "anls"},
        [
            {"id": "a", "output": "ACME Corp", "expected_output": "Acme Corp."},
            {"id": "b", "output": "May 3", "expected_output": '["5 June", "June 5th"]'},
        ],
    )
    default_threshold = 0.5

    def row_function(self) -> Callable[..., RowResult]:
        if self.protocol == "lenient":
            raise NotImplementedError(f"{self.type_name}'s lenient protocol is defined on columns (lenient_scores)")
        return partial(score_row, self.protocol, self.reference_column, self.settings.cutoff)

    def evaluate(self, batch: pl.DataFrame) -> EvalOutput:
        if self.protocol == "lenient":
            return lenient_scores(batch, self.reference_column, self.settings.cutoff, self.settings.workers)
        return super().evaluate(batch)
