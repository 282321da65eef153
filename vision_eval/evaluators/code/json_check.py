"""JSON answers: extraction, parsing, JSON Schema validation and value comparison.

:func:`json_row` is the definition, one row at a time: :func:`candidate_of` finds the JSON, :func:`check_one` scores
it, and the details are written compactly when both texts are strict JSON (:func:`strict`), else with
``json.dumps``' spacing.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Any, ClassVar

from vision_eval.evaluator import EvalContext
from vision_eval.evaluators.code.details import details_text, members
from vision_eval.evaluators.code.json_depth import MAX_DEPTH, nesting_depth
from vision_eval.evaluators.code.text import SPACE, strip
from vision_eval.example import Example
from vision_eval.reasons import plain_reason
from vision_eval.rowwise import EvaluatorSettings, RowResult, RowRule

FENCE = f"```(?:json|JSON)?[{SPACE}]*([\\s\\S]*?)```"
"""A fenced block (group 1: its text); :func:`candidate_of` finds the first as this pattern would."""
_TAGS = ("json", "JSON")
_TYPE_NAMES = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
_KINDS = {**_TYPE_NAMES, int: "number", float: "number"}
_NUMBERS = (int, float)  # a tuple: isinstance checks it faster than int | float
_TOO_LONG = f"a number of more than {sys.int_info.default_max_str_digits} digits (too long to read)"
# What a text that is not strict JSON holds (and a few strict ones): NaN or Infinity; a number beyond a float's range
# (an exponent of three digits, or an integer part of more than 200 digits before an exponent of two); a surrogate,
# escaped or as it is. One pattern each: a pattern starting with a literal or a character class is scanned for fast.
_BIG_EXPONENT = re.compile("[eE][-+]?[0-9]{3}")
_LONG_NUMBER = re.compile("[0-9]{200}")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


@dataclass(frozen=True)
class JsonOptions:
    """See ``JsonValidatorSettings`` for the meaning of each field."""

    schema: str | None = None
    """JSON text of the configured schema (``None``: inferred from expected_output)."""
    compare_values: bool = True
    number_tolerance: float = 0.0
    case_sensitive: bool = False
    require_valid_schema: bool = True


@dataclass  # not frozen: built for every row, and a frozen dataclass is slower to build
class JsonDetails:
    """The details of a response holding JSON."""

    valid_json: bool
    schema_valid: bool
    schema_errors: list[str]
    """The first 20 JSON Schema messages (``path: message``)."""
    missing_keys: list[str]
    """Expected paths the response lacks (``a.b``, ``items[0]``)."""
    extra_keys: list[str]
    """Paths of the response the expected value lacks."""
    type_errors: list[dict[str, Any]]
    """``{path, expected, actual}`` type names where the kinds differ."""
    value_mismatches: list[dict[str, Any]]
    """``{path, expected, actual}`` values where they differ."""
    fields_matched: int
    fields_expected: int


@dataclass(frozen=True)
class UnreadJson:
    """The details of a response holding no JSON (score 0)."""

    missing_keys: list[str]
    extra_keys: list[str]
    type_errors: list[dict[str, Any]]
    value_mismatches: list[dict[str, Any]]
    valid_json: bool
    reason: str


@dataclass(frozen=True)
class InvalidJson(UnreadJson):
    """The details of a response whose JSON does not parse (score 0)."""

    raw: str
    """The response's first 500 characters."""


NO_JSON = UnreadJson([], [], [], [], False, "the response holds no JSON")


def required_message(key: str) -> str:
    """JSON Schema's message for a required top-level ``key`` the response lacks."""
    return f"$: {key!r} is a required property"


