"""The values of chart text: currency values, percentages and dates/quarters, found with one column regex.

Every match of one combined pattern is classified and parsed once per distinct matched text (responses
repeat the same "$2.4M", "Q4 2025" and "58%" across rows), then mapped back to the matches as arrays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from vision_eval.validators._distinct import codes

MONEY = (
    r"(?i)(?:(?:[$€£¥]|\b(?:usd|eur|gbp)\b)\s?)?\b(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"(?:\s?(?:thousand|million|billion|trillion|bn|mn|mm|k|m|b|t)\b)?(?:\s*(?:dollars|usd|euros?|eur|pounds|gbp)\b)?"
)
_MONEY_PARTS = (
    r"(?i)^(?P<sym>[$€£¥]|usd|eur|gbp)?\s?(?P<num>[\d,]+(?:\.\d+)?)"
    r"(?:\s?(?P<suf>thousand|million|billion|trillion|bn|mn|mm|k|m|b|t))?(?:\s*(?P<word>[a-z]+))?$"
)
PERCENT = r"(?i)[-+]?\b\d+(?:\.\d+)?\s?(?:%|percent\b|per cent\b|pct\b)"
QUARTER = r"(?i)\bq[1-4](?:\s*(?:'|fy\s?)?(?:\d{4}|\d{2})\b)?"
ISO_DATE = r"\b\d{4}-\d{2}-\d{2}\b"
MONTH_DATE = (
    r"(?i)\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+(?:\d{1,2}(?:st|nd|rd|th)?,?\s+)?\d{4}\b"
)
# ASCII word boundaries (a Unicode \b keeps Rust's regex engine off its fast DFA).
MONEY, PERCENT, QUARTER, ISO_DATE, MONTH_DATE = (
    p.replace(r"\b", r"(?-u:\b)") for p in (MONEY, PERCENT, QUARTER, ISO_DATE, MONTH_DATE)
)
_SCALE = {"thousand": 1e3, "k": 1e3, "million": 1e6, "m": 1e6, "mn": 1e6, "mm": 1e6, "billion": 1e9, "b": 1e9}
_SCALE |= {"bn": 1e9, "trillion": 1e12, "t": 1e12}
_MONTHS = {
    m: f"{i:02d}"
    for i, m in enumerate(["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"], start=1)
}
# One pass over the text: the earliest alternative wins at a position, so dates and percentages are
# taken before a bare number could be read as money.
_ANY = "(?i)" + "|".join(f"(?:{p.removeprefix('(?i)')})" for p in (ISO_DATE, MONTH_DATE, QUARTER, PERCENT, MONEY))

KINDS = ("money", "percent", "date")
"""Kind names by kind code."""
_ISO, _MONTH, _QUARTER, _PERCENT, _MONEY = range(5)


@dataclass(frozen=True)
class Values:
    """The values of a text column, in text order within each row: each value's ``row``, ``code`` (its row in
    the distinct table of :func:`values_of`) and ``kind`` (an index into :data:`KINDS`)."""

    row: np.ndarray
    code: np.ndarray
    kind: np.ndarray


def matches(texts: pl.Expr) -> pl.Expr:
    """Every match of the combined pattern in each text (a list per row; null text: none)."""
    return texts.cast(pl.Utf8).fill_null("").str.extract_all(_ANY)


def values_of(*columns: pl.Series) -> tuple[pl.DataFrame, list[Values]]:
    """The values among the matches (list columns of :func:`matches`), parsed once per distinct text: the
    distinct values (``text, kind, value, key, year``, see :func:`parse`) and each column's values."""
    lengths = [column.list.len().to_numpy() for column in columns]
    flat = pl.concat([column.explode() for column in columns])  # empty lists leave nothing
    distinct, code = codes(flat, repeats_ok=True)
    parsed = parse(distinct.to_frame("text").with_row_index("_u"))
    # Position of each distinct text among the parsed values (-1: not a value).
    position = np.full(len(distinct), -1, dtype=np.int64)
    position[parsed["_u"].to_numpy()] = np.arange(parsed.height)
    code = position[code]
    kind = np.append(parsed["kind"].to_numpy().astype(np.int8), -1)[code]
    bounds = np.cumsum([int(n.sum()) for n in lengths])[:-1]
    found = []
    for n, column_code, column_kind in zip(lengths, np.split(code, bounds), np.split(kind, bounds), strict=True):
        keep = column_code >= 0
        row = np.repeat(np.arange(len(n), dtype=np.int64), n)[keep]
        found.append(Values(row=row, code=column_code[keep], kind=column_kind[keep]))
    return parsed.drop("_u"), found


