"""JSON answers: extraction, parsing, JSON Schema validation and value comparison.

:func:`json_row` is the definition, one row at a time (:func:`candidate_of` finds the JSON, :func:`check_one` scores
it). :func:`json_frame` scores column-wise the rows :mod:`json_columns` can decide exactly (DuckDB reads the expected
fields of whole groups of rows at once) and the others one by one (:func:`json_rows`: candidates found by
:func:`extract_candidates`, msgspec decoding, equal rows once, schemas compiled once per distinct schema, expected texts
parsed once per distinct text).
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import sys
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import polars as pl

from vision_eval.reasons import plain_reason
from vision_eval.rowwise import RowResult
from vision_eval.validators.json_tree import MAX_DEPTH, nesting_depth
from vision_eval.validators.rows import results_frame
from vision_eval.validators.text import SPACE, strip

FENCE = re.compile(f"```(?:json|JSON)?[{SPACE}]*([\\s\\S]*?)```")
EMBEDDED = re.compile(r"([\{\[][\s\S]*[\}\]])")
_UNPARSED: Any = object()
"""Marks a text not decoded yet."""
_TYPE_NAMES = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
_TOO_LONG = f"a number of more than {sys.int_info.default_max_str_digits} digits (too long to read)"


@dataclass(frozen=True)
class JsonOptions:
    """See ``JsonValidatorSettings`` for the meaning of each field."""

    schema: str | None = None
    """JSON text of the configured schema (``None``: inferred from expected_output)."""
    compare_values: bool = True
    number_tolerance: float = 0.0
    case_sensitive: bool = False
    require_valid_schema: bool = True


@dataclass(frozen=True)
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
    ``}``/``]``, else the stripped text."""
    if text is None:
        return None
    if fenced := FENCE.search(text):
        return strip(fenced[1])
    if embedded := EMBEDDED.search(text):
        return embedded[1]
    return strip(text)


def extract_candidates(text: pl.Series) -> pl.Series:
    r""":func:`candidate_of` of each response.

    The same as the first match of ``FENCE`` (group 1), then of ``EMBEDDED``, without capture groups
    (which make Rust's regex engine several times slower): the first fence pairs with the next one (the lazy body
    stops there, and without one no later fence has one either), and the optional ``json`` tag and the whitespace
    after the fence go before the body is stripped anyway. Step by step, so that no step runs twice."""
    body = pl.col("body")
    fenced = (
        text.to_frame("t")
        .lazy()
        .select(pl.col("t").str.splitn("```", 3).alias("p"))
        .select(
            pl.when(pl.col("p").struct.field("field_2").is_not_null())
            .then(pl.col("p").struct.field("field_1"))
            .alias("body")
        )
        .select(
            pl.when(body.str.starts_with("json") | body.str.starts_with("JSON"))
            .then(body.str.slice(4))
            .otherwise(body)
            .alias("body")
        )
        .select(body.str.strip_chars())
        .collect()
        .to_series()
    )
    rows = fenced.is_null().arg_true()
    if not rows.len():
        return fenced
    loose = text.gather(rows)
    embedded = loose.str.replace(r"^[^\{\[]*", "").str.replace(r"[^\}\]]*$", "")
    return fenced.scatter(rows, embedded.zip_with((embedded != "").fill_null(False), loose.str.strip_chars()))


def type_name(value: Any) -> str:
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
def _expected_value(text: str) -> Any:
    return json.loads(text)


@lru_cache(maxsize=4096)
def _inferred_schema(text: str) -> str:
    """The schema inferred from an expected_output (computed only when a JSON Schema validation needs it)."""
    return json.dumps(infer_schema(_expected_value(text)), sort_keys=True)


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
        if isinstance(want, int | float) and isinstance(got, int | float):
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
        if type_name(want) != type_name(got) and want is not None:
            self.type_errors.append({"path": path or "$", "expected": type_name(want), "actual": type_name(got)})
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
            best = max(unused, key=lambda j: self._hits(item, got[j]))
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


