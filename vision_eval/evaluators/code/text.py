"""How the validators read text, and where Python and Polars read text differently.

- Whitespace is Unicode's White_Space: what Polars' ``\\s`` and ``strip_chars()`` mean (Python's ``str.isspace`` and
  ``re``'s ``\\s`` also count the separators ``\\x1c``-``\\x1f``), so the validators spell it out as :data:`SPACE`.
- A decimal digit of any script (Arabic-Indic ``٣``, fullwidth ``３``, Devanagari ``३``) reads as its ASCII digit,
  when Python's Unicode tables know it as a digit. Patterns then say ``[0-9]``, never ``\\d``.
- The characters Polars lowercases, or counts as word characters, otherwise than Python (:func:`holding_any`,
  :func:`lowercase_disagreements`, :func:`word_disagreements`, :func:`char_class`) are for column-wise readers that
  must agree with a Python definition (the benchmark metrics' yes/no reading).
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where used: the row functions that read text run without Polars
    import polars as pl

SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
"""The White_Space characters, as the inside of a regex character class (``[{SPACE}]``)."""
SPACE_CHARS = "".join(c for c in map(chr, range(0x3001)) if re.fullmatch(f"[{SPACE}]", c))
"""The same characters, listed (for ``str.strip``)."""
_OTHER_DIGIT = re.compile(r"(?![0-9])\d")


def strip(text: str) -> str:
    """``text`` without leading and trailing whitespace (``strip_chars()``)."""
    return text.strip(SPACE_CHARS)


def ascii_digit_text(text: str) -> str:
    """``text`` with every non-ASCII decimal digit Python knows replaced by its ASCII digit."""
    if text.isascii():  # most texts: nothing to replace, and no regex pass
        return text
    return _OTHER_DIGIT.sub(_ascii_digit, text)


def _ascii_digit(match: re.Match[str]) -> str:
    return str(unicodedata.decimal(match[0]))


def holding_any(texts: pl.Series, chars: str) -> pl.Series:
    """Whether each text holds one of the (non-ASCII) ``chars``; only texts that are not ASCII are searched."""
    import polars as pl

    non_ascii = (texts.str.len_bytes() != texts.str.len_chars()).fill_null(False)
    if not chars or not non_ascii.any():
        return pl.repeat(False, len(texts), dtype=pl.Boolean, eager=True)
    return non_ascii & texts.str.contains_any(list(chars)).fill_null(False)


@cache
def _every_char() -> str:
    """Every character (no surrogates), in code point order."""
    import numpy as np

    codes = np.arange(1, 0x110000, dtype="<u4")
    return codes[(codes < 0xD800) | (codes > 0xDFFF)].tobytes().decode("utf-32-le")


@cache
def lowercase_disagreements() -> str:
    """The characters Polars lowercases otherwise than Python does (their Unicode tables differ in age), worked out
    once per process: every character lowercased by both, one at a time."""
    import polars as pl

    # Joined by NUL, neither cased nor case-ignorable: no character is lowercased in context.
    joined = "\x00".join(_every_char())
    each, python = (pl.Series([text]).str.split("\x00").explode() for text in (joined, joined.lower()))
    return "".join(each.filter(python != each.str.to_lowercase()).to_list())


@cache
def word_disagreements() -> str:
    """The characters that are word characters (``\\w``) to one of Python's ``re`` and Polars' regex but not to the
    other, so that ``\\b`` next to them differs: Python's are ``str.isalnum`` (other numbers such as ``²`` too),
    Polars' add combining marks, connector punctuation and the letters of newer Unicode versions. Worked out once
    per process."""
    import polars as pl

    chars = _every_char()
    python = set(re.findall(r"\w", chars))
    polars = set(pl.Series([chars]).str.extract_all(r"\w").explode().to_list())
    return "".join(sorted(python ^ polars))


def char_class(chars: str) -> str:
    """A regex character class matching exactly ``chars`` (consecutive code points written as ranges)."""
    points = sorted(set(map(ord, chars)))
    ranges: list[list[int]] = []
    for point in points:
        if ranges and point == ranges[-1][1] + 1:
            ranges[-1][1] = point
        else:
            ranges.append([point, point])
    return "[" + "".join(f"\\x{{{a:x}}}" + (f"-\\x{{{b:x}}}" if b > a else "") for a, b in ranges) + "]"