def parse(found: pl.DataFrame) -> pl.DataFrame:
    """``_u, text, kind (code), value (number), key (date text), year`` of the matched texts that are values."""
    text = pl.col("text")
    # A bare number (list marker, year) is never money, nor any other kind: dropped before classifying.
    found = found.filter(~text.str.contains(r"^\d+(?:\.\d+)?$"))
    # Which alternative of the combined pattern matched (in its order of priority; only quarters start with q).
    found = found.with_columns(
        pl.when(text.str.contains(r"^\d{4}-\d{2}-\d{2}$"))
        .then(pl.lit(_ISO, pl.UInt8))
        .when(text.str.starts_with("q") | text.str.starts_with("Q"))
        .then(pl.lit(_QUARTER, pl.UInt8))
        .when(text.str.contains(r"(?i)(?:%|percent|per cent|pct)$"))
        .then(pl.lit(_PERCENT, pl.UInt8))
        .when(text.str.contains(r"(?i)^(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)"))
        .then(pl.lit(_MONTH, pl.UInt8))
        .otherwise(pl.lit(_MONEY, pl.UInt8))
        .alias("sub"),
    )
    sub = pl.col("sub")
    money = found.filter(sub == _MONEY)
    money = money.with_columns(text.str.extract_groups(_MONEY_PARTS).alias("g")).unnest("g")
    money = money.filter(
        pl.col("sym").is_not_null()
        | pl.col("suf").is_not_null()
        | pl.col("word").is_not_null()
        | pl.col("num").str.contains(",")
    )
    null_text, null_value = pl.lit(None, pl.Utf8), pl.lit(None, pl.Float64)
    money = money.select(
        "_u",
        "text",
        pl.lit(0, pl.Int8).alias("kind"),
        (
            pl.col("num").str.replace_all(",", "").cast(pl.Float64, strict=False)
            * pl.col("suf").str.to_lowercase().replace_strict(_SCALE, default=1.0, return_dtype=pl.Float64)
        ).alias("value"),
        null_text.alias("key"),
        null_text.alias("year"),
    )
    percent = found.filter(sub == _PERCENT).select(
        "_u",
        "text",
        pl.lit(1, pl.Int8).alias("kind"),
        text.str.extract(r"([-+]?\d+(?:\.\d+)?)", 1).cast(pl.Float64).alias("value"),
        null_text.alias("key"),
        null_text.alias("year"),
    )
    # The quarter pattern starts with q1..q4 and has a year only when longer than that.
    year = text.str.extract(r"(\d{2,4})$", 1)
    quarter = found.filter(sub == _QUARTER).select(
        "_u",
        "text",
        pl.lit(2, pl.Int8).alias("kind"),
        null_value.alias("value"),
        pl.concat_str(pl.lit("Q"), text.str.slice(1, 1)).alias("key"),
        pl.when(year.str.len_bytes() == 2).then(pl.concat_str(pl.lit("20"), year)).otherwise(year).alias("year"),
    )
    iso = found.filter(sub == _ISO).select(
        "_u",
        "text",
        pl.lit(2, pl.Int8).alias("kind"),
        null_value.alias("value"),
        text.alias("key"),
        null_text.alias("year"),
    )
    day = text.str.extract(r"\s(\d{1,2})(?:st|nd|rd|th)?,?\s", 1)
    month = found.filter(sub == _MONTH).select(
        "_u",
        "text",
        pl.lit(2, pl.Int8).alias("kind"),
        null_value.alias("value"),
        pl.concat_str(
            text.str.extract(r"(\d{4})$", 1),
            pl.lit("-"),
            text.str.to_lowercase().str.slice(0, 3).replace_strict(_MONTHS, default=None),
            pl.when(day.is_not_null()).then(pl.concat_str(pl.lit("-"), day.str.zfill(2))).otherwise(pl.lit("")),
        ).alias("key"),
        null_text.alias("year"),
    )
    return pl.concat([money, percent, quarter, iso, month], how="vertical_relaxed")
