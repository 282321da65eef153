"""``pope``: reading yes/no from a reply under each protocol, the row's score, and the dataset-level metrics each
protocol reports.

- ``official`` (POPE's evaluate.py): only the first sentence counts (the text before the first ``.``); commas are
  removed and the text is split on spaces; a word ``No``, ``not`` or ``no`` makes the answer "no", anything else is
  "yes" ("NO", ``"No"``, "Nope" and an empty reply are "yes"; "Yes, no doubt." is "no"). A reply whose first
  sentence has none of the words No/no/not/Yes/yes is *unparseable*: it is counted as "yes", as the script does.
- ``lmms_eval``: the whole reply, lowercased and stripped, must be "yes" or "no"; anything else is *unparseable*
  and scored wrong (it then counts in accuracy, in neither precision's nor recall's denominator).
- ``lenient``: a leading yes/no word wins, else the reply must contain exactly one of the words; an unparseable
  reply is a row error, left out of every metric.

The reference answer must read as yes/no: lowercased and stripped (``lenient``: its own reading), else the row is
an error.

Each reading is defined row by row (:func:`score_row`) and also written as Polars expressions
(:func:`column_scores`), which ``evaluate`` uses: several times faster than the row function on replies that do not
repeat (``benchmarks/bench_benchmark_metrics.py``). ``official`` and ``lmms_eval`` are exact for any text;
``lenient`` hands the rows holding a non-ASCII character to the row function (Python's ``lower()`` and ``\\b`` differ
from Polars' on some). ``tests/test_benchmark_protocols_rows.py`` checks both give the same rows.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from typing import Any, ClassVar

import polars as pl
from pydantic import field_validator

from vision_eval.evaluator import EvalOutput
from vision_eval.evaluators.benchmarks.protocols import (
    LENIENT,
    RAW_CHARS,
    UNPARSEABLE_REASON,
    ExtractedMetric,
    Protocol,
    ProtocolSettings,
    check_protocol,
)
from vision_eval.evaluators.benchmarks.text import PY_WHITE_SPACE, details_json
from vision_eval.example import Example
from vision_eval.results import ERROR, PROCESSED, RESULT_ROW_SCHEMA, conform
from vision_eval.rowwise import RowResult, handed_over

NO_WORDS = frozenset({"No", "not", "no"})
YES_WORDS = frozenset({"Yes", "yes"})
NOT_YES_OR_NO = "expected_output is not yes or no"

# --- readings -------------------------------------------------------------------------------------------------


def official_reading(reply: str) -> tuple[str, bool]:
    """(answer, unparseable) as POPE's evaluate.py reads the reply."""
    words = set(reply.split(".")[0].replace(",", "").split(" "))
    if words & NO_WORDS:
        return "no", False
    return "yes", not words & YES_WORDS


def lmms_eval_reading(reply: str) -> str | None:
    """ "yes" / "no" when the lowercased, stripped reply is exactly that; ``None`` otherwise."""
    text = reply.lower().strip()
    return text if text in ("yes", "no") else None


_LEADING = re.compile(r"^[^a-z0-9]*(yes|no)\b")
_YES = re.compile(r"\byes\b")
_NO = re.compile(r"\bno\b")


def lenient_reading(reply: str) -> str | None:
    """The lenient reading (a leading yes/no word, else exactly one of the words), ``None`` when neither."""
    text = reply.lower()
    leading = _LEADING.match(text)
    if leading:
        return leading.group(1)
    has_yes, has_no = _YES.search(text) is not None, _NO.search(text) is not None
    return "yes" if has_yes and not has_no else "no" if has_no and not has_yes else None


# --- the row ----------------------------------------------------------------------------------------------------


def _read(protocol: str, prediction: str, expected: str) -> str:
    # Both values are "yes" or "no": nothing to escape.
    return f'{{"protocol":"{protocol}","prediction":"{prediction}","expected":"{expected}"}}'


READ: dict[tuple[str, str, str], RowResult] = {
    (protocol, prediction, expected): RowResult(
        "processed", float(prediction == expected), _read(protocol, prediction, expected)
    )
    for protocol in ("official", "lmms_eval", "lenient")
    for prediction in ("yes", "no")
    for expected in ("yes", "no")
}
"""The verdict of every reply read as yes/no, by (protocol, prediction, expected): built once, shared by the rows."""


