"""Object counts: the (number, object) pairs of a text, and the share of expected counts a response states.

"I count five red circles and 3 blue squares" -> circle: 5, square: 3. :func:`count_row` is the definition, one row
at a time. A count the response hedges ("6 or 7", "6-7", "between 6 and 8") or denies ("not 7") is not stated.
"""

from __future__ import annotations

import re
from bisect import bisect_left
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
MAYBE = "(?:(?:maybe|perhaps|possibly|even|probably|about|approximately|around|rather) +)?"
HEDGE = (
    rf"[0-9]+(?: +(?:,|or) +[0-9]+)*(?: +[a-z][a-z'-]*){{0,3}} +(?:[,(] +)?or +{MAYBE}[0-9]+"
    r"|[0-9]+ *[-–—] *[0-9]+|[0-9]+ +to +[0-9]+|between +[0-9]+ +and +[0-9]+"
)
"""Numbers offered as alternatives: ``6 or 7``, ``5, 6 or 7``, ``6 apples or maybe 7``, ``6-7``, ``6 to 7``, ``between
6 and 8`` (read before stop words end phrases: ``or``, ``to`` and ``and`` are stop words)."""
DENIAL = (
    r"(?:\bnot|n['\u2019]t|\bnever)(?: +(?:exactly|quite|really|see|count|counted|the|be|is|are|was|were))* +([0-9]+)"
)
"""A number denied: ``not 7``, ``isn't 7``, ``don't see 7``, ``not exactly 7`` (not ``not only 7``)."""


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
_HEDGE = re.compile(HEDGE)
_DENIAL = re.compile(DENIAL)
_DOUBT_HINT = re.compile(
    r" or +(?:[a-z]+ +)?[0-9]| to +[0-9]|[0-9] *[-\u2013\u2014] *[0-9]|not |n['\u2019]t |never |between "
)
"""Rules out most texts without hedges or denials in one quick search."""
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


def with_digits(text: str) -> str:
    """Lowercase text, digits of any script as ASCII, number words as digits and ``noun: N`` as ``N noun`` (every
    word padded by two spaces)."""
    padded = ascii_digit_text(text.lower()).replace(" ", "  ")
    for char, words in _PADDED:  # str.translate is slower at replacing characters by several
        padded = padded.replace(char, words)
    digits = _NUMBER_WORD.sub(_digits, f"  {padded}  ")
    if _COLON_HINT.search(digits):  # rare, and the full pattern is slow to rule out
        digits = _COLON.sub(r"\2 \1", digits)
    return digits


def normalized(text: str) -> str:
    """:func:`with_digits`, and stop words as commas."""
    return _STOP_WORD.sub(" , ", with_digits(text))


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


NO_DOUBTS: tuple[frozenset[int], dict[int, tuple[int, ...]]] = (frozenset(), {})


def _may_doubt(text: str) -> bool:
    """Whether a text holds a word that :data:`HEDGE` or :data:`DENIAL` needs (substring tests, written out: five
    times faster than a regex search or a loop, and most texts hold none)."""
    return (
        "-" in text or " or " in text or " to " in text or "not" in text or "n't" in text or "never" in text
        or "between" in text or "\u2013" in text or "\u2014" in text or "n\u2019t" in text
    )  # fmt: skip


def doubts(text: str) -> tuple[frozenset[int], dict[int, tuple[int, ...]]]:
    """The numbers of a :func:`with_digits` text that it denies (:data:`DENIAL`) and those it offers as alternatives
    (:data:`HEDGE`): the indices (among the text's numbers, in order) of the denied ones, and for each hedged one
    the numbers offered together."""
    if not _may_doubt(text) or not _DOUBT_HINT.search(text):  # most texts
        return NO_DOUBTS
    starts = [m.start() for m in _NUMBER.finditer(text)]
    denied = frozenset(bisect_left(starts, m.start(1)) for m in _DENIAL.finditer(text))
    hedges: dict[int, tuple[int, ...]] = {}
    for match in _HEDGE.finditer(text):
        first, end = bisect_left(starts, match.start()), bisect_left(starts, match.end())
        offered = tuple(int(n) for n in _NUMBER.findall(match[0]))
        if len(set(offered)) > 1:
            hedges.update(dict.fromkeys(range(first, end), offered))
    return denied, hedges


def indexed_mentions(normal: str) -> tuple[list[tuple[int, list[str]]], list[int]]:
    """:func:`mentions`, and the index of each one's number among the text's numbers."""
    starts = [m.start() for m in _NUMBER.finditer(normal)]
    matches = list(_PHRASE.finditer(normal))
    found = [(int(m[1]), [singular(word) for word in m[2].split()]) for m in matches]
    return found, [bisect_left(starts, m.start()) for m in matches]


def _alternatives(numbers: tuple[int, ...]) -> str:
    """``6 or 7``, ``5, 6 or 7``."""
    return ", ".join(map(str, numbers[:-1])) + f" or {numbers[-1]}"


