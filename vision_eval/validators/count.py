"""Object counts: (number, object) pairs extracted from text, matched by object.

"I count five red circles and 3 blue squares" -> circle: 5, square: 3. Number words ("five",
"a dozen", "twenty-one", "no") become digits, phrases are split at stop words, each noun is
singularized, and an expected object matches the output mentions whose phrase holds that noun.

Texts are read once per distinct text (:mod:`~vision_eval.validators.count_text`) and equal
(output, expected) rows are scored once; the matching is flat numpy arrays, and the details are
concatenated from pieces encoded once (:mod:`~vision_eval.validators.count_details`).

Counts are exact at any length: digits of any script read as ASCII digits, and rows whose texts hold a
number of 16 or more digits (or whose counts could add up beyond Int64) are scored by the same code with
Python integers. A number of more than :data:`MAX_DIGITS` digits is not read as a count: its row is an error.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import polars as pl

from vision_eval.halves import in_halves
from vision_eval.validators._distinct import codes
from vision_eval.validators.count_details import Scored, results
from vision_eval.validators.count_text import (  # noqa: F401 (the word lists are part of this module's API)
    IRREGULAR,
    NUMBER_WORDS,
    STOP_WORDS,
    Mentions,
    canonical,
    first_numbers,
    integers,
    mentions,
    normalized,
    singular,
)
from vision_eval.validators.digits import ascii_digits


def _expand(count: np.ndarray, start: np.ndarray, groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The items of each group in ``groups`` (items ``start[g]`` to ``start[g] + count[g]``), one after the
    other: each one's position in ``groups`` and its item index."""
    sizes = count[groups]
    owner = np.repeat(np.arange(len(groups), dtype=np.int64), sizes)
    shift = np.repeat(start[groups] - (np.cumsum(sizes) - sizes), sizes)
    return owner, np.arange(len(owner), dtype=np.int64) + shift


def _starts(count: np.ndarray) -> np.ndarray:
    return np.cumsum(count) - count


def _run_starts(values: np.ndarray) -> np.ndarray:
    """Positions where a run of equal (sorted) values starts."""
    start = np.empty(len(values), dtype=bool)
    start[:1] = True
    np.not_equal(values[1:], values[:-1], out=start[1:])
    return np.flatnonzero(start)


