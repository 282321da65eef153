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
from typing import Any

import polars as pl

from vision_eval.structured.dates import MAX_DATE_LENGTH, date_text, parse_date_from, strftime_format

_SUPPORTED = set("YymdbBHMS")
_PRINTABLE = r"^[\x20-\x7e]*$"
_ISO = r"^(?P<Y>[0-9]{4})-(?P<m>[0-9]{2})-(?P<d>[0-9]{2})(?:[T ](?P<H>[0-9]{2}):(?P<M>[0-9]{2})(?::(?P<S>[0-9]{2}))?)?$"


@lru_cache(maxsize=65536)
def shown_date(text: str, formats: tuple[str, ...], compare_time: bool, first: int = 0) -> str | None:
    """The compared form of one date string by the row-wise rules, ``formats[:first]`` known not to read it
    (cached: the same dates recur batch after batch)."""
    parsed = parse_date_from(text, formats, first)
    return date_text(parsed, compare_time) if parsed is not None else None


@lru_cache(maxsize=256)
def _plan(fmt_text: str) -> tuple[str, tuple[str, ...]] | None:
    """Python's strptime expression for a format and its directives, or ``None`` when this module cannot build
    its dates exactly (an unsupported directive, no year, or two directives for one part)."""
    import _strptime  # type: ignore[import-not-found]  # no stubs: a private module of the standard library

    code = strftime_format(fmt_text)
    directives = tuple(re.findall(r"%(.)", code.replace("%%", "")))
    parts = ["".join(sorted({"Y", "y"} & set(directives))), "".join(sorted({"m", "b", "B"} & set(directives)))]
    if not set(directives) <= _SUPPORTED or len(set(directives)) != len(directives) or "" in parts[:1]:
        return None
    if any(len(p) > 1 for p in parts) or not parts[1] or "d" not in directives:
        return None
    return _strptime._TimeRE_cache.pattern(code), directives


def _directive(name: str) -> str:
    """Python's strptime expression for one directive (``d``: ``(?P<d>3[0-1]|...| [1-9])``)."""
    import _strptime

    return str(_strptime._TimeRE_cache[name])


def _months() -> dict[str, int]:
    import _strptime

    locale = _strptime._TimeRE_cache.locale_time
    names = {name.lower(): i for i, name in enumerate(locale.a_month) if name}
    return names | {name.lower(): i for i, name in enumerate(locale.f_month) if name}


@lru_cache(maxsize=1)
def _month_lengths() -> tuple[pl.Series, pl.Series]:
    months = pl.Series(range(1, 13), dtype=pl.Int32)
    return months, pl.Series([31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31], dtype=pl.Int32)


def _days_in_month(year: pl.Expr, month: pl.Expr) -> pl.Expr:
    """The days of a month (null for a month that is not 1..12), from a table: a ``when`` chain costs more."""
    leap = ((year % 4 == 0) & (year % 100 != 0)) | (year % 400 == 0)
    months, lengths = _month_lengths()
    return month.replace_strict(months, lengths, default=None) + ((month == 2) & leap).cast(pl.Int32)


def _shown(year: pl.Expr, month: pl.Expr, day: pl.Expr, time: list[pl.Expr], compare_time: bool) -> pl.Expr:
    parts = [year.cast(pl.Utf8).str.zfill(4), month.cast(pl.Utf8).str.zfill(2), day.cast(pl.Utf8).str.zfill(2)]
    if not compare_time:
        return pl.format("{}-{}-{}", *parts)
    clock = [t.cast(pl.Utf8).str.zfill(2) for t in time]
    return pl.format("{}-{}-{} {}:{}:{}", *parts, *clock)


Parts = list[pl.Expr]
"""Year, month, day, hour, minute, second (Int32 expressions)."""
Rule = tuple[pl.Expr, list[pl.Expr], pl.Expr]
"""How rule ``k`` reads a string: its regex groups (column ``g{k}``), its parts read from the groups (columns
``p{k}_0..p{k}_5``: year, month, day, hour, minute, second, and any helper column), and whether it gives a date,
computed from those columns: each part is computed once (an eager query does not share sub-expressions)."""


def _part_columns(k: int) -> Parts:
    return [pl.col(f"p{k}_{j}") for j in range(6)]


