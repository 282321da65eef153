"""``field_accuracy`` over one row: the evaluator's only implementation (:func:`field_row`).

Each side is read once (:func:`values.read_json`), each field's value is picked with a getter built once from its
path, compared by its :class:`matching.Rule`, and the row's verdict is a :class:`RowResult`: status, score, the
details JSON text (``hits``, ``misses`` and ``left_out`` labels ``"<path>: <reason>"``, after a ``reason`` where the
response is not JSON or every field was left out) and one :class:`FieldRow` per field.

A field's outcome is a function of the JSON texts of its two values: repeated pairs (a currency, a city, a vendor
name and its usual typos) are compared once, while a field's values repeat often enough to pay for it.

Text columns hold UTF-8: a lone surrogate, which JSON can spell (``"\\ud800"``), is shown as U+FFFD.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import partial
from json.encoder import encode_basestring  # the C quoting json.dumps uses
from typing import Any

from vision_eval.evaluators.fields.matching import NOT_AN_OBJECT, NOT_JSON, FieldSpec, Rule, field_outcome
from vision_eval.evaluators.fields.values import MISSING, TOO_DEEP, parse_path, read_json, to_json
from vision_eval.rowwise import FieldRow, RowResult

RAW_LIMIT = 2000
"""Characters of a response (or expected output) that is not JSON shown in the details."""
CACHE_SIZE = 2048
"""Pairs of values whose outcome a field keeps; when the cache fills with fewer than a quarter of its lookups
answered from it, the field stops caching (its values rarely repeat)."""
LONGEST_KEY = 256
"""Longer JSON texts are compared every time (a cache of them would hold megabytes)."""

Entry = tuple[FieldRow, str, bool | None, float | None]
"""A field's outcome on a row: its ``fields`` row, its quoted details label, hit and score."""
_SURROGATE = re.compile("[\ud800-\udfff]")


def _shown(text: str | None) -> str | None:
    """``text`` with lone surrogates as U+FFFD (what a UTF-8 column can hold)."""
    if text is None or text.isascii():
        return text
    return _SURROGATE.sub("\ufffd", text)


def getter(steps: tuple[str | int, ...]) -> Callable[[Any], Any]:
    """The value at a parsed path in a JSON document, or :data:`MISSING` (:func:`values.resolve`, built once)."""
    keys = tuple((str(step), step if isinstance(step, int) else None) for step in steps)
    if len(keys) == 1 and keys[0][1] is None:
        key = keys[0][0]

        def get_key(doc: Any) -> Any:
            return doc.get(key, MISSING) if isinstance(doc, dict) else MISSING

        return get_key

    def get(doc: Any) -> Any:
        for key, index in keys:
            if isinstance(doc, dict):
                doc = doc.get(key, MISSING)
                if doc is MISSING:
                    return MISSING
            elif index is not None and isinstance(doc, list):
                if index >= len(doc):
                    return MISSING
                doc = doc[index]
            else:
                return MISSING
        return doc

    return get


class _Field:
    """One configured field, prepared: its path getter, comparison, label prefix and cache of outcomes."""

    def __init__(self, spec: FieldSpec) -> None:
        self.spec = spec
        self.path, self.match, self.weight = spec.path, spec.match, spec.weight
        steps = parse_path(spec.path)
        self.get = getter(steps)
        self.key = steps[0] if len(steps) == 1 and isinstance(steps[0], str) else None
        """The key of a one-step path (read with ``dict.get``), else ``None`` (read with :attr:`get`)."""
        self.rule = Rule(spec)
        self.prefix = f"{spec.path}: "
        self.not_json_label = encode_basestring(self.prefix + NOT_JSON)
        self.cache: dict[tuple[str | None, str | None], Entry] = {}
        self.caching = True
        self.reused = 0

    def entry(self, got: Any, want: Any, surrogates: bool) -> Entry:
        """The outcome of comparing ``got`` with ``want`` (either may be MISSING)."""
        actual = encode_basestring(got) if type(got) is str else to_json(got)
        expected = encode_basestring(want) if type(want) is str else to_json(want)
        key = (actual, expected)
        if self.caching:
            known = self.cache.get(key)
            if known is not None:
                self.reused += 1
                return known
        score, hit, reason = field_outcome(self.spec, self.rule, got, want)
        if surrogates:
            actual, expected, reason = _shown(actual), _shown(expected), _shown(reason) or ""
        made = (
            FieldRow(self.path, self.match, expected, actual, score, hit, reason),
            encode_basestring(self.prefix + reason),
            hit,
            score,
        )
        if self.caching and len(actual or "") <= LONGEST_KEY and len(expected or "") <= LONGEST_KEY:
            if len(self.cache) >= CACHE_SIZE:
                self.caching = self.reused * 4 >= CACHE_SIZE
                self.cache.clear()
                self.reused = 0
            self.cache[key] = made
        return made

    def not_json(self, want: Any, surrogates: bool) -> Entry:
        """The outcome where the response is not JSON: a miss."""
        expected = to_json(want)
        shown = _shown(expected) if surrogates else expected
        return FieldRow(self.path, self.match, shown, None, 0.0, False, NOT_JSON), self.not_json_label, False, 0.0