def check_one(
    raw: str | None,
    candidate: str | None,
    expected: str | None,
    opts: JsonOptions,
    decoded: Any = _UNPARSED,
    expected_decoded: Any = _UNPARSED,
) -> dict[str, Any]:
    """The result of one row (``status``, ``score``, ``details``, ``error``); ``decoded`` and ``expected_decoded``:
    ``candidate`` and ``expected`` already parsed (by a batch decoder), else they are parsed here."""
    want: Any = None
    has_expected = expected is not None and bool(expected.strip())
    if expected is not None and has_expected:
        if nesting_depth(expected) > MAX_DEPTH:
            return {"status": "error", "error": f"expected_output: JSON nested deeper than {MAX_DEPTH} levels"}
        try:
            want = _expected_value(expected) if expected_decoded is _UNPARSED else expected_decoded
        except json.JSONDecodeError as exc:
            return {"status": "error", "error": f"expected_output is not valid JSON: {exc}"}
        except ValueError:  # an integer of more digits than Python reads
            return {"status": "error", "error": f"expected_output holds {_TOO_LONG}"}
    elif opts.schema is None:
        return {"status": "error", "error": "no schema configured and no expected_output to infer one from"}
    if candidate is None or not candidate.strip():
        return {"status": "processed", "score": 0.0, "details": NO_JSON}
    if nesting_depth(candidate) > MAX_DEPTH:
        return {"status": "error", "error": f"output: JSON nested deeper than {MAX_DEPTH} levels"}
    try:
        got = json.loads(candidate) if decoded is _UNPARSED else decoded
    except ValueError as exc:
        if not isinstance(exc, json.JSONDecodeError):  # an integer of more digits than Python reads
            return {"status": "error", "error": f"output holds {_TOO_LONG}"}
        found = "{" in candidate or "[" in candidate
        reason = f"invalid JSON: {exc}" if found else "no JSON object or array found in the response"
        invalid = InvalidJson([], [], [], [], False, reason, (raw or "")[:500])
        return {"status": "processed", "score": 0.0, "details": invalid}
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
    passed = None
    if violations and opts.require_valid_schema:
        passed = False
    details = JsonDetails(
        True, not violations, violations[:20], cmp.missing, cmp.extra, cmp.type_errors, cmp.mismatches, cmp.hits,
        cmp.total,
    )  # fmt: skip
    out: dict[str, Any] = {"status": "processed", "score": score, "details": details}
    if passed is not None:
        out["passed"] = passed
    return out


def _decode_all(candidates: list[str | None]) -> list[Any]:
    """Each candidate decoded by msgspec's C decoder; ``_UNPARSED`` where it refuses (``json.loads`` then decides:
    it also accepts NaN, Infinity and integers of any size)."""
    import msgspec

    decode = msgspec.json.Decoder().decode
    out: list[Any] = []
    for text in candidates:
        try:
            out.append(decode(text) if text else _UNPARSED)
        except (msgspec.DecodeError, UnicodeEncodeError, RecursionError):
            out.append(_UNPARSED)
    return out


RESULT_SCHEMA = {"status": pl.Utf8, "score": pl.Float64, "passed": pl.Boolean, "details": pl.Utf8, "error": pl.Utf8}


def details_json(details: Any, strict: bool) -> str:
    """A row's details as JSON text: compact, as msgspec writes it, when both texts are ``strict`` JSON (msgspec read
    them: finite numbers, strings, lists and objects); else with ``json.dumps``' spacing (and its NaN, Infinity)."""
    if strict:
        import msgspec

        return msgspec.json.encode(details).decode()
    return json.dumps(details, ensure_ascii=False, default=_members)


def _members(value: Any) -> Any:
    is_instance = dataclasses.is_dataclass(value) and not isinstance(value, type)
    return dataclasses.asdict(value) if is_instance else str(value)


def scored_row(
    raw: str | None, candidate: str | None, expected: str | None, opts: JsonOptions, got: Any, want: Any
) -> RowResult:
    """:func:`check_one` as a result row (``got``, ``want``: the texts as msgspec decoded them, or ``_UNPARSED``); a row
    that raises (a configured schema failing on it...) is an error with a plain reason, the exception's type in
    details."""
    try:
        result = check_one(raw, candidate, expected, opts, got, want)
    except Exception as exc:
        reason = plain_reason(exc)[:300]
        details = details_json({"exception": type(exc).__name__}, strict=True)
        return RowResult(
            "error", details=details, error=f"the row could not be checked{': ' + reason if reason else ''}"
        )
    if "details" not in result:
        return RowResult("error", error=result["error"])
    strict = got is not _UNPARSED and (want is not _UNPARSED or not expected or not expected.strip())
    details = details_json(result["details"], strict)
    return RowResult("processed", result["score"], details, passed=result.get("passed"))


def json_row(output: str | None, expected: str | None, opts: JsonOptions) -> RowResult:
    """The definition: the row's JSON candidate (:func:`candidate_of`) scored by :func:`check_one`."""
    candidate = candidate_of(output)
    got, want = _decode_all([candidate, expected])
    return scored_row(output, candidate, expected, opts, got, want)


def json_rows(prepared: pl.DataFrame, opts: JsonOptions) -> pl.DataFrame:
    """Score rows (``raw``, ``candidate``, ``expected_output``) one by one as :func:`json_row` does, equal rows once."""
    distinct = prepared.unique(maintain_order=True)
    decoded = _decode_all(distinct["candidate"].to_list())
    wanted = _decode_all(distinct["expected_output"].to_list())
    results = [
        scored_row(raw, candidate, expected, opts, got, want)
        for (raw, candidate, expected), got, want in zip(distinct.iter_rows(), decoded, wanted)
    ]
    scored = results_frame(results, passed=True).select(list(RESULT_SCHEMA))
    if distinct.height == prepared.height:
        return scored
    keys = ["raw", "candidate", "expected_output"]
    return prepared.join(
        pl.concat([distinct, scored], how="horizontal"), on=keys, how="left", nulls_equal=True, maintain_order="left"
    ).select(list(RESULT_SCHEMA))
