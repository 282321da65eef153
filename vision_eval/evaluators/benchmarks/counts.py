"""CountBench: reading a count from a reply under each protocol of ``exact_count``.

- ``lmms_eval``: the whole reply, stripped and lowercased, a number word none..twenty as digits
  (:func:`lmms_eval_count`).
- ``lenient``: every number in the reply (digits of any script with thousands commas and decimals, or an English
  number word up to a hundred), the one ``pick`` chooses, against the first number of ``expected_output``
  (:func:`lenient_count`).

Each has a row-wise definition in plain Python and a column function that reads only the rows it reads exactly as
the definition would and hands it the others (``tests/test_equivalence.py`` checks the pairs).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

import polars as pl

from vision_eval.evaluators.benchmarks.text import (
    NUMBER_PATTERN,
    NUMBER_WORDS,
    is_ascii,
    number_token_value,
    py_strip,
    with_fallback,
)

Pick = Literal["first", "last", "only"]
UNPARSEABLE_REASON = "cannot extract"
NO_EXPECTED_COUNT = "expected_output holds no count"
NO_COUNT = f"{UNPARSEABLE_REASON} a count from the output"
SEVERAL_COUNTS = "the output gives several different counts"

# --- lmms_eval ----------------------------------------------------------------------------------------------------

COUNT_WORDS = {"none": "0", "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6"}
COUNT_WORDS |= {"seven": "7", "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12"}
COUNT_WORDS |= {"thirteen": "13", "fourteen": "14", "fifteen": "15", "sixteen": "16", "seventeen": "17"}
COUNT_WORDS |= {"eighteen": "18", "nineteen": "19", "twenty": "20"}
"""The number words lmms-eval's CountBench task turns into digits (a whole reply of that word only)."""


def lmms_eval_count(text: str) -> str:
    """lmms-eval's CountBench reading of a reply or of a count: stripped, lowercased, a number word as digits."""
    normalized = str(text).strip().lower()
    return COUNT_WORDS.get(normalized, normalized)


def lmms_eval_counts(series: pl.Series) -> pl.Series:
    """:func:`lmms_eval_count` of every string (Polars for ASCII text, Python for the rest)."""
    frame = pl.DataFrame({"t": series.cast(pl.Utf8)})
    frame = frame.select(
        py_strip(pl.col("t").str.to_lowercase()).replace(COUNT_WORDS).alias("n"), is_ascii(pl.col("t")).alias("exact")
    )
    return with_fallback(frame["n"], frame["exact"], [series.cast(pl.Utf8)], lmms_eval_count)


# --- lenient: the definition --------------------------------------------------------------------------------------

_NUMBER = re.compile(NUMBER_PATTERN)


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
        word = re.sub(r"\s+", " ", token)
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


# --- lenient: the columns -----------------------------------------------------------------------------------------

LENIENT_SCHEMA: dict[str, pl.DataType] = {
    "_values": pl.List(pl.Float64),
    "_pred": pl.Float64(),
    "_gold": pl.Float64(),
    "_error": pl.Utf8(),
}


def lenient_counts(outputs: pl.Series, expected: pl.Series, pick: Pick) -> pl.DataFrame:
    """:func:`lenient_count` of every row, as columns ``_values, _pred, _gold, _error``. Polars reads ASCII rows
    exactly as the definition does, except for ``\\x1c``-``\\x1f`` (whitespace to Python's ``\\s`` only); the other
    rows (digits of other scripts, which Polars cannot cast, and every character the regex engines may class
    differently) go to the definition."""
    texts = pl.DataFrame({"o": outputs.cast(pl.Utf8), "e": expected.cast(pl.Utf8)})
    plain = r"^[\x00-\x1b\x20-\x7f]*$"
    exact = texts.select(pl.col("o").str.contains(plain) & pl.col("e").str.contains(plain)).to_series()
    found = pl.col("o").str.to_lowercase().str.extract_all(NUMBER_PATTERN)
    bare = expected.cast(pl.Utf8).str.strip_chars()
    if bare.str.contains(r"^[0-9]+(?:\.[0-9]+)?$").all():  # as benchmark references almost always are
        gold = pl.lit(bare.cast(pl.Float64))
    else:
        gold = number_token_value(pl.col("e").str.to_lowercase().str.extract(f"({NUMBER_PATTERN})", 1))
    fast = texts.select(found.list.eval(number_token_value(pl.element())).alias("_values"), gold.alias("_gold"))
    values = pl.col("_values")
    distinct = values.list.n_unique()
    pred = {
        "first": values.list.first(),
        "last": values.list.last(),
        "only": pl.when(distinct == 1).then(values.list.first()),
    }[pick]
    fast = fast.with_columns(pred.alias("_pred"))
    error = (
        pl.when(pl.col("_gold").is_null())
        .then(pl.lit(NO_EXPECTED_COUNT))
        .when(values.list.len() == 0)
        .then(pl.lit(NO_COUNT))
        .when(pl.col("_pred").is_null())
        .then(pl.lit(SEVERAL_COUNTS))
    )
    fast = fast.with_columns(error.alias("_error")).select(list(LENIENT_SCHEMA)).with_row_index("_pos")
    slow = (~exact.fill_null(True)).arg_true()
    if slow.len() == 0:
        return fast.drop("_pos")
    rows = [lenient_count(o, e, pick) for o, e in zip(outputs.gather(slow).to_list(), expected.gather(slow).to_list())]
    by_definition = pl.DataFrame(
        {
            "_pos": slow.cast(pl.UInt32),
            "_values": [r.found for r in rows],
            "_pred": [r.predicted for r in rows],
            "_gold": [r.expected for r in rows],
            "_error": [r.error for r in rows],
        },
        schema={"_pos": pl.UInt32, **LENIENT_SCHEMA},
    )
    return pl.concat([fast.filter(exact.fill_null(True)), by_definition]).sort("_pos").drop("_pos")
