"""count_validator column-wise: :func:`~vision_eval.validators.count.count_row` for whole frames.

Texts are read once per distinct text (responses and expected outputs repeat the same sentences), phrases and words
once per distinct value, equal (output, expected) rows are scored once, and the matching is flat numpy arrays. Counts
are Int64 here: rows whose texts hold a number of 16 or more digits, or whose counts could add up beyond Int64, are
handed to ``count_row`` (Python integers).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from vision_eval.validators._distinct import codes, run_starts
from vision_eval.validators.count import (
    COLON,
    NO_COUNTS,
    PHRASE,
    STOP_PATTERNS,
    WORD,
    WORD_DIGITS,
    WORD_PATTERNS,
    CountDetails,
    count_row,
    singular,
)
from vision_eval.validators.rows import details_column, joined, json_strings, scored_in_parts
from vision_eval.validators.text import ascii_digits

WIDE = r"[0-9]{16}"
"""A number the Int64 path does not take."""
INT64_TOTAL = 2.0**62
"""A text whose counts add up to this much might overflow Int64 sums."""
WRONG = "; wrong or missing: "
_PAD = {c: f"  {c}  " for c in ',.;:!?()"/='} | {"\n": "  ", "\t": "  ", "\r": "  "}
_WORDS_THEN_STOPS = (WORD_PATTERNS + STOP_PATTERNS, WORD_DIGITS + [" , "] * len(STOP_PATTERNS))


def count_frame(frame: pl.DataFrame) -> pl.DataFrame:
    """Score ``output`` against ``expected_output`` counts, as :func:`count_row` does each row."""
    frame = frame.select(pl.col("output", "expected_output").cast(pl.Utf8))
    height = frame.height
    texts = pl.concat([frame["output"], frame["expected_output"]]).fill_null("")
    distinct, code = codes(texts, repeats_ok=True)
    normal = normalized(distinct)
    wide = normal.str.contains(WIDE).to_numpy()
    if wide.any():  # rare: only these rows go to the definition
        return _handing_over(frame, wide[code[:height]] | wide[code[height:]])
    found = mentions(normal)
    total = np.bincount(found.text, weights=found.n.astype(np.float64), minlength=len(normal))
    if (total >= INT64_TOTAL).any():
        big = total >= INT64_TOTAL
        return _handing_over(frame, big[code[:height]] | big[code[height:]])
    n_texts = max(len(distinct), 1)
    # Equal (output, expected) rows are scored once, as one pair.
    pair, row_pair = np.unique(code[:height] * n_texts + code[height:], return_inverse=True)
    pairs = _Pairs(found, pair // n_texts, pair % n_texts, n_texts)
    return pairs.results(normal).gather(row_pair)


def _handing_over(frame: pl.DataFrame, rows: np.ndarray) -> pl.DataFrame:
    return scored_in_parts(frame, rows, count_frame, lambda r: count_row(r["output"], r["expected_output"]))


def normalized(texts: pl.Series) -> pl.Series:
    """:func:`count.normalized` of every text, by literal multi-pattern replacements (Aho-Corasick) instead of one
    regex per word. Without a word before a colon or equals sign there is nothing to reorder, and one pass replaces
    number words and stop words (no stop word is, starts or ends a number phrase, so the earliest listed pattern still
    wins at each position)."""
    lower = ascii_digits(texts.str.to_lowercase()).str.replace_all(" ", "  ", literal=True)
    # A literal replacement of the frequent space is much faster than one more multi-pattern entry.
    padded = pl.select(
        pl.concat_str(pl.lit("  "), pl.lit(lower).str.replace_many(_PAD, leftmost=True), pl.lit("  "))
    ).to_series()
    out = padded.str.replace_many(*_WORDS_THEN_STOPS, leftmost=True)
    # "circles: 3" is reordered, "scene 12:" and "10:30" are not: the number words' digits cannot end a word, so the
    # padded text shows which rows hold a word before the sign.
    colon = padded.str.contains(r"[a-z'-] +[:=]")
    if colon.any():
        digits = padded.filter(colon).str.replace_many(WORD_PATTERNS, WORD_DIGITS, leftmost=True)
        reordered = digits.str.replace_all(COLON, "$2 $1")
        out = out.scatter(colon.arg_true(), reordered.str.replace_many(STOP_PATTERNS, [" , "] * len(STOP_PATTERNS)))
    return out


@dataclass(frozen=True)
class Mentions:
    """The counts of distinct texts, in text order: each one's ``text`` (index of its text), ``n`` (count), ``words``
    (three columns of word codes, -1 past the phrase's end) and ``last`` (code of its last word). Word codes index
    ``vocabulary`` (singular nouns)."""

    text: np.ndarray
    n: np.ndarray
    words: np.ndarray
    last: np.ndarray
    vocabulary: pl.Series


def mentions(normal: pl.Series) -> Mentions:
    """The counts of normalized texts; phrases are parsed once per distinct phrase, words singularized (by
    :func:`count.singular`) once per distinct word."""
    phrases = normal.str.extract_all(PHRASE)
    text = np.repeat(np.arange(len(normal), dtype=np.int64), phrases.list.len().to_numpy())
    distinct, phrase = codes(phrases.explode(), repeats_ok=True)
    parsed = distinct.to_frame("p").select(
        pl.col("p").str.extract("^([0-9]+)").cast(pl.Int64).alias("n"), pl.col("p").str.extract_all(WORD).alias("w")
    )
    raw = parsed.select(pl.col("w").list.get(i, null_on_oob=True).alias(str(i)) for i in range(3))
    raw_words, raw_code = codes(pl.concat([raw[str(i)] for i in range(3)]))
    vocabulary, singular_code = codes(pl.Series([singular(w) for w in raw_words.to_list()], dtype=pl.Utf8))
    words = np.append(singular_code, -1)[raw_code].reshape(3, -1).T  # per distinct phrase
    # A phrase has one to three words: the last is the third, else the second, else the first.
    last = np.where(words[:, 2] >= 0, words[:, 2], np.where(words[:, 1] >= 0, words[:, 1], words[:, 0]))
    n = parsed["n"].to_numpy()
    return Mentions(text=text, n=n[phrase], words=words[phrase], last=last[phrase], vocabulary=vocabulary)


def _expand(count: np.ndarray, start: np.ndarray, groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The items of each group in ``groups`` (items ``start[g]`` to ``start[g] + count[g]``), one after the
    other: each one's position in ``groups`` and its item index."""
    sizes = count[groups]
    owner = np.repeat(np.arange(len(groups), dtype=np.int64), sizes)
    shift = np.repeat(start[groups] - (np.cumsum(sizes) - sizes), sizes)
    return owner, np.arange(len(owner), dtype=np.int64) + shift


def _starts(count: np.ndarray) -> np.ndarray:
    starts: np.ndarray = np.cumsum(count) - count
    return starts


def _lookup(table: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Position of each key in the sorted ``table`` and whether it is there."""
    position = np.searchsorted(table, keys)
    clipped = np.minimum(position, max(len(table) - 1, 0))
    found = (position < len(table)) & (table[clipped] == keys) if len(table) else np.zeros(len(keys), dtype=bool)
    return clipped, found


class _Pairs:
    """The (output text, expected text) pairs to score, with the mentions of all the texts."""

    def __init__(self, found: Mentions, out: np.ndarray, exp: np.ndarray, n_texts: int) -> None:
        self.found, self.out, self.exp = found, out, exp
        self.n_words = max(len(found.vocabulary), 1)
        self.mention_count = np.bincount(found.text, minlength=n_texts)
        # Expected items of each text: its mentions' objects (last words), the first count of each object.
        self.item_keys, first = np.unique(found.text * self.n_words + found.last, return_index=True)  # sorted
        first.sort()
        self.item_text, self.item_n, self.item_object = found.text[first], found.n[first], found.last[first]
        self.item_count = np.bincount(self.item_text, minlength=n_texts)

    def results(self, normal: pl.Series) -> pl.DataFrame:
        """Status, score, details and error of each pair."""
        found, n_words, n_pairs = self.found, self.n_words, len(self.out)
        owner, mention = _expand(self.mention_count, _starts(self.mention_count), self.out)
        key, n = self._keys(owner, mention), found.n[mention]
        # Per (pair, key): the first count and the total, groups in order of first mention.
        group = owner * n_words + key
        order = np.argsort(group, kind="stable")
        starts = np.flatnonzero(run_starts(group[order]))
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
        by_first = np.argsort(group_first, kind="stable")
        # What the details show: each pair's expected items (in the expected text's order) and found objects (in
        # order of first mention, with their first count).
        item_object, group_pair = self.item_object[item], group_key[by_first] // n_words
        group_object, group_n = group_key[by_first] % n_words, group_n[by_first]
        bare, bare_ok = self._bare(normal, np.bincount(item_pair, minlength=n_pairs))
        total = np.bincount(item_pair, minlength=n_pairs)
        hits = np.bincount(item_pair[ok], minlength=n_pairs)
        counted = total > 0
        is_bare = ~counted & bare.is_not_null().to_numpy()
        with np.errstate(invalid="ignore", divide="ignore"):
            score = np.where(counted, hits / np.maximum(total, 1), np.where(is_bare, bare_ok.to_numpy(), np.nan))
        keys = json_strings(found.vocabulary) + ": "  # '"circle": '
        numbers = pl.Series(wanted).cast(pl.Utf8)
        # Each member's text without its braces; a counted pair's reasoning ends with its wrong objects, if any.
        members = pl.DataFrame(
            {
                "expected": joined([keys.gather(item_object), numbers], item_pair, n_pairs, ", "),
                "found": joined(
                    [keys.gather(group_object), pl.Series(group_n).cast(pl.Utf8)], group_pair, n_pairs, ", "
                ),
                "matched": joined(
                    [keys.gather(item_object[ok]), numbers.filter(pl.Series(ok))], item_pair[ok], n_pairs, ", "
                ),
                "hits": hits,
                "total": total,
                "wrong": joined(found.vocabulary.gather(item_object[~ok]), item_pair[~ok], n_pairs, ", ", WRONG),
            }
        ).select(
            "expected", "found", "matched", pl.format("{} of {} expected counts match{}", "hits", "total", "wrong")
        )
        members.columns = [*members.columns[:3], "reasoning"]
        bare_rows = np.flatnonzero(is_bare)
        if len(bare_rows):
            members = _with_bare(members, bare_rows, bare.gather(bare_rows), bare_ok.gather(bare_rows))
        return _results(members, ~counted & ~is_bare, score)

    def _keys(self, owner: np.ndarray, mention: np.ndarray) -> np.ndarray:
        """Each output mention's object: its first word that is an expected object of the pair, else its last
        word (so only the words before the last need a look)."""
        words, n_words = self.found.words, self.n_words
        key: np.ndarray = self.found.last[mention]
        for column in (1, 0):
            candidate = np.flatnonzero(words[mention, column + 1] >= 0)  # a word before the last
            word = words[mention[candidate], column]
            # A sorted search: np.isin sorts or hashes both sides on every call (here 30 times slower).
            hit = _lookup(self.item_keys, self.exp[owner[candidate]] * n_words + word)[1]
            key[candidate[hit]] = word[hit]
        return key

    def _bare(self, normal: pl.Series, total_expected: np.ndarray) -> tuple[pl.Series, pl.Series]:
        """A bare expected number ("7") of the pairs without expected counts, and whether the output states it: as
        any of its numbers, or as the sum of its counts."""
        n_pairs = len(self.out)
        bare = pl.repeat(None, n_pairs, dtype=pl.Int64, eager=True).alias("bare")
        bare_ok = pl.repeat(False, n_pairs, dtype=pl.Boolean, eager=True).alias("bare_ok")
        chosen = np.flatnonzero(total_expected == 0)
        if not len(chosen):
            return bare, bare_ok
        count = self.mention_count
        out_total = np.zeros(len(count), dtype=np.int64)
        with_mentions = np.flatnonzero(count)
        if len(with_mentions):
            out_total[with_mentions] = np.add.reduceat(self.found.n, _starts(count)[with_mentions])
        out = self.out[chosen]
        stated = pl.DataFrame(
            {
                "numbers": normal.gather(out).str.extract_all("[0-9]+").list.eval(pl.element().cast(pl.Int64)),
                "bare": normal.gather(self.exp[chosen]).str.extract("([0-9]+)", 1).cast(pl.Int64),
                "total": out_total[out],
                "has_total": count[out] > 0,
            }
        ).select(
            "bare",
            (
                pl.col("numbers").list.contains(pl.col("bare"))
                | (pl.col("has_total") & (pl.col("total") == pl.col("bare")))
            )
            .fill_null(False)
            .alias("ok"),
        )
        return bare.scatter(chosen, stated["bare"]), bare_ok.scatter(chosen, stated["ok"])


def _with_bare(members: pl.DataFrame, rows: np.ndarray, bare: pl.Series, stated: pl.Series) -> pl.DataFrame:
    """The members of the pairs at ``rows``, which expect a bare number (``{"*": 7}``) the output ``stated`` or not."""
    star = pl.format('"*": {}', "bare")
    states = pl.when("stated").then(pl.lit("states")).otherwise(pl.lit("never states"))
    texts = pl.DataFrame({"bare": bare, "stated": stated}).select(
        star.alias("expected"),
        pl.when("stated").then(star).otherwise(pl.lit("")).alias("matched"),
        pl.format("the response {} the expected count {}", states, "bare").alias("reasoning"),
    )
    return members.with_columns(members[name].scatter(rows, texts[name]) for name in texts.columns)


def _results(members: pl.DataFrame, no_counts: np.ndarray, score: np.ndarray) -> pl.DataFrame:
    """Status, score, details and error of each pair from the texts of its details' members."""

    def enclosed(name: str, mark: str) -> pl.Expr:
        return pl.concat_str(pl.lit(mark[0]), pl.col(name), pl.lit(mark[-1]))

    details = details_column(
        CountDetails,
        compact=False,
        expected=enclosed("expected", "{}"),
        found=enclosed("found", "{}"),
        matched=enclosed("matched", "{}"),
        reasoning=enclosed("reasoning", '"'),  # words and digits only: nothing to escape
    )
    unscored = pl.lit(no_counts)
    return members.select(
        pl.when(unscored).then(pl.lit("error")).otherwise(pl.lit("processed")).alias("status"),
        pl.lit(score).fill_nan(None).alias("score"),
        pl.when(~unscored).then(details).alias("details"),
        pl.when(unscored).then(pl.lit(NO_COUNTS)).alias("error"),
    )
