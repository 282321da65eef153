"""The rules of :mod:`dates` over a whole column of date strings, for the common forms, with Python's own regexes.

``datetime.strptime`` compiles a format into a regular expression (``_strptime._TimeRE_cache``), matches it from
the start of the text, requires it to reach the end, then builds the date (a day beyond the month's last is a
``ValueError``: the next format is tried). This module hands those very expressions to Polars (Rust's regex engine
picks the same match as Python's for them: leftmost-first alternation, no look-around) and builds the date with the
same rules, for printable-ASCII text and formats made of ``%Y %y %m %d %b %B %H %M %S`` and literals. ISO dates
(``2025-01-05``, ``2025-01-05T10:20[:30]``) are read as ``datetime.fromisoformat`` reads them. Every string these
rules cannot decide exactly (other formats or characters, years before 1000, invalid ISO dates, leap seconds,
anything left for python-dateutil) is read by :func:`dates.parse_date` itself, so the column equals the row-wise
rules by construction; ``tests/test_field_dates.py`` checks it on generated strings.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

import polars as pl

from vision_eval.structured.dates import MAX_DATE_LENGTH, date_text, parse_date, strftime_format

_SUPPORTED = set("YymdbBHMS")
_PRINTABLE = r"^[\x20-\x7e]*$"
_ISO = r"^(?P<Y>[0-9]{4})-(?P<m>[0-9]{2})-(?P<d>[0-9]{2})(?:[T ](?P<H>[0-9]{2}):(?P<M>[0-9]{2})(?::(?P<S>[0-9]{2}))?)?$"


@lru_cache(maxsize=65536)
def shown_date(text: str, formats: tuple[str, ...], compare_time: bool) -> str | None:
    """The compared form of one date string by the row-wise rules (cached: the same dates recur batch after
    batch)."""
    parsed = parse_date(text, formats)
    return date_text(parsed, compare_time) if parsed is not None else None


@lru_cache(maxsize=256)
def _plan(fmt_text: str) -> tuple[str, tuple[str, ...]] | None:
    """Python's strptime expression for a format and its directives, or ``None`` when this module cannot build
    its dates exactly (an unsupported directive, no year, or two directives for one part)."""
    import _strptime

    code = strftime_format(fmt_text)
    directives = tuple(re.findall(r"%(.)", code.replace("%%", "")))
    parts = ["".join(sorted({"Y", "y"} & set(directives))), "".join(sorted({"m", "b", "B"} & set(directives)))]
    if not set(directives) <= _SUPPORTED or len(set(directives)) != len(directives) or "" in parts[:1]:
        return None
    if any(len(p) > 1 for p in parts) or not parts[1] or "d" not in directives:
        return None
    return _strptime._TimeRE_cache.pattern(code), directives


def _months() -> dict[str, int]:
    import _strptime

    locale = _strptime._TimeRE_cache.locale_time
    names = {name.lower(): i for i, name in enumerate(locale.a_month) if name}
    return names | {name.lower(): i for i, name in enumerate(locale.f_month) if name}


def _days_in_month(year: pl.Expr, month: pl.Expr) -> pl.Expr:
    leap = ((year % 4 == 0) & (year % 100 != 0)) | (year % 400 == 0)
    return (
        pl.when(month == 2)
        .then(pl.when(leap).then(29).otherwise(28))
        .when(month.is_in([4, 6, 9, 11]))
        .then(30)
        .otherwise(31)
    )


def _shown(year: pl.Expr, month: pl.Expr, day: pl.Expr, time: list[pl.Expr], compare_time: bool) -> pl.Expr:
    parts = [year.cast(pl.Utf8).str.zfill(4), month.cast(pl.Utf8).str.zfill(2), day.cast(pl.Utf8).str.zfill(2)]
    if not compare_time:
        return pl.format("{}-{}-{}", *parts)
    clock = [t.cast(pl.Utf8).str.zfill(2) for t in time]
    return pl.format("{}-{}-{} {}:{}:{}", *parts, *clock)


def _by_format(texts: pl.Series, fmt_text: str, compare_time: bool) -> tuple[pl.Series, pl.Series] | None:
    """``(matched, shown)`` of ``strptime(text, fmt)`` per text: ``matched`` true where it gives a date (``shown``),
    false where it raises ``ValueError``, null where the row-wise parser must decide. ``None``: unsupported format."""
    plan = _plan(fmt_text)
    if plan is None:
        return None
    pattern, directives = plan
    groups = texts.str.extract_groups(f"(?i)^(?P<all_>{pattern})").struct.unnest()
    number = lambda name: pl.col(name).str.strip_chars(" ").cast(pl.Int32, strict=False)  # noqa: E731
    if "Y" in directives:
        year = number("Y")
    else:
        short = number("y")
        year = pl.when(short < 69).then(short + 2000).otherwise(short + 1900)
    if "m" in directives:
        month = number("m")
    else:
        name = "b" if "b" in directives else "B"
        month = pl.col(name).str.to_lowercase().replace_strict(_months(), default=None, return_dtype=pl.Int32)
    day = number("d")
    time = [number(d) if d in directives else pl.lit(0, pl.Int32) for d in "HMS"]
    full = pl.col("all_").str.len_bytes() == pl.lit(texts).str.len_bytes()
    valid = day <= _days_in_month(year, month)
    exact = (year >= 1000) & (time[2] < 60)
    out = groups.select(
        pl.when(full & valid & exact).then(True).when(~full | ~valid | pl.col("all_").is_null()).then(False)
        .alias("matched"),
        _shown(year, month, day, time, compare_time).alias("shown"),
    )  # fmt: skip
    return out["matched"], out["shown"]


def _iso(texts: pl.Series, compare_time: bool) -> tuple[pl.Series, pl.Series]:
    """``datetime.fromisoformat`` for ``YYYY-MM-DD[(T| )HH:MM[:SS]]``: true (``shown``) where it gives a date, null
    for every other text (valid ISO dates before 1000 and invalid ones included: the row-wise parser decides)."""
    groups = texts.str.extract_groups(_ISO).struct.unnest()
    number = lambda name: pl.col(name).cast(pl.Int32, strict=False)  # noqa: E731
    year, month, day = number("Y"), number("m"), number("d")
    time = [number("H").fill_null(0), number("M").fill_null(0), number("S").fill_null(0)]
    ok = (
        (year >= 1000)
        & month.is_between(1, 12)
        & (day >= 1)
        & (day <= _days_in_month(year, month))
        & (time[0] < 24)
        & (time[1] < 60)
        & (time[2] < 60)
    )
    out = groups.select(
        pl.when(ok).then(True).alias("matched"), _shown(year, month, day, time, compare_time).alias("shown")
    )
    return out["matched"], out["shown"]


def shown_dates(
    strings: list[str], formats: tuple[str, ...], compare_time: bool, row_wise: Callable[..., str | None] = shown_date
) -> list[str | None]:
    """``shown_date(s, formats, compare_time)`` for every string (distinct strings expected)."""
    if not strings:
        return []
    raw = pl.Series(strings, dtype=pl.Utf8)
    texts = raw.str.strip_chars(" ")
    simple = raw.str.contains(_PRINTABLE) & (texts.str.len_bytes() <= MAX_DATE_LENGTH)
    shown = pl.Series([None] * len(strings), dtype=pl.Utf8)
    decided = (texts.str.len_bytes() == 0) & simple  # an empty string is no date
    open_ = simple & ~decided
    for fmt_text in formats:
        result = _by_format(texts, fmt_text, compare_time)
        if result is None:
            break
        matched, text = result
        hit = open_ & matched.fill_null(False)
        shown = pl.select(pl.when(hit).then(text).otherwise(shown)).to_series()
        decided = decided | hit
        open_ = open_ & matched.is_not_null() & ~matched.fill_null(True)  # a ValueError: the next format
    else:
        matched, text = _iso(texts, compare_time)
        hit = open_ & matched.fill_null(False)
        shown = pl.select(pl.when(hit).then(text).otherwise(shown)).to_series()
        decided = decided | hit
    out = shown.to_list()
    for i in (~decided).arg_true().to_list():
        out[i] = row_wise(strings[i], formats, compare_time)
    return out
