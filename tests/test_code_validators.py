"""count_validator, ocr_validator, json_validator, chart_validator: seed scenarios and the traps."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

import vision_eval
from vision_eval.evaluators.code.chart import ChartOptions, chart_row
from vision_eval.evaluators.code.count import count_row
from vision_eval.evaluators.code.json_check import JsonOptions, infer_schema, json_row
from vision_eval.evaluators.code.ocr import OcrOptions, ocr_row
from vision_eval.rowwise import RowResult


def run(kind: str, rows: list[dict], **settings) -> list[dict]:
    data = [{"id": str(i), **row} for i, row in enumerate(rows)]
    result = vision_eval.evaluate(data, evaluators={"v": {"type": kind, **settings}})
    out = result.results.sort("sample_id", descending=False).to_dicts()
    out.sort(key=lambda r: int(r["sample_id"]))
    for row in out:
        row["details"] = json.loads(row["details"]) if row["details"] else None
    return out


def as_dict(result: RowResult) -> dict:
    row = {"status": result.status, "score": result.score, "error": result.error, "passed": result.passed}
    row["details"] = json.loads(result.details) if result.details else None
    return row


def count(output: str, expected: str) -> dict:
    return as_dict(count_row(output, expected))


# ---- count_validator ----------------------------------------------------------------------------


def test_count_seed_scenarios() -> None:
    rows = run(
        "count_validator",
        [
            {"output": "5 bottles", "expected_output": "5 bottles"},
            {"output": "5 bottles, 3 cans", "expected_output": "5 bottles, 8 cans"},
        ],
    )
    assert [r["score"] for r in rows] == [1.0, 0.5]
    assert [r["passed"] for r in rows] == [True, False]
    details = rows[1]["details"]
    assert details["expected"] == {"bottle": 5, "can": 8}
    assert details["found"] == {"bottle": 5, "can": 3}
    assert details["matched"] == {"bottle": 5}
    assert "1 of 2" in details["reasoning"] and "can" in details["reasoning"]


@pytest.mark.parametrize(
    ("output", "expected", "score"),
    [
        ("I count 5 red circles and 3 blue squares.", "5 circles, 3 squares", 1.0),
        ("There are five circles and three squares in the image.", "5 circles, 8 squares", 0.5),
        ("The picture shows a dozen yellow squares.", "12 squares", 1.0),
        ("half a dozen eggs", "6 eggs", 1.0),
        ("twenty-one people", "21 persons", 1.0),
        ("one box and two buses", "1 box, 2 bus", 1.0),
        ("3 children and 2 mice", "3 child, 2 mouse", 1.0),
        ("1 bottle", "1 bottles", 1.0),
        ("I see 4 blue circles and 3 red triangles.", "4 circles, 2 triangles", 0.5),
        ("circles: 4, squares: 2", "4 circles, 2 squares", 1.0),
        # counted by object, not by position: swapped numbers do not match
        ("3 circles and 5 squares", "5 circles, 3 squares", 0.0),
        # the object matters, not only the number
        ("5 squares", "5 circles", 0.0),
        # an expected 0 is met by a response that never mentions the object, or says "no"
        ("2 circles", "0 triangles, 2 circles", 1.0),
        ("no triangles and 2 circles", "0 triangles, 2 circles", 1.0),
        ("1 triangle and 2 circles", "0 triangles, 2 circles", 0.5),
        # counts of the same object spread over phrases add up
        ("3 red circles and 2 blue circles", "5 circles", 1.0),
    ],
)
def test_count_cases(output: str, expected: str, score: float) -> None:
    row = count(output, expected)
    assert row["status"] == "processed"
    assert row["score"] == pytest.approx(score)


def test_count_bare_expected_number() -> None:
    assert count("I can see 7 green triangles.", "7")["score"] == 1.0
    assert count("I can see 6 green triangles.", "7")["score"] == 0.0
    assert count("4 circles and 3 squares", "7")["score"] == 1.0  # the total
    assert count("seven triangles", "7")["details"]["matched"] == {"*": 7}


@pytest.mark.parametrize(
    ("output", "reason"),
    [
        ("6 or 7", "the response hedges (6 or 7): it does not state the expected count 7"),
        ("Not 7, I think it is 6.", "the response denies the expected count 7"),
        ("I count 6 or 7 birds.", "the response hedges (6 or 7): it does not state the expected count 7"),
        ("There are 6-7 birds.", "the response hedges (6 or 7): it does not state the expected count 7"),
        ("7 (or maybe 8) birds", "the response hedges (7 or 8): it does not state the expected count 7"),
        ("5, 6 or 7", "the response hedges (5, 6 or 7): it does not state the expected count 7"),
        ("Between 7 and 9.", "the response hedges (7 or 9): it does not state the expected count 7"),
        ("It isn\u2019t 7.", "the response denies the expected count 7"),
        (
            "I see 6 birds... no wait, 7 birds.",
            "the response states the expected count 7 but also 6 of the same thing (bird)",
        ),
    ],
)
def test_a_bare_count_the_reply_hedges_or_contradicts_fails_with_the_reason(output: str, reason: str) -> None:
    row = count(output, "7")
    assert (row["status"], row["score"]) == ("processed", 0.0)
    assert row["details"]["reasoning"] == reason and row["details"]["matched"] == {}


@pytest.mark.parametrize(
    "output",
    [
        "7",
        "There are 7 birds, not 6.",  # the other number is denied
        "It isn't 6, it's 7.",
        "I count 7 apples: 3 on the left and 4 on the right.",  # parts of the count, not other counts of it
        "7 dogs and 1 cat",  # another thing's count
        "4 circles and 3 squares",  # counts that add up
        "Not only 7 apples but also 3 pears.",  # "not only" denies nothing
        "Step 1: look. Step 2: count. There are 7 apples.",
        "7 birds, or so.",
        "I see 7 birds. Final answer: 7",  # the same count twice
    ],
)
def test_a_bare_count_stated_once_for_its_thing_passes(output: str) -> None:
    row = count(output, "7")
    assert (row["score"], row["details"]["reasoning"]) == (1.0, "the response states the expected count 7")


def test_the_issue_s_hedged_replies_do_not_pass() -> None:
    """Expected 7: ``Not 7, I think it is 6.`` and ``6 or 7`` scored 1.0 and passed; they fail, with the reason."""
    rows = run(
        "count_validator", [{"output": o, "expected_output": "7"} for o in ("Not 7, I think it is 6.", "6 or 7")]
    )
    assert [(r["score"], r["passed"]) for r in rows] == [(0.0, False), (0.0, False)]
    assert [r["details"]["reasoning"].split(":")[0] for r in rows] == [
        "the response denies the expected count 7",
        "the response hedges (6 or 7)",
    ]


def test_named_counts_the_reply_hedges_or_denies_are_not_met() -> None:
    hedged = count("6 or 7 apples and 5 pears", "7 apples, 5 pears")
    assert hedged["score"] == 0.5 and hedged["details"]["matched"] == {"pear": 5}
    assert (
        hedged["details"]["reasoning"]
        == "1 of 2 expected counts match; wrong or missing: apple; hedged: apple (6 or 7)"
    )
    corrected = count("Not 7 apples but 6 apples.", "6 apples")  # the denied count is not the first one stated
    assert corrected["score"] == 1.0 and corrected["details"]["found"] == {"apple": 6}
    assert count("Not 7 apples but 6 apples.", "7 apples")["score"] == 0.0


def test_count_unusable_expected_is_an_error_and_missing_output_scores_zero() -> None:
    rows = run(
        "count_validator",
        [
            {"output": "5 cats", "expected_output": "lots of cats"},
            {"output": "I am not sure", "expected_output": "3 cats"},
        ],
    )
    assert rows[0]["status"] == "error" and "no counts" in rows[0]["error"]
    assert rows[1]["status"] == "processed" and rows[1]["score"] == 0.0
    assert rows[1]["details"]["found"] == {}


def test_count_threshold_is_configurable() -> None:
    rows = run(
        "count_validator", [{"output": "5 bottles, 3 cans", "expected_output": "5 bottles, 8 cans"}], threshold=0.5
    )
    assert rows[0]["passed"] is True


# ---- ocr_validator ------------------------------------------------------------------------------


def test_ocr_identical_text_scores_high_and_keywords_count() -> None:
    rows = run(
        "ocr_validator",
        [
            {"output": "Project Proposal Q1 2026", "expected_output": "Project Proposal Q1 2026"},
            {
                "output": "Budget and timeline are final.",
                "expected_output": "Budget and timeline are final.",
                "keywords": ["budget", "timeline", "deliverables"],
            },
        ],
    )
    assert rows[0]["score"] > 0.9 and rows[0]["passed"]
    assert rows[0]["details"]["weights"] == {"similarity": 1.0, "keywords": 0.0}
    d = rows[1]["details"]
    assert d["keywords_found"] == ["budget", "timeline"] and d["keywords_missing"] == ["deliverables"]
    assert rows[1]["score"] == pytest.approx(0.7 * 1.0 + 0.3 * (2 / 3))


def test_ocr_normalization_is_configurable() -> None:
    assert ocr_row("HELLO,  world", "hello world", None, OcrOptions()).score == 1.0
    strict = OcrOptions(case_sensitive=True, strip_punctuation=False, normalize_whitespace=False)
    score = ocr_row("HELLO,  world", "hello world", None, strict).score
    assert score is not None and score < 0.6


def test_ocr_typos_lower_the_score_and_configured_keywords_apply_to_all_rows() -> None:
    rows = run(
        "ocr_validator",
        [{"output": "Quartely Reveiw", "expected_output": "Quarterly Review"}, {"output": "x", "expected_output": "y"}],
        keywords=["review"],
        similarity_weight=0.5,
        keyword_weight=0.5,
    )
    assert 0.4 < rows[0]["score"] < 0.5  # keyword "review" missing, similarity about 0.9
    assert rows[0]["details"]["keywords_missing"] == ["review"]
    assert rows[1]["score"] == 0.0


# ---- json_validator -----------------------------------------------------------------------------

EXPECTED = {
    "invoice_number": "INV-1",
    "vendor_name": "Northwind",
    "invoice_date": "2025-01-15",
    "total_amount": 1500.0,
    "currency": "USD",
    "line_items": [{"description": "Widgets", "quantity": 10, "amount": 250.0}],
}


def jrun(outputs: list[str], **settings) -> list[dict]:
    return run("json_validator", [{"output": o, "expected_output": json.dumps(EXPECTED)} for o in outputs], **settings)


def test_json_perfect_answer_in_fence_prose_and_bare() -> None:
    text = json.dumps(EXPECTED)
    rows = jrun([f"```json\n{text}\n```", f"Here it is: {text} Hope it helps.", text])
    assert [r["score"] for r in rows] == [1.0, 1.0, 1.0]
    assert all(r["passed"] for r in rows)


def test_json_compares_values_and_reports_everything() -> None:
    got = dict(EXPECTED, total_amount="$1,500.00", invoice_date="15-JAN-2025", extra=1)
    del got["currency"]
    rows = jrun([json.dumps(got)])
    d = rows[0]["details"]
    assert d["missing_keys"] == ["currency"]
    assert d["extra_keys"] == ["extra"]
    assert d["type_errors"] == [{"path": "total_amount", "expected": "number", "actual": "string"}]
    assert d["value_mismatches"] == [{"path": "invoice_date", "expected": "2025-01-15", "actual": "15-JAN-2025"}]
    assert d["schema_valid"] is False
    # 8 leaves: 5 match (number, vendor, 3 line-item fields); currency, total, date do not
    assert rows[0]["score"] == pytest.approx(5 / 8)
    assert rows[0]["passed"] is False


def test_json_numbers_compare_as_numbers_and_items_in_any_order() -> None:
    expected = {"items": [{"d": "a", "n": 1}, {"d": "b", "n": 2}], "total": 960.0}
    got = {"items": [{"d": "b", "n": 2}, {"d": "A", "n": 1}], "total": 960}
    assert json_row(json.dumps(got), json.dumps(expected), JsonOptions()).score == 1.0
    empty = pl.DataFrame(
        {"id": [], "output": [], "expected_output": []},
        schema=dict.fromkeys(["id", "output", "expected_output"], pl.Utf8),
    )
    assert vision_eval.evaluate(empty, evaluators={"j": {"type": "json_validator"}}).results.height == 0


def test_json_invalid_or_missing_json_scores_zero_processed_with_reason() -> None:
    rows = jrun(["Sorry, I could not read this invoice.", '{"invoice_number": "INV-1",'])
    assert [r["status"] for r in rows] == ["processed", "processed"]
    assert [r["score"] for r in rows] == [0.0, 0.0]
    assert "no JSON" in rows[0]["details"]["reason"]
    assert rows[1]["details"]["reason"].startswith("invalid JSON")
    assert rows[1]["details"]["raw"] == '{"invoice_number": "INV-1",'


def test_json_schema_from_config_without_expected_output() -> None:
    schema = {"type": "object", "required": ["name", "age"], "properties": {"age": {"type": "integer"}}}
    rows = run(
        "json_validator",
        [{"output": '{"name": "a", "age": 3}'}, {"output": '{"name": "a", "age": "3"}'}, {"output": '{"name": "a"}'}],
        json_schema=schema,
    )
    assert [r["score"] for r in rows] == [1.0, 0.0, 0.0]
    assert "age" in rows[2]["details"]["schema_errors"][0]


def test_json_bad_expected_is_an_error_and_bad_schema_is_refused() -> None:
    rows = run("json_validator", [{"output": "{}", "expected_output": "not json"}])
    assert rows[0]["status"] == "error" and "expected_output is not valid JSON" in rows[0]["error"]
    with pytest.raises(Exception, match="json_schema"):
        run("json_validator", [{"output": "{}"}], json_schema={"type": "no-such-type"})


def test_infer_schema() -> None:
    schema = infer_schema({"a": 1, "b": [{"x": "s"}], "c": None})
    assert schema["required"] == ["a", "b", "c"]
    assert schema["properties"]["a"] == {"type": "number"}
    assert schema["properties"]["b"]["items"]["properties"]["x"] == {"type": "string"}
    assert schema["properties"]["c"] == {}


# ---- chart_validator ----------------------------------------------------------------------------


def chart(output: str, expected: str, **opts) -> dict:
    return as_dict(chart_row(output, expected, ChartOptions(**opts)))


def test_chart_seed_scenarios() -> None:
    rows = run(
        "chart_validator",
        [{"output": "Q4: $2.4M", "expected_output": "$2.4M"}, {"output": "58% growth", "expected_output": "58%"}],
    )
    assert [r["score"] for r in rows] == [1.0, 1.0]
    assert rows[0]["details"]["values"][0] == {
        "kind": "money",
        "expected": "$2.4M",
        "value": 2400000.0,
        "matched": True,
        "actual": "$2.4M",
    }


@pytest.mark.parametrize(
    ("output", "expected", "score"),
    [
        ("revenue $2.7M", "$2.4M", 1.0),  # 12.5% off: inside 15%
        ("revenue $2.8M", "$2.4M", 0.0),  # 16.7% off
        ("€300K", "$0.3M", 1.0),
        ("2.4 million", "$2.4M", 1.0),
        ("about 3 million dollars", "$3.0M", 1.0),
        ("1,250 units sold", "$1,250", 1.0),
        ("up 58 percent", "58%", 1.0),
        ("up 57%", "58%", 0.0),
        ("down -3%", "-3%", 1.0),
        ("Q4 2025 was best", "Q4 2025", 1.0),
        ("Q4 2024 was best", "Q4 2025", 0.0),
        ("on January 15, 2025", "2025-01-15", 1.0),
        ("revenue was $0", "$0", 1.0),
        ("revenue was $0.1M", "$0", 0.0),
    ],
)
def test_chart_cases(output: str, expected: str, score: float) -> None:
    assert chart(output, expected)["score"] == score


def test_chart_list_markers_years_and_quarter_digits_are_not_money() -> None:
    row = chart("1. Q1 2025\n2. Q2 2025\n3. Q3 2025\n4. Q4 2025", "$1; $2; $3; $4")
    assert row["score"] == 0.0
    assert all(v["actual"] is None for v in row["details"]["values"])
    row = chart("In 2025 revenue was 4", "$2,025")
    assert row["score"] == 0.0


def test_chart_each_response_value_counts_once() -> None:
    # $3.0M matches Q1; it must not also satisfy Q4's $2.9M (3.4% away)
    row = chart("Q1 2025: about 3 million dollars; Q4 2025: $3.9M", "Q1 2025: $3.0M; Q4 2025: $2.9M")
    values = {v["expected"]: v["matched"] for v in row["details"]["values"]}
    assert values == {"$3.0M": True, "$2.9M": False, "Q1 2025": True, "Q4 2025": True}
    assert row["score"] == 0.75


def test_chart_tolerances_are_configurable_and_zero_needs_absolute() -> None:
    assert chart("$2.8M", "$2.4M", currency_tolerance=0.2)["score"] == 1.0
    assert chart("57%", "58%", percent_tolerance=1.0)["score"] == 1.0
    assert chart("$500", "$0", zero_tolerance=1000)["score"] == 1.0


@pytest.mark.parametrize(
    ("output", "expected", "opts", "matched"),
    [
        # currency: relative to the expected value, on both sides; at the limit matched, just past it not
        ("$2.88M", "$2.4M", {"currency_tolerance": 0.2}, True),
        ("$2.89M", "$2.4M", {"currency_tolerance": 0.2}, False),
        ("$1.92M", "$2.4M", {"currency_tolerance": 0.2}, True),
        ("$1.91M", "$2.4M", {"currency_tolerance": 0.2}, False),
        ("$2.76M", "$2.4M", {}, True),  # the default, 15%
        ("$2.77M", "$2.4M", {}, False),
        # percent: absolute, in points
        ("57%", "58%", {"percent_tolerance": 1.0}, True),
        ("56.9%", "58%", {"percent_tolerance": 1.0}, False),
        ("59.1%", "58%", {"percent_tolerance": 1.0}, False),
        ("57%", "58%", {}, False),  # the default: exact
        # an expected zero: absolute, in the currency's units; none by default
        ("$1000", "$0", {"zero_tolerance": 1000}, True),
        ("$1001", "$0", {"zero_tolerance": 1000}, False),
        ("$500", "$0", {}, False),
    ],
)
def test_chart_tolerance_accepts_up_to_its_limit_and_rejects_past_it(
    output: str, expected: str, opts: dict, matched: bool
) -> None:
    row = chart(output, expected, **opts)
    assert row["score"] == (1.0 if matched else 0.0), row["details"]
    assert [v["matched"] for v in row["details"]["values"]] == [matched], row["details"]


def test_chart_demo_row_and_no_values_error() -> None:
    rows = run(
        "chart_validator",
        [
            {
                "output": "Revenue grew every quarter: Q1 2025 $1.2M, Q2 $1.5M, Q3 $1.9M and Q4 2025 peaked at $2.4M, "
                "up 58% from Q1.",
                "expected_output": "Q1 2025: $1.2M; Q2 2025: $1.5M; Q3 2025: $1.9M; Q4 2025: $2.4M; growth: 58%",
            },
            {"output": "flat", "expected_output": "nothing numeric"},
        ],
    )
    assert rows[0]["score"] == 1.0 and rows[0]["details"]["matched"] == 9
    assert rows[1]["status"] == "error" and "no currency" in rows[1]["error"]


def test_where_filters_and_null_rows_are_not_lost() -> None:
    data = [
        {"id": "a", "task": "count", "output": "5 cats", "expected_output": "5 cats"},
        {"id": "b", "task": "ocr", "output": "x", "expected_output": "x"},
        {"id": "c", "task": "count", "output": None, "expected_output": "5 cats"},
    ]
    result = vision_eval.evaluate(data, evaluators={"c": {"type": "count_validator", "where": "task = 'count'"}})
    by_id = {r["sample_id"]: r for r in result.results.to_dicts()}
    assert by_id["a"]["score"] == 1.0
    assert by_id["b"]["status"] == "skipped"
    assert by_id["c"]["status"] == "error"


def test_code_validators_stack_on_demo_like_rows() -> None:
    import yaml

    stack = yaml.safe_load((Path(__file__).resolve().parents[1] / "conf/evaluators/code_validators.yaml").read_text())
    assert {spec["type"] for spec in stack.values()} == {
        "count_validator",
        "ocr_validator",
        "json_validator",
        "chart_validator",
    }
    data = [
        {
            "id": "count-2",
            "task": "count",
            "output": "There are five circles and three squares.",
            "expected_output": "5 circles, 8 squares",
        },
        {
            "id": "ocr-1",
            "task": "ocr",
            "output": "EXIT - Emergency use only",
            "expected_output": "EXIT\nEmergency use only",
            "keywords": ["exit", "emergency"],
        },
        {
            "id": "invoice-4",
            "task": "invoice",
            "output": "Sorry, I could not read this invoice.",
            "expected_output": json.dumps(EXPECTED),
            "keywords": None,
        },
        {
            "id": "chart-2",
            "task": "chart",
            "output": "1. Q1 2025: about 3 million dollars\n2. Q4 2025: $3.9M",
            "expected_output": "Q1 2025: $3.0M; Q4 2025: $2.9M",
        },
    ]
    result = vision_eval.evaluate(data, evaluators=stack).results
    processed = {(r["evaluator"], r["sample_id"]): r for r in result.filter(pl.col("status") == "processed").to_dicts()}
    assert set(processed) == {
        ("object_counts", "count-2"),
        ("ocr_text", "ocr-1"),
        ("invoice_json", "invoice-4"),
        ("chart_values", "chart-2"),
    }
    assert processed[("object_counts", "count-2")]["score"] == 0.5
    assert processed[("ocr_text", "ocr-1")]["score"] == 1.0
    assert processed[("invoice_json", "invoice-4")]["score"] == 0.0
    assert processed[("chart_values", "chart-2")]["score"] == 0.75
    assert processed[("chart_values", "chart-2")]["passed"] is False
    assert result.filter(pl.col("status") == "skipped").height == 12


def test_json_inferred_schema_checks_every_array_item() -> None:
    expected = json.dumps({"items": [{"d": "a", "n": 1}]})
    outputs = [json.dumps({"items": [{"d": "a", "n": 1}, {"d": "b"}]}), json.dumps({"items": [{"d": "a", "n": 1}]})]
    out = [as_dict(json_row(o, expected, JsonOptions()))["details"] for o in outputs]
    assert out[0]["schema_valid"] is False and out[0]["extra_keys"] == ["items[1]"]
    assert "'n' is a required property" in out[0]["schema_errors"][0]
    assert out[1]["schema_valid"] is True
