"""``exact_count`` (CountBench): reading a count from a reply under each protocol, and the row's score.

- ``lmms_eval``: the whole reply, stripped and lowercased, a number word none..twenty as digits
  (:func:`lmms_eval_count`), must be the reference's count; a reply that is not digits then is *unparseable* and
  scored wrong. A reference that does not read as digits is a row error.
- ``lenient``: every number in the reply (digits of any script with thousands commas and decimals, or an English
  number word up to a hundred), the one ``pick`` chooses, against the first number of ``expected_output``
  (:func:`lenient_count`); a reply without one is a row error.

Each reading is defined row by row (:func:`score_lmms_eval`, :func:`score_lenient`); ``evaluate`` runs the same
readings as Polars expressions (:func:`column_scores`) on the rows Polars reads as Python does and hands the others to
the row function (``tests/test_benchmark_protocols_rows.py`` checks both give the same rows).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Any, ClassVar, Literal

import polars as pl
from pydantic import field_validator, model_validator

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
from vision_eval.evaluators.benchmarks.text import (
    PY_WHITE_SPACE,
    details_json,
    json_float,
    json_number,
    json_text,
)
from vision_eval.example import Example
from vision_eval.results import ERROR, PROCESSED, RESULT_ROW_SCHEMA, conform
from vision_eval.rowwise import RowResult, handed_over

Pick = Literal["first", "last", "only"]
NO_EXPECTED_COUNT = "expected_output holds no count"
NO_COUNT = f"{UNPARSEABLE_REASON} a count from the output"
SEVERAL_COUNTS = "the output gives several different counts"

# --- lmms_eval ----------------------------------------------------------------------------------------------------

COUNT_WORDS = {"none": "0", "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6"}
COUNT_WORDS |= {"seven": "7", "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12"}
COUNT_WORDS |= {"thirteen": "13", "fourteen": "14", "fifteen": "15", "sixteen": "16", "seventeen": "17"}
COUNT_WORDS |= {"eighteen": "18", "nineteen": "19", "twenty": "20"}
"""The number words lmms-eval's CountBench task turns into digits (a whole reply of that word only)."""
_DIGITS = re.compile(r"[0-9]+")


def lmms_eval_count(text: str) -> str:
    """lmms-eval's CountBench reading of a reply or of a count: stripped, lowercased, a number word as digits."""
    normalized = str(text).strip().lower()
    return COUNT_WORDS.get(normalized, normalized)


# --- lenient ------------------------------------------------------------------------------------------------------

_UNITS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"]
_TEENS = ["thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
_TENS = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]


def _number_words() -> dict[str, int]:
    words = {w: i for i, w in enumerate(_UNITS)}
    words.update({w: 13 + i for i, w in enumerate(_TEENS)})
    for t, tens in enumerate(_TENS):
        value = 20 + 10 * t
        words[tens] = value
        for u in range(1, 10):
            words[f"{tens}-{_UNITS[u]}"] = value + u
            words[f"{tens} {_UNITS[u]}"] = value + u
    words["none"] = 0
    words["a dozen"] = 12
    words["dozen"] = 12
    words["hundred"] = 100
    words["a hundred"] = 100
    words["one hundred"] = 100
    return words


NUMBER_WORDS: dict[str, int] = _number_words()
"""English number words up to a hundred (``twenty-one``, ``twenty one``, ``a dozen``) and their values."""
# Longest first: the regex alternation takes the first alternative that matches ("twenty-one" before "twenty").
_WORD_ALTERNATION = "|".join(sorted(NUMBER_WORDS, key=len, reverse=True)).replace(" ", r"\s+")
NUMBER_PATTERN = rf"\b(?:\d+(?:,\d{{3}})*(?:\.\d+)?|{_WORD_ALTERNATION})\b"
"""One number in text: digits (thousands commas, decimals) or an English number word up to 100."""
_NUMBER = re.compile(NUMBER_PATTERN)
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class LenientCount:
    """The lenient reading of one row."""

    found: list[float]
    """Every number of the output, in order."""
    predicted: float | None
    """The one ``pick`` chooses (``None``: none, or several different ones with ``pick: only``)."""
    expected: float | None
    """The first number of ``expected_output``."""
    error: str | None
    """Why the row is an error (``None``: it is scored, 1 when ``predicted == expected``)."""