def _by_format(fmt_text: str, k: int) -> Rule | None:
    """``strptime(text, fmt)`` over the column ``t`` as rule ``k``: its outcome is true where it gives a date, false
    where it raises ``ValueError``, null where the row-wise parser must decide. ``None``: an unsupported format."""
    plan = _plan(fmt_text)
    if plan is None:
        return None
    _, directives = plan
    groups = pl.col(f"g{k}")

    def number(name: str) -> pl.Expr:
        field = groups.struct.field(name)
        # Stripped only where the directive's expression admits a space (%d's " 5"): most hold digits only.
        return (field.str.strip_chars(" ") if " " in _directive(name) else field).cast(pl.Int32, strict=False)

    if "Y" in directives:
        year = number("Y")
    else:
        short = number("y")
        year = pl.when(short < 69).then(short + 2000).otherwise(short + 1900)
    if "m" in directives:
        month = number("m")
    else:
        name = groups.struct.field("b" if "b" in directives else "B").str.to_lowercase()
        month = name.replace_strict(_months(), default=None, return_dtype=pl.Int32)
    day = number("d")
    time = [number(d) if d in directives else pl.lit(0, pl.Int32) for d in "HMS"]
    # Whether the match reaches the end of the text (null: no match).
    full = (groups.struct.field("all_").str.len_bytes() == pl.col("t").str.len_bytes()).alias(f"f{k}")
    parts = [part.alias(f"p{k}_{j}") for j, part in enumerate([year, month, day, *time])] + [full]
    year, month, day, _, _, second = _part_columns(k)
    valid = day <= _days_in_month(year, month)
    exact = (year >= 1000) & (second < 60)
    # No date where the match stops short (or there is none) or the day is past the month's end; a date where it is
    # valid and exact; else (valid but inexact, or unknown validity) null: the row-wise parser decides. ``valid``
    # is written once: an eager query evaluates every occurrence.
    matched = pl.when(pl.col(f"f{k}")).then(valid & pl.when(exact).then(True)).otherwise(False)
    return _groups(fmt_text).alias(f"g{k}"), parts, matched


def _groups(fmt_text: str) -> pl.Expr:
    """The named groups of Python's strptime expression for a (supported) format, matched from the start of
    ``t``."""
    plan = _plan(fmt_text)
    assert plan is not None
    # ASCII mode: only printable-ASCII strings are decided here, on which Python's Unicode classes (\d, \s) and
    # case folding match what ASCII's do; they compile and run faster.
    return pl.col("t").str.extract_groups(f"(?i-u)^(?P<all_>{plan[0]})")


def _iso(k: int) -> Rule:
    """``datetime.fromisoformat`` for ``YYYY-MM-DD[(T| )HH:MM[:SS]]`` over the column ``t`` as rule ``k``: true
    where it gives a date, false for every other text (valid ISO dates before 1000 and invalid ones included: the
    later rules, or the row-wise parser, decide)."""
    groups = pl.col(f"g{k}")

    def number(name: str) -> pl.Expr:
        return groups.struct.field(name).cast(pl.Int32, strict=False)

    read = [number("Y"), number("m"), number("d"), number("H").fill_null(0), number("M").fill_null(0)]
    parts = [part.alias(f"p{k}_{j}") for j, part in enumerate([*read, number("S").fill_null(0)])]
    year, month, day, *time = _part_columns(k)
    ok = (
        (year >= 1000)
        & month.is_between(1, 12)
        & (day >= 1)
        & (day <= _days_in_month(year, month))
        & (time[0] < 24)
        & (time[1] < 60)
        & (time[2] < 60)
    )
    return pl.col("t").str.extract_groups(_ISO).alias(f"g{k}"), parts, ok.fill_null(False)


DATEUTIL_MONTHS = [
    ("Jan", "January"), ("Feb", "February"), ("Mar", "March"), ("Apr", "April"), ("May", "May"), ("Jun", "June"),
    ("Jul", "July"), ("Aug", "August"), ("Sep", "Sept", "September"), ("Oct", "October"), ("Nov", "November"),
    ("Dec", "December"),
]  # fmt: skip
"""python-dateutil's month names (``parserinfo.MONTHS``, checked by the tests): written out, so that a batch no
string of which dateutil must read does not import it."""


def _dateutil_months() -> dict[str, int]:
    return {name.lower(): i for i, names in enumerate(DATEUTIL_MONTHS, start=1) for name in names}


