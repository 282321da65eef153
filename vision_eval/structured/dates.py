"""Dates of structured outputs: the rules ``field_accuracy`` compares dates with.

A date string is read by the first rule that applies: the field's ``formats`` in order (``DD-MMM-YYYY`` tokens or
strftime codes, read as ``datetime.strptime`` reads them), then ISO 8601 (``datetime.fromisoformat``), then
python-dateutil. dateutil reads ambiguous dates month-first (``01/05/2025`` is January 5), except dotted
day-month-year dates (``05.01.2025`` is 5 January, the convention wherever dots are used); a format in ``formats``
decides otherwise. A written offset is dropped, never converted: the machine's time zone never matters.

A format is read with ``strptime``'s own regular expression (``_strptime._TimeRE_cache``, compiled once per
format): a text it does not match in full is not read by that format (``strptime`` would raise), without the cost
of the exception. For formats made of ``%Y %y %m %b %B %d %H %M %S`` and literals, the date is then built from the
match as ``_strptime`` builds it; other formats call ``strptime`` on the texts that match. Month names are those of
the locale at the format's first use. :func:`date_reader` caches the shown date of each distinct text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from functools import lru_cache
from typing import Any

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
DATE_CACHE = 65_536
"""Distinct texts whose shown date each reader keeps."""


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
    except (ValueError, KeyError, IndexError, re.error) as exc:
        raise ValueError(f"invalid date format {fmt_text!r}: {exc}") from None


Builder = Callable[["re.Match[str]"], "datetime | None"]
_BUILT = frozenset("YymbBdHMS")
"""The directives whose dates :func:`_builder` builds (any other format is read by ``strptime`` itself)."""


@lru_cache(maxsize=256)
def _format_plan(fmt_text: str) -> tuple[re.Pattern[str], Builder | None]:
    """``strptime``'s regular expression for a format, and how a date is built from its match (``None``: call
    ``strptime``)."""
    import _strptime

    pattern: re.Pattern[str] = _strptime._TimeRE_cache.compile(strftime_format(fmt_text))
    names = set(pattern.groupindex)
    if not names <= _BUILT or not names & {"Y", "y"}:  # without a year, strptime's leap-day rules apply
        return pattern, None
    return pattern, _builder(_strptime._TimeRE_cache.locale_time)


def _builder(locale_time: Any) -> Builder:
    """The date of a match, as ``_strptime._strptime`` computes it for these directives (each group read in the
    order of the format; a later one of the same part wins), or ``None`` where ``strptime`` raises."""
    full = [name.lower() for name in locale_time.f_month]
    short = [name.lower() for name in locale_time.a_month]

    def build(found: re.Match[str]) -> datetime | None:
        year = 0
        month = day = 1
        hour = minute = second = 0
        try:
            for key, value in found.groupdict().items():
                if key == "Y":
                    year = int(value)
                elif key == "y":
                    year = int(value)
                    year += 2000 if year <= 68 else 1900
                elif key == "m":
                    month = int(value)
                elif key == "d":
                    day = int(value)
                elif key == "b":
                    month = short.index(value.lower())
                elif key == "B":
                    month = full.index(value.lower())
                elif key == "H":
                    hour = int(value)
                elif key == "M":
                    minute = int(value)
                else:
                    second = int(value)
            return datetime(year, month, day, hour, minute, second)
        except ValueError:  # a day past the month's end, second 60, a month name only case-folding matched
            return None

    return build


def read_by_format(text: str, fmt_text: str) -> datetime | None:
    """``datetime.strptime(text, strftime_format(fmt_text))`` without its time zone, ``None`` where it raises."""
    pattern, build = _format_plan(fmt_text)
    found = pattern.match(text)
    if found is None or found.end() != len(text):
        return None
    if build is not None:
        return build(found)
    try:
        return datetime.strptime(text, strftime_format(fmt_text)).replace(tzinfo=None)
    except ValueError:
        return None


def parse_date(text: str, formats: tuple[str, ...] = ()) -> datetime | None:
    """A naive datetime for ``text`` by the rules in the module docstring, or ``None``."""
    text = text.strip()
    if not text or len(text) > MAX_DATE_LENGTH:
        return None
    for f in formats:
        read = read_by_format(text, f)
        if read is not None:
            return read
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


@lru_cache(maxsize=64)
def date_reader(formats: tuple[str, ...], compare_time: bool) -> Callable[[str], str | None]:
    """The shown date (:func:`date_text`) of a text read with these formats, ``None`` when no rule reads it; each
    distinct text is read once (the last :data:`DATE_CACHE` kept). The formats' expressions are compiled here."""
    for fmt_text in formats:
        _format_plan(fmt_text)

    @lru_cache(maxsize=DATE_CACHE)
    def shown(text: str) -> str | None:
        parsed = parse_date(text, formats)
        return None if parsed is None else date_text(parsed, compare_time)

    return shown
