"""Object counts: the (number, object) pairs of a text, and the share of expected counts a response states.

"I count five red circles and 3 blue squares" -> circle: 5, square: 3. :func:`count_row` is the definition, one row
at a time; :mod:`~vision_eval.validators.count_columns` scores whole frames the same way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from vision_eval.rowwise import RowResult, failed
from vision_eval.validators.rows import details_text
from vision_eval.validators.text import ascii_digit_text

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
WORD_PATTERNS = [" " + word.replace(" ", "  ") + " " for word in NUMBER_WORDS]
WORD_DIGITS = [f" {n} " for n in NUMBER_WORDS.values()]
STOP_PATTERNS = [f" {word} " for word in STOP_WORDS]
_NUMBER_WORD = re.compile("|".join(map(re.escape, WORD_PATTERNS)))
_DIGITS_OF = dict(zip(WORD_PATTERNS, WORD_DIGITS, strict=True))
_STOP_WORD = re.compile("|".join(map(re.escape, STOP_PATTERNS)))
COLON = r"([a-z][a-z'-]*) +[:=] +([0-9]+)"
"""``noun: N`` (or ``noun = N``), read as ``N noun``."""
PHRASE = r"[0-9]+ +[a-z][a-z'-]*(?: +[a-z][a-z'-]*){0,2}"
"""A count: a number and one to three words."""
WORD = r"[a-z][a-z'-]*"


@dataclass(frozen=True)
class CountDetails:
    """The details of a scored count row (``json.dumps`` spacing)."""

    expected: dict[str, int]
    """Each expected object's count (the first stated), or ``{"*": N}`` for a bare expected number."""
    found: dict[str, int]
    """Each object the response counts, with its first count, in order of first mention."""
    matched: dict[str, int]
    """The expected counts the response states."""
    reasoning: str


def normalized(text: str) -> str:
    """Lowercase text, digits of any script as ASCII, number words as digits, ``noun: N`` as ``N noun`` and stop words
    as commas (every word padded by two spaces)."""
    padded = "  " + ascii_digit_text(text.lower()).replace(" ", "  ").translate(PAD) + "  "
    digits = _NUMBER_WORD.sub(lambda m: _DIGITS_OF[m[0]], padded)
    return _STOP_WORD.sub(" , ", re.sub(COLON, r"\2 \1", digits))


def singular(word: str) -> str:
    """The singular of a lowercase English noun (regular rules plus common irregulars)."""
    if word in IRREGULAR:
        return IRREGULAR[word]
    if re.search(r"[^aeiou]ies$", word):
        return word[:-3] + "y"
    if re.search(r"(?:ss|x|z|ch|sh)es$", word):
        return word[:-2]
    if re.search(r"[^su]s$", word) and len(word) > 3:
        return word[:-1]
    return word


def mentions(normal: str) -> list[tuple[int, list[str]]]:
    """The counts of a normalized text: each phrase's number and its words, singular."""
    return [
        (int(re.match("[0-9]+", phrase)[0]), [singular(word) for word in re.findall(WORD, phrase)])  # type: ignore[index]
        for phrase in re.findall(PHRASE, normal)
    ]


def longest_number(text: str) -> int:
    """The number of digits of the longest number in ``text`` (digits of any script)."""
    return max(map(len, re.findall("[0-9]+", ascii_digit_text(text))), default=0)


def count_row(output: str | None, expected: str | None) -> RowResult:
    """The definition: the share of the expected counts the response states.

    1. An expected object is a phrase's last word; its count is the first stated. A response's count belongs to the
       first word of its phrase that is an expected object, else to its last word.
    2. An expected count is met when the response's first count of that object, or the sum of its counts of it,
       equals it; an expected 0 is also met when the response never counts the object.
    3. Expected text with no counts but a number ("7") is met when the response states that number, or when its counts
       add up to it. Expected text with neither is an error, as is a number of more than :data:`MAX_DIGITS` digits.
    """
    for column, text in (("output", output), ("expected_output", expected)):
        if longest_number(text or "") > MAX_DIGITS:
            return failed(f"{column} holds a number of more than {MAX_DIGITS} digits: too long to read as a count")
    response, wanted = normalized(output or ""), normalized(expected or "")
    expected_counts: dict[str, int] = {}
    for n, words in mentions(wanted):
        expected_counts.setdefault(words[-1], n)
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
    number = re.search("[0-9]+", wanted)
    if number is None:
        return failed(NO_COUNTS)
    bare = int(number[0])
    stated = bare in map(int, re.findall("[0-9]+", response)) or (bool(found) and sum(n for n, _ in found) == bare)
    reasoning = f"the response {'states' if stated else 'never states'} the expected count {bare}"
    details = CountDetails({"*": bare}, first, {"*": bare} if stated else {}, reasoning)
    return RowResult("processed", float(stated), details_text(details, compact=False))
