"""Decimal digits of any script read as ASCII digits: Arabic-Indic ``٣``, fullwidth ``３``, Devanagari ``३`` -> ``3``.

Only texts holding such a digit are rewritten (texts of ASCII only, most of them, cost one length comparison), so
the validators' number patterns and casts see ASCII digits only.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache

import polars as pl

NON_ASCII_DIGIT = r"[\d&&[^0-9]]"
"""A decimal digit (Unicode ``Nd``, as Polars' regex engine knows it) that is not ASCII."""


@lru_cache(maxsize=4096)
def digit_value(char: str) -> int:
    """The value of a non-ASCII decimal digit. Python's tables may be older than the regex engine's; Unicode
    encodes every script's digits as one run of ten code points (0-9), so a digit Python does not know is read
    from its place in the run of digits it belongs to."""
    value = unicodedata.decimal(char, None)
    if value is not None:
        return value
    code = ord(char)
    below = pl.Series([chr(c) for c in range(max(code - 60, 0), code)]).str.contains(r"^\d$").to_list()
    run = 0
    for is_digit in reversed(below):
        if not is_digit:
            break
        run += 1
    return run % 10


def ascii_digits(texts: pl.Series) -> pl.Series:
    """``texts`` with every non-ASCII decimal digit replaced by its ASCII digit."""
    non_ascii = (texts.str.len_bytes() != texts.str.len_chars()).fill_null(False)  # far cheaper than the regex
    if not non_ascii.any():
        return texts
    has = non_ascii & texts.str.contains(NON_ASCII_DIGIT).fill_null(False)
    if not has.any():
        return texts
    rows = has.arg_true()
    chosen = texts.gather(rows)
    found = chosen.str.extract_all(NON_ASCII_DIGIT).explode().drop_nulls().unique().to_list()
    mapping = {char: str(digit_value(char)) for char in found}
    return texts.scatter(rows, chosen.str.replace_many(mapping))
