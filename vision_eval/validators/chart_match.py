"""One-to-one matching of a chart's expected values with the response's, as flat numpy arrays (no per-row Python).

Every (expected, response) pair of the same row and kind is a candidate when within tolerance; closest
pairs are matched first.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from vision_eval.validators._distinct import codes, run_starts


@dataclass(frozen=True)
class Values:
    """The values of a text column, in text order within each row: each value's ``row``, ``code`` (its row in the
    table of distinct values) and ``kind`` (0 money, 1 percent, 2 date)."""

    row: np.ndarray
    code: np.ndarray
    kind: np.ndarray


def match(
    distinct: pl.DataFrame,
    row_w: np.ndarray,
    code_w: np.ndarray,
    kind_w: np.ndarray,
    got: Values,
    n_rows: int,
    currency_tolerance: float,
    percent_tolerance: float,
    zero_tolerance: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Whether each expected value (``row_w``, ``code_w`` into ``distinct``, ``kind_w``; in text order within a
    row and kind) is matched, and the response value it shows (index into ``got``; -1: none): its match, else
    the closest response value of its kind."""
    numbers = np.append(distinct["value"].fill_null(np.nan).to_numpy(), np.nan)
    keys, years = (np.append(codes(distinct[column])[1], -1).astype(np.int32) for column in ("key", "year"))
    got_code = np.append(got.code, -1)  # a missing partner (-1) reads the appended entry: no value, key or year
    # Pairs of different kinds never meet, so each kind is paired on its own (fewer and smaller arrays); the
    # values of a kind stay in row and text order.
    pairs = []
    for kind in (0, 1, 2):
        w, g = np.flatnonzero(kind_w == kind), np.flatnonzero(got.kind == kind)
        e_at, a_at = _pairs(row_w[w], got.row[g], n_rows)
        e, a = w[e_at], np.append(g, -1)[a_at]
        code_e, code_a = code_w[e], got_code[a]
        if kind == 2:
            k, ka, y, ya = keys[code_e], keys[code_a], years[code_e], years[code_a]
            ok, dist = (k >= 0) & (k == ka) & ((y == ya) | (y < 0) | (ya < 0)), np.zeros(len(e))
        else:
            value, value_a = numbers[code_e], numbers[code_a]
            with np.errstate(invalid="ignore", divide="ignore"):
                diff = np.abs(value_a - value)
                rel = np.where(value == 0, diff, diff / np.abs(value))
                if kind == 1:
                    ok = diff <= percent_tolerance + 1e-9
                else:
                    ok = rel <= np.where(value == 0, zero_tolerance, currency_tolerance) + 1e-9
            dist = np.where(np.isnan(rel), np.inf, rel)
        pairs.append((e, a, ok, dist))

    candidates = [(e[ok], a[ok], dist[ok]) for e, a, ok, dist in pairs]
    cand_e, cand_a, cand_dist = (np.concatenate(column) for column in zip(*candidates, strict=True))
    hit_e, hit_a = _assign(cand_e, cand_a, cand_dist, len(got.row))
    hit = np.full(len(row_w), -1, dtype=np.int64)
    hit[hit_e] = hit_a
    matched = hit >= 0
    # An unmatched expected value shows its closest response value: the first pair at its smallest distance.
    actual = hit.copy()
    for e, a, _, dist in pairs:
        unmatched = np.flatnonzero(~matched[e])
        first = unmatched[_first_at_min(e[unmatched], dist[unmatched])]
        actual[e[first]] = a[first]
    return matched, actual


def _first_at_min(e: np.ndarray, dist: np.ndarray) -> np.ndarray:
    """Per run of equal ``e`` (contiguous), the position of its first smallest ``dist``."""
    if not len(e):
        return np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(run_starts(e))
    lengths = np.diff(starts, append=len(e))
    at_min = np.flatnonzero(dist == np.repeat(np.minimum.reduceat(dist, starts), lengths))
    first: np.ndarray = at_min[run_starts(e[at_min])]
    return first


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
    """Left join on the key (below ``n_keys``; ``k_got`` sorted) in want order: positions in ``k_want`` and
    their partners' in ``k_got`` (-1: none), partners in order."""
    count_got = np.bincount(k_got, minlength=n_keys)
    count = count_got[k_want]
    lo = (np.cumsum(count_got) - count_got)[k_want]
    reps = np.maximum(count, 1)
    e = np.repeat(np.arange(len(k_want)), reps)
    a = np.arange(len(e)) + np.repeat(lo - (np.cumsum(reps) - reps), reps)
    return e, np.where(np.repeat(count > 0, reps), a, -1)
