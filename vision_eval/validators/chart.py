"""Chart data: currency values, percentages and dates/quarters, extracted with column regexes.

A number is money only with a currency marker (``$``, ``€``, ``USD``, "dollars"), a scale
(``K``, ``M``, "million") or thousands separators (``1,250``), so list markers ("1."), years
("2025") and quarter digits ("Q4") are never money. Each expected value is matched against the
response's values of the same kind: money within a relative tolerance (an expected 0 needs an
absolute one), percentages within an absolute tolerance, dates and quarters as dates.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import polars as pl
import pyarrow as pa

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
    return _values(frame[column]).collect()


_ISO, _MONTH, _QUARTER, _PERCENT, _MONEY = range(5)
_KIND_CODE = {"money": 0, "percent": 1, "date": 2}


def _values(texts: pl.Series) -> pl.LazyFrame:
    """The plan of :func:`values` (lazy, so the kinds and both columns are parsed in parallel)."""
    found = (
        pl.LazyFrame({"text": texts.cast(pl.Utf8).fill_null("").str.extract_all(_ANY)})
        .with_row_index("_row")
        .explode("text")
        .drop_nulls("text")
        .with_row_index("_i")
        # A bare number (list marker, year) is never money, nor any other kind: dropped before classifying.
        .filter(~pl.col("text").str.contains(r"^\d+(?:\.\d+)?$"))
    )
    # No pattern starts or ends with whitespace, so the matched texts need no trimming.
    text = pl.col("text")
    # Which alternative of the combined pattern matched (in its order of priority; only quarters start with q).
    found = found.select(
        "_row",
        "_i",
        "text",
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
    text = pl.col("text")
    money = found.filter(pl.col("sub") == _MONEY)
    money = money.with_columns(text.str.extract_groups(_MONEY_PARTS).alias("g")).unnest("g")
    money = money.filter(
        pl.col("sym").is_not_null()
        | pl.col("suf").is_not_null()
        | pl.col("word").is_not_null()
        | pl.col("num").str.contains(",")
    )
    money = money.select(
        "_row",
        "_i",
        pl.lit("money").alias("kind"),
        "text",
        (
            pl.col("num").str.replace_all(",", "").cast(pl.Float64, strict=False)
            * pl.col("suf").str.to_lowercase().replace_strict(_SCALE, default=1.0, return_dtype=pl.Float64)
        ).alias("value"),
        pl.lit(None, pl.Utf8).alias("key"),
        pl.lit(None, pl.Utf8).alias("year"),
    )
    null_text, null_value = pl.lit(None, pl.Utf8), pl.lit(None, pl.Float64)
    sub = pl.col("sub")
    percent = found.filter(sub == _PERCENT).select(
        "_row",
        "_i",
        pl.lit("percent").alias("kind"),
        "text",
        text.str.extract(r"([-+]?\d+(?:\.\d+)?)", 1).cast(pl.Float64).alias("value"),
        null_text.alias("key"),
        null_text.alias("year"),
    )
    # The quarter pattern starts with q1..q4 and has a year only when longer than that.
    year = text.str.extract(r"(\d{2,4})$", 1)
    quarter = found.filter(sub == _QUARTER).select(
        "_row",
        "_i",
        pl.lit("date").alias("kind"),
        "text",
        null_value.alias("value"),
        pl.concat_str(pl.lit("Q"), text.str.slice(1, 1)).alias("key"),
        pl.when(year.str.len_bytes() == 2).then(pl.concat_str(pl.lit("20"), year)).otherwise(year).alias("year"),
    )
    iso = found.filter(sub == _ISO).select(
        "_row",
        "_i",
        pl.lit("date").alias("kind"),
        "text",
        null_value.alias("value"),
        text.alias("key"),
        null_text.alias("year"),
    )
    day = text.str.extract(r"\s(\d{1,2})(?:st|nd|rd|th)?,?\s", 1)
    month = found.filter(sub == _MONTH).select(
        "_row",
        "_i",
        pl.lit("date").alias("kind"),
        "text",
        null_value.alias("value"),
        pl.concat_str(
            text.str.extract(r"(\d{4})$", 1),
            pl.lit("-"),
            text.str.to_lowercase().str.slice(0, 3).replace_strict(_MONTHS, default=None),
            pl.when(day.is_not_null()).then(pl.concat_str(pl.lit("-"), day.str.zfill(2))).otherwise(pl.lit("")),
        ).alias("key"),
        null_text.alias("year"),
    )
    rest = pl.concat([percent, quarter, iso, month], how="vertical_relaxed").sort("_i")
    return pl.concat([money, rest], how="vertical_relaxed").drop("_i")


def _runs(e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start positions of the runs of equal values in ``e`` and each position's run number."""
    boundary = np.concatenate([[True], e[1:] != e[:-1]]) if len(e) else np.zeros(0, dtype=bool)
    return np.flatnonzero(boundary), np.cumsum(boundary) - 1