def candidate_of(text: str | None) -> str | None:
    """The JSON candidate in a response: the first fenced block (stripped), else from the first ``{``/``[`` to the last
    ``}``/``]``, else the stripped text.

    A fenced block is the first match of ``FENCE``: the first three backticks, a ``json``/``JSON`` tag, then the text
    up to the next three backticks (there is none after the first: there is none after a later one either)."""
    if text is None:
        return None
    opening = text.find("```")
    if opening >= 0:
        body = opening + 3
        if text.startswith(_TAGS, body):
            body += 4
        closing = text.find("```", body)
        if closing >= 0:
            return strip(text[body:closing])
    first = min((at for at in (text.find("{"), text.find("[")) if at >= 0), default=-1)
    last = max(text.rfind("}"), text.rfind("]"))
    if 0 <= first < last:
        return text[first : last + 1]
    return strip(text)


def strict(text: str, value: Any) -> bool:
    """Whether a JSON text (``value``: what ``json.loads`` read from it) is strict JSON: every number a finite float
    or an integer, every string (and key) valid Unicode (no lone surrogate), and no NaN or Infinity."""
    suspect = (
        "NaN" in text
        or "Infinity" in text
        or _BIG_EXPONENT.search(text)
        or _LONG_NUMBER.search(text)
        or _SURROGATE_ESCAPE.search(text)
        or (not text.isascii() and _SURROGATE.search(text))
    )
    return not suspect or _clean(value)


def _clean(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, str):
        return not _SURROGATE.search(value)
    if isinstance(value, dict):
        return all(not _SURROGATE.search(k) and _clean(v) for k, v in value.items())
    if isinstance(value, list):
        return all(map(_clean, value))
    return True


def type_name(value: Any) -> str:
    name = _KINDS.get(type(value))
    if name is not None:  # what json.loads makes
        return name
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return _TYPE_NAMES.get(type(value), type(value).__name__)


def infer_schema(value: Any) -> dict[str, Any]:
    """A JSON Schema requiring the keys and types of ``value`` (arrays: the union of their items' keys)."""
    kind = type_name(value)
    if kind == "object":
        return {
            "type": "object",
            "required": list(value),
            "properties": {k: infer_schema(v) for k, v in value.items()},
        }
    if kind == "array":
        objects = [v for v in value if isinstance(v, dict)]
        if objects and len(objects) == len(value):
            merged: dict[str, Any] = {}
            for item in objects:
                for k, v in item.items():
                    merged.setdefault(k, v)
            items = infer_schema(merged)
            # Required: the keys every expected item has (so the expected value satisfies its own schema).
            items["required"] = [k for k in merged if all(k in item for item in objects)]
            return {"type": "array", "items": items}
        kinds = {type_name(v) for v in value}
        return {"type": "array", "items": {"type": kinds.pop()}} if len(kinds) == 1 else {"type": "array"}
    if kind == "null":
        return {}
    return {"type": kind}


@lru_cache(maxsize=256)
def _validator(schema_text: str) -> Any:
    from jsonschema import Draft202012Validator

    schema = json.loads(schema_text)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def schema_errors(value: Any, schema_text: str) -> list[str]:
    """Messages of every JSON Schema violation (path: message)."""
    errors = sorted(_validator(schema_text).iter_errors(value), key=lambda e: list(map(str, e.absolute_path)))
    return [f"{'.'.join(map(str, e.absolute_path)) or '$'}: {e.message}" for e in errors]


@lru_cache(maxsize=4096)
def _expected(text: str) -> tuple[Any, bool]:
    """An expected_output parsed, and whether it is :func:`strict` (rows often share their expected_output)."""
    value = json.loads(text)
    return value, strict(text, value)


@lru_cache(maxsize=4096)
def _inferred_schema(text: str) -> str:
    """The schema inferred from an expected_output (computed only when a JSON Schema validation needs it)."""
    return json.dumps(infer_schema(_expected(text)[0]), sort_keys=True)


def _leaves(value: Any) -> int:
    if isinstance(value, dict):
        return sum(_leaves(v) for v in value.values()) or 1
    if isinstance(value, list):
        return sum(_leaves(v) for v in value) or 1
    return 1


