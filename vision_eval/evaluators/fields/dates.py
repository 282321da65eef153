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
Plan = tuple["re.Pattern[str]", "Builder | None", str]
"""How a format is read: ``strptime``'s expression for it, how a date is built from a match (``None``: call
``strptime``), and the strftime format."""
_BUILT = frozenset("YymbBdHMS")
"""The directives whose dates :func:`_builder` builds (any other format is read by ``strptime`` itself)."""


@lru_cache(maxsize=256)
def _format_plan(fmt_text: str) -> Plan:
    """The :data:`Plan` of a format (compiled once)."""
    import _strptime

    code = strftime_format(fmt_text)
    pattern: re.Pattern[str] = _strptime._TimeRE_cache.compile(code)
    names = set(pattern.groupindex)
    if not names <= _BUILT or not names & {"Y", "y"}:  # without a year, strptime's leap-day rules apply
        return pattern, None, code
    return pattern, _builder(pattern, _strptime._TimeRE_cache.locale_time), code


def _builder(pattern: re.Pattern[str], locale_time: Any) -> Builder:
    """The date of a match, as ``_strptime._strptime`` computes it for these directives (each group read in the
    order of the format; a later one of the same part wins), or ``None`` where ``strptime`` raises."""
    full = [name.lower() for name in locale_time.f_month]
    short = [name.lower() for name in locale_time.a_month]
    order = sorted(pattern.groupindex, key=pattern.groupindex.__getitem__)
    simple = order in (["Y", "m", "d"], ["d", "m", "Y"], ["m", "d", "Y"])

    def build_simple(found: re.Match[str]) -> datetime | None:
        year, month, day = found.group("Y", "m", "d")
        try:
            return datetime(int(year), int(month), int(day))
        except ValueError:  # a day past the month's end
            return None

    def build(found: re.Match[str]) -> datetime | None:
        year = 0
        month = day = 1
        hour = minute = second = 0
        try:
            for key, value in zip(order, found.groups()):
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

    return build_simple if simple else build


def _read(text: str, plan: Plan) -> datetime | None:
    pattern, build, code = plan
    found = pattern.match(text)
    if found is None or found.end() != len(text):
        return None
    if build is not None:
        return build(found)
    try:
        return datetime.strptime(text, code).replace(tzinfo=None)
    except ValueError:
        return None


def read_by_format(text: str, fmt_text: str) -> datetime | None:
    """``datetime.strptime(text, strftime_format(fmt_text))`` without its time zone, ``None`` where it raises."""
    return _read(text, _format_plan(fmt_text))


def parse_date(text: str, formats: tuple[str, ...] = ()) -> datetime | None:
    """A naive datetime for ``text`` by the rules in the module docstring, or ``None``."""
    return _parse(text, tuple(_format_plan(f) for f in formats))


def _parse(text: str, plans: tuple[Plan, ...]) -> datetime | None:
    text = text.strip()
    if not text or len(text) > MAX_DATE_LENGTH:
        return None
    for plan in plans:
        read = _read(text, plan)
        if read is not None:
            return read
    try:
        return datetime.fromisoformat(text).replace(tzinfo=None)
    except ValueError:
        pass
    if text.isascii():
        shaped = _dateutil_shape(text)
        if shaped is not None:
            return shaped
    from dateutil import parser

    dayfirst = _DOTTED.match(text) is not None
    try:
        parsed: datetime = parser.parse(text, dayfirst=dayfirst, yearfirst=False, default=datetime(2000, 1, 1))
    except (ValueError, OverflowError, TypeError, IndexError, KeyError):  # dateutil's errors on odd text
        return None
    return parsed.replace(tzinfo=None)


DATEUTIL_MONTHS = [
    ("Jan", "January"), ("Feb", "February"), ("Mar", "March"), ("Apr", "April"), ("May", "May"), ("Jun", "June"),
    ("Jul", "July"), ("Aug", "August"), ("Sep", "Sept", "September"), ("Oct", "October"), ("Nov", "November"),
    ("Dec", "December"),
]  # fmt: skip
"""python-dateutil's month names (``parserinfo.MONTHS``, checked by the tests): written out, so that reading the
spellings below does not import dateutil."""
_MONTHS = {name.lower(): i for i, names in enumerate(DATEUTIL_MONTHS, start=1) for name in names}
_MONTH_NAME = r"(?P<b>[A-Za-z]{3,9})"
_DATEUTIL_SHAPES = [
    re.compile(pattern)
    for pattern in (
        rf"(?P<d>[0-9]{{1,2}}) {_MONTH_NAME} (?P<Y>[0-9]{{4}})",  # 5 Jan 2025
        rf"(?P<d>[0-9]{{1,2}})-{_MONTH_NAME}-(?P<Y>[0-9]{{4}})",  # 5-Jan-2025
        rf"{_MONTH_NAME} (?P<d>[0-9]{{1,2}}),? (?P<Y>[0-9]{{4}})",  # Jan 5, 2025
        r"(?P<Y>[0-9]{4})/(?P<m>[0-9]{1,2})/(?P<d>[0-9]{1,2})",  # 2025/01/05
        r"(?P<m>[0-9]{1,2})/(?P<d>[0-9]{1,2})/(?P<Y>[0-9]{4})",  # 01/05/2025: month first
        r"(?P<d>[0-9]{1,2})\.(?P<m>[0-9]{1,2})\.(?P<Y>[0-9]{4})",  # 05.01.2025: dotted, day first
    )
]
"""Spellings python-dateutil reads one way only when the year has four digits (from 1000), the month is a month
number up to 12 or one of its names, and the day exists: read here as dateutil reads them (it costs ~50 µs a
date); any other string, an invalid date included, is still handed to dateutil."""


def _dateutil_shape(text: str) -> datetime | None:
    """The date python-dateutil reads in ``text`` when it has one of :data:`_DATEUTIL_SHAPES`, else ``None``."""
    for shape in _DATEUTIL_SHAPES:
        found = shape.fullmatch(text)
        if found is None:
            continue
        parts = found.groupdict()
        month = _MONTHS.get(parts["b"].lower(), 0) if "b" in parts else int(parts["m"])
        year, day = int(parts["Y"]), int(parts["d"])
        if year < 1000 or not 1 <= month <= 12:
            return None
        try:
            return datetime(year, month, day)
        except ValueError:  # no such day: dateutil decides (it may read the numbers another way)
            return None
    return None


def date_text(value: datetime, compare_time: bool) -> str:
    """How a parsed date is shown and compared: ``YYYY-MM-DD`` (``HH:MM:SS`` after it with ``compare_time``), the
    year unpadded (as glibc's ``strftime`` writes one before 1000)."""
    if compare_time:
        return f"{value.year}-{value.month:02d}-{value.day:02d} {value.hour:02d}:{value.minute:02d}:{value.second:02d}"
    return f"{value.year}-{value.month:02d}-{value.day:02d}"


@lru_cache(maxsize=64)
def date_reader(formats: tuple[str, ...], compare_time: bool) -> Callable[[str], str | None]:
    """The shown date (:func:`date_text`) of a text read with these formats, ``None`` when no rule reads it; each
    distinct text is read once (the last :data:`DATE_CACHE` kept). The formats' expressions are compiled here."""
    plans = tuple(_format_plan(f) for f in formats)

    @lru_cache(maxsize=DATE_CACHE)
    def shown(text: str) -> str | None:
        parsed = _parse(text, plans)
        return None if parsed is None else date_text(parsed, compare_time)

    return shown
