"""Field comparison semantics: how ``field_accuracy`` compares a response's value with the expected one.

Values are JSON values (``dict``, ``list``, ``str``, ``int``/``float``, ``bool``, ``None``) or :data:`MISSING`.
Every comparison returns ``(similarity, hit, reason)``; a field's score is 1.0 on a hit and 0.0 otherwise,
``similarity`` (0..1) only guides the pairing of ``any_order`` array items. A :class:`Rule` holds one field's
comparison with its settings read once; :mod:`field_row` scores whole rows with it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from vision_eval.evaluators.fields.dates import check_format, date_reader, date_text, parse_date, strftime_format
from vision_eval.evaluators.fields.values import (
    MAX_DEPTH,
    MISSING,
    TOO_DEEP,
    as_float,
    as_number,
    clean_number,
    extract_json,
    fmt,
    kind,
    loads,
    normalize_text,
    parse_path,
    read_json,
    resolve,
    scorer,
    similarity,
    to_json,
    tolerance_compare,
)

__all__ = [  # the field rules, with the parsing rules of values and dates re-exported: the one place to import from
    "MAX_DEPTH", "MISSING", "NOT_AN_OBJECT", "NOT_JSON", "TOO_DEEP", "Algorithm", "FieldResult", "FieldSpec",
    "MatchType", "Outcome", "Rule", "as_float", "as_number", "check_format", "clean_number",
    "compare_field", "compare_scalar", "compare_values", "date_text", "extract_json", "fmt", "kind", "loads",
    "normalize_text", "parse_date", "parse_path", "read_json", "resolve", "rule", "scorer", "similarity",
    "strftime_format", "to_json", "tolerance_compare",
]  # fmt: skip

MatchType = Literal["exact", "numeric_tolerance", "date", "fuzzy"]
Algorithm = Literal["levenshtein", "token_sort", "token_set", "jaro_winkler"]


_MATCH_KEYS: dict[str, set[str]] = {
    "exact": set(),
    "numeric_tolerance": {"tolerance", "relative"},
    "date": {"formats", "compare_time"},
    "fuzzy": {"algorithm", "threshold", "normalize"},
}


class FieldSpec(BaseModel):
    """One field of ``field_accuracy``: where it is, how it is compared, how much it counts."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    path: str
    """Dot path with indexes: ``invoice.total``, ``line_items[0].amount`` (same as ``line_items.0.amount``)."""
    match: MatchType = "exact"
    """``exact`` | ``numeric_tolerance`` | ``date`` | ``fuzzy``."""
    required: bool = True
    """A required field missing from the response is a miss (score 0); an optional one is left out."""
    weight: float = Field(1.0, ge=0)
    """Weight in the ``weighted_average``."""
    array_match: Literal["ordered", "any_order"] = "ordered"
    """Arrays: compare by index (``ordered``) or pair items by optimal assignment (``any_order``)."""
    tolerance: float = Field(0.0, ge=0)
    """``numeric_tolerance``: allowed difference (absolute, or a fraction of the expected value with ``relative``)."""
    relative: bool = False
    """``numeric_tolerance``: tolerance is a fraction of |expected| (absolute when expected is 0)."""
    formats: list[str] | None = None
    """``date``: formats tried in order (``DD-MMM-YYYY``, ``YYYY-MM-DD``, ``MM/DD/YYYY``, ``DD/MM/YYYY``, or
    strftime with ``%``); then ISO 8601, then python-dateutil reading ambiguous dates month-first, except dotted
    ones (``05.01.2025`` is 5 January) — list a format to decide otherwise."""
    compare_time: bool = False
    """``date``: compare the time of day too (as written; offsets are not converted)."""
    algorithm: Algorithm = "levenshtein"
    """``fuzzy``: rapidfuzz similarity (levenshtein, token_sort, token_set, jaro_winkler)."""
    threshold: float = Field(0.85, ge=0, le=1)
    """``fuzzy``: similarity at or above which the field is a hit."""
    normalize: bool = True
    """``fuzzy``: lowercase and collapse whitespace before comparing."""

    @model_validator(mode="after")
    def _check(self) -> FieldSpec:
        parse_path(self.path)
        for date_format in self.formats or ():
            check_format(date_format)
        foreign = set()
        for match, keys in _MATCH_KEYS.items():
            if match != self.match:
                foreign |= keys & self.model_fields_set
        if foreign:
            raise ValueError(f"field {self.path!r}: {', '.join(sorted(foreign))} not valid for match {self.match}")
        return self


# ---------------------------------------------------------------- comparison


@dataclass(frozen=True)
class Outcome:
    """One comparison: similarity (0..1, for pairing), hit, reason."""

    similarity: float
    hit: bool
    reason: str


