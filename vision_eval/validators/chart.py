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

from vision_eval.validators._distinct import codes
from vision_eval.validators.chart_values import (  # noqa: F401 (the patterns are part of this module's API)
    _ANY,
    _MONEY_PARTS,
    _MONTHS,
    _SCALE,
    ISO_DATE,
    KINDS,
    MONEY,
    MONTH_DATE,
    PERCENT,
    QUARTER,
    matches,
    values_of,
)


@dataclass(frozen=True)
class ChartOptions:
    """See ``ChartValidatorSettings`` for the meaning of each field."""

    currency_tolerance: float = 0.15
    percent_tolerance: float = 0.0
    zero_tolerance: float = 0.0


def _kind_name() -> pl.Expr:
    return pl.col("kind").replace_strict(dict(enumerate(KINDS)), return_dtype=pl.Utf8)


def values(frame: pl.DataFrame, column: str) -> pl.DataFrame:
    """Long frame ``_row, kind (money|percent|date), text, value (number), key (date text), year``: the money
    of every row first, then the other values, each in row and text order."""
    distinct, (found,) = values_of(frame.select(matches(pl.col(column)))[column])
    order = np.argsort(found.kind != 0, kind="stable")
    distinct = distinct.with_columns(_kind_name().alias("kind"))
    return (
        distinct[found.code[order]]
        .with_columns(pl.Series("_row", found.row[order], pl.UInt32))
        .select("_row", "kind", "text", "value", "key", "year")
    )


def _run_starts(e: np.ndarray) -> np.ndarray:
    """Whether each position of ``e`` starts a run of equal values."""
    start = np.empty(len(e), dtype=bool)
    start[:1] = True
    np.not_equal(e[1:], e[:-1], out=start[1:])
    return start


def _first_at_min(e: np.ndarray, dist: np.ndarray) -> np.ndarray:
    """Per run of equal ``e`` (contiguous), the position of its first smallest ``dist``."""
    if not len(e):
        return np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(_run_starts(e))
    lengths = np.diff(starts, append=len(e))
    at_min = np.flatnonzero(dist == np.repeat(np.minimum.reduceat(dist, starts), lengths))
    return at_min[_run_starts(e[at_min])]


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


def _pairs(k_want: np.ndarray, k_got: np.ndarray, n_keys: int) -> tuple[np.ndarray, np.ndarray]:
    """Left join on the key (below ``n_keys``) in want order (a want value without partner pairs with -1),
    partners in got order."""
    order = np.argsort(k_got, kind="stable")
    count_got = np.bincount(k_got, minlength=n_keys)
    count = count_got[k_want]
    lo = (np.cumsum(count_got) - count_got)[k_want]
    reps = np.maximum(count, 1)
    e = np.repeat(np.arange(len(k_want)), reps)
    within = np.arange(len(e)) - np.repeat(np.cumsum(reps) - reps, reps)
    a = np.full(len(e), -1, dtype=np.int64)
    has = np.repeat(count > 0, reps)
    a[has] = order[(np.repeat(lo, reps) + within)[has]]
    return e, a


def chart_frame(frame: pl.DataFrame, opts: ChartOptions) -> pl.DataFrame:
    """Score each row: the share of expected values the response states (see module docstring)."""
    lists = frame.select(matches(pl.col("expected_output")).alias("want"), matches(pl.col("output")).alias("got"))
    distinct, (want, got) = values_of(lists["want"], lists["got"])
    # The row's money first, then its other values (the order of the details); only the order within a row
    # and kind matters to the matching.
    order = np.argsort(want.row * 2 + (want.kind != 0), kind="stable")
    row_w, code_w, kind_w = want.row[order], want.code[order], want.kind[order]
    n_want, n_got = len(row_w), len(got.row)
    e, a = _pairs(row_w * 3 + kind_w, got.row * 3 + got.kind, 3 * frame.height)
    # Every (expected, response) pair of the same row and kind, as flat arrays: no per-row Python.
    has = a >= 0
    code_e = code_w[e]
    code_a = np.where(has, got.code[np.where(has, a, 0)] if n_got else 0, -1)  # -1: the last (missing) entry
    numbers = np.append(distinct["value"].fill_null(np.nan).to_numpy(), np.nan)
    keys, years = np.append(codes(distinct["key"])[1], -1), np.append(codes(distinct["year"])[1], -1)
    value, value_a = numbers[code_e], numbers[code_a]
    kind = kind_w[e]
    with np.errstate(invalid="ignore", divide="ignore"):
        diff = np.abs(value_a - value)
        rel = np.where(value == 0, diff, diff / np.abs(value))
        limit = np.where(
            kind == 1, opts.percent_tolerance, np.where(value == 0, opts.zero_tolerance, opts.currency_tolerance)
        )
        numeric_ok = np.where(kind == 1, diff <= limit + 1e-9, rel <= limit + 1e-9)
    k, ka = keys[code_e], keys[code_a]
    y, ya = years[code_e], years[code_a]
    date_ok = (k >= 0) & (k == ka) & ((y == ya) | (y < 0) | (ya < 0))
    ok = has & np.where(kind == 2, date_ok, numeric_ok)
    dist = np.where(kind == 2, 0.0, np.where(np.isnan(rel), np.inf, rel))

    cand = np.flatnonzero(ok)
    hit_e, hit_a = _assign(e[cand], a[cand], dist[cand], n_got)
    hit = np.full(n_want, -1, dtype=np.int64)
    hit[hit_e] = hit_a
    # The closest response value of each expected value: the first pair at its smallest distance.
    first = _first_at_min(e, dist)
    closest = np.full(n_want, -1, dtype=np.int64)
    closest[e[first]] = a[first]
    matched = hit >= 0
    actual = np.where(matched, hit, closest)

    # Each value's JSON object, from JSON parts encoded once per distinct text (a flat struct encodes fast).
    expected_json = distinct.select(
        pl.struct(_kind_name().alias("kind"), pl.col("text").alias("expected"), "value")
        .struct.json_encode()
        .str.head(-1)
    ).to_series()
    actual_json = distinct.select(pl.struct(pl.col("text").alias("actual")).struct.json_encode().str.slice(10))
    actual_json = actual_json.to_series().str.head(-1).append(pl.Series(["null"]))
    items = pl.DataFrame(
        {
            "e": expected_json.gather(code_w),
            "m": matched,
            "a": actual_json.gather(np.where(actual >= 0, got.code[actual] if n_got else 0, actual_json.len() - 1)),
        }
    ).select(
        pl.concat_str(
            "e",
            pl.when("m").then(pl.lit(',"matched":true,"actual":')).otherwise(pl.lit(',"matched":false,"actual":')),
            "a",
            pl.lit("}"),
        )
    )
    # Per row, lists cut by counts from the values (in row order).
    n = np.bincount(row_w, minlength=frame.height)[: frame.height]
    hits = np.bincount(row_w, weights=matched, minlength=frame.height)[: frame.height].astype(np.int64)
    offsets = np.zeros(frame.height + 1, dtype=np.int64)
    np.cumsum(n, out=offsets[1:])
    lists = pl.Series("values", pa.LargeListArray.from_arrays(pa.array(offsets), items.to_series().to_arrow()))
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
