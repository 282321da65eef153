"""Dates of structured outputs, row-wise: the rules ``field_accuracy`` compares dates with.

A date string is read by the first rule that applies: the field's ``formats`` in order (``DD-MMM-YYYY`` tokens or
strftime codes, read by ``datetime.strptime``), then ISO 8601 (``datetime.fromisoformat``), then python-dateutil.
dateutil reads ambiguous dates month-first (``01/05/2025`` is January 5), except dotted day-month-year dates
(``05.01.2025`` is 5 January, the convention wherever dots are used); a format in ``formats`` decides otherwise. A
written offset is dropped, never converted: the machine's time zone never matters. :mod:`datepass` reproduces these
rules over a whole column.
"""

from __future__ import annotations

import re
from datetime import datetime
from functools import lru_cache

_DATE_TOKENS = [
    ("YYYY", "%Y"),
    ("YY", "%y"),
    ("MMMM", "%B"),
    ("MMM", "%b"),
    ("MM", "%m"),
    ("DD", "%d"),
    ("HH", "%H"),
    ("mm", "%M"),
    ("ss", "%S"),
]
MAX_DATE_LENGTH = 256
"""Longer strings are not read as dates (no parser is handed megabytes of text)."""
_DOTTED = re.compile(r"[0-9]{1,2}\.[0-9]{1,2}\.[0-9]")
"""A dotted day-month-year date (read day-first by dateutil)."""


@lru_cache(maxsize=256)
def strftime_format(fmt_text: str) -> str:
    """``DD-MMM-YYYY`` style to strftime (``%d-%b-%Y``); a format containing ``%`` is used as is."""
    if "%" in fmt_text:
        return fmt_text
    out, i = "", 0
    while i < len(fmt_text):
        for token, code in _DATE_TOKENS:
            if fmt_text.startswith(token, i):
                out += code
                i += len(token)
                break
        else:
            out += fmt_text[i]
            i += 1
    return out


def check_format(fmt_text: str) -> None:
    """Raise ``ValueError`` for a date format ``datetime.strptime`` cannot use (a bad or repeated directive)."""
    import _strptime  # type: ignore[import-not-found]  # no stubs: a private module of the standard library

    try:
        _strptime._TimeRE_cache.compile(strftime_format(fmt_text))
    except (ValueError, KeyError, re.error) as exc:
        raise ValueError(f"invalid date format {fmt_text!r}: {exc}") from None


@lru_cache(maxsize=65536)
def parse_date(text: str, formats: tuple[str, ...] = ()) -> datetime | None:
    """A naive datetime for ``text`` by the rules in the module docstring, or ``None``."""
    return parse_date_from(text, formats, 0)


def parse_date_from(text: str, formats: tuple[str, ...], first: int) -> datetime | None:
    """:func:`parse_date` for a text ``formats[:first]`` are known not to read (``strptime`` would raise): the
    same result, without trying them again."""
    text = text.strip()
    if not text or len(text) > MAX_DATE_LENGTH:
        return None
    for f in formats[first:]:
        try:
            return datetime.strptime(text, strftime_format(f)).replace(tzinfo=None)
        except ValueError:
            continue
    try:
        return datetime.fromisoformat(text).replace(tzinfo=None)
    except ValueError:
        pass
    from dateutil import parser

    dayfirst = _DOTTED.match(text) is not None
    try:
        parsed: datetime = parser.parse(text, dayfirst=dayfirst, yearfirst=False, default=datetime(2000, 1, 1))
    except (ValueError, OverflowError, TypeError, IndexError, KeyError):  # dateutil's errors on odd text
        return None
    return parsed.replace(tzinfo=None)


def date_text(value: datetime, compare_time: bool) -> str:
    """How a parsed date is shown and compared."""
    return value.strftime("%Y-%m-%d %H:%M:%S" if compare_time else "%Y-%m-%d")