class _Compare:
    """Recursive comparison of an expected and an actual JSON value, collecting what differs."""

    def __init__(self, opts: JsonOptions, memo: dict[tuple[int, int], int] | None = None) -> None:
        self.opts = opts
        self.memo: dict[tuple[int, int], int] = {} if memo is None else memo
        """Matching leaves of (expected, actual) value pairs already compared (by identity, within one row): array
        items are paired by trial comparisons, which nested arrays would otherwise repeat exponentially."""
        self.missing: list[str] = []
        self.extra: list[str] = []
        self.type_errors: list[dict[str, Any]] = []
        self.mismatches: list[dict[str, Any]] = []
        self.hits = 0
        self.total = 0

    def equal(self, want: Any, got: Any) -> bool:
        if isinstance(want, bool) or isinstance(got, bool):
            return want is got
        if isinstance(want, _NUMBERS) and isinstance(got, _NUMBERS):
            tol = self.opts.number_tolerance
            return math.isclose(want, got, rel_tol=tol, abs_tol=0.0) if tol else float(want) == float(got)
        if isinstance(want, str) and isinstance(got, str) and not self.opts.case_sensitive:
            return " ".join(want.lower().split()) == " ".join(got.lower().split())
        return bool(want == got)

    def run(self, want: Any, got: Any, path: str) -> int:
        """Compare; returns the number of matching leaves under ``path``."""
        if isinstance(want, dict) and isinstance(got, dict):
            hits = 0
            for key, sub in want.items():
                child = f"{path}.{key}" if path else key
                if key not in got:
                    self.missing.append(child)
                    self.total += _leaves(sub)
                else:
                    hits += self.run(sub, got[key], child)
            self.extra += [f"{path}.{k}" if path else k for k in got if k not in want]
            return hits
        if isinstance(want, list) and isinstance(got, list):
            return self._list(want, got, path)
        want_kind = _KINDS.get(type(want)) or type_name(want)  # the lookup alone for what json.loads makes
        got_kind = _KINDS.get(type(got)) or type_name(got)
        if want_kind != got_kind and want is not None:
            self.type_errors.append({"path": path or "$", "expected": want_kind, "actual": got_kind})
            self.total += _leaves(want)
            return 0
        self.total += 1
        if not self.opts.compare_values or self.equal(want, got):
            self.hits += 1
            return 1
        self.mismatches.append({"path": path or "$", "expected": want, "actual": got})
        return 0

    def _list(self, want: list[Any], got: list[Any], path: str) -> int:
        # Items are matched by best overlap, not position: an invoice's line items may come in any order.
        unused = list(range(len(got)))
        hits = 0
        for i, item in enumerate(want):
            child = f"{path}[{i}]"
            if not unused:
                self.missing.append(child)
                self.total += _leaves(item)
                continue
            # A lone candidate needs no trial comparison (the comparison below is the same one).
            best = unused[0] if len(unused) == 1 else max(unused, key=lambda j: self._hits(item, got[j]))
            unused.remove(best)
            hits += self.run(item, got[best], child)
        self.extra += [f"{path}[{j}]" for j in unused]
        return hits

    def _hits(self, want: Any, got: Any) -> int:
        key = (id(want), id(got))
        if key not in self.memo:
            self.memo[key] = _Compare(self.opts, self.memo).run(want, got, "")
        return self.memo[key]


def _only_top_missing(want: dict[str, Any], got: dict[str, Any], cmp: _Compare) -> bool:
    """Every difference the comparison found that a schema checks is a top-level key absent from ``got``."""
    absent = [key for key in want if key not in got]
    return len(absent) == len(cmp.missing) and not any(k.endswith("]") for k in cmp.extra)


