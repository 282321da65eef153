"""Frozen copy of the implementation before the perf3 fast paths (equivalence tests only).

Chart data: currency values, percentages and dates/quarters, extracted with column regexes.

A number is money only with a currency marker (``$``, ``€``, ``USD``, "dollars"), a scale
(``K``, ``M``, "million") or thousands separators (``1,250``), so list markers ("1."), years
("2025") and quarter digits ("Q4") are never money. Each expected value is matched against the
response's values of the same kind: money within a relative tolerance (an expected 0 needs an
absolute one), percentages within an absolute tolerance, dates and quarters as dates.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

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


@dataclass(frozen=True)
class ChartOptions:
    """See ``ChartValidatorSettings`` for the meaning of each field."""

    currency_tolerance: float = 0.15
    percent_tolerance: float = 0.0
    zero_tolerance: float = 0.0


# One pass over the text: the earliest alternative wins at a position, so dates and percentages are
# taken before a bare number could be read as money.
_ANY = "(?i)" + "|".join(f"(?:{p.removeprefix('(?i)')})" for p in (ISO_DATE, MONTH_DATE, QUARTER, PERCENT, MONEY))


def values(frame: pl.DataFrame, column: str) -> pl.DataFrame:
    """Long frame ``_row, kind (money|percent|date), text, value (number), key (date text), year``."""
    found = (
        frame.select(
            pl.int_range(0, pl.len(), dtype=pl.UInt32).alias("_row"),
            pl.col(column).cast(pl.Utf8).fill_null("").str.extract_all(_ANY).alias("text"),
        )
        .explode("text")
        .drop_nulls("text")
        .with_columns(pl.col("text").str.strip_chars())
    )
    text = pl.col("text")
    is_iso = text.str.contains(r"^\d{4}-\d{2}-\d{2}$")
    is_quarter = text.str.contains(r"(?i)^q[1-4]")
    is_percent = text.str.contains(r"(?i)(?:%|percent|per cent|pct)$")
    is_month = text.str.contains(r"(?i)^(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)")
    found = found.with_columns(
        pl.when(is_iso)
        .then(pl.lit("iso"))
        .when(is_quarter)
        .then(pl.lit("quarter"))
        .when(is_percent)
        .then(pl.lit("percent"))
        .when(is_month)
        .then(pl.lit("month"))
        .otherwise(pl.lit("money"))
        .alias("sub")
    )
    money = found.filter(pl.col("sub") == "money").with_columns(text.str.extract_groups(_MONEY_PARTS).alias("g"))
    money = money.unnest("g").filter(
        pl.col("sym").is_not_null()
        | pl.col("suf").is_not_null()
        | pl.col("word").is_not_null()
        | pl.col("num").str.contains(",")
    )
    money = money.select(
        "_row",
        pl.lit("money").alias("kind"),
        "text",
        (
            pl.col("num").str.replace_all(",", "").cast(pl.Float64, strict=False)
            * pl.col("suf").str.to_lowercase().replace_strict(_SCALE, default=1.0, return_dtype=pl.Float64)
        ).alias("value"),
        pl.lit(None, pl.Utf8).alias("key"),
        pl.lit(None, pl.Utf8).alias("year"),
    )
    rest = found.filter(pl.col("sub") != "money")
    year = text.str.extract(r"(\d{2,4})$", 1)
    month = pl.concat_str(
        text.str.extract(r"(\d{4})$", 1),
        pl.lit("-"),
        text.str.to_lowercase().str.slice(0, 3).replace_strict(_MONTHS, default=None),
        pl.when(text.str.contains(r"\s\d{1,2}(?:st|nd|rd|th)?,?\s"))
        .then(pl.concat_str(pl.lit("-"), text.str.extract(r"\s(\d{1,2})(?:st|nd|rd|th)?,?\s", 1).str.zfill(2)))
        .otherwise(pl.lit("")),
    )
    sub = pl.col("sub")
    rest = rest.select(
        "_row",
        pl.when(sub == "percent").then(pl.lit("percent")).otherwise(pl.lit("date")).alias("kind"),
        "text",
        pl.when(sub == "percent").then(text.str.extract(r"([-+]?\d+(?:\.\d+)?)", 1).cast(pl.Float64)).alias("value"),
        pl.when(sub == "quarter")
        .then(pl.concat_str(pl.lit("Q"), text.str.extract(r"(?i)q([1-4])", 1)))
        .when(sub == "iso")
        .then(text)
        .when(sub == "month")
        .then(month)
        .alias("key"),
        pl.when((sub == "quarter") & text.str.contains(r"\d{2,4}$", literal=False) & (text.str.len_chars() > 2))
        .then(pl.when(year.str.len_chars() == 2).then(pl.concat_str(pl.lit("20"), year)).otherwise(year))
        .alias("year"),
    )
    return pl.concat([money, rest], how="vertical_relaxed")


def _assign(candidates: pl.DataFrame, rounds: int = 8) -> pl.DataFrame:
    """One-to-one matching of expected (``_e``) and response (``_a``) values, closest pairs first.

    Each round keeps every expected value's closest free response value, and each response value for the
    expected value it is closest to; the globally closest free pair always survives, so rounds converge.
    """
    taken = []
    for _ in range(rounds):
        if candidates.is_empty():
            break
        dist = pl.col("dist")
        best = candidates.filter(dist == dist.min().over("_e")).unique("_e", keep="first", maintain_order=True)
        best = best.filter(dist == dist.min().over("_a")).unique("_a", keep="first", maintain_order=True)
        taken.append(best)
        candidates = candidates.join(best, on="_e", how="anti").join(best, on="_a", how="anti")
    return pl.concat(taken) if taken else candidates.head(0)


def chart_frame(frame: pl.DataFrame, opts: ChartOptions) -> pl.DataFrame:
    """Score each row: the share of expected values the response states (see module docstring)."""
    want = values(frame, "expected_output").with_row_index("_e")
    got = values(frame, "output").with_row_index("_a")
    pairs = want.join(got, on=["_row", "kind"], how="left", suffix="_a")
    diff = (pl.col("value_a") - pl.col("value")).abs()
    rel = pl.when(pl.col("value") == 0).then(diff).otherwise(diff / pl.col("value").abs())
    limit = (
        pl.when(pl.col("kind") == "percent")
        .then(pl.lit(opts.percent_tolerance))
        .when(pl.col("value") == 0)
        .then(pl.lit(opts.zero_tolerance))
        .otherwise(pl.lit(opts.currency_tolerance))
    )
    numeric_ok = pl.when(pl.col("kind") == "percent").then(diff <= limit + 1e-9).otherwise(rel <= limit + 1e-9)
    date_ok = (pl.col("key") == pl.col("key_a")) & (
        (pl.col("year") == pl.col("year_a")) | pl.col("year").is_null() | pl.col("year_a").is_null()
    )
    pairs = pairs.with_columns(
        pl.when(pl.col("kind") == "date").then(date_ok).otherwise(numeric_ok).fill_null(False).alias("ok"),
        pl.when(pl.col("kind") == "date").then(pl.lit(0.0)).otherwise(rel).fill_null(float("inf")).alias("dist"),
    )
    assigned = _assign(pairs.filter(pl.col("ok")).select("_e", "_a", "dist", pl.col("text_a").alias("hit_text")))
    assigned = assigned.select("_e", pl.lit(True).alias("matched"), "hit_text")
    closest = pairs.filter(pl.col("dist") == pl.col("dist").min().over("_e")).unique("_e", keep="first")
    per_value = (
        closest.select(
            "_e", "_row", "kind", pl.col("text").alias("expected"), "value", pl.col("text_a").alias("closest")
        )
        .join(assigned, on="_e", how="left")
        .with_columns(
            pl.col("matched").fill_null(False),
            pl.coalesce("hit_text", "closest").alias("actual"),
        )
    )
    per_value = per_value.with_columns(pl.struct("kind", "expected", "value", "matched", "actual").alias("values"))
    per_row = per_value.group_by("_row").agg(
        pl.col("matched").mean().alias("score"),
        pl.col("matched").sum().alias("hits"),
        pl.len().alias("n"),
        "values",
    )
    out = pl.DataFrame({"_row": pl.int_range(0, frame.height, eager=True, dtype=pl.UInt32)})
    out = out.join(per_row, on="_row", how="left").sort("_row")
    reasoning = pl.format("{} of {} expected values found in the response", "hits", "n")
    tolerances = pl.struct(
        pl.lit(opts.currency_tolerance).alias("currency"),
        pl.lit(opts.percent_tolerance).alias("percent"),
        pl.lit(opts.zero_tolerance).alias("zero"),
    )
    details = pl.struct(
        "values",
        pl.col("hits").alias("matched"),
        pl.col("n").alias("expected"),
        tolerances.alias("tolerances"),
        reasoning.alias("reasoning"),
    ).struct.json_encode()
    missing = pl.col("score").is_null()
    return out.select(
        pl.when(missing).then(pl.lit("error")).otherwise(pl.lit("processed")).alias("status"),
        pl.col("score"),
        pl.when(~missing).then(details).alias("details"),
        pl.when(missing).then(pl.lit("expected_output holds no currency, percentage or date values")).alias("error"),
    )
