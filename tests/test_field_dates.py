"""The date reader (``dates.parse_date``: ``strptime``'s expressions matched first, dates built from the match) reads
every string as the standard library's chain does (``datetime.strptime`` per format, ``datetime.fromisoformat``,
python-dateutil), on generated strings: every format spelling, case, spacing, invalid days, leap days, two-digit
years, years before 1000, digits of other scripts, times, leap seconds and text no rule reads."""

from __future__ import annotations

import datetime as dt
import random
import re

import pytest

from vision_eval.evaluators.fields import dates
from vision_eval.evaluators.fields.dates import date_reader, date_text, parse_date, strftime_format

SPELLINGS = ["%Y-%m-%d", "%d-%b-%Y", "%m/%d/%Y", "%d/%m/%Y", "%d.%m.%Y", "%B %d, %Y", "%Y-%m-%dT%H:%M:%S", "%d-%m-%y"]
SPELLINGS += ["%Y%m%d", "%b %d %Y %H:%M", "%Y-%m-%d %H:%M", "%d %B %Y", "%A, %d %B %Y", "%y-%m-%d"]
SPELLINGS += ["%d %b %Y", "%Y/%m/%d", "%b %d, %Y", "%b %d %Y", "%d-%B-%Y", "%Y/%d/%m"]  # python-dateutil's shapes
SPELLINGS += ["%Y年%m月%d日"]  # a format with letters beyond ASCII
ODD = ["2025-02-30", "2024-02-29", "2023-02-29", "31.04.2025", "30/02/2025", "0999-01-01", "2025-13-01", "5 Jan"]
ODD += ["", "   ", "tomorrow", "2025-01-05T24:00", "2025-01-05 10:20:60", "05.01.25", "1/2/3", "2025-01-05x10:20"]
ODD += ["Jan 5 2025 10:61", "29-Feb-1900", "29-Feb-2000", "00-Jan-2025", "2025-00-10", "10-jAn-2025", "1e5", "x" * 300]
ODD += ["5 Sept 2025", "5 sEpT 2025", "31 Feb 2025", "0 Jan 2025", "5 Janu 2025", "13/05/2025", "13/13/2025"]
ODD += ["5 Jan 0999", "5  Jan 2025", "5 Jan, 2025", "2025/1/32", "05.13.2025", "31.04.2025", "Sept 31, 2025"]
ODD += ["June 5 2025", "2025/13/05"]