Compared = tuple[float, bool, str]
"""An :class:`Outcome` as a plain tuple (similarity, hit, reason): what :class:`Rule` returns."""
_COMPOSITE = ("array", "object")
_PLAIN = frozenset((str, int, float, bool))


def _deep_equal(a: Any, b: Any) -> bool:
    if kind(a) != kind(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_deep_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_deep_equal(x, y) for x, y in zip(a, b))
    return bool(a == b)


class Rule:
    """The comparison of one field, its settings read once: :meth:`values` compares a response's value with the
    expected one (neither :data:`MISSING`)."""

    def __init__(self, spec: FieldSpec) -> None:
        self.spec = spec
        self.match = spec.match
        self.any_order = spec.array_match == "any_order"
        self.tolerance, self.relative = spec.tolerance, spec.relative
        self.tolerance_text = fmt(spec.tolerance)
        self.threshold = spec.threshold
        self.floor = spec.threshold - 1e-12
        self.shown_date = date_reader(tuple(spec.formats or ()), spec.compare_time) if spec.match == "date" else None
        self.normalize = spec.normalize
        self.similar: Callable[[str, str], float] | None = None
        self.scale = 1.0
        if spec.match == "fuzzy":
            self.similar, self.scale = scorer(spec.algorithm)
        self._compare = {
            "exact": self._exact,
            "numeric_tolerance": self._numeric,
            "date": self._date,
            "fuzzy": self._fuzzy,
        }[spec.match]

    def values(self, got: Any, want: Any) -> Compared:
        """Compare a response value with the expected one (neither is MISSING)."""
        if type(got) in _PLAIN and type(want) in _PLAIN:  # two strings, numbers or booleans: the field's own rule
            return self._compare(got, want)
        gk, wk = kind(got), kind(want)
        if wk == "array" and gk == "array":
            return self._arrays(got, want)
        if wk == "object" and gk == "object":
            return self._objects(got, want)
        if wk in _COMPOSITE or gk in _COMPOSITE:
            if self.match == "exact" or gk == "null" or wk == "null":
                return 0.0, False, f"type mismatch: got {gk} {to_json(got)}, expected {wk} {to_json(want)}"
            return 0.0, False, f"type mismatch: got {gk}, expected {wk}"
        return self.scalar(got, want)

    def scalar(self, got: Any, want: Any) -> Compared:
        """Compare two non-missing, non-composite values (either may be null)."""
        if got is None or want is None:
            if got is None and want is None:
                return 1.0, True, "both null"
            return 0.0, False, f"got {to_json(got)}, expected {to_json(want)}"
        return self._compare(got, want)

    def _exact(self, got: Any, want: Any) -> Compared:
        if type(got) is not type(want) and kind(got) != kind(want):  # an int and a float are both numbers
            gk, wk = kind(got), kind(want)
            return 0.0, False, f"type mismatch: got {gk} {to_json(got)}, expected {wk} {to_json(want)}"
        if got == want:
            return 1.0, True, "equal"
        return 0.0, False, f"got {to_json(got)}, expected {to_json(want)}"

    def _numeric(self, got: Any, want: Any) -> Compared:
        g, w = as_number(got), as_number(want)
        if w is None:
            return 0.0, False, f"expected value is not a number: {to_json(want)}"
        if g is None:
            return 0.0, False, f"not a number: got {to_json(got)}"
        hit, diff, tol = tolerance_compare(g, w, self.tolerance, self.relative)
        sim = 1.0 if hit else 0.5 / (1.0 + as_float(diff) / max(abs(as_float(w)), 1e-9))
        shown = fmt(tol) if self.relative else self.tolerance_text  # an absolute tolerance prints the same each time
        return sim, hit, f"diff={fmt(diff)} {'<=' if hit else '>'} tolerance {shown}"

    def _date(self, got: Any, want: Any) -> Compared:
        if not isinstance(want, str):
            return 0.0, False, f"expected value is not a date string: {to_json(want)}"
        if not isinstance(got, str):
            return 0.0, False, f"not a date string: got {to_json(got)}"
        assert self.shown_date is not None
        wt = self.shown_date(want)
        if wt is None:
            return 0.0, False, f"could not parse expected date {to_json(want)}"
        gt = self.shown_date(got)
        if gt is None:
            return 0.0, False, f"could not parse date {to_json(got)}"
        if gt == wt:
            return 1.0, True, f"same date {wt}"
        return 0.0, False, f"got {gt}, expected {wt}"

    def _fuzzy(self, got: Any, want: Any) -> Compared:
        if not isinstance(want, str):
            return 0.0, False, f"expected value is not a string: {to_json(want)}"
        if not isinstance(got, str):
            return 0.0, False, f"not a string: got {to_json(got)}"
        if self.normalize:
            got, want = normalize_text(got), normalize_text(want)
        assert self.similar is not None
        sim = float(self.similar(got, want)) / self.scale
        hit = sim >= self.floor
        return sim, hit, f"similarity {round(sim, 3)} {'>=' if hit else '<'} threshold {self.threshold}"

    def _objects(self, got: dict[str, Any], want: dict[str, Any]) -> Compared:
        if self.match == "exact" and not self.any_order:
            equal = _deep_equal(got, want)
            return float(equal), equal, "equal" if equal else f"got {to_json(got)}, expected {to_json(want)}"
        keys = list(dict.fromkeys([*want, *got]))
        outcomes = {k: self.values(got[k], want[k]) if k in got and k in want else (0.0, False, "") for k in keys}
        bad = [k for k, o in outcomes.items() if not o[1]]
        sim = sum(o[0] for o in outcomes.values()) / len(keys) if keys else 1.0
        if not bad:
            return 1.0, True, "equal"
        parts = [f"{k}: {outcomes[k][2]}" if k in got and k in want else f"{k}: only on one side" for k in bad]
        return sim, False, "; ".join(parts)

    def _pairs(self, got: list[Any], want: list[Any]) -> list[tuple[int, int, Compared]]:
        if not self.any_order:
            return [(i, i, self.values(got[i], want[i])) for i in range(min(len(got), len(want)))]
        if not got or not want:
            return []
        import numpy as np
        from scipy.optimize import linear_sum_assignment

        outcomes = [[self.values(g, w) for w in want] for g in got]
        sim = np.array([[o[0] for o in row] for row in outcomes], dtype=float).reshape(len(got), len(want))
        rows, cols = linear_sum_assignment(sim, maximize=True)
        return [(int(i), int(j), outcomes[i][j]) for i, j in zip(rows, cols)]

    def _arrays(self, got: list[Any], want: list[Any]) -> Compared:
        pairs = self._pairs(got, want)
        hits = sum(o[1] for _, _, o in pairs)
        problems = [f"item {j}: {o[2]}" for _, j, o in pairs if not o[1]]
        paired_want = {j for _, j, _ in pairs}
        paired_got = {i for i, _, _ in pairs}
        missing = [j for j in range(len(want)) if j not in paired_want]
        extra = [i for i in range(len(got)) if i not in paired_got]
        if missing:
            problems.append(f"{len(missing)} expected item(s) unmatched: {', '.join(map(str, missing))}")
        if extra:
            problems.append(f"{len(extra)} extra item(s) in response")
        total = max(len(got), len(want))
        sim = 1.0 if total == 0 else sum(o[0] for _, _, o in pairs) / total
        order = " (any order)" if self.any_order else ""
        if not problems:
            return 1.0, True, f"all {len(want)} items match{order}"
        return sim, False, f"{hits}/{len(want)} items match{order}; " + "; ".join(problems)


