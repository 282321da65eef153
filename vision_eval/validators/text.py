"""How the validators read text, the same in Python (the row-wise definitions) and in Polars (the column-wise paths).

- Whitespace is Unicode's White_Space: what Polars' ``\\s`` and ``strip_chars()`` mean (Python's ``str.isspace`` and
  ``re``'s ``\\s`` also count the separators ``\\x1c``-``\\x1f``), so the definitions spell it out as :data:`SPACE`.
- A decimal digit of any script (Arabic-Indic ``٣``, fullwidth ``３``, Devanagari ``३``) reads as its ASCII digit,
  when Python's Unicode tables know it as a digit (Polars' may be newer: a digit only they know stays as it is).
  Patterns then say ``[0-9]``, never ``\\d``.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache

import numpy as np
import polars as pl

SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
"""The White_Space characters, as the inside of a regex character class (``[{SPACE}]``)."""
SPACE_CHARS = "".join(c for c in map(chr, range(0x3001)) if re.fullmatch(f"[{SPACE}]", c))
"""The same characters, listed (for ``str.strip``)."""
_OTHER_DIGIT = re.compile(r"(?![0-9])\d")
_NON_ASCII_DIGIT = r"[\d&&[^0-9]]"


def strip(text: str) -> str:
    """``text`` without leading and trailing whitespace (``strip_chars()``)."""
    return text.strip(SPACE_CHARS)


def ascii_digit_text(text: str) -> str:
    """``text`` with every non-ASCII decimal digit Python knows replaced by its ASCII digit."""
    return _OTHER_DIGIT.sub(lambda m: str(unicodedata.decimal(m[0])), text)


def ascii_digits(texts: pl.Series) -> pl.Series:
    """:func:`ascii_digit_text` of every text. Only texts holding such a digit are rewritten (texts of ASCII only,
    most of them, cost one length comparison)."""
    non_ascii = (texts.str.len_bytes() != texts.str.len_chars()).fill_null(False)  # far cheaper than the regex
    if not non_ascii.any():
        return texts
    has = non_ascii & texts.str.contains(_NON_ASCII_DIGIT).fill_null(False)
    if not has.any():
        return texts
    rows = has.arg_true()
    chosen = texts.gather(rows)
    found = chosen.str.extract_all(_NON_ASCII_DIGIT).explode().drop_nulls().unique().to_list()
    mapping = {char: str(value) for char in found if (value := unicodedata.decimal(char, None)) is not None}
    return texts.scatter(rows, chosen.str.replace_many(mapping)) if mapping else texts


def holding_any(texts: pl.Series, chars: str) -> pl.Series:
    """Whether each text holds one of the (non-ASCII) ``chars``; only texts that are not ASCII are searched."""
    non_ascii = (texts.str.len_bytes() != texts.str.len_chars()).fill_null(False)
    if not chars or not non_ascii.any():
        return pl.repeat(False, len(texts), dtype=pl.Boolean, eager=True)
    return non_ascii & texts.str.contains_any(list(chars)).fill_null(False)


@cache
def lowercase_disagreements() -> str:
    """The characters Polars lowercases otherwise than Python does (their Unicode tables differ in age), worked out
    once per process: every character lowercased by both, one at a time."""
    codes = np.arange(1, 0x110000, dtype="<u4")
    chars = codes[(codes < 0xD800) | (codes > 0xDFFF)].tobytes().decode("utf-32-le")
    # Joined by NUL, neither cased nor case-ignorable: no character is lowercased in context.
    joined = "\x00".join(chars)
    each, python = (pl.Series([text]).str.split("\x00").explode() for text in (joined, joined.lower()))
    return "".join(each.filter(python != each.str.to_lowercase()).to_list())
