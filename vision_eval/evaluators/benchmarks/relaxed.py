"""ChartQA relaxed accuracy of each protocol, row-wise (the definitions) and on columns.

``official`` and ``lmms_eval`` score a (reply, label) pair the same way (lmms-eval's ``relaxed_correctness`` is
pix2struct's): each side is read as a number by Python's ``float`` (a trailing ``%`` divides by 100); when both are
numbers and the label's is not zero, the pair is correct within ``tolerance`` relative difference, otherwise the
lowercased texts must be equal. A label of 0 therefore needs the text ``0`` itself (``0.0`` is wrong), ``1,000``
and ``$12`` are text, and ``nan`` never equals ``nan``. ``lenient`` is this project's forgiving reading.
"""

from __future__ import annotations

import polars as pl

from vision_eval.evaluators.benchmarks.text import PY_ASCII_WHITESPACE, is_ascii, with_fallback

# --- row-wise definitions -----------------------------------------------------------------------------------


def python_float(text: str) -> float | None:
    """The reference's reading of an answer as a number (``None`` when it is not one)."""
    try:
        return float(text.rstrip("%")) / 100.0 if text.endswith("%") else float(text)
    except ValueError:
        return None


def relaxed_correct(prediction: str, target: str, tolerance: float = 0.05) -> bool:
    """The reference's relaxed correctness of one reply against one label."""
    predicted, expected = python_float(prediction), python_float(target)
    if predicted is not None and expected:
        return abs(predicted - expected) / abs(expected) <= tolerance
    return prediction.lower() == target.lower()


# --- columns --------------------------------------------------------------------------------------------------

_PLAIN_NUMBER = r"^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?%*$"
# Characters Python's float() can accept (besides non-ASCII digits and spaces): a text with any other ASCII
# character, once its trailing % are gone, is surely not a number.
_NEVER_IN_A_FLOAT = "[^0-9+\\-._eEaAfFiInNtTyY" + "".join(f"\\x{ord(c):02X}" for c in PY_ASCII_WHITESPACE) + "]"


def python_floats(series: pl.Series) -> pl.Series:
    """:func:`python_float` of every string: Polars reads the plain numbers, Python the few doubtful texts."""
    # Polars turns a division by a constant into a multiplication (28.5 / 100 != 28.5 * 0.01): divide by a column.
    hundred = pl.Series("hundred", [100.0], dtype=pl.Float64).extend_constant(100.0, max(series.len() - 1, 0))
    frame = pl.DataFrame({"t": series.cast(pl.Utf8), "hundred": hundred.head(series.len())})
    percent = pl.col("t").str.ends_with("%")
    body = pl.when(percent).then(pl.col("t").str.strip_chars_end("%")).otherwise(pl.col("t"))
    plain = pl.col("t").str.contains(_PLAIN_NUMBER)
    value = body.cast(pl.Float64, strict=False)
    frame = frame.select(
        pl.when(plain).then(pl.when(percent).then(value / pl.col("hundred")).otherwise(value)).alias("value"),
        (plain | (is_ascii(pl.col("t")) & body.str.contains(_NEVER_IN_A_FLOAT))).alias("exact"),
    )
    return with_fallback(frame["value"], frame["exact"], [series], python_float)


def lower_equal(left: pl.Series, right: pl.Series) -> pl.Series:
    """``left.lower() == right.lower()`` row by row (Polars for ASCII pairs, Python for the rest)."""
    frame = pl.DataFrame({"a": left, "b": right})
    frame = frame.select(
        (pl.col("a").str.to_lowercase() == pl.col("b").str.to_lowercase()).alias("equal"),
        (is_ascii(pl.col("a")) & is_ascii(pl.col("b"))).alias("exact"),
    )
    return with_fallback(frame["equal"], frame["exact"], [left, right], lambda a, b: a.lower() == b.lower())


def relaxed_pairs(pairs: pl.DataFrame, tolerance: float) -> pl.DataFrame:
    """``pairs`` (``output``, ``gold`` and ``p``: the output's :func:`python_float`) with ``score`` and ``numeric``
    by the reference's relaxed correctness."""
    pairs = pairs.with_columns(python_floats(pairs["gold"]).alias("g"))
    numeric = pl.col("p").is_not_null() & pl.col("g").is_not_null() & (pl.col("g") != 0)
    close = (pl.col("p") - pl.col("g")).abs() / pl.col("g").abs() <= tolerance
    pairs = pairs.with_columns(numeric.alias("numeric"), close.alias("close"))
    text_pairs = pairs.filter(~pl.col("numeric"))
    equal = (
        lower_equal(text_pairs["output"], text_pairs["gold"]) if text_pairs.height else pl.Series([], dtype=pl.Boolean)
    )
    text_rows = pairs["numeric"].not_().arg_true()
    same_text = pl.Series("same", [False] * pairs.height, dtype=pl.Boolean).scatter(text_rows, equal)
    correct = pl.when(pl.col("numeric")).then(pl.col("close")).otherwise(same_text)
    return pairs.with_columns(correct.cast(pl.Float64).alias("score"))


# --- lenient ----------------------------------------------------------------------------------------------------

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