def check_one(raw: str | None, candidate: str | None, expected: str | None, opts: JsonOptions) -> dict[str, Any]:
    """The result of one row: ``status``, and ``error``, or ``score``, ``details`` (a details dataclass), ``passed``
    (only when false) and ``compact`` (both texts strict JSON: the details are written without spaces)."""
    want: Any = None
    want_strict = True
    if expected is not None and expected.strip():
        if nesting_depth(expected) > MAX_DEPTH:
            return {"status": "error", "error": f"expected_output: JSON nested deeper than {MAX_DEPTH} levels"}
        try:
            want, want_strict = _expected(expected)
        except json.JSONDecodeError as exc:
            return {"status": "error", "error": f"expected_output is not valid JSON: {exc}"}
        except ValueError:  # an integer of more digits than Python reads
            return {"status": "error", "error": f"expected_output holds {_TOO_LONG}"}
    elif opts.schema is None:
        return {"status": "error", "error": "no schema configured and no expected_output to infer one from"}
    if candidate is None or not candidate.strip():
        return {"status": "processed", "score": 0.0, "details": NO_JSON, "compact": False}
    if nesting_depth(candidate) > MAX_DEPTH:
        return {"status": "error", "error": f"output: JSON nested deeper than {MAX_DEPTH} levels"}
    try:
        got = json.loads(candidate)
    except ValueError as exc:
        if not isinstance(exc, json.JSONDecodeError):  # an integer of more digits than Python reads
            return {"status": "error", "error": f"output holds {_TOO_LONG}"}
        found = "{" in candidate or "[" in candidate
        reason = f"invalid JSON: {exc}" if found else "no JSON object or array found in the response"
        invalid = InvalidJson([], [], [], [], False, reason, (raw or "")[:500])
        return {"status": "processed", "score": 0.0, "details": invalid, "compact": False}
    cmp = _Compare(opts)
    if want is not None:
        cmp.run(want, got, "")
        score = cmp.hits / cmp.total if cmp.total else 1.0
    # An inferred schema only requires the expected keys and types, so when the comparison found every
    # expected key with the expected type (and no unchecked extra array items) the schema holds; the
    # JSON Schema validator (the slowest step) runs for configured schemas and when something is off.
    structural = cmp.missing or cmp.type_errors or any(k.endswith("]") for k in cmp.extra)
    if opts.schema is not None or want is None:
        violations = schema_errors(got, opts.schema or _inferred_schema(expected or ""))
    elif not structural:
        violations = []
    elif not cmp.type_errors and isinstance(want, dict) and isinstance(got, dict) and _only_top_missing(want, got, cmp):
        # The same messages JSON Schema gives: only the inferred top-level ``required`` fails, in its order.
        violations = [required_message(key) for key in want if key not in got]
    else:
        violations = schema_errors(got, opts.schema or _inferred_schema(expected or ""))
    if want is None:
        score = 1.0 if not violations else 0.0
    details = JsonDetails(
        True, not violations, violations[:20], cmp.missing, cmp.extra, cmp.type_errors, cmp.mismatches, cmp.hits,
        cmp.total,
    )  # fmt: skip
    out: dict[str, Any] = {
        "status": "processed",
        "score": score,
        "details": details,
        "compact": want_strict and strict(candidate, got),
    }
    if violations and opts.require_valid_schema:
        out["passed"] = False
    return out


def json_row(output: str | None, expected: str | None, opts: JsonOptions) -> RowResult:
    """The definition: the row's JSON candidate (:func:`candidate_of`) scored by :func:`check_one`; a row that raises
    (a configured schema failing on it...) is an error with a plain reason, the exception's type in details."""
    try:
        result = check_one(output, candidate_of(output), expected, opts)
    except Exception as exc:
        reason = plain_reason(exc)[:300]
        details = compact_text({"exception": type(exc).__name__})
        return RowResult(
            "error", details=details, error=f"the row could not be checked{': ' + reason if reason else ''}"
        )
    if "details" not in result:
        return RowResult("error", error=result["error"])
    details = result["details"]
    text = compact_text(details) if result["compact"] else details_text(details, compact=False)
    return RowResult("processed", result["score"], text, passed=result.get("passed"))


def compact_text(details: Any) -> str:
    """Details (a details dataclass, or a dict) as JSON without spaces, floats written as ``1e16``, ``2.5e-7`` and
    ``0.00001`` where ``repr`` writes ``1e+16``, ``2.5e-07`` and ``1e-05`` (the spelling these details have always
    had). Only mismatched values hold floats."""
    if isinstance(details, dict):
        return _compact(details)
    mismatches = details.value_mismatches if isinstance(details, JsonDetails) else ()
    if not any(_has_exponent(m["expected"]) or _has_exponent(m["actual"]) for m in mismatches):
        return details_text(details)
    return _compact(details)