def _bad_reference(protocol: str, output: str, expected: str, reason: str = NOT_YES_OR_NO) -> RowResult:
    details = details_json(protocol=protocol, raw=output[:RAW_CHARS], expected=expected[:RAW_CHARS])
    return RowResult("error", details=details, error=reason)


def score_row(protocol: str, output: str, expected: str) -> RowResult:
    """One row under ``protocol``: 1 when the reply's reading equals the reference answer."""
    gold = lenient_reading(expected) if protocol == "lenient" else lmms_eval_reading(expected)
    if gold is None:
        return _bad_reference(protocol, output, expected)
    prediction: str | None
    if protocol == "lenient":
        prediction = lenient_reading(output)
        if prediction is None:
            return _bad_reference(protocol, output, expected, f"{UNPARSEABLE_REASON} yes or no from the output")
        return READ[(protocol, prediction, gold)]
    if protocol == "official":
        prediction, unparseable = official_reading(output)
    else:
        prediction = lmms_eval_reading(output)
        unparseable = prediction is None
    if prediction is not None and not unparseable:
        return READ[(protocol, prediction, gold)]
    details = details_json(
        protocol=protocol, prediction=prediction, expected=gold, unparseable=True, raw=output[:RAW_CHARS]
    )
    return RowResult("processed", float(prediction == gold), details)


# --- the same readings on columns -------------------------------------------------------------------------------


def strict_readings(text: pl.Expr) -> pl.Expr:
    """:func:`lmms_eval_reading` of a column, exactly: stripped of what Python's ``strip()`` removes, and no
    character other than an ASCII letter lowercases to y, e, s, n or o, in Python or in Polars (checked over every
    character by the tests)."""
    bare = text.str.strip_chars(PY_WHITE_SPACE).str.to_lowercase()
    return pl.when(bare.is_in(["yes", "no"])).then(bare)


