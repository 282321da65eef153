"""rapidfuzz's ``Levenshtein.normalized_similarity`` in plain Python, for batches with only a few distinct pairs.

Importing rapidfuzz costs ~6 ms (it loads a dozen extension modules); a batch whose fuzzy field holds a handful of
distinct (response, expected) pairs (vendor names, currencies) scores them faster here. The result is rapidfuzz's
to the last bit: unit-cost edit distance over code points, then ``1.0 - distance / max(len(a), len(b))`` in double
precision (``0.0`` distance for two empty strings), exactly as rapidfuzz computes it (``tests/test_levenshtein.py``
checks it against rapidfuzz itself).
"""

from __future__ import annotations

PYTHON_CELLS = 10_000
"""Up to this many cells of edit-distance tables (the product of the lengths, summed over the pairs of different
strings) a batch is scored here (~4 ms at most); more, and rapidfuzz is imported."""


def cells(pairs: list[tuple[str, str]]) -> int:
    """The edit-distance table cells :func:`normalized_similarity` fills for these pairs (none for equal strings)."""
    return sum(len(a) * len(b) for a, b in pairs if a != b)


def distance(a: str, b: str) -> int:
    """Unit-cost edit distance (insertions, deletions, substitutions) of two strings, over code points."""
    start = 0
    while start < len(a) and start < len(b) and a[start] == b[start]:  # a shared prefix or suffix costs no edit
        start += 1
    end_a, end_b = len(a), len(b)
    while end_a > start and end_b > start and a[end_a - 1] == b[end_b - 1]:
        end_a, end_b = end_a - 1, end_b - 1
    a, b = a[start:end_a], b[start:end_b]
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, char in enumerate(a, start=1):
        current = [i]
        for j, other in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char != other)))
        previous = current
    return previous[-1]


def normalized_similarity(a: str, b: str) -> float:
    """``rapidfuzz.distance.Levenshtein.normalized_similarity(a, b)`` (0..1)."""
    longest = max(len(a), len(b))
    if a == b or not longest:
        return 1.0
    return 1.0 - distance(a, b) / longest
