"""Field comparison semantics, row-wise: the reference the vectorized path (``fastpath``) must agree with.

Values are JSON values (``dict``, ``list``, ``str``, ``int``/``float``, ``bool``, ``None``) or :data:`MISSING`.
Every comparison returns ``(similarity, hit, reason)``; a field's score is 1.0 on a hit and 0.0 otherwise,
``similarity`` (0..1) only guides the pairing of ``any_order`` array items.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from vision_eval.structured.dates import check_format, date_text, parse_date, strftime_format
from vision_eval.structured.values import (
    CURRENCY,
    FENCE,
    INTEGER,
    ISO_PREFIX,
    ISO_SUFFIX,
    MAX_DEPTH,
    MISSING,
    NUMBER,
    PARENS,
    TOO_DEEP,
    as_float,
    as_number,
    clean_number,
    extract_json,
    fmt,
    kind,
    loads,
    normalize_text,
    numeric_check,
    parse_path,
    read_json,
    resolve,
    scorer,
    similarity,
    to_json,
    tolerance_compare,
)

__all__ = [  # the row-wise rules, with the parsing rules of values and dates re-exported: the one place to import from
    "CURRENCY", "FENCE", "INTEGER", "ISO_PREFIX", "ISO_SUFFIX", "MAX_DEPTH", "MISSING", "NOT_AN_OBJECT", "NOT_JSON",
    "NUMBER", "PARENS", "TOO_DEEP", "Algorithm", "FieldResult", "FieldSpec", "MatchType", "Outcome", "aggregate",
    "as_float", "as_number", "check_format", "clean_number", "compare_field", "compare_scalar", "compare_values",
    "date_text", "evaluate_row", "extract_json", "fmt", "kind", "loads", "normalize_text", "numeric_check",
    "parse_date", "parse_path", "read_json", "resolve", "scorer", "similarity", "strftime_format", "to_json",
    "tolerance_compare",
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


def _deep_equal(a: Any, b: Any) -> bool:
    if kind(a) != kind(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_deep_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_deep_equal(x, y) for x, y in zip(a, b))
    return bool(a == b)


def compare_scalar(spec: FieldSpec, got: Any, want: Any) -> Outcome:
    """Compare two non-missing, non-composite values (either may be null)."""
    gj, wj = to_json(got), to_json(want)
    if got is None or want is None:
        if got is None and want is None:
            return Outcome(1.0, True, "both null")
        return Outcome(0.0, False, f"got {gj}, expected {wj}")
    if spec.match == "exact":
        if kind(got) != kind(want):
            return Outcome(0.0, False, f"type mismatch: got {kind(got)} {gj}, expected {kind(want)} {wj}")
        equal = got == want
        return Outcome(float(equal), equal, "equal" if equal else f"got {gj}, expected {wj}")
    if spec.match == "numeric_tolerance":
        g, w = as_number(got), as_number(want)
        if w is None:
            return Outcome(0.0, False, f"expected value is not a number: {wj}")
        if g is None:
            return Outcome(0.0, False, f"not a number: got {gj}")
        hit, diff, tol = tolerance_compare(g, w, spec.tolerance, spec.relative)
        sim = 1.0 if hit else 0.5 / (1.0 + as_float(diff) / max(abs(as_float(w)), 1e-9))
        sign = "<=" if hit else ">"
        return Outcome(sim, hit, f"diff={fmt(diff)} {sign} tolerance {fmt(tol)}")
    if spec.match == "date":
        if not isinstance(want, str):
            return Outcome(0.0, False, f"expected value is not a date string: {wj}")
        if not isinstance(got, str):
            return Outcome(0.0, False, f"not a date string: got {gj}")
        formats = tuple(spec.formats or ())
        w_date, g_date = parse_date(want, formats), parse_date(got, formats)
        if w_date is None:
            return Outcome(0.0, False, f"could not parse expected date {wj}")
        if g_date is None:
            return Outcome(0.0, False, f"could not parse date {gj}")
        gt, wt = date_text(g_date, spec.compare_time), date_text(w_date, spec.compare_time)
        return Outcome(float(gt == wt), gt == wt, f"same date {wt}" if gt == wt else f"got {gt}, expected {wt}")
    if not isinstance(want, str):
        return Outcome(0.0, False, f"expected value is not a string: {wj}")
    if not isinstance(got, str):
        return Outcome(0.0, False, f"not a string: got {gj}")
    sim = similarity(got, want, spec.algorithm, spec.normalize)
    hit = sim >= spec.threshold - 1e-12
    sign = ">=" if hit else "<"
    return Outcome(sim, hit, f"similarity {round(sim, 3)} {sign} threshold {spec.threshold}")


def _pair_any_order(spec: FieldSpec, got: list[Any], want: list[Any]) -> list[tuple[int, int, Outcome]]:
    import numpy as np
    from scipy.optimize import linear_sum_assignment

    outcomes = [[compare_values(spec, g, w) for w in want] for g in got]
    sim = np.array([[o.similarity for o in row] for row in outcomes], dtype=float).reshape(len(got), len(want))
    rows, cols = linear_sum_assignment(sim, maximize=True)
    return [(int(i), int(j), outcomes[i][j]) for i, j in zip(rows, cols)]


def _compare_arrays(spec: FieldSpec, got: list[Any], want: list[Any]) -> Outcome:
    if spec.array_match == "any_order":
        pairs = _pair_any_order(spec, got, want) if got and want else []
    else:
        pairs = [(i, i, compare_values(spec, got[i], want[i])) for i in range(min(len(got), len(want)))]
    hits = sum(o.hit for _, _, o in pairs)
    problems = [f"item {j}: {o.reason}" for _, j, o in pairs if not o.hit]
    paired_want = {j for _, j, _ in pairs}
    paired_got = {i for i, _, _ in pairs}
    missing = [j for j in range(len(want)) if j not in paired_want]
    extra = [i for i in range(len(got)) if i not in paired_got]
    if missing:
        problems.append(f"{len(missing)} expected item(s) unmatched: {', '.join(map(str, missing))}")
    if extra:
        problems.append(f"{len(extra)} extra item(s) in response")
    total = max(len(got), len(want))
    hit = not problems
    sim = 1.0 if total == 0 else sum(o.similarity for _, _, o in pairs) / total
    order = " (any order)" if spec.array_match == "any_order" else ""
    if hit:
        return Outcome(1.0, True, f"all {len(want)} items match{order}")
    return Outcome(sim, False, f"{hits}/{len(want)} items match{order}; " + "; ".join(problems))


def compare_values(spec: FieldSpec, got: Any, want: Any) -> Outcome:
    """Compare a response value with the expected one under ``spec`` (neither is MISSING)."""
    gk, wk = kind(got), kind(want)
    if wk == "array" and gk == "array":
        return _compare_arrays(spec, got, want)
    if wk == "object" and gk == "object":
        if spec.match == "exact" and spec.array_match == "ordered":
            equal = _deep_equal(got, want)
            return Outcome(float(equal), equal, "equal" if equal else f"got {to_json(got)}, expected {to_json(want)}")
        keys = list(dict.fromkeys([*want, *got]))
        outcomes = {
            k: compare_values(spec, got[k], want[k]) if k in got and k in want else Outcome(0.0, False, "")
            for k in keys
        }
        bad = [k for k, o in outcomes.items() if not o.hit]
        sim = sum(o.similarity for o in outcomes.values()) / len(keys) if keys else 1.0
        if not bad:
            return Outcome(1.0, True, "equal")
        parts = [f"{k}: {outcomes[k].reason}" if k in got and k in want else f"{k}: only on one side" for k in bad]
        return Outcome(sim, False, "; ".join(parts))
    if wk in ("array", "object") or gk in ("array", "object"):
        if spec.match == "exact" or gk == "null" or wk == "null":
            return Outcome(0.0, False, f"type mismatch: got {gk} {to_json(got)}, expected {wk} {to_json(want)}")
        return Outcome(0.0, False, f"type mismatch: got {gk}, expected {wk}")
    return compare_scalar(spec, got, want)


@dataclass(frozen=True)
class FieldResult:
    """A field of one row: score (``None`` when left out), hit (``None`` when left out), reason."""

    score: float | None
    hit: bool | None
    reason: str


def compare_field(spec: FieldSpec, got: Any, want: Any) -> FieldResult:
    """The field-level rules: no expected value → hit; missing required → miss; missing optional → left out."""
    if want is MISSING:
        return FieldResult(1.0, True, "no expected value")
    if got is MISSING:
        if spec.required:
            return FieldResult(0.0, False, "missing from the response")
        return FieldResult(None, None, "optional field missing from the response (left out)")
    outcome = compare_values(spec, got, want)
    return FieldResult(1.0 if outcome.hit else 0.0, outcome.hit, outcome.reason)


def aggregate(specs: list[FieldSpec], results: list[FieldResult], aggregation: str) -> float | None:
    """Row score, or ``None`` when every field was left out."""
    counted = [(s, r) for s, r in zip(specs, results) if r.score is not None]
    if not counted:
        return None
    if aggregation == "all_or_nothing":
        return 1.0 if all(r.hit for _, r in counted) else 0.0
    total = sum(s.weight for s, _ in counted)
    if total <= 0:
        return 1.0 if all(r.hit for _, r in counted) else 0.0
    return sum(s.weight * (r.score or 0.0) for s, r in counted) / total


NOT_JSON = "response is not JSON"
NOT_AN_OBJECT = "expected_output is not a JSON object"


def evaluate_row(specs: list[FieldSpec], output: str | None, expected: str | None, aggregation: str) -> dict[str, Any]:
    """The whole row-wise reference: ``{status, score, details, fields: [(path, FieldResult, got, want)]}``."""
    ok_w, want_doc, problem = read_json(expected)
    if problem == TOO_DEEP:
        return {"status": "error", "error": f"expected_output: {TOO_DEEP}", "fields": []}
    if not ok_w or not isinstance(want_doc, dict):
        return {"status": "error", "error": NOT_AN_OBJECT, "fields": []}
    ok_g, got_doc, problem = read_json(output)
    if problem == TOO_DEEP:
        return {"status": "error", "error": f"output: {TOO_DEEP}", "fields": []}
    rows = []
    for spec in specs:
        steps = parse_path(spec.path)
        want = resolve(want_doc, steps)
        if not ok_g:
            rows.append((spec.path, FieldResult(0.0, False, NOT_JSON), MISSING, want))
            continue
        got = resolve(got_doc, steps)
        rows.append((spec.path, compare_field(spec, got, want), got, want))
    if not ok_g:
        return {"status": "processed", "score": 0.0, "reason": NOT_JSON, "fields": rows}
    score = aggregate(specs, [r for _, r, _, _ in rows], aggregation)
    if score is None or (isinstance(score, float) and math.isnan(score)):
        return {"status": "skipped", "reason": "every field was left out", "fields": rows}
    return {"status": "processed", "score": score, "fields": rows}