def _lookup(table: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Position of each key in the sorted ``table`` and whether it is there."""
    position = np.searchsorted(table, keys)
    clipped = np.minimum(position, max(len(table) - 1, 0))
    found = (position < len(table)) & (table[clipped] == keys) if len(table) else np.zeros(len(keys), dtype=bool)
    return clipped, found


def _membership(keys: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """A test of whether (non-negative) values are among ``keys``: a table when small, else a sorted search."""
    if len(keys) and keys.max() < 1 << 24:
        table = np.zeros(int(keys.max()) + 1, dtype=bool)
        table[keys] = True
        return lambda values: table[np.minimum(values, len(table) - 1)] & (values < len(table))
    ordered = np.sort(keys)
    return lambda values: _lookup(ordered, values)[1]


HALF_MIN_ROWS = 10_000
"""Frames of at least twice this many rows are scored as two halves on two threads (:mod:`vision_eval.halves`)."""
MAX_DIGITS = 4300
"""Longest number read as a count (Python's own limit on reading a decimal integer)."""
_WIDE = r"\d{16}"
"""A number the Int64 path does not take: from 16 digits, counts are read as Python integers."""
_INT64_TOTAL = 2.0**62
"""A text whose counts add up to this much might overflow Int64 sums: it goes to the exact path too."""


def count_frame(frame: pl.DataFrame) -> pl.DataFrame:
    """Score ``output`` against ``expected_output`` counts; see the module docstring."""
    return in_halves(_count_frame, frame, HALF_MIN_ROWS)


def _count_frame(frame: pl.DataFrame, exact: bool = False) -> pl.DataFrame:
    height = frame.height
    texts = pl.concat([frame["output"].cast(pl.Utf8), frame["expected_output"].cast(pl.Utf8)]).fill_null("")
    distinct, code = codes(texts, repeats_ok=True)
    normal = normalized(distinct)
    if not exact:
        wide = normal.str.contains(_WIDE).to_numpy()
        if wide.any():  # rare: only these rows take the exact path
            return _in_parts(frame, wide[code[:height]] | wide[code[height:]], _exact_frame)
    found = mentions(normal, exact)
    if not exact and len(found.n):
        total = np.bincount(found.text, weights=found.n.astype(np.float64), minlength=len(normal))
        if (total >= _INT64_TOTAL).any():
            big = total >= _INT64_TOTAL
            return _in_parts(frame, big[code[:height]] | big[code[height:]], _exact_frame)
    n_texts = max(len(distinct), 1)
    # Equal (output, expected) rows are scored once, as one pair.
    pair, row_pair = np.unique(code[:height] * n_texts + code[height:], return_inverse=True)
    pairs = _Pairs(found, pair // n_texts, pair % n_texts, n_texts)
    return results(pairs.score(normal, exact), found.vocabulary, len(pair)).gather(row_pair)


def _exact_frame(frame: pl.DataFrame) -> pl.DataFrame:
    """Rows scored with counts as Python integers; a row whose text holds a number too long to read is an error."""
    long_out, long_exp = (_longest_number(frame[column]) > MAX_DIGITS for column in ("output", "expected_output"))
    readable = ~(long_out | long_exp)
    if readable.all():
        return _count_frame(frame, exact=True)

    def errors(part: pl.DataFrame) -> pl.DataFrame:
        column = np.where(long_out[~readable], "output", "expected_output")
        reason = f"{{}} holds a number of more than {MAX_DIGITS} digits: too long to read as a count"
        return pl.DataFrame({"column": column}).select(
            pl.lit("error").alias("status"),
            pl.lit(None, pl.Float64).alias("score"),
            pl.lit(None, pl.Utf8).alias("details"),
            pl.format(reason, "column").alias("error"),
        )

    return _in_parts(frame, readable, lambda part: _count_frame(part, exact=True), errors)


def _longest_number(texts: pl.Series) -> np.ndarray:
    """The number of digits of each text's longest number (0: none)."""
    digits = ascii_digits(texts.cast(pl.Utf8).fill_null("")).str.extract_all(r"[0-9]+")
    return digits.list.eval(pl.element().str.len_bytes()).list.max().fill_null(0).to_numpy()


def _in_parts(
    frame: pl.DataFrame,
    chosen: np.ndarray,
    score_chosen: Callable[[pl.DataFrame], pl.DataFrame],
    score_rest: Callable[[pl.DataFrame], pl.DataFrame] | None = None,
) -> pl.DataFrame:
    """The rows of ``frame`` scored by ``score_chosen`` where ``chosen``, the others by ``score_rest`` (default:
    the Int64 path), in the frame's order."""
    parts = []
    for rows, score in ((np.flatnonzero(chosen), score_chosen), (np.flatnonzero(~chosen), score_rest or _count_frame)):
        if len(rows):
            parts.append(score(frame[rows]).with_columns(pl.Series("_row", rows)))
    return pl.concat(parts, how="vertical_relaxed").sort("_row").drop("_row")


class _Pairs:
    """The (output text, expected text) pairs to score, with the mentions of all the texts."""

    def __init__(self, found: Mentions, out: np.ndarray, exp: np.ndarray, n_texts: int) -> None:
        self.found, self.out, self.exp = found, out, exp
        self.n_words = max(len(found.vocabulary), 1)
        self.mention_count = np.bincount(found.text, minlength=n_texts)
        # Expected items of each text: its mentions' objects (last words), the first count of each object.
        _, first = np.unique(found.text * self.n_words + found.last, return_index=True)
        first.sort()
        self.item_text, self.item_n, self.item_object = found.text[first], found.n[first], found.last[first]
        self.item_count = np.bincount(self.item_text, minlength=n_texts)

    def score(self, normal: pl.Series, exact: bool = False) -> Scored:
        """Each pair's expected items, whether met, and found objects (see :class:`Scored`)."""
        found, n_words = self.found, self.n_words
        owner, mention = _expand(self.mention_count, _starts(self.mention_count), self.out)
        key, n = self._keys(owner, mention), found.n[mention]
        # Per (pair, key): the first count and the total, groups in order of first mention.
        group = owner * n_words + key
        order = np.argsort(group, kind="stable")
        starts = _run_starts(group[order])
        group_key, group_first = group[order][starts], order[starts]
        group_total = np.add.reduceat(n[order], starts) if len(starts) else np.zeros(0, dtype=np.int64)
        group_n = n[group_first]
        # Each pair's expected items against the groups (the appended entry stands for a missing group).
        item_pair, item = _expand(self.item_count, _starts(self.item_count), self.exp)
        wanted = self.item_n[item]
        at, present = _lookup(group_key, item_pair * n_words + self.item_object[item])
        at = np.where(present, at, -1)
        first_n, total = np.append(group_n, 0)[at], np.append(group_total, 0)[at]
        ok = np.where(present, (first_n == wanted) | (total == wanted), wanted == 0)
        bare, bare_ok = _bare(self, normal, np.bincount(item_pair, minlength=len(self.out)), exact)
        by_first = np.argsort(group_first, kind="stable")
        return Scored(
            item_pair=item_pair,
            item_object=self.item_object[item],
            item_n=wanted,
            ok=ok,
            group_pair=group_key[by_first] // n_words,
            group_object=group_key[by_first] % n_words,
            group_n=group_n[by_first],
            bare=bare,
            bare_ok=bare_ok,
        )

    def _keys(self, owner: np.ndarray, mention: np.ndarray) -> np.ndarray:
        """Each output mention's object: its first word that is an expected object of the pair, else its last
        word (so only the words before the last need a look)."""
        words, n_words = self.found.words, self.n_words
        key = self.found.last[mention]
        is_object = _membership(self.item_text * n_words + self.item_object)
        for column in (1, 0):
            candidate = np.flatnonzero(words[mention, column + 1] >= 0)  # a word before the last
            word = words[mention[candidate], column]
            hit = is_object(self.exp[owner[candidate]] * n_words + word)
            key[candidate[hit]] = word[hit]
        return key


def _bare(pairs: _Pairs, normal: pl.Series, total_expected: np.ndarray, exact: bool) -> tuple[pl.Series, pl.Series]:
    """A bare expected number ("7") of the pairs without expected counts, and whether the output states it: as
    any of its numbers, or as the sum of its counts. ``exact``: numbers as Python integers, the bare number as
    canonical digits."""
    n_pairs = len(pairs.out)
    bare = pl.repeat(None, n_pairs, dtype=pl.Utf8 if exact else pl.Int64, eager=True).alias("bare")
    bare_ok = pl.repeat(False, n_pairs, dtype=pl.Boolean, eager=True).alias("bare_ok")
    chosen = np.flatnonzero(total_expected == 0)
    if not len(chosen):
        return bare, bare_ok
    found, count = pairs.found, pairs.mention_count
    number = first_numbers(normal.gather(pairs.exp[chosen]), exact)
    out_total = np.zeros(len(count), dtype=object if exact else np.int64)
    with_mentions = np.flatnonzero(count)
    if len(with_mentions):
        out_total[with_mentions] = np.add.reduceat(found.n, _starts(count)[with_mentions])
    out = pairs.out[chosen]
    numbers = normal.gather(out).str.extract_all(r"\d+")
    if exact:
        # Canonical digit strings compare as the numbers do; the totals are Python integers.
        stated = [
            b is not None and (b in set(canonical(pl.Series(ns, dtype=pl.Utf8)).to_list()) or (c > 0 and str(t) == b))
            for b, ns, t, c in zip(number.to_list(), numbers.to_list(), out_total[out], count[out], strict=True)
        ]
        return bare.scatter(chosen, number), bare_ok.scatter(chosen, pl.Series(stated, dtype=pl.Boolean))
    stated = pl.DataFrame(
        {
            "numbers": numbers.list.eval(pl.element().cast(pl.Int64)),
            "bare": number,
            "total": out_total[out],
            "has_total": count[out] > 0,
        }
    ).select(
        (
            pl.col("numbers").list.contains(pl.col("bare"))
            | (pl.col("has_total") & (pl.col("total") == pl.col("bare")))
        ).fill_null(False)
    )
    return bare.scatter(chosen, number), bare_ok.scatter(chosen, stated.to_series())
