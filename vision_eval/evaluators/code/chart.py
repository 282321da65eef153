"""Chart data: the share of expected currency values, percentages and dates/quarters a response states.

A number is money only with a currency marker (``$``, ``€``, ``USD``, "dollars"), a scale (``K``, ``M``, "million")
or thousands separators (``1,250``), so list markers ("1."), years ("2025") and quarter digits ("Q4") are never money.
:func:`chart_row` is the definition, one row at a time.
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import ClassVar, Literal

from vision_eval.evaluators.code.details import details_text
from vision_eval.evaluators.code.text import SPACE, ascii_digit_text
from vision_eval.example import Example
from vision_eval.rowwise import EvaluatorSettings, RowResult, RowRule, failed

_B = r"(?:(?<=[0-9A-Za-z_])(?![0-9A-Za-z_])|(?<![0-9A-Za-z_])(?=[0-9A-Za-z_]))"
"""An ASCII word boundary (Polars' patterns say ``(?-u:\\b)``)."""
_S = f"[{SPACE}]"
_MONTH_NAMES = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
MONTHS = {m: f"{i:02d}" for i, m in enumerate(_MONTH_NAMES, start=1)}
_MONTH = "(?:" + "|".join(_MONTH_NAMES) + ")"
SCALE = {"thousand": 1e3, "k": 1e3, "million": 1e6, "m": 1e6, "mn": 1e6, "mm": 1e6, "billion": 1e9, "b": 1e9}
SCALE |= {"bn": 1e9, "trillion": 1e12, "t": 1e12}
PATTERNS = {  # the alternatives of one pattern, in order of priority: dates and percentages before money
    "iso date": r"{B}[0-9]{4}-[0-9]{2}-[0-9]{2}{B}",
    "month date": f"{{B}}(?:{'|'.join(_MONTH_NAMES)})"
    + r"[a-z]*\.?{S}+(?:[0-9]{1,2}(?:st|nd|rd|th)?,?{S}+)?[0-9]{4}{B}",
    "quarter": r"{B}q[1-4](?:{S}*(?:'|fy{S}?)?(?:[0-9]{4}|[0-9]{2}){B})?",
    "percent": r"[-+]?{B}[0-9]+(?:\.[0-9]+)?{S}?(?:%|percent{B}|per cent{B}|pct{B})",
    "money": r"(?:(?:[$€£¥]|{B}(?:usd|eur|gbp){B}){S}?)?"
    r"{B}(?:[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]+)?|[0-9]+(?:\.[0-9]+)?)(?:{S}?(?:thousand|million|billion|trillion|bn|mn|mm|k|m|b|t){B})?"
    r"(?:{S}*(?:dollars|usd|euros?|eur|pounds|gbp){B})?",
}
"""Letters match ASCII letters of either case (the patterns are ``(?ai)``: ``K`` (Kelvin) is no ``k``, ``ı`` no
``i``)."""
MONEY_PARTS = (
    r"^(?P<sym>[$€£¥]|usd|eur|gbp)?{S}?(?P<num>[0-9,]+(?:\.[0-9]+)?)"
    r"(?:{S}?(?P<suf>thousand|million|billion|trillion|bn|mn|mm|k|m|b|t))?(?:{S}*(?P<word>[a-z]+))?$"
)


def pattern(template: str, boundary: str = _B) -> str:
    """A pattern of this module with its word boundary (Python's by default) and whitespace filled in."""
    return template.replace("{B}", boundary).replace("{S}", _S)


ANY = "(?ai)" + pattern("|".join(f"(?:{p})" for p in PATTERNS.values()))
_MONEY_PARTS = re.compile("(?ai)" + pattern(MONEY_PARTS))
_START = r"(?=[-+$€£¥]|(?<![0-9A-Za-z_])[0-9jfmasondqueg])"
"""Where a match of :data:`ANY` can start (in lowercase text): a sign or currency symbol, or a word starting with a
digit or with the first letter of a month, ``q``, ``usd``, ``eur`` or ``gbp``. Checked first, it spares the
alternatives most positions."""
_ANY_LOWER = re.compile("(?a)" + _START + "(?:" + pattern("|".join(f"(?:{p})" for p in PATTERNS.values())) + ")")
""":data:`ANY` on text whose ASCII letters are lowercase (the same matches: ``(?ai)`` folds ASCII letters only)."""
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
_BARE_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?")
_ISO_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_YEAR_END = re.compile(r"([0-9]{2,4})$")
_PERCENT_END = re.compile(r"(?ai)(?:%|percent|per cent|pct)$")
_SIGNED_NUMBER = re.compile(r"[-+]?[0-9]+(?:\.[0-9]+)?")
_MONTH_START = re.compile("(?ai)" + _MONTH)
_DAY = re.compile(f"{_S}([0-9]{{1,2}})(?:st|nd|rd|th)?,?{_S}")
NO_VALUES = "expected_output holds no currency, percentage or date values"
Kind = Literal["money", "percent", "date"]


@dataclass(frozen=True)
class ChartOptions:
    """See ``ChartValidatorSettings`` for the meaning of each field."""

    currency_tolerance: float = 0.15
    percent_tolerance: float = 0.0
    zero_tolerance: float = 0.0


@dataclass(frozen=True)
class Value:
    """A value stated in chart text."""

    text: str
    kind: Kind
    value: float | None = None
    """The amount (money, percent)."""
    key: str | None = None
    """A date's key: ``2025-03-01``, ``2025-03`` or ``Q1``; null when it names no month this module knows."""
    year: str | None = None
    """A quarter's year, four digits (``Q1'25`` -> ``2025``)."""


@dataclass  # not frozen: built for every row, and a frozen dataclass is slower to build
class ChartValue:
    """One expected value in the details."""

    kind: Kind
    expected: str
    """The expected value as written."""
    value: float | None
    """Its amount (null for dates, and for an amount too large to hold)."""
    matched: bool
    actual: str | None
    """The response value it matched, else the response's closest value of its kind (null: none)."""


@dataclass
class ChartDetails:
    """The details of a chart row (compact JSON)."""

    values: list[ChartValue]
    """The expected values: the money first, then the others, each in the order written."""
    matched: int
    expected: int
    tolerances: dict[str, float]
    reasoning: str


@lru_cache(maxsize=4096)
def parse(text: str) -> Value | None:
    """The value a match of :data:`ANY` states, if any (a bare number states none)."""
    if _BARE_NUMBER.fullmatch(text):
        return None
    if _ISO_DATE.fullmatch(text):
        return Value(text, "date", key=text)
    if text[0] in "qQ":
        year = _YEAR_END.search(text)
        return Value(text, "date", key=f"Q{text[1]}", year=year and ("20" + year[1] if len(year[1]) == 2 else year[1]))
    if _PERCENT_END.search(text):
        return Value(text, "percent", float(_SIGNED_NUMBER.search(text)[0]))  # type: ignore[index]
    if _MONTH_START.match(text):
        day = _DAY.search(text)
        month = MONTHS.get(text.lower()[:3])
        key = month and f"{text[-4:]}-{month}" + (f"-{day[1]:0>2}" if day else "")
        return Value(text, "date", key=key)
    parts = _MONEY_PARTS.match(text)
    if parts is None or not (parts["sym"] or parts["suf"] or parts["word"] or "," in parts["num"]):
        return None
    scale = SCALE[parts["suf"].lower()] if parts["suf"] else 1.0
    return Value(text, "money", float(parts["num"].replace(",", "")) * scale)


def values(text: str) -> list[Value]:
    """The values of a text, in the order written (digits of any script read as ASCII digits): each match of
    :data:`ANY`, left to right, that states a value."""
    text = ascii_digit_text(text)
    lower = text.lower() if text.isascii() else text.translate(_ASCII_LOWER)
    matches = (text[match.start() : match.end()] for match in _ANY_LOWER.finditer(lower))
    return [value for found in matches if (value := parse(found)) is not None]


@lru_cache(maxsize=4096)
def _expected(text: str) -> list[Value]:
    """An expected text's values, the money first (rows often share their expected text)."""
    wanted = values(text)
    return [v for v in wanted if v.kind == "money"] + [v for v in wanted if v.kind != "money"]


def distance(want: Value, got: Value, opts: ChartOptions) -> tuple[bool, float]:
    """Whether a response value of the same kind meets an expected one, and how far apart they are: money by relative
    difference (an expected 0 by absolute difference), percentages by absolute difference (in points; relative
    difference is still their distance), dates by key and year (distance 0)."""
    if want.kind == "date":
        years_agree = want.year is None or got.year is None or want.year == got.year
        return want.key is not None and want.key == got.key and years_agree, 0.0
    a, b = want.value, got.value
    assert a is not None and b is not None
    diff = abs(b - a)
    relative = diff if a == 0 else diff / abs(a)
    if want.kind == "percent":
        ok = diff <= opts.percent_tolerance + 1e-9
    else:
        ok = relative <= (opts.zero_tolerance if a == 0 else opts.currency_tolerance) + 1e-9
    return ok, math.inf if math.isnan(relative) else relative


def assigned(candidates: list[tuple[int, int, float]], rounds: int = 8) -> dict[int, int]:
    """A one-to-one matching of expected values ``i`` to response values ``j`` from the ``(i, j, distance)``
    candidates (in order of ``i``, then ``j``), closest first: in each round every free expected value proposes its
    closest free response value (the first at equal distance) and every response value takes its closest proposal
    (the first at equal distance); at most ``rounds`` rounds."""
    matched: dict[int, int] = {}
    for _ in range(rounds):
        taken = set(matched.values())
        free = [(i, j, d) for i, j, d in candidates if i not in matched and j not in taken]
        if not free:
            break
        proposals: dict[int, tuple[int, float]] = {}
        for i, j, d in free:
            if i not in proposals or d < proposals[i][1]:
                proposals[i] = (j, d)
        accepted: dict[int, tuple[int, float]] = {}
        for i, (j, d) in proposals.items():
            if j not in accepted or d < accepted[j][1]:
                accepted[j] = (i, d)
        matched |= {i: j for j, (i, _) in accepted.items()}
    return matched


def chart_row(output: str | None, expected: str | None, opts: ChartOptions) -> RowResult:
    """The definition: the share of the expected values matched one-to-one by response values of the same kind."""
    found = values(output or "")
    wanted = _expected(expected or "")
    if not wanted:
        return failed(NO_VALUES)
    scored = [
        [(j, *distance(want, got, opts)) for j, got in enumerate(found) if got.kind == want.kind] for want in wanted
    ]
    matched = assigned([(i, j, d) for i, pairs in enumerate(scored) for j, ok, d in pairs if ok])
    shown = []
    for i, want in enumerate(wanted):
        closest = min(scored[i], key=lambda pair: pair[2], default=None)  # the first at the smallest distance
        actual = matched.get(i, closest[0] if closest else None)
        number = want.value if want.value is None or math.isfinite(want.value) else None
        shown.append(
            ChartValue(want.kind, want.text, number, i in matched, None if actual is None else found[actual].text)
        )
    tolerances = {"currency": opts.currency_tolerance, "percent": opts.percent_tolerance, "zero": opts.zero_tolerance}
    reasoning = f"{len(matched)} of {len(wanted)} expected values found in the response"
    details = ChartDetails(shown, len(matched), len(wanted), tolerances, reasoning)
    return RowResult("processed", len(matched) / len(wanted), details_text(details))


class ChartValidatorSettings(EvaluatorSettings):
    """Settings of ``chart_validator``."""

    currency_tolerance: float = 0.15
    """Relative tolerance for currency values (0.15: within 15% of the expected value)."""
    percent_tolerance: float = 0.0
    """Absolute tolerance for percentages, in percentage points (0: exact)."""
    zero_tolerance: float = 0.0
    """Absolute tolerance for an expected currency value of 0 (a relative one is meaningless there)."""


class ChartValidator(RowRule[ChartValidatorSettings]):
    """Share of the expected currency values, percentages and dates the response states."""

    type_name: ClassVar[str] = "chart_validator"
    example: ClassVar[Example] = Example(
        {"type": "chart_validator"},
        [
            {
                "id": "a",
                "output": "Revenue reached $2.4M in Q3 2024, up 12%.",
                "expected_output": "$2.4M, 12%, Q3 2024",
            },
            {"id": "b", "output": "Revenue reached $3.1M in Q3 2024.", "expected_output": "$2.4M, 12%, Q3 2024"},
        ],
    )
    required_columns = ("output", "expected_output")
    default_threshold = 0.9

    def row_function(self) -> Callable[..., RowResult]:
        s = self.settings
        return partial(chart_row, opts=ChartOptions(s.currency_tolerance, s.percent_tolerance, s.zero_tolerance))
