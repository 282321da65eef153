"""The vectorized date pass (``datepass``) against the row-wise date rules (``dates.parse_date``), on generated
strings: every format spelling, case, spacing, invalid days, leap days, two-digit years, years before 1000, digits of
other scripts, times, leap seconds and text no rule reads."""

from __future__ import annotations

import datetime as dt
import random

import pytest

from vision_eval.structured import datepass
from vision_eval.structured.dates import date_text, parse_date

SPELLINGS = ["%Y-%m-%d", "%d-%b-%Y", "%m/%d/%Y", "%d/%m/%Y", "%d.%m.%Y", "%B %d, %Y", "%Y-%m-%dT%H:%M:%S", "%d-%m-%y"]
SPELLINGS += ["%Y%m%d", "%b %d %Y %H:%M", "%Y-%m-%d %H:%M", "%d %B %Y", "%A, %d %B %Y", "%y-%m-%d"]
SPELLINGS += ["%d %b %Y", "%Y/%m/%d", "%b %d, %Y", "%b %d %Y", "%d-%B-%Y", "%Y/%d/%m"]  # python-dateutil's shapes
SPELLINGS += ["%Y年%m月%d日"]  # a format with letters beyond ASCII (the vectorized rules match in ASCII mode)
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
    ("DD/MM/YYYY", "%j", "YYYY-MM-DD"),  # an unsupported directive: what reaches it is read row by row
    ("%d-%m-%y", "%Y%m%d", "%y-%m-%d", "%d %B %Y"),
    ("YYYY年MM月DD日", "%d %b %Y", "YYYY-MM-DD"),
]


@pytest.mark.parametrize("formats", FORMAT_SETS)
@pytest.mark.parametrize("compare_time", [False, True])
def test_vectorized_dates_equal_the_row_wise_rules(formats: tuple[str, ...], compare_time: bool) -> None:
    strings = _strings(len(formats) * 7 + compare_time, 6000)
    row_wise: list[str] = []

    def counted(text: str, fmts: tuple[str, ...], with_time: bool, first: int) -> str | None:
        row_wise.append(text)
        return datepass.shown_date(text, fmts, with_time, first)

    shown = datepass.shown_dates(strings, formats, compare_time, counted)
    for text, got in zip(strings, shown, strict=True):
        parsed = parse_date(text, formats)
        assert got == (date_text(parsed, compare_time) if parsed else None), (text, formats)
    if formats and "%j" not in formats:
        assert len(row_wise) < 0.75 * len(strings)  # most strings were read by the vectorized rules


def test_empty_list() -> None:
    assert datepass.shown_dates([], ("YYYY-MM-DD",), False) == []


def test_dateutil_month_names_are_dateutils() -> None:
    from dateutil.parser import parserinfo

    assert datepass.DATEUTIL_MONTHS == parserinfo.MONTHS
