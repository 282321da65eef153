"""How the validators read text.

- Whitespace is Unicode's White_Space: what Polars' ``\\s`` and ``strip_chars()`` mean (Python's ``str.isspace`` and
  ``re``'s ``\\s`` also count the separators ``\\x1c``-``\\x1f``), so the validators spell it out as :data:`SPACE`.
- A decimal digit of any script (Arabic-Indic ``٣``, fullwidth ``３``, Devanagari ``३``) reads as its ASCII digit,
  when Python's Unicode tables know it as a digit. Patterns then say ``[0-9]``, never ``\\d``.
"""

from __future__ import annotations

import re
import unicodedata

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