def numbers_in(text: str) -> list[float]:
    """Every number in the lowercased text, in order, as a float (a number too long for a float is ``inf``)."""
    values = []
    for match in _NUMBER.finditer(text.lower()):
        token = match.group(0)
        word = _SPACES.sub(" ", token)
        values.append(float(NUMBER_WORDS[word]) if word in NUMBER_WORDS else float(token.replace(",", "")))
    return values


def lenient_count(output: str, expected: str, pick: Pick) -> LenientCount:
    """The ``lenient`` protocol's reading of one row (see the module docstring)."""
    found = numbers_in(output)
    gold = next(iter(numbers_in(expected)), None)
    if not found:
        predicted = None
    elif pick == "first":
        predicted = found[0]
    elif pick == "last":
        predicted = found[-1]
    else:
        predicted = found[0] if len(set(found)) == 1 else None
    if gold is None:
        error: str | None = NO_EXPECTED_COUNT
    elif not found:
        error = NO_COUNT
    elif predicted is None:
        error = SEVERAL_COUNTS
    else:
        error = None
    return LenientCount(found, predicted, gold, error)


# --- the row ----------------------------------------------------------------------------------------------------


def _raw(protocol: str, output: str, expected: str) -> str:
    return details_json(protocol=protocol, raw=output[:RAW_CHARS], expected=expected[:RAW_CHARS])


@lru_cache(maxsize=4096)
def _counted(prediction: str, gold: str) -> RowResult:
    """The verdict of a reply read as a count (both are digits: nothing to escape); shared by the rows."""
    details = f'{{"protocol":"lmms_eval","predicted":"{prediction}","expected":"{gold}"}}'
    return RowResult("processed", float(prediction == gold), details)


def score_lmms_eval(output: str, expected: str) -> RowResult:
    """One row under ``lmms_eval``: 1 when the reply reads as the reference's count."""
    gold = lmms_eval_count(expected)
    if not _DIGITS.fullmatch(gold):
        return RowResult("error", details=_raw("lmms_eval", output, expected), error=NO_EXPECTED_COUNT)
    prediction = lmms_eval_count(output)
    if _DIGITS.fullmatch(prediction):
        return _counted(prediction, gold)
    details = (
        f'{{"protocol":"lmms_eval","predicted":{json_text(prediction)},"expected":"{gold}","unparseable":true,'
        f'"raw":{json_text(output[:RAW_CHARS])}}}'
    )
    return RowResult("processed", 0.0, details)


def score_lenient(pick: Pick, output: str, expected: str) -> RowResult:
    """One row under ``lenient``: 1 when the number ``pick`` chooses equals the reference's first number."""
    read = lenient_count(output, expected, pick)
    found = ",".join(map(json_number, read.found))
    if read.error is not None:
        raw = f'{json_text(output[:RAW_CHARS])},"expected":{json_text(expected[:RAW_CHARS])}'
        return RowResult("error", details=f'{{"protocol":"lenient","raw":{raw},"found":[{found}]}}', error=read.error)
    details = (
        f'{{"protocol":"lenient","predicted":{json_float(read.predicted)},"expected":{json_float(read.expected)},'
        f'"found":[{found}]}}'
    )
    return RowResult("processed", float(read.predicted == read.expected), details)


# --- the same readings on columns ----------------------------------------------------------------------------

ASCII = r"^[\x00-\x7f]*$"
"""Text Polars strips, lowercases and matches as Python does (``lmms_eval``)."""
ASCII_SEPARATED = r"^[\x00-\x1b\x20-\x7f]*$"
"""Text whose ``\\d``, ``\\s`` and ``\\b`` mean the same to Polars as to Python (``lenient``): ASCII without
``\\x1c``-``\\x1f``, which are white space to Python's ``\\s`` only."""


def _raw_column(column: str) -> pl.Expr:
    return pl.col(column).str.slice(0, RAW_CHARS)


def lmms_eval_counts(text: pl.Expr) -> pl.Expr:
    """:func:`lmms_eval_count` of a column of ASCII text."""
    return text.str.strip_chars(PY_WHITE_SPACE).str.to_lowercase().replace(COUNT_WORDS)


