"""field_accuracy: every match type and edge of issue 4, and each row of a batch getting its own row's verdict."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

import vision_eval
from vision_eval.errors import ConfigError
from vision_eval.evaluators.fields import matching as m
from vision_eval.evaluators.fields.field_row import evaluate_row

ROOT = Path(__file__).resolve().parents[1]


def run(rows: list[dict[str, Any]], fields: list[dict[str, Any]], **settings: Any) -> Any:
    for i, row in enumerate(rows):
        row.setdefault("id", str(i))
        for key in ("output", "expected_output"):
            if not isinstance(row[key], str):
                row[key] = json.dumps(row[key])
    return vision_eval.evaluate(rows, evaluators={"f": {"type": "field_accuracy", "fields": fields, **settings}})


def field_rows(result: Any) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["sample_id"], r["path"]): r for r in result.fields.to_dicts()}


def one(got: Any, want: Any, **field: Any) -> dict[str, Any]:
    field.setdefault("path", "v")
    res = run([{"output": {"v": got}, "expected_output": {"v": want}}], [field])
    return field_rows(res)[("0", field["path"])]


# ---------------------------------------------------------------- exact


@pytest.mark.parametrize(
    ("got", "want", "hit"),
    [
        ("INV-1", "INV-1", True),
        ("inv-1", "INV-1", False),
        ("100", 100, False),
        (100, 100.0, True),
        (True, 1, False),
        ({"b": 2, "a": 1}, {"a": 1, "b": 2}, True),
        ([1, 2], [2, 1], False),
        (None, None, True),
    ],
)
def test_exact(got: Any, want: Any, hit: bool) -> None:
    assert one(got, want)["hit"] is hit


def test_exact_type_reason_and_json_columns() -> None:
    row = one("100", 100)
    assert row["reason"] == 'type mismatch: got string "100", expected number 100'
    assert (row["actual"], row["expected"], row["score"]) == ('"100"', "100", 0.0)


def test_any_order_pairs_by_assignment() -> None:
    want = [{"description": "Widget", "quantity": 2}, {"description": "Gadget", "quantity": 1}]
    got = [{"description": "Gadget", "quantity": 1}, {"description": "Widget", "quantity": 2}]
    assert one(got, want, array_match="any_order")["hit"] is True
    assert one(got, want)["hit"] is False
    bad = one([{"description": "Gadget", "quantity": 3}, *got[1:]], want, array_match="any_order")
    assert bad["hit"] is False
    assert bad["reason"].startswith("1/2 items match (any order); item 1: ")


def test_any_order_fuzzy_strings_optimal_not_greedy() -> None:
    # Greedy would give "acme corp" to "acme corporation" (best single score) and leave a bad pair.
    res = one(
        ["acme corp", "acme corporation ltd"],
        ["acme corporation", "acme corp"],
        match="fuzzy",
        array_match="any_order",
        threshold=0.7,
    )
    assert res["hit"] is True


# ---------------------------------------------------------------- numeric


@pytest.mark.parametrize(
    ("got", "want", "settings", "hit", "reason"),
    [
        ("$1,500.00", 1500, {"tolerance": 0.01}, True, "diff=0.0 <= tolerance 0.01"),
        ("1,500", 1500, {}, True, "diff=0.0 <= tolerance 0.0"),
        (1500.02, 1500, {"tolerance": 0.01}, False, "diff=0.02 > tolerance 0.01"),
        (100.01, 100, {"tolerance": 0.01}, True, "diff=0.01 <= tolerance 0.01"),
        (101, 100, {"tolerance": 0.01, "relative": True}, True, "diff=1.0 <= tolerance 1.0"),
        (101.5, 100, {"tolerance": 0.01, "relative": True}, False, "diff=1.5 > tolerance 1.0"),
        (0.005, 0, {"tolerance": 0.01, "relative": True}, True, "diff=0.005 <= tolerance 0.01"),
        ("(20.00)", -20, {}, True, "diff=0.0 <= tolerance 0.0"),
        ("EUR 1 234.50", 1234.5, {}, True, "diff=0.0 <= tolerance 0.0"),
        ("abc", 1, {}, False, 'not a number: got "abc"'),
        (True, 1, {}, False, "not a number: got true"),
        (1, "n/a", {}, False, 'expected value is not a number: "n/a"'),
    ],
)
def test_numeric(got: Any, want: Any, settings: dict[str, Any], hit: bool, reason: str) -> None:
    row = one(got, want, match="numeric_tolerance", **settings)
    assert (row["hit"], row["reason"]) == (hit, reason)


# ---------------------------------------------------------------- date


@pytest.mark.parametrize(
    ("got", "want", "settings", "hit", "reason"),
    [
        ("15-JAN-2025", "2025-01-15", {"formats": ["DD-MMM-YYYY", "YYYY-MM-DD"]}, True, "same date 2025-01-15"),
        ("02/01/2025", "2025-01-02", {"formats": ["DD/MM/YYYY"]}, True, "same date 2025-01-02"),
        ("02/01/2025", "2025-02-01", {}, True, "same date 2025-02-01"),
        ("01/02/2025", "2025-01-02", {"formats": ["MM/DD/YYYY", "DD/MM/YYYY"]}, True, "same date 2025-01-02"),
        ("15/01/2025", "2025-01-15", {}, True, "same date 2025-01-15"),
        ("2025-01-16", "2025-01-15", {}, False, "got 2025-01-16, expected 2025-01-15"),
        ("2025-01-15T23:30:00-08:00", "2025-01-15", {}, True, "same date 2025-01-15"),
        (
            "2025-01-15 10:00",
            "2025-01-15T09:00:00",
            {"compare_time": True},
            False,
            "got 2025-01-15 10:00:00, expected 2025-01-15 09:00:00",
        ),
        ("January 15, 2025", "2025-01-15", {}, True, "same date 2025-01-15"),
        ("not a date", "2025-01-15", {}, False, 'could not parse date "not a date"'),
        (20250115, "2025-01-15", {}, False, "not a date string: got 20250115"),
    ],
)
def test_date(got: Any, want: Any, settings: dict[str, Any], hit: bool, reason: str) -> None:
    row = one(got, want, match="date", **settings)
    assert (row["hit"], row["reason"]) == (hit, reason)


# ---------------------------------------------------------------- fuzzy


@pytest.mark.parametrize(
    ("algorithm", "got", "want", "sim"),
    [
        ("levenshtein", "Acme Crop", "Acme Corp", 0.778),  # 2 edits / 9 chars
        ("levenshtein", "  ACME   corp ", "acme corp", 1.0),
        ("token_sort", "Corp Acme", "Acme Corp", 1.0),
        ("token_set", "Acme Corp Inc", "Acme Corp", 1.0),
        ("jaro_winkler", "Acme Corp.", "Acme Corp", 0.98),
    ],
)
def test_fuzzy(algorithm: str, got: str, want: str, sim: float) -> None:
    row = one(got, want, match="fuzzy", algorithm=algorithm)
    assert row["reason"].startswith(f"similarity {sim} ")
    assert row["hit"] is (sim >= 0.85)


def test_fuzzy_normalize_off() -> None:
    assert one("ACME CORP", "acme corp", match="fuzzy", normalize=False)["hit"] is False


# ---------------------------------------------------------------- missing / optional / null / paths


def test_missing_optional_null_and_skipped() -> None:
    fields = [
        {"path": "a"},
        {"path": "b", "required": False, "weight": 3},
        {"path": "c"},
        {"path": "d"},
    ]
    res = run([{"output": {"a": 1, "d": None}, "expected_output": {"a": 1, "b": 2, "d": 0}}], fields)
    rows = field_rows(res)
    assert rows[("0", "b")]["hit"] is None and rows[("0", "b")]["score"] is None  # left out
    assert rows[("0", "c")]["reason"] == "no expected value" and rows[("0", "c")]["hit"] is True
    assert rows[("0", "d")]["reason"] == "got null, expected 0"
    result = res.results.row(0, named=True)
    assert result["score"] == pytest.approx(2 / 3)  # a hit, c hit, d miss; b left out
    details = json.loads(result["details"])
    assert details["left_out"] == ["b: optional field missing from the response (left out)"]
    skipped = run([{"output": {}, "expected_output": {"b": 1}}], [{"path": "b", "required": False}])
    row = skipped.results.row(0, named=True)
    assert row["status"] == "skipped" and json.loads(row["details"])["reason"] == "every field was left out"


def test_required_missing_and_all_or_nothing() -> None:
    fields = [{"path": "a"}, {"path": "b"}]
    res = run([{"output": {"a": 1}, "expected_output": {"a": 1, "b": 2}}], fields, aggregation="all_or_nothing")
    assert res.results["score"].to_list() == [0.0]
    assert field_rows(res)[("0", "b")]["reason"] == "missing from the response"


def test_paths_with_indexes_both_syntaxes() -> None:
    doc = {"invoice": {"line_items": [{"amount": 3}, {"amount": 4}]}}
    for path in ("invoice.line_items[1].amount", "invoice.line_items.1.amount"):
        res = run([{"output": doc, "expected_output": doc}], [{"path": path}])
        assert field_rows(res)[("0", path)]["actual"] == "4"
    assert m.parse_path("a[0].b") == m.parse_path("a.0.b") == ("a", 0, "b")
    with pytest.raises(ValueError):
        m.parse_path("a..b")


def test_not_json_fenced_prose_and_bad_expected() -> None:
    fields = [{"path": "a"}]
    rows = [
        {"output": "no json here", "expected_output": {"a": 1}},
        {"output": 'Sure!\n```json\n{"a": 1}\n```\nanything else?', "expected_output": {"a": 1}},
        {"output": 'The answer is {"a": 1} as requested.', "expected_output": json.dumps(json.dumps({"a": 1}))},
        {"output": {"a": 1}, "expected_output": "not json"},
    ]
    res = run(rows, fields).results
    assert res["status"].to_list() == ["processed", "processed", "processed", "error"]
    assert res["score"].to_list()[:3] == [0.0, 1.0, 1.0]
    assert json.loads(res["details"][0])["reason"] == "response is not JSON"
    assert res["error"][3] == "expected_output is not a JSON object"
    assert json.loads(res["details"][3]) == {"raw_expected": "not json"}


def test_settings_validation() -> None:
    with pytest.raises(ConfigError, match="tolerance"):
        run([{"output": {}, "expected_output": {}}], [{"path": "a", "match": "exact", "tolerance": 1}])
    with pytest.raises(ConfigError, match="bogus: unknown key"):
        run([{"output": {}, "expected_output": {}}], [{"path": "a", "bogus": 1}])
    with pytest.raises(ConfigError, match="invalid field path"):
        run([{"output": {}, "expected_output": {}}], [{"path": "a..b"}])


# ---------------------------------------------------------------- a batch == its rows

TRICKY = [
    '{"v": "plain", "n": 1}',
    '{"n": 2, "v": "esc \\"quoted\\" \\u00e9"}',
    '{"x": {"v": "nested elsewhere"}, "v": "top"}',
    '{"x": {"v": "only nested"}}',
    '{"v": "dup1", "v": "dup2"}',
    '{"v": "brace { in } string", "w": "[x]"}',
    '{"v": null}',
    '{"v": ["a", "b"]}',
    '{"v": {"k": 1}}',
    '{"v": 1e3}',
    '{"v": -0.5}',
    '{"v": true}',
    '{"a": {"b": {"c": {"d": {"v": "deep"}}}}, "v": "deep top"}',
    '{"v": "trailing", }',
    '{"v" "missing colon"}',
    '{"v": NaN}',
    '  {\n  "v" :\t"spaced"  }  ',
    '{"v": "a\\nb"}',
    '["not", "an", "object"]',
    '{"v": "{\\"v\\": 1}"}',
    '{"customer": {"address": {"city": "Paris"}}, "city": "Lyon"}',
    '{"customer": {"address": {"zip": 1}}, "v": 2}',
    "",
]


@pytest.mark.parametrize(
    "field",
    [
        {"path": "v"},
        {"path": "v", "match": "fuzzy"},
        {"path": "v", "match": "numeric_tolerance", "tolerance": 1},
        {"path": "v", "match": "date"},
        {"path": "customer.address.city"},
        {"path": "v", "required": False},
        {"path": "items[0].v"},
    ],
)
def test_each_row_of_a_batch_gets_its_own_verdict(field: dict[str, Any]) -> None:
    """A batch (distinct inputs scored once, verdicts gathered back) gives every row the verdict of that row alone."""
    wants = ['{"v": "plain", "customer": {"address": {"city": "Paris"}}, "items": [{"v": 1}]}', '{"v": 1000}']
    rows = [
        {"id": f"{i}-{j}", "output": g, "expected_output": w} for i, g in enumerate(TRICKY) for j, w in enumerate(wants)
    ]
    rows.append({"id": "items", "output": '{"items": [{"v": 1}, {"v": 2}]}', "expected_output": wants[0]})
    rows += [{**row, "id": f"again-{row['id']}"} for row in rows[::3]]
    res = vision_eval.evaluate(rows, evaluators={"f": {"type": "field_accuracy", "fields": [field]}})
    spec = m.FieldSpec(**field)
    fields = {r["sample_id"]: r for r in res.fields.to_dicts()}
    for row, result in zip(rows, res.results.to_dicts()):
        alone = evaluate_row([spec], row["output"], row["expected_output"], "weighted_average")
        assert (result["status"], result["score"], result["details"]) == (alone.status, alone.score, alone.details)
        [fr] = alone.fields
        got = fields[row["id"]]
        assert (got["hit"], got["score"], got["reason"], got["actual"]) == (fr.hit, fr.score, fr.reason, fr.actual)


def test_tricky_documents() -> None:
    def actual(text: str) -> str | None:
        return evaluate_row([m.FieldSpec(path="v")], text, '{"v": 1}', "weighted_average").fields[0].actual

    assert actual('{"v": "dup1", "v": "dup2"}') == '"dup2"'
    assert actual('{"x": {"v": "only nested"}}') is None
    assert actual('{"v": "{\\"v\\": 1}"}') == '"{\\"v\\": 1}"'  # a string holding JSON stays a string
    assert actual('  {\n  "v" :\t"spaced"  }  ') == '"spaced"'
    assert actual('{"v": 1e3}') == "1000.0"
    for not_json in ('{"v": "trailing", }', '{"v" "missing colon"}', ""):
        assert evaluate_row([m.FieldSpec(path="v")], not_json, '{"v": 1}', "weighted_average").score == 0.0


def test_structured_stack_config_loads() -> None:
    stack = yaml.safe_load((ROOT / "conf/evaluators/structured.yaml").read_text())
    inv = {
        "invoice_number": "INV-7",
        "vendor_name": "Acme Corp",
        "invoice_date": "2025-01-15",
        "total_amount": 1500.0,
        "currency": "USD",
        "line_items": [{"description": "A", "quantity": 1, "amount": 1500.0}],
    }
    rows = [
        {
            "id": "i",
            "task": "invoice",
            "output": json.dumps({**inv, "invoice_date": "15-Jan-2025"}),
            "expected_output": json.dumps(inv),
        },
        {
            "id": "d",
            "task": "detect",
            "output": '[{"label": "circle", "box": [0, 0, 10, 10]}]',
            "expected_output": '[{"label": "circle", "box": [0, 0, 10, 10]}]',
        },
    ]
    res = vision_eval.evaluate(rows, evaluators=stack).results
    got = {(r["evaluator"], r["sample_id"]): (r["status"], r["score"]) for r in res.to_dicts()}
    assert got[("invoice_fields", "i")] == ("processed", 1.0)
    assert got[("invoice_fields", "d")][0] == "skipped"
    assert got[("detection", "d")] == ("processed", 1.0)


def test_rules_prepared_once_per_field_follow_each_fields_settings() -> None:
    """Each field's rule is prepared once (date readers and their caches are shared by equal settings): fields that
    differ in one setting only (tolerance, date formats, fuzzy threshold) still get their own rules, in any order, in
    one process."""
    for tolerance, hit in ((0.5, False), (2.0, True), (0.5, False)):
        assert one(10, 11, match="numeric_tolerance", tolerance=tolerance)["hit"] is hit
    for formats, hit in ((["DD/MM/YYYY"], True), (["MM/DD/YYYY"], False), (["DD/MM/YYYY"], True)):
        assert one("05/01/2025", "2025-01-05", match="date", formats=formats)["hit"] is hit
    for threshold, hit in ((0.95, False), (0.5, True), (0.95, False)):
        assert one("Acme Crop", "Acme Corp", match="fuzzy", threshold=threshold)["hit"] is hit


# ---------------------------------------------------------------- defaults


def test_defaults_weighted_average_and_a_pass_at_0_8_inclusive() -> None:
    fields = [{"path": k} for k in "abcde"]
    want = {k: 1 for k in "abcde"}
    rows = [
        {"id": "four_of_five", "output": {**want, "e": 2}, "expected_output": want},
        {"id": "three_of_five", "output": {**want, "d": 2, "e": 2}, "expected_output": want},
    ]
    res = {r["sample_id"]: r for r in run(rows, fields).results.to_dicts()}
    assert (res["four_of_five"]["score"], res["four_of_five"]["passed"]) == (pytest.approx(0.8), True)
    assert (res["three_of_five"]["score"], res["three_of_five"]["passed"]) == (pytest.approx(0.6), False)


def test_no_fields_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="fields"):
        run([{"output": {"v": 1}, "expected_output": {"v": 1}}], [])


def test_every_field_a_hit_scores_exactly_1_under_all_or_nothing_and_under_zero_weights() -> None:
    """A row scores 1 when every counted field is a hit (all_or_nothing, or weights summing to 0), else 0."""
    fields = [m.FieldSpec(path="a"), m.FieldSpec(path="b")]
    weightless = [m.FieldSpec(path="a", weight=0), m.FieldSpec(path="b", weight=0)]
    want = '{"a": 1, "b": 2}'
    assert evaluate_row(fields, '{"a": 1, "b": 2}', want, "all_or_nothing").score == 1.0
    assert evaluate_row(fields, '{"a": 1, "b": 3}', want, "all_or_nothing").score == 0.0
    assert evaluate_row(weightless, '{"a": 1, "b": 2}', want, "weighted_average").score == 1.0
    assert evaluate_row(weightless, '{"a": 1, "b": 3}', want, "weighted_average").score == 0.0


def test_warm_up_compiles_each_date_format_ahead_of_the_rows() -> None:
    """In the run's process (the engine calls it on a thread and ignores its failures: a broken warm-up would only
    make the first batch slow), warm_up compiles a field's date format, and does it once."""
    from vision_eval.evaluators.fields import dates
    from vision_eval.evaluators.fields.field_accuracy import FieldAccuracy, FieldAccuracySettings

    fields = [{"path": "a.b"}, {"path": "d", "match": "date", "formats": ["YYYY/DD/MM (warm-up test)"]},
              {"path": "v", "match": "fuzzy"}]  # fmt: skip
    before = dates._format_plan.cache_info()
    FieldAccuracy("f", FieldAccuracySettings(fields=fields)).warm_up()
    after = dates._format_plan.cache_info()
    assert after.misses == before.misses + 1
    FieldAccuracy("f", FieldAccuracySettings(fields=fields)).warm_up()
    assert dates._format_plan.cache_info().misses == after.misses