def _strings(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        moment = dt.datetime(rng.randint(900, 2100), rng.randint(1, 12), rng.randint(1, 28), rng.randint(0, 23),
                             rng.randint(0, 59), rng.randint(0, 59))  # fmt: skip
        text = moment.strftime(rng.choice(SPELLINGS))
        roll = rng.random()
        if roll < 0.1:
            text = text.upper()
        elif roll < 0.2:
            text = text.replace("0", "", 1)
        elif roll < 0.25:
            text = " " + text + "  "
        elif roll < 0.3:
            text = text.replace("28", "31")
        elif roll < 0.33:
            text = text.replace("1", "١")
        elif roll < 0.36:
            text = text + rng.choice(["x", "Z", "+02:00", ".5"])
        elif roll < 0.45:
            text = rng.choice(ODD)
        elif roll < 0.47:
            text = text.replace("Sep ", "Sept ").replace("Jun", "June")
        elif roll < 0.5:
            text = text.replace(" ", "  ").replace("-", "\t-", 1)
        out.append(text)
    return list(dict.fromkeys(out))


FORMAT_SETS = [
    (),
    ("YYYY-MM-DD", "DD-MMM-YYYY", "MM/DD/YYYY"),
    ("%d.%m.%Y", "%B %d, %Y", "%Y-%m-%dT%H:%M:%S", "%b %d %Y %H:%M"),
    ("DD/MM/YYYY", "%j", "YYYY-MM-DD"),  # a directive read by strptime itself
    ("%d-%m-%y", "%Y%m%d", "%y-%m-%d", "%d %B %Y"),
    ("YYYY年MM月DD日", "%d %b %Y", "YYYY-MM-DD"),
    ("%y %Y-%m", "%m/%d", "%d %b", "%Y-%m-%d %H:%M:%S%z", "%A, %d %B %Y"),  # two years; no year; offsets; weekdays
]


def stdlib_date(text: str, formats: tuple[str, ...]) -> dt.datetime | None:
    """The rules of ``dates`` spelt with the standard library's functions: each format by ``datetime.strptime``,
    then ``datetime.fromisoformat``, then python-dateutil (dotted dates day first)."""
    from dateutil import parser

    text = text.strip()
    if not text or len(text) > dates.MAX_DATE_LENGTH:
        return None
    for f in formats:
        try:
            return dt.datetime.strptime(text, strftime_format(f)).replace(tzinfo=None)
        except ValueError:
            continue
    try:
        return dt.datetime.fromisoformat(text).replace(tzinfo=None)
    except ValueError:
        pass
    dayfirst = re.match(r"[0-9]{1,2}\.[0-9]{1,2}\.[0-9]", text) is not None
    try:
        return parser.parse(text, dayfirst=dayfirst, yearfirst=False, default=dt.datetime(2000, 1, 1)).replace(
            tzinfo=None
        )
    except (ValueError, OverflowError, TypeError, IndexError, KeyError):
        return None


@pytest.mark.parametrize("formats", FORMAT_SETS)
@pytest.mark.parametrize("compare_time", [False, True])
def test_the_date_reader_reads_as_the_standard_library(formats: tuple[str, ...], compare_time: bool) -> None:
    strings = _strings(len(formats) * 7 + compare_time, 6000)
    shown = date_reader(formats, compare_time)
    for text in strings:
        want = stdlib_date(text, formats)
        assert parse_date(text, formats) == want, (text, formats)
        assert shown(text) == (date_text(want, compare_time) if want else None), (text, formats)


def test_each_format_is_read_as_strptime_reads_it() -> None:
    """Format by format (no fallback to ISO or dateutil): a date where strptime gives one, none where it raises."""
    strings = _strings(99, 4000)
    for formats in FORMAT_SETS:
        for f in formats:
            for text in strings:
                try:
                    want: dt.datetime | None = dt.datetime.strptime(text, strftime_format(f)).replace(tzinfo=None)
                except ValueError:
                    want = None
                assert dates.read_by_format(text, f) == want, (text, f)


def test_dates_are_built_from_the_match_for_the_common_directives() -> None:
    """The common formats never call strptime (it costs ~4 µs a date); others do."""
    assert dates._format_plan("DD-MMM-YYYY")[1] is not None
    assert dates._format_plan("%B %d, %Y %H:%M:%S")[1] is not None
    assert dates._format_plan("%d %b")[1] is None  # no year: strptime's leap-day rules
    assert dates._format_plan("%A, %d %B %Y")[1] is None


def test_a_reader_reads_each_distinct_text_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    original = dates._parse

    def counted(text: str, plans: tuple[dates.Plan, ...]) -> dt.datetime | None:
        calls.append(text)
        return original(text, plans)

    monkeypatch.setattr(dates, "_parse", counted)
    shown = date_reader(("DD.MM.YYYY", "%Y-%m-%d %H:%M"), True)
    for text in ["05.01.2025", "2025-01-05 10:20", "05.01.2025", "tomorrow", "tomorrow", "05.01.2025"]:
        shown(text)
    assert calls == ["05.01.2025", "2025-01-05 10:20", "tomorrow"]
    assert shown("05.01.2025") == "2025-01-05 00:00:00" and shown("tomorrow") is None


def test_dateutil_month_names_are_dateutils() -> None:
    from dateutil.parser import parserinfo

    assert dates.DATEUTIL_MONTHS == parserinfo.MONTHS


def test_spellings_dateutil_reads_one_way_are_read_without_it() -> None:
    shaped = {"5 Jan 2025": (2025, 1, 5), "05-JAN-2025": (2025, 1, 5), "Sept 5, 2025": (2025, 9, 5),
              "jan 05 2025": (2025, 1, 5), "2025/1/5": (2025, 1, 5), "1/5/2025": (2025, 1, 5),
              "5.1.2025": (2025, 1, 5)}  # fmt: skip
    for text, (year, month, day) in shaped.items():
        assert dates._dateutil_shape(text) == stdlib_date(text, ()) == dt.datetime(year, month, day), text
    for text in ["13/05/2025", "31 Feb 2025", "5 Janu 2025", "05.13.2025", "5 Jan 0999", "Jan 5 2025 10:20"]:
        assert dates._dateutil_shape(text) is None, text  # left to dateutil


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("5 Jan 1000", dt.datetime(1000, 1, 5)),  # the smallest four-digit year
        ("31 Dec 9999", dt.datetime(9999, 12, 31)),
        ("5-Sept-2025", dt.datetime(2025, 9, 5)),
        ("September 30, 2025", dt.datetime(2025, 9, 30)),
        ("Dec 1 2025", dt.datetime(2025, 12, 1)),
        ("2025/12/31", dt.datetime(2025, 12, 31)),
        ("12/01/2025", dt.datetime(2025, 12, 1)),  # month first
        ("01.12.2025", dt.datetime(2025, 12, 1)),  # dotted: day first
        ("0999/01/05", None),  # a year below 1000: dateutil decides
        ("2025/13/01", None),  # no month 13
        ("2025/0/01", None),
        ("13/01/2025", None),
        ("30 Feb 2025", None),  # no such day
        ("5 Foo 2025", None),  # not a month name
        ("5 Jan 25", None),  # not one of the shapes
    ],
)
def test_the_fast_shapes_read_what_dateutil_reads_and_leave_the_rest_to_it(
    text: str, expected: dt.datetime | None
) -> None:
    from dateutil import parser

    from vision_eval.evaluators.fields.dates import _dateutil_shape

    assert _dateutil_shape(text) == expected
    if expected is not None:
        dayfirst = "." in text
        assert parser.parse(text, dayfirst=dayfirst, default=dt.datetime(2000, 1, 1)) == expected


def test_dates_longer_than_the_limit_are_not_read() -> None:
    from vision_eval.evaluators.fields.dates import MAX_DATE_LENGTH, parse_date

    at_limit = "2025-01-05".rjust(MAX_DATE_LENGTH)
    assert parse_date(at_limit) == dt.datetime(2025, 1, 5)  # surrounding spaces are stripped before the limit
    assert parse_date("2025-01-05" + " " * MAX_DATE_LENGTH) == dt.datetime(2025, 1, 5)
    assert parse_date("x" * (MAX_DATE_LENGTH + 1)) is None
    assert parse_date("   ") is None
    assert parse_date("05.01.2025") == dt.datetime(2025, 1, 5)  # dotted, day first
    assert parse_date("05.01.25") == dt.datetime(2025, 1, 5)  # dotted, two-digit year: dateutil, day first
    assert parse_date("01/05/25") == dt.datetime(2025, 1, 5)  # slashes: dateutil, month first