def _lmms_eval_parts(frame: pl.DataFrame) -> list[pl.DataFrame]:
    gold, prediction = lmms_eval_counts(pl.col("expected_output")), lmms_eval_counts(pl.col("output"))
    frame = frame.with_columns(gold.alias("_gold"), prediction.alias("_pred"))
    gold, prediction = pl.col("_gold"), pl.col("_pred")
    bad, counted = ~gold.str.contains("^[0-9]+$"), prediction.str.contains("^[0-9]+$")
    raw = pl.struct(
        pl.lit("lmms_eval").alias("protocol"),
        _raw_column("output").alias("raw"),
        _raw_column("expected_output").alias("expected"),
    )
    read = pl.concat_str(
        pl.lit('{"protocol":"lmms_eval","predicted":"'), prediction, pl.lit('","expected":"'), gold, pl.lit('"}')
    )
    unread = pl.struct(
        pl.lit("lmms_eval").alias("protocol"),
        prediction.alias("predicted"),
        gold.alias("expected"),
        pl.lit(True).alias("unparseable"),
        _raw_column("output").alias("raw"),
    )
    return [
        frame.filter(bad).select(
            "_pos", "sample_id", pl.lit(ERROR).alias("status"), raw.struct.json_encode().alias("details"),
            pl.lit(NO_EXPECTED_COUNT).alias("error"),
        ),
        frame.filter(~bad & counted).select(
            "_pos", "sample_id", pl.lit(PROCESSED).alias("status"),
            (prediction == gold).cast(pl.Float64).alias("score"), read.alias("details"),
        ),
        frame.filter(~bad & ~counted).select(
            "_pos", "sample_id", pl.lit(PROCESSED).alias("status"), pl.lit(0.0).alias("score"),
            unread.struct.json_encode().alias("details"),
        ),
    ]  # fmt: skip


def _number_values(tokens: pl.Expr) -> pl.Expr:
    """The values of :data:`NUMBER_PATTERN` matches, as :func:`numbers_in` reads them."""
    word = tokens.str.replace_all(_SPACES.pattern, " ")
    as_word = word.replace_strict(NUMBER_WORDS, default=None, return_dtype=pl.Float64)
    return pl.coalesce(as_word, tokens.str.replace_all(",", "", literal=True).cast(pl.Float64, strict=False))


def _lenient_parts(frame: pl.DataFrame, pick: Pick) -> list[pl.DataFrame]:
    found = pl.col("output").str.to_lowercase().str.extract_all(NUMBER_PATTERN).list.eval(_number_values(pl.element()))
    gold = _number_values(pl.col("expected_output").str.to_lowercase().str.extract(f"({NUMBER_PATTERN})", 1))
    if frame["expected_output"].str.contains(r"^[0-9]+(?:\.[0-9]+)?$").all():  # as CountBench's references are
        gold = pl.col("expected_output").cast(pl.Float64)
    frame = frame.with_columns(found.alias("found"), gold.alias("_gold"))
    values = pl.col("found")
    chosen = {
        "first": values.list.first(),
        "last": values.list.last(),
        "only": pl.when(values.list.n_unique() == 1).then(values.list.first()),
    }[pick]
    frame = frame.with_columns(chosen.alias("_pred"))
    gold, predicted = pl.col("_gold"), pl.col("_pred")
    error = (
        pl.when(gold.is_null())
        .then(pl.lit(NO_EXPECTED_COUNT))
        .when(values.list.len() == 0)
        .then(pl.lit(NO_COUNT))
        .when(predicted.is_null())
        .then(pl.lit(SEVERAL_COUNTS))
    )
    frame = frame.with_columns(error.alias("error"))
    failed = pl.col("error").is_not_null()
    protocol = pl.lit("lenient").alias("protocol")
    raw = pl.struct(
        protocol, _raw_column("output").alias("raw"), _raw_column("expected_output").alias("expected"), "found"
    )
    read = pl.struct(protocol, predicted.alias("predicted"), gold.alias("expected"), "found")
    return [
        frame.filter(failed).select(
            "_pos", "sample_id", pl.lit(ERROR).alias("status"), raw.struct.json_encode().alias("details"), "error"
        ),
        frame.filter(~failed).select(
            "_pos", "sample_id", pl.lit(PROCESSED).alias("status"),
            (predicted == gold).cast(pl.Float64).alias("score"), read.struct.json_encode().alias("details"),
        ),
    ]  # fmt: skip