_MONTH_NAME = r"(?P<b>[A-Za-z]{3,9})"
DATEUTIL_SHAPES = [
    rf"^(?P<d>[0-9]{{1,2}}) {_MONTH_NAME} (?P<Y>[0-9]{{4}})$",  # 5 Jan 2025
    rf"^(?P<d>[0-9]{{1,2}})-{_MONTH_NAME}-(?P<Y>[0-9]{{4}})$",  # 5-Jan-2025
    rf"^{_MONTH_NAME} (?P<d>[0-9]{{1,2}}),? (?P<Y>[0-9]{{4}})$",  # Jan 5, 2025
    r"^(?P<Y>[0-9]{4})/(?P<m>[0-9]{1,2})/(?P<d>[0-9]{1,2})$",  # 2025/01/05
    r"^(?P<m>[0-9]{1,2})/(?P<d>[0-9]{1,2})/(?P<Y>[0-9]{4})$",  # 01/05/2025: month first
    r"^(?P<d>[0-9]{1,2})\.(?P<m>[0-9]{1,2})\.(?P<Y>[0-9]{4})$",  # 05.01.2025: dotted, day first
]
"""Spellings python-dateutil reads in one way only (four-digit year, month number at most 12 or one of its month
names, a valid day), as ``parse_date`` calls it: the vectorized pass reads them the same way; any other string,
an invalid date included, is still handed to dateutil itself."""


def _dateutil(pattern: str, k: int) -> Rule:
    """One of the :data:`DATEUTIL_SHAPES` read over ``t`` as rule ``k``: true where it reads the string as dateutil
    does, else false (the next shape, or dateutil itself, decides)."""
    groups = pl.col(f"g{k}")
    year = groups.struct.field("Y").cast(pl.Int32, strict=False)
    if "(?P<b>" in pattern:
        name = groups.struct.field("b").str.to_lowercase()
        month = name.replace_strict(_dateutil_months(), default=None, return_dtype=pl.Int32)
    else:
        month = groups.struct.field("m").cast(pl.Int32, strict=False)
    day = groups.struct.field("d").cast(pl.Int32, strict=False)
    zero = pl.lit(0, pl.Int32)
    parts = [part.alias(f"p{k}_{j}") for j, part in enumerate([year, month, day, zero, zero, zero])]
    year, month, day, *_ = _part_columns(k)
    ok = (year >= 1000) & month.is_between(1, 12) & (day >= 1) & (day <= _days_in_month(year, month))
    return pl.col("t").str.extract_groups(pattern).alias(f"g{k}"), parts, ok.fill_null(False)


@lru_cache(maxsize=64)
def _rules(formats: tuple[str, ...]) -> list[Rule | None]:
    """The rules in order (rule ``k`` is the ``k``-th, see :data:`Rule`): the formats, then (when every format is
    supported) ISO 8601 and dateutil's shapes; ``None`` marks an unsupported format, where the vectorized rules
    stop. Built once for both rounds."""
    rules: list[Rule | None] = []
    for k, fmt_text in enumerate(formats):
        rule = _by_format(fmt_text, k)
        if rule is None:
            return [*rules, None]
        rules.append(rule)
    rules.append(_iso(len(formats)))
    rules += [_dateutil(pattern, k) for k, pattern in enumerate(DATEUTIL_SHAPES, start=len(formats) + 1)]
    return rules


Stages = tuple[list[pl.Expr], list[pl.Expr], list[pl.Expr], list[pl.Expr], pl.Expr]
PASSED = -1
"""``first`` of a string every rule of a round raised on: the next round reads it."""


