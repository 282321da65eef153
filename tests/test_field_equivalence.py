"""field_accuracy's fast path never disagrees with the row-wise definition (``matching.evaluate_row``), on generated
rows made to hit the edges: integers beyond 2**53 (as numbers and in strings), differences at the tolerance bound,
numbers of any length and in other scripts, invalid and deeply nested JSON, fences with ``` in a string, many date
spellings."""

from __future__ import annotations

import json
import math
import random
from typing import Any

import pytest

import vision_eval
from vision_eval.structured import matching as m

BIG = 2**53
NUMBERS: list[Any] = [0, 1, -1, 7, 0.1, 100.01, 100, 99.99, 1e-7, 1e16, 2.5, BIG - 1, BIG, BIG + 1, BIG + 2, -BIG - 1]
NUMBERS += [10**20, 10**20 + 1, 12345678901234567890123, 0.30000000000000004, 1e308, 123456789.123456789]
STRINGS = ["9007199254740993", "$9,007,199,254,740,993", "1,500.00", "(20)", "١٢٣", "١٢٣.٥", "12 000", "USD 7", "x", ""]
STRINGS += ["1" * 30, "٣" * 20, "0.1", "1e5", "-0", "€ 3,5"]
DATES = ["2025-01-05", "05.01.2025", "5.1.2025", "01/05/2025", "05-JAN-2025", "5-jan-2025", "January 5, 2025"]
DATES += ["2025-01-05T10:20:30", "2025-01-05 10:20", "2025-02-30", "31.04.2025", "0999-01-01", "٠٥.٠١.٢٠٢٥", "Jan 5"]
DATES += ["2025/01/05", "20250105", "5 Jan 2025", "tomorrow", "", "  2025-01-05  ", "13/01/2025", "05.13.2025"]
NAMES = ["ACME", "acme corp", "Acme Corp.", "see ``` here", "ACME\n", "é"]


def _value(rng: random.Random) -> Any:
    pick = rng.random()
    if pick < 0.35:
        return rng.choice(NUMBERS)
    if pick < 0.55:
        return rng.choice(STRINGS)
    if pick < 0.75:
        return rng.choice(DATES)
    if pick < 0.85:
        return rng.choice(NAMES)
    return rng.choice([None, True, [1, 2], {"k": 1}])


def _near(rng: random.Random, want: Any, tolerance: float, relative: bool) -> Any:
    """A number at (or one float step around) the inclusive bound ``tol + 1e-9 * max(1, tol)`` of ``want``, where
    float64 rounding and exact arithmetic can disagree."""
    if not isinstance(want, int | float) or isinstance(want, bool) or abs(want) > 1e300:
        return want
    want = rng.choice([want, 0, 0.0, 3])
    tol = tolerance * abs(want) if relative and want != 0 else tolerance
    bound = tol + 1e-9 * max(1.0, tol)
    bound = rng.choice([bound, bound, math.nextafter(bound, 0), math.nextafter(bound, 1), bound - 1e-10])
    return want + rng.choice([1, -1]) * bound