def _has_exponent(value: Any) -> bool:
    if isinstance(value, float):
        return "e" in repr(value)
    if isinstance(value, dict):
        return any(map(_has_exponent, value.values()))
    if isinstance(value, list):
        return any(map(_has_exponent, value))
    return False


def _compact(value: Any) -> str:
    if isinstance(value, float):
        return _float_text(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{_compact(k)}:{_compact(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(map(_compact, value)) + "]"
    if isinstance(value, JsonDetails):
        return _compact(members(value))
    return json.dumps(value, ensure_ascii=False)


def _float_text(x: float) -> str:
    """A finite float as the compact details write it: ``repr``'s digits, without the exponent's sign and leading
    zeros, and an exponent of -5 written out (``0.00001``)."""
    text = repr(x)
    if "e" not in text:
        return text
    mantissa, exponent = text.split("e")
    if int(exponent) == -5:
        sign, digits = ("-", mantissa[1:]) if mantissa.startswith("-") else ("", mantissa)
        return f"{sign}0.0000{digits.replace('.', '')}"
    return f"{mantissa}e{int(exponent)}"


class JsonValidatorSettings(EvaluatorSettings):
    """Settings of ``json_validator``."""

    json_schema: dict[str, Any] | None = None
    """JSON Schema the response must satisfy; ``None`` infers one from ``expected_output``
    (its keys required, its types enforced)."""
    compare_values: bool = True
    """Compare leaf values with ``expected_output`` (otherwise only presence and types count)."""
    number_tolerance: float = 0.0
    """Relative tolerance for numbers (0: equal as numbers, so 960 == 960.0)."""
    case_sensitive: bool = False
    """Compare strings case-sensitively (whitespace is always collapsed)."""
    require_valid_schema: bool = True
    """A response that breaks the schema does not pass, whatever its score."""
    require_expected: bool = False
    """Error rows without ``expected_output`` instead of validating them against ``json_schema`` alone."""


class JsonValidator(RowRule[JsonValidatorSettings]):
    """JSON in the response: parses, satisfies the schema, and matches ``expected_output`` field by field."""

    type_name: ClassVar[str] = "json_validator"
    example: ClassVar[Example] = Example(
        {"type": "json_validator", "number_tolerance": 0.01},
        [
            {
                "id": "a",
                "output": '{"vendor": "Acme", "total": 42.0}',
                "expected_output": '{"vendor": "Acme", "total": 42}',
            },
            {"id": "b", "output": '{"vendor": "Acme"}', "expected_output": '{"vendor": "Acme", "total": 42}'},
        ],
    )
    required_columns = ("output",)
    default_threshold = 1.0

    def __init__(self, name: str, settings: JsonValidatorSettings, context: EvalContext | None = None) -> None:
        super().__init__(name, settings, context)
        s = settings
        if s.json_schema is not None:
            from jsonschema import Draft202012Validator
            from jsonschema.exceptions import SchemaError

            try:
                Draft202012Validator.check_schema(s.json_schema)
            except SchemaError as exc:
                raise ValueError(f"json_schema: invalid JSON Schema: {exc.message}") from None

    def columns_needed(self) -> tuple[str, ...]:
        s = self.settings
        return ("output", "expected_output") if s.json_schema is None or s.require_expected else ("output",)

    def row_function(self) -> Callable[..., RowResult]:
        s = self.settings
        opts = JsonOptions(
            schema=json.dumps(s.json_schema, sort_keys=True) if s.json_schema is not None else None,
            compare_values=s.compare_values,
            number_tolerance=s.number_tolerance,
            case_sensitive=s.case_sensitive,
            require_valid_schema=s.require_valid_schema,
        )
        return partial(json_row, opts=opts)