class FieldPlan:
    """The settings of ``field_accuracy`` prepared for :func:`field_row`; pickled as the settings alone (a worker
    process prepares them again)."""

    def __init__(self, specs: Sequence[FieldSpec], aggregation: str) -> None:
        self.specs = tuple(specs)
        self.aggregation = aggregation
        self.fields = tuple(_Field(spec) for spec in self.specs)
        self.weights = tuple(spec.weight for spec in self.specs)
        self.all_or_nothing = aggregation == "all_or_nothing"

    def __reduce__(self) -> tuple[type[FieldPlan], tuple[tuple[FieldSpec, ...], str]]:
        return FieldPlan, (self.specs, self.aggregation)


def _raw(text: str | None) -> str:
    return "null" if text is None else encode_basestring(text[:RAW_LIMIT])


def field_row(plan: FieldPlan, output: str | None, expected: str | None) -> RowResult:
    """The verdict on one row: ``expected_output`` must hold a JSON object (else an error, the text shown as
    ``raw_expected``); a response that is not JSON misses every field (score 0); otherwise each field is compared
    and the row scored by the plan's aggregation (``skipped`` when every field was left out). JSON nested deeper
    than :data:`values.MAX_DEPTH` on either side is an error."""
    ok, want_doc, problem = read_json(expected)
    if problem == TOO_DEEP:
        return RowResult("error", None, f'{{"raw_expected":{_raw(expected)}}}', f"expected_output: {TOO_DEEP}")
    if not ok or not isinstance(want_doc, dict):
        return RowResult("error", None, f'{{"raw_expected":{_raw(expected)}}}', NOT_AN_OBJECT)
    ok, got_doc, problem = read_json(output)
    if problem == TOO_DEEP:
        return RowResult("error", None, None, f"output: {TOO_DEEP}")
    # Only a \uD800-\uDFFF escape spells a lone surrogate (a column's text holds none).
    surrogates = (output is not None and ("\\ud" in output or "\\uD" in output)) or (
        expected is not None and ("\\ud" in expected or "\\uD" in expected)
    )
    want_get = want_doc.get
    entries: list[Entry] = []
    if ok:
        got_get = got_doc.get if isinstance(got_doc, dict) else None
        for f in plan.fields:
            key = f.key
            if key is None:
                entries.append(f.entry(f.get(got_doc), f.get(want_doc), surrogates))
            else:
                got = got_get(key, MISSING) if got_get else MISSING
                entries.append(f.entry(got, want_get(key, MISSING), surrogates))
    else:
        for f in plan.fields:
            entries.append(f.not_json(want_get(f.key, MISSING) if f.key is not None else f.get(want_doc), surrogates))
    hits: list[str] = []
    misses: list[str] = []
    left_out: list[str] = []
    total = weighted = 0.0
    counted, all_hit = False, True
    for weight, (_, label, hit, score) in zip(plan.weights, entries):
        if hit is None:
            left_out.append(label)
            continue
        counted = True
        if hit:
            hits.append(label)
        else:
            misses.append(label)
            all_hit = False
        if score is not None:
            total += weight
            weighted += weight * score
    rows = tuple([e[0] for e in entries])
    lists = f'"hits":[{",".join(hits)}],"misses":[{",".join(misses)}],"left_out":[{",".join(left_out)}]}}'
    if not ok:
        return RowResult("processed", 0.0, f'{{"reason":"{NOT_JSON}","raw":{_raw(output)},{lists}', None, None, rows)
    # The score: the weighted average of the counted fields' scores, or 1 only when every counted field is a hit
    # (all_or_nothing, or counted weights summing to 0); none when every field was left out.
    if not counted:
        row_score = None
    elif plan.all_or_nothing or total <= 0:
        row_score = 1.0 if all_hit else 0.0
    else:
        row_score = weighted / total
    if row_score is None or row_score != row_score:  # NaN: infinite weights
        return RowResult("skipped", None, '{"reason":"every field was left out",' + lists, None, None, rows)
    return RowResult("processed", row_score, "{" + lists, None, None, rows)


def row_function(specs: Sequence[FieldSpec], aggregation: str) -> Callable[[str | None, str | None], RowResult]:
    """:func:`field_row` with these settings bound (picklable)."""
    return partial(field_row, FieldPlan(specs, aggregation))


def evaluate_row(specs: Sequence[FieldSpec], output: str | None, expected: str | None, aggregation: str) -> RowResult:
    """The verdict on one row under these settings (:func:`field_row`, preparing the settings for this row only)."""
    return field_row(FieldPlan(specs, aggregation), output, expected)