def _first_at_min(e: np.ndarray, dist: np.ndarray) -> np.ndarray:
    """Per run of equal ``e`` (contiguous), the position of its first smallest ``dist``."""
    if not len(e):
        return np.zeros(0, dtype=np.int64)
    starts, run = _runs(e)
    at_min = np.flatnonzero(dist == np.minimum.reduceat(dist, starts)[run])
    return at_min[np.concatenate([[True], e[at_min][1:] != e[at_min][:-1]])]


def _assign(e: np.ndarray, a: np.ndarray, dist: np.ndarray, n_got: int, rounds: int = 8) -> tuple[np.ndarray, ...]:
    """One-to-one matching of expected (``e``, in contiguous runs) and response (``a``) values, closest pairs
    first: the matched (expected, response) index pairs.

    Each round keeps every expected value's closest free response value (the first at equal distance), and
    each response value for the expected value it is closest to (the first such); the globally closest free
    pair always survives, so rounds converge.
    """
    used_a = np.zeros(max(n_got, 1), dtype=bool)
    hit_e: list[np.ndarray] = [np.zeros(0, np.int64)]
    hit_a: list[np.ndarray] = [np.zeros(0, np.int64)]
    for _ in range(rounds):
        if not len(e):
            break
        best = _first_at_min(e, dist)
        # Per response value, the first of these pairs at its smallest distance (sorting beats ufunc.at); only
        # response values wanted by several expected values need it.
        shared = np.bincount(a[best], minlength=len(used_a))[a[best]] > 1
        if shared.any():
            contested = best[shared]
            by_a = contested[np.lexsort((contested, dist[contested], a[contested]))]
            keep = by_a[np.concatenate([[True], a[by_a][1:] != a[by_a][:-1]])]
            best = np.concatenate([best[~shared], keep])  # order no longer matters
        hit_e.append(e[best])
        hit_a.append(a[best])
        used_a[a[best]] = True
        done_e = np.zeros(int(e.max()) + 1, dtype=bool)
        done_e[e[best]] = True
        keep = ~done_e[e] & ~used_a[a]
        e, a, dist = e[keep], a[keep], dist[keep]
    return np.concatenate(hit_e), np.concatenate(hit_a)


def _codes(*texts: pl.Series) -> list[np.ndarray]:
    """Equal texts as equal integers across all the series (null: -1), one array per series."""
    codes = pl.concat(texts).cast(pl.Categorical).to_physical().cast(pl.Int64).fill_null(-1).to_numpy()
    return np.split(codes, np.cumsum([len(t) for t in texts[:-1]]))