def official_readings(output: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """(prediction, unparseable) of :func:`official_reading` on a column: pure substring work, exact for any text."""
    first = output.str.splitn(".", 2).struct.field("field_0")
    # A word is what lies between two spaces once the text is padded with one space on each side.
    padded = pl.lit(" ") + first.str.replace_all(",", "", literal=True) + pl.lit(" ")
    said_no = padded.str.contains(" (?:" + "|".join(sorted(NO_WORDS)) + ") ")
    said_yes = padded.str.contains(" (?:" + "|".join(sorted(YES_WORDS)) + ") ")
    return pl.when(said_no).then(pl.lit("no")).otherwise(pl.lit("yes")), ~said_no & ~said_yes


def lenient_readings(texts: pl.Series) -> pl.Series:
    """:func:`lenient_reading` of ASCII texts (where Polars lowercases and finds ``\\b`` as Python does;
    ``(?-u:\\b)``, the ASCII word boundary, is the same there and faster)."""
    lower = pl.col("lower")

    def said(pattern: str) -> pl.Expr:
        return lower.str.contains(pattern.replace(r"\b", r"(?-u:\b)"))

    # Computed one step at a time: as one expression, Polars lowercases the text once per use (4x slower).
    words = pl.DataFrame({"lower": texts.str.to_lowercase()}).select(
        # At most one word can follow the leading non-letters: "yes" and "no" there exclude each other.
        said(r"^[^a-z0-9]*yes\b").alias("leading_yes"),
        said(r"^[^a-z0-9]*no\b").alias("leading_no"),
        said(_YES.pattern).alias("has_yes"),
        said(_NO.pattern).alias("has_no"),
    )
    leading_yes, leading_no, has_yes, has_no = map(pl.col, words.columns)
    reading = (
        pl.when(leading_yes | (has_yes & ~has_no & ~leading_no))
        .then(pl.lit("yes"))
        .when(leading_no | (has_no & ~has_yes))
        .then(pl.lit("no"))
    )
    return words.select(reading.alias(texts.name)).to_series()


def _raw(column: str) -> pl.Expr:
    return pl.col(column).str.slice(0, RAW_CHARS)


def column_scores(batch: pl.DataFrame, protocol: str, workers: int = 1) -> EvalOutput:
    """The rows of a batch, as :func:`score_row` gives them; each kind of ``details`` is only built for the rows
    that carry it. ``lenient`` hands the rows holding a non-ASCII character to :func:`score_row` (on ``workers``
    processes when there are many)."""
    output = pl.col("output").cast(pl.Utf8)
    expected = pl.col("expected_output").cast(pl.Utf8)
    # Python's lower() and \b and Polars' differ on some non-ASCII characters ("İ", combining marks, "²").
    ascii_only = (output.str.len_bytes() == output.str.len_chars()) & (
        expected.str.len_bytes() == expected.str.len_chars()
    )
    exact = ascii_only if protocol == "lenient" else pl.lit(True)
    prediction: pl.Expr | pl.Series
    unparseable = pl.col("_pred").is_null()
    if protocol == "official":
        prediction, unparseable = official_readings(output)
    elif protocol == "lmms_eval":
        prediction = strict_readings(output)
    else:
        prediction = lenient_readings(batch["output"].cast(pl.Utf8))
    # Benchmark answers almost always are a bare yes/no already: their reading is themselves.
    golds = batch["expected_output"].cast(pl.Utf8)
    gold = expected
    if not golds.is_in(["yes", "no"]).all():
        gold = strict_readings(expected) if protocol != "lenient" else pl.lit(lenient_readings(golds))
    frame = (
        batch.select(
            pl.col("id").alias("sample_id"),
            output.alias("output"),
            expected,
            gold.alias("_gold"),
            prediction.alias("_pred"),
        )
        .with_columns(
            unparseable.alias("_unparseable"),
            exact.alias("_exact"),
        )
        .with_row_index("_pos")
    )
    bad, gold, pred = pl.col("_gold").is_null(), pl.col("_gold"), pl.col("_pred")
    score = (pred == gold).fill_null(False).cast(pl.Float64).alias("score")
    read = pl.concat_str(
        pl.lit(f'{{"protocol":"{protocol}","prediction":"'), pred, pl.lit('","expected":"'), gold, pl.lit('"}')
    )
    unread = pl.struct(
        pl.lit(protocol).alias("protocol"),
        pred.alias("prediction"),
        gold.alias("expected"),
        pl.lit(True).alias("unparseable"),
        _raw("output").alias("raw"),
    ).struct.json_encode()
    wrong = pl.struct(
        pl.lit(protocol).alias("protocol"), _raw("output").alias("raw"), _raw("expected_output").alias("expected")
    ).struct.json_encode()
    read_here = frame.filter("_exact")
    parts = [
        read_here.filter(bad).select(
            "_pos",
            "sample_id",
            pl.lit(ERROR).alias("status"),
            wrong.alias("details"),
            pl.lit(NOT_YES_OR_NO).alias("error"),
        ),
        read_here.filter(~bad & ~pl.col("_unparseable")).select(
            "_pos", "sample_id", pl.lit(PROCESSED).alias("status"), score, read.alias("details")
        ),
    ]
    unread_rows = read_here.filter(~bad & pl.col("_unparseable"))
    if protocol == "lenient":  # an unread reply is a row error
        reason = pl.lit(f"{UNPARSEABLE_REASON} yes or no from the output")
        parts.append(
            unread_rows.select(
                "_pos", "sample_id", pl.lit(ERROR).alias("status"), wrong.alias("details"), reason.alias("error")
            )
        )
    else:
        parts.append(
            unread_rows.select("_pos", "sample_id", pl.lit(PROCESSED).alias("status"), score, unread.alias("details"))
        )
    by_row = frame.filter(~pl.col("_exact"))
    if by_row.height:
        parts.append(handed_over(by_row, ("output", "expected_output"), partial(score_row, protocol), workers))
    results = pl.concat(parts, how="diagonal_relaxed").sort("_pos")
    return EvalOutput(conform(results.drop("_pos"), RESULT_ROW_SCHEMA))


# --- dataset-level metrics ---------------------------------------------------------------------------------------


def _ratio(part: float, whole: float) -> float:
    # Both reference scripts give 0 (lmms-eval) or fail (POPE) for an empty denominator; 0 keeps the run going.
    return part / whole if whole else 0.0


def pope_metrics(protocol: str, prediction: pl.Series, expected: pl.Series, unparseable: int) -> dict[str, Any]:
    """Accuracy, precision, recall, F1 (``yes`` is the positive class) and yes-ratio as ``protocol`` computes them
    from the rows it scores (``prediction`` null = an unparseable reply under ``lmms_eval``)."""
    said_yes, said_no, gold_yes = prediction == "yes", prediction == "no", expected == "yes"
    tp = int((said_yes & gold_yes).sum())
    fp = int((said_yes & ~gold_yes).sum())
    fn = int((said_no & gold_yes).sum())
    tn = int((said_no & ~gold_yes).sum())
    n = expected.len()
    precision, recall = _ratio(tp, tp + fp), _ratio(tp, tp + fn)
    metrics: dict[str, Any] = {
        "protocol": protocol,
        "accuracy": _ratio(tp + tn, n),
        "precision": precision,
        "recall": recall,
        "f1": _ratio(2 * precision * recall, precision + recall),
        "yes_ratio": _ratio(tp + fp, n),
        "n": n,
        "unparseable": unparseable,
        "tp": tp,
        "fp": fp,
        "tn": tn,
        "fn": fn,
    }
    if protocol == "lmms_eval":
        # What lmms-eval prints as pope_yes_ratio: the share of *reference* answers that are yes.
        metrics["reference_yes_ratio"] = _ratio(int(gold_yes.sum()), n)
    return metrics


# --- the evaluator -------------------------------------------------------------------------------------------------


class PopeSettings(ProtocolSettings):
    """Settings of ``pope``."""

    protocol: Protocol = "official"
    """Whose scoring to reproduce: ``official`` (POPE's evaluate.py), ``lmms_eval`` (lmms-eval's pope task) or
    ``lenient`` (not comparable with published numbers); see docs/benchmarks.md."""

    @field_validator("protocol")
    @classmethod
    def _offered(cls, value: str) -> str:
        return check_protocol(Pope, value)


class Pope(ExtractedMetric[PopeSettings]):
    """POPE: the yes/no read from ``output`` equals ``expected_output`` (``yes``/``no``).

    The summary has accuracy, precision, recall and F1 (``yes`` is the positive class), the share of ``yes``
    among the replies and the number of unparseable replies, each computed as the protocol's reference does.
    """

    type_name: ClassVar[str] = "pope"
    protocols: ClassVar[dict[str, str]] = {
        "official": "AoiDragon/POPE evaluate.py @08d957b (the POPE authors' script): first sentence, 'No'/'not'/'no' "
        "words -> no, anything else -> yes",
        "lmms_eval": "EvolvingLMMs-Lab/lmms-eval v0.7.2 @cb45ac4 "
        "lmms_eval/tasks/pope/utils.py pope_process_results and pope_aggregate_* "
        "on the reply stripped by lmms_eval/api/task.py ConfigurableTask.process_results: the "
        "whole reply, lowercased and stripped, must equal the answer",
        "lenient": LENIENT,
    }
    example: ClassVar[Example] = Example(
        {"type": "pope"},
        [
            {"id": "a", "output": "Yes, there is a dog in the image.", "expected_output": "yes"},
            {"id": "b", "output": "No.", "expected_output": "yes"},
        ],
    )

    def row_function(self) -> Callable[..., RowResult]:
        return partial(score_row, self.protocol)

    def evaluate(self, batch: pl.DataFrame) -> EvalOutput:
        return column_scores(batch, self.protocol, self.workers())

    def summarize(self, results: pl.DataFrame) -> dict[str, Any]:
        processed = results.filter(pl.col("status") == PROCESSED)
        unparseable = self.unparseable(results)
        if processed.height == 0:
            return {"protocol": self.protocol, "n": 0, "unparseable": unparseable}
        labels = processed["details"].str.json_decode(pl.Struct({"prediction": pl.Utf8, "expected": pl.Utf8}))
        prediction, expected = labels.struct.field("prediction"), labels.struct.field("expected")
        return pope_metrics(self.protocol, prediction, expected, unparseable)
