"""The results of count pairs: status, score, and the details JSON concatenated from small pieces.

A pair's details are its expected, found and matched counts as JSON members (``"circle": 5``) and a
reasoning. Every piece is encoded once: each object name (first member, or following one after a comma),
each distinct number, each distinct "H of T" reasoning and the fixed text between; a pair's details are
its pieces, concatenated (:func:`~vision_eval.validators._pieces.concatenated`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from vision_eval.validators._pieces import concatenated

_FIXED = ['{"expected": {', '}, "found": {', '}, "matched": {', "; wrong or missing: ", '"}']
_OPEN, _FOUND, _MATCHED, _WRONG, _CLOSE = range(len(_FIXED))
NO_COUNTS = "expected_output states no counts"


@dataclass(frozen=True)
class Scored:
    """The scored pairs: their expected items (``item_*``, by pair, in the expected text's order: the pair,
    the object's vocabulary code, the expected count, whether met) and found objects (``group_*``, by pair, in
    order of first mention: the pair, the object's code, its first count), and per pair the bare expected
    number (null: none or not needed) and whether the output states it."""

    item_pair: np.ndarray
    item_object: np.ndarray
    item_n: np.ndarray
    ok: np.ndarray
    group_pair: np.ndarray
    group_object: np.ndarray
    group_n: np.ndarray
    bare: pl.Series
    bare_ok: pl.Series


def results(scored: Scored, vocabulary: pl.Series, n_pairs: int) -> pl.DataFrame:
    """Status, score, details and error of each pair."""
    total = np.bincount(scored.item_pair, minlength=n_pairs)
    hits = np.bincount(scored.item_pair[scored.ok], minlength=n_pairs)
    counted = total > 0
    is_bare = ~counted & scored.bare.is_not_null().to_numpy()
    with np.errstate(invalid="ignore", divide="ignore"):
        score = np.where(counted, hits / np.maximum(total, 1), np.where(is_bare, scored.bare_ok.to_numpy(), np.nan))
    details = _details(scored, vocabulary, n_pairs, total, hits, is_bare)
    frame = pl.DataFrame({"no_counts": ~counted & ~is_bare, "score": score, "details": details})
    no_counts = pl.col("no_counts")
    return frame.select(
        pl.when(no_counts).then(pl.lit("error")).otherwise(pl.lit("processed")).alias("status"),
        pl.col("score").fill_nan(None),
        pl.when(~no_counts).then(pl.col("details")).alias("details"),
        pl.when(no_counts).then(pl.lit(NO_COUNTS)).alias("error"),
    )


def _dense(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct non-negative integers among ``values`` (sorted) and each value's index among them."""
    if not len(values):
        return values, np.zeros(0, dtype=np.int64)
    if values.dtype != object and values.max() < 1 << 22:  # a table beats sorting
        present = np.zeros(int(values.max()) + 1, dtype=bool)
        present[values] = True
        return np.flatnonzero(present), (np.cumsum(present) - 1)[values]
    return np.unique(values, return_inverse=True)


def _rank(owner: np.ndarray) -> np.ndarray:
    """Each position's rank among the positions of its owner (``owner`` sorted)."""
    if not len(owner):
        return np.zeros(0, dtype=np.int64)
    start = np.empty(len(owner), dtype=bool)
    start[0] = True
    np.not_equal(owner[1:], owner[:-1], out=start[1:])
    starts = np.flatnonzero(start)
    return np.arange(len(owner)) - np.repeat(starts, np.diff(starts, append=len(owner)))


def _details(
    s: Scored, vocabulary: pl.Series, n_pairs: int, total: np.ndarray, hits: np.ndarray, is_bare: np.ndarray
) -> pl.Series:
    """Each pair's details JSON (``""`` for a pair with nothing to count)."""
    counted = total > 0
    n_found = np.bincount(s.group_pair, minlength=n_pairs) * (counted | is_bare)
    wrong = total - hits
    # Pieces per pair. Counted: opening, 2 per expected member, "found", 2 per found member, "matched", 2 per
    # matched member, reasoning, ["wrong or missing", 1 per wrong object], closing. Bare: its opening (up to
    # the found members), 2 per found member, its ending.
    length = np.where(
        counted,
        5 + 2 * (total + n_found + hits) + np.where(wrong > 0, 1 + wrong, 0),
        np.where(is_bare, 2 + 2 * n_found, 0),
    )
    bounds = np.zeros(n_pairs + 1, dtype=np.int64)
    np.cumsum(length, out=bounds[1:])
    base = bounds[:-1]
    found_at = base + np.where(counted, 2 + 2 * total, 1)

    # The pool: fixed texts, names (first and following member, first and following wrong object), numbers,
    # reasonings, and the bare pairs' openings and endings.
    numbers, number_code = _dense(np.concatenate([s.item_n, s.group_n]))
    item_number, group_number = number_code[: len(s.item_n)], number_code[len(s.item_n) :]
    span = int(total.max()) + 1 if n_pairs else 1
    reasoning_key, reasoning_code = _dense(hits[counted] * span + total[counted])
    bare_pairs = np.flatnonzero(is_bare)
    words, v = vocabulary.to_frame("w"), len(vocabulary)
    names = words.select(
        pl.concat_str(pl.lit('"'), "w", pl.lit('": ')).alias("0"),
        pl.concat_str(pl.lit(', "'), "w", pl.lit('": ')).alias("1"),
        pl.col("w").alias("2"),
        pl.concat_str(pl.lit(", "), "w").alias("3"),
    )
    reasonings = pl.DataFrame({"h": reasoning_key // span, "t": reasoning_key % span}).select(
        pl.concat_str(
            pl.lit('}, "reasoning": "'),
            pl.col("h").cast(pl.Utf8),
            pl.lit(" of "),
            pl.col("t").cast(pl.Utf8),
            pl.lit(" expected counts match"),
        )
    )
    bare = pl.DataFrame({"b": s.bare.gather(bare_pairs), "ok": s.bare_ok.gather(bare_pairs)})
    star = pl.concat_str(pl.lit('{"*": '), pl.col("b").cast(pl.Utf8), pl.lit("}"))
    bare_parts = bare.select(
        pl.concat_str(pl.lit('{"expected": '), star, pl.lit(', "found": {')).alias("open"),
        pl.concat_str(
            pl.lit('}, "matched": '),
            pl.when("ok").then(star).otherwise(pl.lit("{}")),
            pl.lit(', "reasoning": "the response '),
            pl.when("ok").then(pl.lit("states")).otherwise(pl.lit("never states")),
            pl.lit(" the expected count "),
            pl.col("b").cast(pl.Utf8),
            pl.lit('"}'),
        ).alias("close"),
    )
    pool = pl.concat(
        [
            pl.Series(_FIXED),
            *(names[str(i)] for i in range(4)),
            pl.Series([str(v) for v in numbers], dtype=pl.Utf8)
            if numbers.dtype == object
            else pl.Series(numbers).cast(pl.Utf8),
            reasonings.to_series(),
            bare_parts["open"],
            bare_parts["close"],
        ]
    )
    at_name = len(_FIXED)
    at_number = at_name + 4 * v
    at_reasoning = at_number + len(numbers)
    at_bare = at_reasoning + len(reasoning_key)

    pieces = np.zeros(bounds[-1], dtype=np.int64)
    item_rank = _rank(s.item_pair)
    # Expected members, then matched ones, then wrong objects (each in the expected order).
    at = base[s.item_pair] + 1 + 2 * item_rank
    pieces[at] = at_name + np.where(item_rank > 0, v, 0) + s.item_object
    pieces[at + 1] = at_number + item_number
    ok_pair = s.item_pair[s.ok]
    ok_rank = _rank(ok_pair)
    at = base[ok_pair] + 3 + 2 * (total + n_found)[ok_pair] + 2 * ok_rank
    pieces[at] = at_name + np.where(ok_rank > 0, v, 0) + s.item_object[s.ok]
    pieces[at + 1] = at_number + item_number[s.ok]
    wrong_pair = s.item_pair[~s.ok]
    wrong_rank = _rank(wrong_pair)
    at = base[wrong_pair] + 5 + 2 * (total + n_found + hits)[wrong_pair] + wrong_rank
    pieces[at] = at_name + 2 * v + np.where(wrong_rank > 0, v, 0) + s.item_object[~s.ok]
    # Found members (a pair with nothing to count has no details).
    shown = (counted | is_bare)[s.group_pair]
    group_pair = s.group_pair[shown]
    group_rank = _rank(group_pair)
    at = found_at[group_pair] + 2 * group_rank
    pieces[at] = at_name + np.where(group_rank > 0, v, 0) + s.group_object[shown]
    pieces[at + 1] = at_number + group_number[shown]
    # The fixed texts of counted pairs, and the bare pairs' opening and ending.
    c = np.flatnonzero(counted)
    pieces[base[c]] = _OPEN
    pieces[found_at[c] - 1] = _FOUND
    pieces[found_at[c] + 2 * n_found[c]] = _MATCHED
    reasoning_at = found_at[c] + 2 * n_found[c] + 1 + 2 * hits[c]
    pieces[reasoning_at] = at_reasoning + reasoning_code
    pieces[reasoning_at[wrong[c] > 0] + 1] = _WRONG
    pieces[bounds[1:][c] - 1] = _CLOSE
    pieces[base[bare_pairs]] = at_bare + np.arange(len(bare_pairs))
    pieces[bounds[1:][bare_pairs] - 1] = at_bare + len(bare_pairs) + np.arange(len(bare_pairs))
    return concatenated(pool, pieces, bounds)