def _document(rng: random.Random, values: dict[str, Any]) -> str:
    text = json.dumps(values, ensure_ascii=rng.random() < 0.3)
    shape = rng.random()
    if shape < 0.08:
        return f"```json\n{text}\n```"
    if shape < 0.14:
        return f"Here it is: {text} Done."
    if shape < 0.18:
        return text[:-1] + ', "meta": ' + text + ",}"  # invalid, with a valid inner object
    if shape < 0.21:
        return '{"deep": ' + "[" * 150 + "]" * 150 + ", " + text[1:]
    if shape < 0.23:
        return text[: len(text) // 2]
    if shape < 0.26:
        return f"[{text}]"
    if shape < 0.28:
        return f'```\n{{"note": "a ``` fence", {text[1:]}\n```'
    if shape < 0.36:  # other envelopes: the candidate text is found outside the tight-object path
        return rng.choice(ENVELOPES)(text)
    return text


ENVELOPES = [
    lambda t: f"  \n{t}\t ",  # a plain object with spaces around
    lambda t: t[:-1] + ', "notes": null,}',  # a trailing comma outside strings: not JSON
    lambda t: t[:-1] + ', "notes": "a,}"}',  # ... and one inside a string: JSON
    lambda t: "I could not read the invoice.",
    lambda t: "{ cut short",
    lambda t: f"```json\n[{t}]\n```",  # a fenced block that is not an object
    lambda t: f"```\nnot json\n```\n```json\n{t}\n```",  # the second fenced block is the JSON
    lambda t: f"Result {{ {t} }} end",  # prose: the first { to the last } is not JSON
    lambda t: f"12 {t}",  # starts like a JSON document
    lambda t: f"```json\n{t}",  # a fence that never closes
    lambda t: f"{t}\n```",  # a stray fence after the object
]


def _rows(seed: int, count: int, tolerance: float, relative: bool) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    rows = []
    for i in range(count):
        want = {k: _value(rng) for k in ("a", "n", "d")}
        got = dict(want)
        for key in ("a", "n", "d"):
            roll = rng.random()
            if roll < 0.4:
                got[key] = _value(rng)
            elif roll < 0.55 and key == "n":
                got[key] = _near(rng, want[key], tolerance, relative)
            elif roll < 0.6:
                got.pop(key)
        if isinstance(got.get("n"), int) and rng.random() < 0.3:
            got["n"] = str(got["n"])  # an integer in a string
        expected = _document(rng, want) if rng.random() < 0.15 else json.dumps(want)
        rows.append({"id": f"r{i}", "output": _document(rng, got), "expected_output": expected})
    return rows


FIELDS: list[list[dict[str, Any]]] = [
    [{"path": "a"}, {"path": "n"}, {"path": "d"}],
    [{"path": "n", "match": "numeric_tolerance", "tolerance": 1.0}, {"path": "a", "match": "numeric_tolerance"}],
    [{"path": "n", "match": "numeric_tolerance", "tolerance": 0.01, "relative": True}],
    [{"path": "d", "match": "date"}, {"path": "a", "match": "date", "compare_time": True}],
    [{"path": "d", "match": "date", "formats": ["DD-MMM-YYYY", "MM/DD/YYYY", "%B %d, %Y"]}],
    [{"path": "a", "match": "fuzzy", "threshold": 0.8}, {"path": "n", "match": "exact", "required": False}],
    # five required fields, none ever left out: every row's weight is the same (3 / 5 must stay 0.6)
    [
        {"path": p, "match": mt}
        for p, mt in (("a", "exact"), ("n", "exact"), ("d", "exact"), ("a", "fuzzy"), ("d", "date"))
    ],
]


@pytest.mark.parametrize(("seed", "fields"), list(enumerate(FIELDS)))
def test_fast_path_equals_the_row_wise_definition(seed: int, fields: list[dict[str, Any]]) -> None:
    tolerance = next((f["tolerance"] for f in fields if "tolerance" in f), 0.5)
    rows = _rows(seed, 700, tolerance, any(f.get("relative") for f in fields))
    result = vision_eval.evaluate(rows, evaluators={"f": {"type": "field_accuracy", "fields": fields}})
    specs = [m.FieldSpec(**f) for f in fields]
    by_row: dict[str, list[dict[str, Any]]] = {}
    for r in result.fields.to_dicts():
        by_row.setdefault(r["sample_id"], []).append(r)
    statuses = set()
    for row, res in zip(rows, result.results.to_dicts(), strict=True):
        ref = m.evaluate_row(specs, row["output"], row["expected_output"], "weighted_average")
        statuses.add(ref["status"])
        assert (res["status"], res["score"], res["error"]) == (ref["status"], ref.get("score"), ref.get("error")), row
        mine = by_row.get(row["id"], [])
        assert len(mine) == len(ref["fields"]), row
        if not mine:
            continue
        for (path, fr, _, _), r in zip(ref["fields"], _in_field_order(mine, fields)):
            assert (r["path"], r["hit"], r["score"], r["reason"]) == (path, fr.hit, fr.score, fr.reason), row
    assert {"processed", "error"} <= statuses


def _in_field_order(rows: list[dict[str, Any]], fields: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The fields table lists a row's fields field by field; two fields may share a path (then in field order)."""
    remaining = list(rows)
    ordered = []
    for field in fields:
        match = field.get("match", "exact")
        found = next(r for r in remaining if r["path"] == field["path"] and r["match"] == match)
        remaining.remove(found)
        ordered.append(found)
    return ordered