_RULES: dict[int, tuple[FieldSpec, Rule]] = {}


def rule(spec: FieldSpec) -> Rule:
    """The :class:`Rule` of a field (kept for the last specs asked for)."""
    known = _RULES.get(id(spec))
    if known is not None and known[0] is spec:
        return known[1]
    if len(_RULES) >= 256:
        _RULES.clear()
    made = Rule(spec)
    _RULES[id(spec)] = (spec, made)  # the spec is kept alive with its rule: its id is not reused meanwhile
    return made


def compare_scalar(spec: FieldSpec, got: Any, want: Any) -> Outcome:
    """Compare two non-missing, non-composite values (either may be null)."""
    return Outcome(*rule(spec).scalar(got, want))


def compare_values(spec: FieldSpec, got: Any, want: Any) -> Outcome:
    """Compare a response value with the expected one under ``spec`` (neither is MISSING)."""
    return Outcome(*rule(spec).values(got, want))


@dataclass(frozen=True)
class FieldResult:
    """A field of one row: score (``None`` when left out), hit (``None`` when left out), reason."""

    score: float | None
    hit: bool | None
    reason: str


def field_outcome(spec: FieldSpec, comparison: Rule, got: Any, want: Any) -> tuple[float | None, bool | None, str]:
    """The field-level rules, as ``(score, hit, reason)``: no expected value → hit; missing required → miss;
    missing optional → left out; otherwise the comparison's hit."""
    if want is MISSING:
        return 1.0, True, "no expected value"
    if got is MISSING:
        if spec.required:
            return 0.0, False, "missing from the response"
        return None, None, "optional field missing from the response (left out)"
    _, hit, reason = comparison.values(got, want)
    return (1.0 if hit else 0.0), hit, reason


def compare_field(spec: FieldSpec, got: Any, want: Any) -> FieldResult:
    """The field-level rules (:func:`field_outcome`) as a :class:`FieldResult`."""
    return FieldResult(*field_outcome(spec, rule(spec), got, want))


NOT_JSON = "response is not JSON"
NOT_AN_OBJECT = "expected_output is not a JSON object"