@lru_cache(maxsize=64)
def _stages(formats: tuple[str, ...], compare_time: bool, round_: int) -> Stages | None:
    """The expressions of one round of :func:`shown_date_column` (built once per field; ``None``: no such round).
    Round 0 holds the field's formats, round 1 ISO 8601 and dateutil's shapes (read only on what round 0 passed on).
    The stages: every rule's regex groups, then its parts, then its outcome ``m{k}``, then per string the first rule
    that decides it (``first``: the format the row-wise parser starts from, null where decided, :data:`PASSED` where
    every rule raised; ``c0..c5``: the chosen rule's year, month, day, hour, minute, second; only ``c0..c2`` without
    ``compare_time``), then the shown date ``d``. Each stage runs its rules in parallel."""
    rules = list(enumerate(_rules(formats)))
    chosen_rules = rules[: len(formats)] if round_ == 0 else rules[len(formats) :]
    if not chosen_rules or (round_ == 1 and any(rule is None for _, rule in rules)):
        return None
    t = pl.col("t")
    simple = pl.col("s").str.contains(_PRINTABLE) & (t.str.len_bytes() <= MAX_DATE_LENGTH)
    first: Any = pl.when(~simple).then(0).when(t == "").then(None)  # empty strings: no date
    shown_parts = 6 if compare_time else 3  # the time parts are carried on only where they are shown
    chosen: list[Any] = [pl.when(~simple | (t == "")).then(None) for _ in range(shown_parts)]
    groups: list[pl.Expr] = []
    parts: list[pl.Expr] = []
    outcomes: list[pl.Expr] = []
    turn = PASSED if round_ == 0 else len(formats)  # then: the next round; after the last, dateutil's turn
    for k, rule in chosen_rules:
        if rule is None:  # what reaches an unsupported format is read row by row
            turn = k
            break
        rule_groups, rule_parts, matched = rule
        groups.append(rule_groups)
        parts += rule_parts
        outcomes.append(matched.alias(f"m{k}"))
        m_k = pl.col(f"m{k}")
        first = first.when(m_k.fill_null(False)).then(None).when(m_k.is_null()).then(k)
        chosen = [c.when(m_k.fill_null(True)).then(pl.col(f"p{k}_{j}")) for j, c in enumerate(chosen)]
    decide = [first.otherwise(turn).cast(pl.Int32).alias("first"), *(c.alias(f"c{j}") for j, c in enumerate(chosen))]
    year, month, day, *time = [pl.col(f"c{j}") for j in range(shown_parts)]
    shown = pl.when(pl.col("first").is_null()).then(_shown(year, month, day, time, compare_time)).alias("d")
    return groups, parts, outcomes, decide, shown


def prepare_dates(formats: tuple[str, ...], compare_time: bool) -> None:
    """Build (and cache) the expressions of both rounds of :func:`shown_date_column` (Python's strptime expressions
    and the month tables included)."""
    _stages(formats, compare_time, 0)
    _stages(formats, compare_time, 1)


def _round(frame: pl.DataFrame, stages: Stages) -> pl.DataFrame:
    groups, parts, outcomes, decide, shown = stages
    # Eager on purpose: the same stages as one lazy query ran twice as slow (10k strings, Polars 2.1).
    return frame.with_columns(groups).with_columns(parts).with_columns(outcomes).select(decide).select(shown, "first")


def shown_date_column(
    strings: pl.Series, formats: tuple[str, ...], compare_time: bool, row_wise: Callable[..., str | None] = shown_date
) -> pl.Series:
    """``shown_date(s, formats, compare_time)`` for every string of a column (distinct strings expected), in two
    rounds (:func:`_stages`): every rule of a round reads every string still open, and the first that reads a string
    decides it, one that raises passes it on, an undecidable one hands it to ``row_wise`` (which skips the formats
    known to raise)."""
    strings = strings.cast(pl.Utf8)
    frame = pl.DataFrame([strings.alias("s"), strings.str.strip_chars(" ").alias("t")])
    decided: pl.DataFrame | None = None
    for round_ in (0, 1):
        stages = _stages(formats, compare_time, round_)
        if stages is None:
            continue
        if decided is None:
            decided = _round(frame, stages)
            continue
        rows = (decided["first"] == PASSED).arg_true()  # the strings still open
        if rows.len():
            later = _round(frame[rows], stages)
            decided = decided.with_columns(
                decided["d"].scatter(rows, later["d"]), decided["first"].scatter(rows, later["first"])
            )
    assert decided is not None  # round 0 or round 1 exists
    decided = decided.with_columns(pl.col("first").replace(PASSED, len(formats)))  # after every round: dateutil
    shown = decided["d"]
    handed = decided["first"].is_not_null().arg_true()
    if handed.len():
        texts, starts = strings.gather(handed).to_list(), decided["first"].gather(handed).to_list()
        values = [row_wise(text, formats, compare_time, start) for text, start in zip(texts, starts)]
        shown = shown.scatter(handed, pl.Series(values, dtype=pl.Utf8))
    return shown


def shown_dates(
    strings: list[str], formats: tuple[str, ...], compare_time: bool, row_wise: Callable[..., str | None] = shown_date
) -> list[str | None]:
    """:func:`shown_date_column` over a list of (distinct) strings."""
    column = shown_date_column(pl.Series("s", strings, dtype=pl.Utf8), formats, compare_time, row_wise)
    return column.to_list()