def count_row(output: str | None, expected: str | None) -> RowResult:
    """The definition: the share of the expected counts the response states.

    1. An expected object is a phrase's last word; its count is the first stated. A response's count belongs to the
       first word of its phrase that is an expected object, else to its last word.
    2. An expected count is met when the response's first count of that object, or the sum of its counts of it,
       equals it; an expected 0 is also met when the response never counts the object.
    3. Expected text with no counts but a number ("7") is met when the response states that number and no other
       count of the same thing (the same words), or when its counts add up to it. Expected text with neither is an
       error, as is a number of more than :data:`MAX_DIGITS` digits.
    4. A number the response denies ("not 7", "isn't 7") is not stated; an expected count the response offers
       among alternatives ("6 or 7", "6-7", "between 6 and 8") is not met, nor is an expected object it counts so.
       The reasoning says which.
    """
    output, expected = output or "", expected or ""
    for column, text in (("output", output), ("expected_output", expected)):
        # A number of more digits needs a longer text (a digit of any script is one character).
        if len(text) > MAX_DIGITS and longest_number(text) > MAX_DIGITS:
            return failed(f"{column} holds a number of more than {MAX_DIGITS} digits: too long to read as a count")
    expected_counts, bare = _expected(expected)
    words = with_digits(output)
    response = _STOP_WORD.sub(" , ", words)
    denied, hedges = doubts(words)
    if denied or hedges:
        found, indices = indexed_mentions(response)
        kept = [i for i, index in enumerate(indices) if index not in denied]
        counts, indices = [found[i] for i in kept], [indices[i] for i in kept]
    else:  # the usual text: no index needed
        counts, indices = mentions(response), []
    first: dict[str, int] = {}
    total: dict[str, int] = {}
    for n, phrase in counts:
        key = next((word for word in phrase if word in expected_counts), phrase[-1])
        first.setdefault(key, n)
        total[key] = total.get(key, 0) + n
    hedged: dict[str, tuple[int, ...]] = {}
    for (_, phrase), index in zip(counts, indices, strict=False) if hedges else ():
        if index in hedges:
            hedged.setdefault(next((word for word in phrase if word in expected_counts), phrase[-1]), hedges[index])
    if expected_counts:
        met = {
            obj: ((first[obj] == n or total[obj] == n) if obj in first else n == 0) and obj not in hedged
            for obj, n in expected_counts.items()
        }
        matched = {obj: n for obj, n in expected_counts.items() if met[obj]}
        wrong = [obj for obj, ok in met.items() if not ok]
        reasoning = f"{len(matched)} of {len(expected_counts)} expected counts match"
        reasoning += f"; wrong or missing: {', '.join(wrong)}" if wrong else ""
        doubted = [f"{obj} ({_alternatives(hedged[obj])})" for obj in wrong if obj in hedged]
        reasoning += f"; hedged: {', '.join(doubted)}" if doubted else ""
        details = CountDetails(expected_counts, first, matched, reasoning)
        return RowResult("processed", len(matched) / len(expected_counts), details_text(details, compact=False))
    if bare is None:
        return failed(NO_COUNTS)
    stated, reasoning = _bare_verdict(bare, response, counts, indices, denied, hedges)
    details = CountDetails({"*": bare}, first, {"*": bare} if stated else {}, reasoning)
    return RowResult("processed", float(stated), details_text(details, compact=False))


def _bare_verdict(
    bare: int,
    response: str,
    counts: list[tuple[int, list[str]]],
    indices: list[int],
    denied: frozenset[int],
    hedges: dict[int, tuple[int, ...]],
) -> tuple[bool, str]:
    """Whether the response states the bare expected count (rules 3 and 4 of :func:`count_row`), and why.
    ``counts``: the response's counts that it does not deny, ``indices`` their numbers' indices among its numbers
    (empty when it denies and hedges nothing)."""
    numbers = [int(n) for n in _NUMBER.findall(response)]
    if denied or hedges:
        at = [index for index, n in enumerate(numbers) if n == bare]
        said = [index for index in at if index not in denied]
        offered = next((hedges[index] for index in said if index in hedges), None)
        if offered is not None:
            return False, f"the response hedges ({_alternatives(offered)}): it does not state the expected count {bare}"
        if at and not said:
            return False, f"the response denies the expected count {bare}"
        stated = bool(said)
    else:
        stated = bare in numbers
    if stated and len(counts) > 1:
        # Another count of the same thing (the same words) contradicts it: "6 birds... no, 7 birds".
        things = {tuple(phrase) for n, phrase in counts if n == bare}
        others = sorted({n for n, phrase in counts if n != bare and tuple(phrase) in things}) if things else []
        if others:
            thing = " ".join(next(iter(things)))
            also = " and ".join(map(str, others))
            return False, f"the response states the expected count {bare} but also {also} of the same thing ({thing})"
    if stated:
        return True, f"the response states the expected count {bare}"
    stated = bool(counts) and not hedges and sum(n for n, _ in counts) == bare
    return stated, f"the response {'states' if stated else 'never states'} the expected count {bare}"


class CountValidatorSettings(EvaluatorSettings):
    """Settings of ``count_validator``."""


class CountValidator(RowRule[CountValidatorSettings]):
    """Share of the expected (number, object) counts the response states exactly.

    A count the response hedges (``4 or 5 bottles``, ``4-5``, ``between 4 and 6``) or denies (``not 5``) is not
    stated. A bare expected number (``7``) is met when the response states it and no other count of the same thing
    (``6 birds... no, 7 birds`` is not), or when its counts add up to it (``4 circles and 3 squares``). The details'
    ``reasoning`` says which rule decided."""

    type_name: ClassVar[str] = "count_validator"
    example: ClassVar[Example] = Example(
        {"type": "count_validator"},
        [
            {"id": "a", "output": "I count 5 bottles and 3 cans.", "expected_output": "5 bottles, 3 cans"},
            {"id": "b", "output": "4 or 5 bottles", "expected_output": "5 bottles"},
        ],
    )
    required_columns = ("output", "expected_output")
    default_threshold = 1.0

    def row_function(self) -> Callable[..., RowResult]:
        return count_row
