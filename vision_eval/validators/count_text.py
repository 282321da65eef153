"""The count mentions of text: number words as digits, (number, words) phrases, nouns singularized.

Text is normalized with literal multi-pattern replacements, then each ``N word [word [word]]`` phrase is a
mention. Texts, phrases and words are each processed once per distinct value: responses and expected
outputs repeat the same sentences, phrases and nouns across rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from vision_eval.validators._distinct import codes
from vision_eval.validators.digits import ascii_digits

_UNITS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
# Words and phrases -> digits. Text is matched with every word padded by two spaces, so " five " never
# matches inside "fivefold"; phrases come first because the earliest listed pattern wins at a position.
NUMBER_WORDS: dict[str, int] = {
    "half a dozen": 6,
    "half dozen": 6,
    "a dozen": 12,
    "one dozen": 12,
    "dozen": 12,
    "a pair of": 2,
    "pair of": 2,
    "a couple of": 2,
    "couple of": 2,
    "a single": 1,
    **{
        f"{tens}{sep}{unit}": value + i
        for tens, value in _TENS.items()
        for i, unit in enumerate(_UNITS[1:10], 1)
        for sep in ("-", " ")
    },
    **{word: i for i, word in enumerate(_UNITS)},
    **_TENS,
    "single": 1,
    "an": 1,
    "a": 1,
    "no": 0,
    "none": 0,
}
STOP_WORDS = [
    "and",
    "or",
    "plus",
    "with",
    "in",
    "on",
    "at",
    "of",
    "but",
    "the",
    "there",
    "are",
    "is",
    "was",
    "were",
    "i",
    "see",
    "can",
    "count",
    "counted",
    "total",
    "which",
    "that",
    "from",
    "to",
    "by",
    "for",
    "each",
    "also",
    "as",
    "than",
    "about",
    "approximately",
    "around",
    "exactly",
    "only",
    "just",
    "image",
    "picture",
    "photo",
    "shows",
    "show",
]
_WORD_PATTERNS = [" " + w.replace(" ", "  ") + " " for w in NUMBER_WORDS]
_WORD_DIGITS = [f" {n} " for n in NUMBER_WORDS.values()]
_STOP_PATTERNS = [f" {w} " for w in STOP_WORDS]
_PAIR = r"\d+ +[a-z][a-z'-]*(?: +[a-z][a-z'-]*){0,2}"
IRREGULAR = {
    "people": "person",
    "children": "child",
    "men": "man",
    "women": "woman",
    "mice": "mouse",
    "geese": "goose",
    "teeth": "tooth",
    "feet": "foot",
    "knives": "knife",
    "leaves": "leaf",
    "shelves": "shelf",
    "wolves": "wolf",
    "sheep": "sheep",
    "fish": "fish",
    "buses": "bus",
    "lenses": "lens",
    "gases": "gas",
}


# Punctuation and line breaks become words of their own; spaces are doubled first, separately (a literal
# replacement of the frequent space is much faster than one more multi-pattern entry).
_PAD = {",": "  ,  ", ".": "  .  ", ";": "  ;  ", ":": "  :  ", "!": "  !  ", "?": "  ?  ", "(": "  (  ", ")": "  )  "}
_PAD |= {'"': '  "  ', "/": "  /  ", "=": "  =  ", "\n": "  ", "\t": "  ", "\r": "  "}
_COLON = r"([a-z][a-z'-]*) +[:=] +(\d+)"
_WORDS_THEN_STOPS = (_WORD_PATTERNS + _STOP_PATTERNS, _WORD_DIGITS + [" , "] * len(_STOP_PATTERNS))


def normalized(texts: pl.Series) -> pl.Series:
    """Lowercase text with number words as digits (and digits of any script as ASCII digits), ``noun: N`` as
    ``N noun`` and stop words as commas.

    Literal multi-pattern replacements (Aho-Corasick) over space-padded words instead of one regex
    per word: every word is surrounded by at least two spaces, so " five " never matches "fivefold".
    Number words are replaced before ``noun: N`` is reordered, and stop words after; without a colon or
    equals sign there is nothing to reorder and one pass replaces both (no stop word is, starts or ends a
    number phrase, so the earliest listed pattern still wins at each position).
    """
    lower = ascii_digits(texts.cast(pl.Utf8).fill_null("").str.to_lowercase()).str.replace_all(" ", "  ", literal=True)
    padded = pl.select(pl.concat_str(pl.lit("  "), pl.lit(lower).str.replace_many(_PAD, leftmost=True), pl.lit("  ")))
    padded = padded.to_series()
    out = padded.str.replace_many(*_WORDS_THEN_STOPS, leftmost=True)
    colon = padded.str.contains_any([":", "="])
    if colon.any():
        digits = padded.filter(colon).str.replace_many(_WORD_PATTERNS, _WORD_DIGITS, leftmost=True)
        reordered = digits.str.replace_all(_COLON, "$2 $1")
        out = out.scatter(colon.arg_true(), reordered.str.replace_many(_STOP_PATTERNS, [" , "] * len(_STOP_PATTERNS)))
    return out


def singular(word: pl.Expr) -> pl.Expr:
    """Singular form of lowercase English nouns (regular rules plus common irregulars)."""
    regular = (
        pl.when(word.str.contains(r"[^aeiou]ies$"))
        .then(word.str.replace(r"ies$", "y"))
        .when(word.str.contains(r"(?:ss|x|z|ch|sh)es$"))
        .then(word.str.replace(r"es$", ""))
        .when(word.str.contains(r"[^su]s$") & (word.str.len_chars() > 3))
        .then(word.str.replace(r"s$", ""))
        .otherwise(word)
    )
    return word.replace_strict(IRREGULAR, default=regular, return_dtype=pl.Utf8)


_WORDS = r"[a-z][a-z'-]*"


@dataclass(frozen=True)
class Mentions:
    """The mentions of distinct texts, in text order: each one's ``text`` (index of its text), ``n`` (count),
    ``words`` (three columns of word codes, -1 past the phrase's end) and ``last`` (code of its last word).
    Word codes index ``vocabulary`` (singular nouns)."""

    text: np.ndarray
    n: np.ndarray
    words: np.ndarray
    last: np.ndarray
    vocabulary: pl.Series


def mentions(normal: pl.Series, exact: bool = False) -> Mentions:
    """The mentions of normalized texts (see :class:`Mentions`); ``exact``: counts as Python integers of any
    length (an object array), else Int64."""
    phrases = normal.str.extract_all(_PAIR)
    text = np.repeat(np.arange(len(normal), dtype=np.int64), phrases.list.len().to_numpy())
    distinct, phrase = codes(phrases.explode(), repeats_ok=True)
    number = pl.col("p").str.extract(r"^(\d+)")
    parsed = distinct.to_frame("p").select(
        (number if exact else number.cast(pl.Int64)).alias("n"),
        pl.col("p").str.extract_all(_WORDS).alias("w"),
    )
    raw = parsed.select(pl.col("w").list.get(i, null_on_oob=True).alias(str(i)) for i in range(3))
    raw_words, raw_code = codes(pl.concat([raw[str(i)] for i in range(3)]))
    vocabulary, singular_code = codes(raw_words.to_frame("w").select(singular(pl.col("w")))["w"])
    words = np.append(singular_code, -1)[raw_code].reshape(3, -1).T  # per distinct phrase
    # A phrase has one to three words: the last is the third, else the second, else the first.
    last = np.where(words[:, 2] >= 0, words[:, 2], np.where(words[:, 1] >= 0, words[:, 1], words[:, 0]))
    n = integers(parsed["n"]) if exact else parsed["n"].to_numpy()
    return Mentions(text=text, n=n[phrase], words=words[phrase], last=last[phrase], vocabulary=vocabulary)


def integers(digits: pl.Series) -> np.ndarray:
    """Digit strings as Python integers of any length (an object array; null -> None)."""
    return np.array([None if d is None else int(d) for d in digits.to_list()], dtype=object)


def first_numbers(normal: pl.Series, exact: bool = False) -> pl.Series:
    """The first number of each normalized text (null: none): Int64, or with ``exact`` its canonical digits
    (text, no leading zeros)."""
    digits = normal.str.extract(r"(\d+)", 1)
    return canonical(digits) if exact else digits.cast(pl.Int64)


def canonical(digits: pl.Series) -> pl.Series:
    """Digit strings without leading zeros ("007" -> "7", "000" -> "0")."""
    stripped = digits.str.strip_chars_start("0")
    return pl.select(pl.when(stripped == "").then(pl.lit("0")).otherwise(stripped).alias(digits.name)).to_series()