def _pairs(k_want: np.ndarray, k_got: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Left join on the key in want order (a want value without partner pairs with -1), partners in got order."""
    order = np.argsort(k_got, kind="stable")
    lo = np.searchsorted(k_got[order], k_want, "left")
    count = np.searchsorted(k_got[order], k_want, "right") - lo
    reps = np.maximum(count, 1)
    e = np.repeat(np.arange(len(k_want)), reps)
    within = np.arange(len(e)) - np.repeat(np.cumsum(reps) - reps, reps)
    a = np.full(len(e), -1, dtype=np.int64)
    has = np.repeat(count > 0, reps)
    a[has] = order[(np.repeat(lo, reps) + within)[has]]
    return e, a


def chart_frame(frame: pl.DataFrame, opts: ChartOptions) -> pl.DataFrame:
    """Score each row: the share of expected values the response states (see module docstring)."""
    want, got = pl.collect_all([_values(frame["expected_output"]), _values(frame["output"])])
    kind_w = want["kind"].replace_strict(_KIND_CODE, return_dtype=pl.Int64).to_numpy()
    kind_g = got["kind"].replace_strict(_KIND_CODE, return_dtype=pl.Int64).to_numpy()
    row_w = want["_row"].to_numpy().astype(np.int64)
    e, a = _pairs(row_w * 3 + kind_w, got["_row"].to_numpy().astype(np.int64) * 3 + kind_g)
    # Every (expected, response) pair of the same row and kind, as flat arrays: no per-row Python.
    has = a >= 0
    ga = np.where(has, a, 0)
    value = want["value"].fill_null(np.nan).to_numpy()[e]
    value_a = np.where(has, got["value"].fill_null(np.nan).to_numpy()[ga] if got.height else np.nan, np.nan)
    key_w, key_g, year_w, year_g = _codes(want["key"], got["key"], want["year"], got["year"])
    kind = kind_w[e]
    with np.errstate(invalid="ignore", divide="ignore"):
        diff = np.abs(value_a - value)
        rel = np.where(value == 0, diff, diff / np.abs(value))
        limit = np.where(
            kind == 1, opts.percent_tolerance, np.where(value == 0, opts.zero_tolerance, opts.currency_tolerance)
        )
        numeric_ok = np.where(kind == 1, diff <= limit + 1e-9, rel <= limit + 1e-9)
    k, ka = key_w[e], np.where(has, key_g[ga] if got.height else -1, -1)
    y, ya = year_w[e], np.where(has, year_g[ga] if got.height else -1, -1)
    date_ok = (k >= 0) & (k == ka) & ((y == ya) | (y < 0) | (ya < 0))
    ok = has & np.where(kind == 2, date_ok, numeric_ok)
    dist = np.where(kind == 2, 0.0, np.where(np.isnan(rel), np.inf, rel))

    cand = np.flatnonzero(ok)
    hit_e, hit_a = _assign(e[cand], a[cand], dist[cand], got.height)
    hit = np.full(want.height, -1, dtype=np.int64)
    hit[hit_e] = hit_a
    # The closest response value of each expected value: the first pair at its smallest distance.
    first = _first_at_min(e, dist)
    closest = np.full(want.height, -1, dtype=np.int64)
    closest[e[first]] = a[first]
    matched = hit >= 0
    actual = np.where(matched, hit, closest)

    texts = got["text"]
    actual_text = (
        texts.gather(np.maximum(actual, 0)).set(pl.Series(actual < 0), None)
        if got.height and want.height
        else pl.Series([None] * want.height, dtype=pl.Utf8)
    )
    # Each value's JSON object (a flat struct encodes fast; nesting it in lists is what costs).
    item = pl.struct(
        "kind",
        pl.col("text").alias("expected"),
        "value",
        pl.col("_matched").alias("matched"),
        pl.col("_actual").alias("actual"),
    ).struct.json_encode()
    # Per row, in expected order: lists cut by counts from the values sorted by row (stable).
    order = np.argsort(row_w, kind="stable")
    n = np.bincount(row_w, minlength=frame.height)[: frame.height]
    hits = np.bincount(row_w, weights=matched, minlength=frame.height)[: frame.height].astype(np.int64)
    items = want.with_columns(pl.Series("_matched", matched), actual_text.alias("_actual")).select(item.alias("v"))
    items = items["v"][order] if want.height else pl.Series("v", [], pl.Utf8)
    offsets = np.zeros(frame.height + 1, dtype=np.int64)
    np.cumsum(n, out=offsets[1:])
    lists = pl.Series("values", pa.LargeListArray.from_arrays(pa.array(offsets), items.to_arrow()))
    with np.errstate(invalid="ignore", divide="ignore"):
        score = np.where(n > 0, hits / np.maximum(n, 1), np.nan)
    out = pl.DataFrame({"values": lists, "hits": hits, "n": n, "score": score}).with_columns(
        pl.col("score").fill_nan(None)
    )
    tolerances = json.dumps(
        {"currency": opts.currency_tolerance, "percent": opts.percent_tolerance, "zero": opts.zero_tolerance}
    )
    hits_text, n_text = pl.col("hits").cast(pl.Utf8), pl.col("n").cast(pl.Utf8)
    details = pl.concat_str(
        pl.lit('{"values":['),
        pl.col("values").list.join(","),
        pl.lit('],"matched":'),
        hits_text,
        pl.lit(',"expected":'),
        n_text,
        pl.lit(f',"tolerances":{tolerances},"reasoning":"'),
        hits_text,
        pl.lit(" of "),
        n_text,
        pl.lit(' expected values found in the response"}'),
    )
    missing = pl.col("score").is_null()
    return out.select(
        pl.when(missing).then(pl.lit("error")).otherwise(pl.lit("processed")).alias("status"),
        pl.col("score"),
        pl.when(~missing).then(details).alias("details"),
        pl.when(missing).then(pl.lit("expected_output holds no currency, percentage or date values")).alias("error"),
    )
