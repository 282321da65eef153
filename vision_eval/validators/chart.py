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

from vision_eval.validators._distinct import codes
from vision_eval.validators._pieces import concatenated
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
    matched = hit >= 0
    # An unmatched expected value shows its closest response value: the first pair at its smallest distance.
    actual = hit.copy()
    unmatched = np.flatnonzero(~matched[e])
    first = unmatched[_first_at_min(e[unmatched], dist[unmatched])]
    actual[e[first]] = a[first]

    n = np.bincount(row_w, minlength=frame.height)[: frame.height]
    hits = np.bincount(row_w, weights=matched, minlength=frame.height)[: frame.height].astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        score = np.where(n > 0, hits / np.maximum(n, 1), np.nan)
    actual_code = np.where(actual >= 0, got.code[actual] if n_got else 0, -1)
    details = _details(distinct, row_w, code_w, matched, actual_code, hits, n, opts)
    out = pl.DataFrame({"details": details, "score": score}).with_columns(pl.col("score").fill_nan(None))
    missing = pl.col("score").is_null()
    return out.select(
        pl.when(missing).then(pl.lit("error")).otherwise(pl.lit("processed")).alias("status"),
        pl.col("score"),
        pl.when(~missing).then(pl.col("details")).alias("details"),
        pl.when(missing).then(pl.lit("expected_output holds no currency, percentage or date values")).alias("error"),
    )


def _distinct_pairs(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (x, y) pairs of non-negative integers (rows of a two-column array) and each pair's index."""
    if not len(x):
        return np.zeros((0, 2), dtype=np.int64), np.zeros(0, dtype=np.int64)
    span = int(y.max()) + 1
    key = x * span + y
    if key.max() < 1 << 22:  # a table beats sorting
        present = np.zeros(int(key.max()) + 1, dtype=bool)
        present[key] = True
        distinct = np.flatnonzero(present)
        index = (np.cumsum(present) - 1)[key]
    else:
        distinct, index = np.unique(key, return_inverse=True)
    return np.stack([distinct // span, distinct % span], axis=1), index


def _details(
    distinct: pl.DataFrame,
    row: np.ndarray,
    code: np.ndarray,
    matched: np.ndarray,
    actual: np.ndarray,
    hits: np.ndarray,
    n: np.ndarray,
    opts: ChartOptions,
) -> pl.Series:
    """Each row's details JSON from its expected values (in row order: ``row``, their distinct ``code``, whether
    ``matched`` and the distinct code of the ``actual`` response value, -1 for none) and its counts.

    Every piece is encoded once per distinct text: the first value of a row (with the row's opening), a
    following value (with a comma), its match and actual value (with the value's closing), and each row's
    ending; a row is its pieces, concatenated (see :func:`concatenated`).
    """
    head = pl.struct(_kind_name().alias("kind"), pl.col("text").alias("expected"), "value").struct.json_encode()
    actual_json = pl.struct(pl.col("text").alias("actual")).struct.json_encode().str.slice(10).str.head(-1)
    parts = distinct.select(head.str.head(-1).alias("head"), actual_json.alias("actual"))
    actual_json = parts["actual"].append(pl.Series(["null"]))  # the last: no actual value
    tolerances = json.dumps(
        {"currency": opts.currency_tolerance, "percent": opts.percent_tolerance, "zero": opts.zero_tolerance}
    )
    h, c = pl.col("h").cast(pl.Utf8), pl.col("n").cast(pl.Utf8)
    ending = pl.concat_str(
        pl.lit('],"matched":'),
        h,
        pl.lit(',"expected":'),
        c,
        pl.lit(f',"tolerances":{tolerances},"reasoning":"'),
        h,
        pl.lit(" of "),
        c,
        pl.lit(' expected values found in the response"}'),
    )
    # One ending per distinct (hits, values) count pair.
    ended = n > 0
    pair, ending_code = _distinct_pairs(hits[ended], n[ended])
    endings = pl.DataFrame({"h": pair[:, 0], "n": pair[:, 1]}).select(ending)
    pool = pl.concat(
        [
            parts.select(pl.concat_str(pl.lit('{"values":['), "head")).to_series(),
            parts.select(pl.concat_str(pl.lit(","), "head")).to_series(),
            pl.select(pl.concat_str(pl.lit(',"matched":true,"actual":'), pl.lit(actual_json), pl.lit("}"))).to_series(),
            pl.select(
                pl.concat_str(pl.lit(',"matched":false,"actual":'), pl.lit(actual_json), pl.lit("}"))
            ).to_series(),
            endings.to_series(),
        ]
    )
    d = distinct.height
    height = len(n)
    offsets = np.zeros(height + 1, dtype=np.int64)
    np.cumsum(n, out=offsets[1:])
    # Pieces per row: two per value, then the ending (rows without values have none).
    endings_before = np.cumsum(ended) - ended
    bounds = 2 * offsets + np.append(endings_before, ended.sum())
    first = np.ones(len(row), dtype=bool)
    first[1:] = row[1:] != row[:-1]
    pieces = np.empty(bounds[-1], dtype=np.int64)
    at = 2 * np.arange(len(row)) + endings_before[row]
    pieces[at] = code + np.where(first, 0, d)
    pieces[at + 1] = 2 * d + np.where(matched, 0, d + 1) + np.where(actual >= 0, actual, d)
    pieces[bounds[1:][ended] - 1] = 4 * d + 2 + ending_code
    return concatenated(pool, pieces, bounds)