def column_scores(batch: pl.DataFrame, protocol: str, pick: Pick, workers: int = 1) -> EvalOutput:
    """The rows of a batch, as the row function gives them. The rows Polars cannot read as Python does (outside
    :data:`ASCII` / :data:`ASCII_SEPARATED`) are handed to it (on ``workers`` processes when there are many)."""
    readable = ASCII if protocol == "lmms_eval" else ASCII_SEPARATED
    texts = pl.col("output").cast(pl.Utf8), pl.col("expected_output").cast(pl.Utf8)
    frame = batch.select(pl.col("id").alias("sample_id"), *texts).with_row_index("_pos")
    exact = pl.col("output").str.contains(readable) & pl.col("expected_output").str.contains(readable)
    frame = frame.with_columns(exact.alias("_exact"))
    here = frame.filter("_exact")
    parts = _lmms_eval_parts(here) if protocol == "lmms_eval" else _lenient_parts(here, pick)
    by_row = frame.filter(~pl.col("_exact"))
    if by_row.height:
        function = score_lmms_eval if protocol == "lmms_eval" else partial(score_lenient, pick)
        parts.append(handed_over(by_row, ("output", "expected_output"), function, workers))
    results = pl.concat(parts, how="diagonal_relaxed").sort("_pos")
    return EvalOutput(conform(results.drop("_pos"), RESULT_ROW_SCHEMA))


# --- the evaluator -------------------------------------------------------------------------------------------------


class ExactCountSettings(ProtocolSettings):
    """Settings of ``exact_count``."""

    protocol: Protocol = "lmms_eval"
    """Whose scoring to reproduce: ``lmms_eval`` (lmms-eval's countbench task: the whole reply must be the count;
    CountBench has no official scoring script) or ``lenient`` (the first/last/only number found in the reply; not
    comparable with published numbers); see docs/benchmarks.md."""
    pick: Literal["first", "last", "only"] = "first"
    """``lenient`` only: which number of the reply is the answer: the ``first``, the ``last``, or ``only`` (a reply
    with several different numbers is then an error)."""

    @field_validator("protocol")
    @classmethod
    def _offered(cls, value: str) -> str:
        return check_protocol(ExactCount, value)

    @model_validator(mode="after")
    def _pick_is_lenient(self) -> ExactCountSettings:
        if "pick" in self.model_fields_set and self.protocol != "lenient":
            raise ValueError(f"pick applies to protocol lenient only (protocol is {self.protocol})")
        return self


class ExactCount(ExtractedMetric[ExactCountSettings]):
    """CountBench: the count read from ``output`` equals the count in ``expected_output``.

    ``lmms_eval``: the whole reply, stripped and lowercased (a number word none..twenty as digits), must be the
    count's digits; anything that is not a number is unparseable and wrong. ``lenient``: the first (``pick``)
    number in the reply, digits or words up to a hundred (e.g. ``seven`` = ``7``).
    """

    type_name: ClassVar[str] = "exact_count"
    protocols: ClassVar[dict[str, str]] = {
        "lmms_eval": "EvolvingLMMs-Lab/lmms-eval v0.7.2 @cb45ac4 "
        "lmms_eval/tasks/countbench/utils.py countbench_process_results "
        "on the reply stripped by lmms_eval/api/task.py ConfigurableTask.process_results: the whole "
        "reply, stripped and lowercased, number words none..twenty as digits, must equal the count",
        "lenient": LENIENT,
    }
    missing_protocols: ClassVar[dict[str, str]] = {
        "official": "CountBench (Paiss et al. 2023) publishes no scoring script for model replies",
    }
    example: ClassVar[Example] = Example(
        {"type": "exact_count"},
        [{"id": "a", "output": "3", "expected_output": "3"}, {"id": "b", "output": "five", "expected_output": "4"}],
        note="protocol lmms_eval (default): the whole reply must be the count; protocol: lenient reads a number "
        "anywhere in the reply.",
    )

    def row_function(self) -> Callable[..., RowResult]:
        if self.protocol == "lenient":
            return partial(score_lenient, self.settings.pick)
        return score_lmms_eval

    def evaluate(self, batch: pl.DataFrame) -> EvalOutput:
        return column_scores(batch, self.protocol, self.settings.pick, self.workers())

    def summarize(self, results: pl.DataFrame) -> dict[str, Any]:
        processed = results.filter(pl.col("status") == PROCESSED)
        summary: dict[str, Any] = {"protocol": self.protocol, "n": processed.height}
        summary["unparseable"] = self.unparseable(results)
        if processed.height == 0:
            return summary
        value_type = pl.Float64 if self.protocol == "lenient" else pl.Utf8
        counts = processed["details"].str.json_decode(pl.Struct({"predicted": value_type, "expected": value_type}))
        predicted = counts.struct.field("predicted").cast(pl.Float64, strict=False)
        error = (predicted - counts.struct.field("expected").cast(pl.Float64, strict=False)).abs()
        summary["accuracy"] = float(processed["score"].mean())  # type: ignore[arg-type]
        summary["mae"] = error.mean()  # over the replies that give a number
        return summary
