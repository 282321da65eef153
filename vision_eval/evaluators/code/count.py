"""Object counts: the (number, object) pairs of a text, and the share of expected counts a response states.

"I count five red circles and 3 blue squares" -> circle: 5, square: 3. :func:`count_row` is the definition, one row
at a time.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar

from vision_eval.evaluators.code.details import details_text
from vision_eval.evaluators.code.text import ascii_digit_text
from vision_eval.example import Example
from vision_eval.rowwise import EvaluatorSettings, RowResult, RowRule, failed

_UNITS = [
    *["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"],
    *["thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"],
]
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
NUMBER_WORDS: dict[str, int] = {
    **{"half a dozen": 6, "half dozen": 6, "a dozen": 12, "one dozen": 12, "dozen": 12},
    **{"a pair of": 2, "pair of": 2, "a couple of": 2, "couple of": 2, "a single": 1},
    **{f"{tens}{sep}{_UNITS[i]}": value + i for tens, value in _TENS.items() for i in range(1, 10) for sep in "- "},
    **{word: i for i, word in enumerate(_UNITS)},
    **_TENS,
    **{"single": 1, "an": 1, "a": 1, "no": 0, "none": 0},
}
"""Number words and phrases, read as digits. Where several start at the same word, the first listed wins."""
STOP_WORDS = [
    *["and", "or", "plus", "with", "in", "on", "at", "of", "but", "the", "there", "are", "is", "was", "were", "i"],
    *["see", "can", "count", "counted", "total", "which", "that", "from", "to", "by", "for", "each", "also", "as"],
    *["than", "about", "approximately", "around", "exactly", "only", "just", "image", "picture", "photo", "shows"],
    "show",
]
"""Words that end a phrase (a count's phrase is its number and the up to three words that follow)."""
IRREGULAR = {
    **{"people": "person", "children": "child", "men": "man", "women": "woman", "mice": "mouse", "geese": "goose"},
    **{"teeth": "tooth", "feet": "foot", "knives": "knife", "leaves": "leaf", "shelves": "shelf", "wolves": "wolf"},
    **{"sheep": "sheep", "fish": "fish", "buses": "bus", "lenses": "lens", "gases": "gas"},
}
MAX_DIGITS = 4300
"""Longest number read as a count (Python's own limit on reading a decimal integer)."""
NO_COUNTS = "expected_output states no counts"

# Texts are read with every word padded by two spaces (a space becomes two, punctuation and line breaks are words of
# their own), so that a pattern " five " is a whole word and two neighbouring words both match.
PAD = str.maketrans({**{c: f"  {c}  " for c in ',.;:!?()"/='}, "\n": "  ", "\t": "  ", "\r": "  "})
_PADDED = [(chr(code), words) for code, words in PAD.items()]
WORD_PATTERNS = [" " + word.replace(" ", "  ") + " " for word in NUMBER_WORDS]
WORD_DIGITS = [f" {n} " for n in NUMBER_WORDS.values()]
STOP_PATTERNS = [f" {word} " for word in STOP_WORDS]
COLON = r"([a-z][a-z'-]*) +[:=] +([0-9]+)"
"""``noun: N`` (or ``noun = N``), read as ``N noun``."""
PHRASE = r"([0-9]+) +([a-z][a-z'-]*(?: +[a-z][a-z'-]*){0,2})"
"""A count: a number and one to three words."""


def trie(literals: list[str]) -> str:
    """A regex matching the same texts as the alternation of ``literals``, as a tree of their common prefixes (the
    regex engine then tries a few branches at each position, not every literal). Where one literal is a prefix of
    another, the longer is tried first: the alternation's choice when, as here, the longer is listed first."""
    root: dict[str, Any] = {}
    for literal in literals:
        node = root
        for char in literal:
            node = node.setdefault(char, {})
        node[""] = {}
    return _branches(root)


def _branches(node: dict[str, Any]) -> str:
    parts = [re.escape(char) + _branches(child) for char, child in node.items() if char]
    if "" in node:
        parts.append("")
    return parts[0] if len(parts) == 1 else "(?:" + "|".join(parts) + ")"


_NUMBER_WORD = re.compile(trie(WORD_PATTERNS))
_DIGITS_OF = dict(zip(WORD_PATTERNS, WORD_DIGITS, strict=True))
_STOP_WORD = re.compile(trie(STOP_PATTERNS))
_COLON = re.compile(COLON)
_COLON_HINT = re.compile("[:=] +[0-9]")
_PHRASE = re.compile(PHRASE)
_NUMBER = re.compile("[0-9]+")
_IES = re.compile(r"[^aeiou]ies$")
_ES = re.compile(r"(?:ss|x|z|ch|sh)es$")
_S = re.compile(r"[^su]s$")


@dataclass  # not frozen: built for every row, and a frozen dataclass is slower to build
class CountDetails:
    """The details of a scored count row (``json.dumps`` spacing)."""

    expected: dict[str, int]
    """Each expected object's count (the first stated), or ``{"*": N}`` for a bare expected number."""
    found: dict[str, int]
    """Each object the response counts, with its first count, in order of first mention."""
    matched: dict[str, int]
    """The expected counts the response states."""
    reasoning: str


def _digits(match: re.Match[str]) -> str:
    return _DIGITS_OF[match[0]]


def normalized(text: str) -> str:
    """Lowercase text, digits of any script as ASCII, number words as digits, ``noun: N`` as ``N noun`` and stop words
    as commas (every word padded by two spaces)."""
    padded = ascii_digit_text(text.lower()).replace(" ", "  ")
    for char, words in _PADDED:  # str.translate is slower at replacing characters by several
        padded = padded.replace(char, words)
    digits = _NUMBER_WORD.sub(_digits, f"  {padded}  ")
    if _COLON_HINT.search(digits):  # rare, and the full pattern is slow to rule out
        digits = _COLON.sub(r"\2 \1", digits)
    return _STOP_WORD.sub(" , ", digits)


@lru_cache(maxsize=4096)
def singular(word: str) -> str:
    """The singular of a lowercase English noun (regular rules plus common irregulars)."""
    if word in IRREGULAR:
        return IRREGULAR[word]
    if _IES.search(word):
        return word[:-3] + "y"
    if _ES.search(word):
        return word[:-2]
    if _S.search(word) and len(word) > 3:
        return word[:-1]
    return word


def mentions(normal: str) -> list[tuple[int, list[str]]]:
    """The counts of a normalized text: each phrase's number and its words, singular."""
    return [(int(number), [singular(word) for word in words.split()]) for number, words in _PHRASE.findall(normal)]


def longest_number(text: str) -> int:
    """The number of digits of the longest number in ``text`` (digits of any script)."""
    return max(map(len, _NUMBER.findall(ascii_digit_text(text))), default=0)


@lru_cache(maxsize=4096)
def _expected(text: str) -> tuple[dict[str, int], int | None]:
    """An expected text's counts (each object's first), and its first number when it states no counts (rows often
    share their expected text)."""
    wanted = normalized(text)
    counts: dict[str, int] = {}
    for n, words in mentions(wanted):
        counts.setdefault(words[-1], n)
    number = None if counts else _NUMBER.search(wanted)
    return counts, int(number[0]) if number else None


def count_row(output: str | None, expected: str | None) -> RowResult:
    """The definition: the share of the expected counts the response states.

    1. An expected object is a phrase's last word; its count is the first stated. A response's count belongs to the
       first word of its phrase that is an expected object, else to its last word.
    2. An expected count is met when the response's first count of that object, or the sum of its counts of it,
       equals it; an expected 0 is also met when the response never counts the object.
    3. Expected text with no counts but a number ("7") is met when the response states that number, or when its counts
       add up to it. Expected text with neither is an error, as is a number of more than :data:`MAX_DIGITS` digits.
    """
    output, expected = output or "", expected or ""
    for column, text in (("output", output), ("expected_output", expected)):
        # A number of more digits needs a longer text (a digit of any script is one character).
        if len(text) > MAX_DIGITS and longest_number(text) > MAX_DIGITS:
            return failed(f"{column} holds a number of more than {MAX_DIGITS} digits: too long to read as a count")
    expected_counts, bare = _expected(expected)
    response = normalized(output)
    found = mentions(response)
    first: dict[str, int] = {}
    total: dict[str, int] = {}
    for n, words in found:
        key = next((word for word in words if word in expected_counts), words[-1])
        first.setdefault(key, n)
        total[key] = total.get(key, 0) + n
    if expected_counts:
        met = {
            obj: (first[obj] == n or total[obj] == n) if obj in first else n == 0 for obj, n in expected_counts.items()
        }
        matched = {obj: n for obj, n in expected_counts.items() if met[obj]}
        wrong = [obj for obj, ok in met.items() if not ok]
        reasoning = f"{len(matched)} of {len(expected_counts)} expected counts match"
        reasoning += f"; wrong or missing: {', '.join(wrong)}" if wrong else ""
        details = CountDetails(expected_counts, first, matched, reasoning)
        return RowResult("processed", len(matched) / len(expected_counts), details_text(details, compact=False))
    if bare is None:
        return failed(NO_COUNTS)
    stated = bare in map(int, _NUMBER.findall(response)) or (bool(found) and sum(n for n, _ in found) == bare)
    reasoning = f"the response {'states' if stated else 'never states'} the expected count {bare}"
    details = CountDetails({"*": bare}, first, {"*": bare} if stated else {}, reasoning)
    return RowResult("processed", float(stated), details_text(details, compact=False))


class CountValidatorSettings(EvaluatorSettings):
    """Settings of ``count_validator``."""


class CountValidator(RowRule[CountValidatorSettings]):
    """Share of the expected (number, object) counts the response states exactly."""

    type_name: ClassVar[str] = "count_validator"
    example: ClassVar[Example] = Example(
        {"type": "count_validator"},
        [
            {"id": "a", "output": "I count 5 bottles and 3 cans.", "expected_output": "5 bottles, 3 cans"},
            {"id": "b", "output": "4 bottles", "expected_output": "5 bottles"},
        ],
    )
    required_columns = ("output", "expected_output")
    default_threshold = 1.0

    def row_function(self) -> Callable[..., RowResult]:
        return count_row
