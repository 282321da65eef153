"""field_accuracy's contract on the inputs where it used to be wrong (issue 19) or raise (issue 17): invalid JSON,
fences with ``` in a string, integers beyond 2**53, dotted dates, deep JSON, numbers of any length and script.
Every case runs through ``vision_eval.evaluate`` (a batch) and ``field_row.evaluate_row`` (each row alone)."""

from __future__ import annotations

import json
from typing import Any

import pytest

import vision_eval
from vision_eval.errors import ConfigError
from vision_eval.evaluators.fields import matching as m
from vision_eval.evaluators.fields.field_row import evaluate_row


def both(rows: list[dict[str, Any]], fields: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per row: the evaluator's result (with its fields) after checking it is the verdict on that row alone."""
    for i, row in enumerate(rows):
        row.setdefault("id", str(i))
    result = vision_eval.evaluate(rows, evaluators={"f": {"type": "field_accuracy", "fields": fields}})
    specs = [m.FieldSpec(**f) for f in fields]
    out = []
    for row, res in zip(rows, result.results.to_dicts(), strict=True):
        alone = evaluate_row(specs, row["output"], row["expected_output"], "weighted_average")
        assert (res["status"], res["score"], res["error"], res["details"]) == (
            alone.status,
            alone.score,
            alone.error,
            alone.details,
        )
        fields_rows = result.fields.filter(result.fields["sample_id"] == row["id"]).to_dicts()
        assert [(f["hit"], f["reason"]) for f in fields_rows] == [(fr.hit, fr.reason) for fr in alone.fields]
        out.append({**res, "details": json.loads(res["details"]) if res["details"] else None, "fields": fields_rows})
    return out


WANT = '{"name": "ACME", "meta": {"name": "ACME"}}'


@pytest.mark.parametrize(
    "output",
    [
        '{"name":"ACME","meta":{"name":"ACME"},}',
        '{"name": "ACME", "meta": {"name": "ACME"}, "n": [1, 2,]}',
        'Here: {"name": "ACME", "meta": {"name": "ACME"}',
        '```json\n{"name": "ACME", "meta": {"name": "ACME"},}\n```',
        '{"name": "ACME" "meta": {"name": "ACME"}}',
    ],
)
def test_invalid_json_scores_zero_with_a_reason_never_an_inner_object(output: str) -> None:
    [row] = both([{"output": output, "expected_output": WANT}], [{"path": "name"}])
    assert (row["status"], row["score"]) == ("processed", 0.0)
    assert row["details"]["reason"] == "response is not JSON" and row["details"]["raw"] == output
    assert m.extract_json(output) == (False, None)


def test_an_inner_object_of_an_array_is_not_the_answer() -> None:
    [row] = both([{"output": '[{"name": "ACME"}]', "expected_output": WANT}], [{"path": "name"}])
    assert (row["score"], row["fields"][0]["reason"]) == (0.0, "missing from the response")
    [err] = both([{"output": WANT, "expected_output": '[{"name": "ACME"}]'}], [{"path": "name"}])
    assert (err["status"], err["error"]) == ("error", "expected_output is not a JSON object")


@pytest.mark.parametrize(
    "output",
    [
        '```json\n{"name": "see ``` here", "n": 1}\n```',
        '{"name": "see ``` here", "n": 1}',
        'Answer:\n```\n{"name": "two ``` fences ``` inside", "n": 1}\n```\nanything else?',
        'Sure: {"name": "an odd ``` in prose", "n": 1}',
    ],
)
def test_backticks_inside_a_string_do_not_cut_the_answer(output: str) -> None:
    want = json.loads(output[output.index("{") : output.rindex("}") + 1])
    [row] = both([{"output": output, "expected_output": json.dumps(want)}], [{"path": "name"}, {"path": "n"}])
    assert (row["status"], row["score"]) == ("processed", 1.0)


def test_integers_beyond_2_53_compare_exactly() -> None:
    fields = [{"path": "n"}, {"path": "n", "match": "numeric_tolerance", "tolerance": 0.5}]
    rows = [
        {"output": '{"n": 9007199254740993}', "expected_output": '{"n": 9007199254740992}'},
        {"output": '{"n": "9007199254740993"}', "expected_output": '{"n": 9007199254740992}'},
        {"output": '{"n": 123456789012345678901234567890}', "expected_output": '{"n": 123456789012345678901234567891}'},
        {"output": '{"n": 9007199254740993}', "expected_output": '{"n": 9007199254740993}'},
    ]
    out = both(rows, fields)
    reasons = [[f["reason"] for f in r["fields"]] for r in out]
    assert reasons[0] == ["got 9007199254740993, expected 9007199254740992", "diff=1.0 > tolerance 0.5"]
    assert reasons[1][1] == "diff=1.0 > tolerance 0.5"
    assert reasons[2] == ["got 123456789012345678901234567890, expected 123456789012345678901234567891",
                          "diff=1.0 > tolerance 0.5"]  # fmt: skip
    assert [r["score"] for r in out] == [0.0, 0.0, 0.0, 1.0]


def test_differences_at_the_bound_are_decided_exactly() -> None:
    # 1 + 1e-9 in float64 lies above the exact bound 1 + 1e-9 * 1: a miss, however the batch is computed.
    bound = 1.0 + 1e-9 * max(1.0, 1.0)
    rows = [{"output": json.dumps({"n": w + bound}), "expected_output": json.dumps({"n": w})} for w in (0, 3, 7)]
    out = both(rows, [{"path": "n", "match": "numeric_tolerance", "tolerance": 1.0}])
    assert [r["fields"][0]["hit"] for r in out] == [False, False, False]


@pytest.mark.parametrize(
    ("got", "want", "formats", "hit"),
    [
        ("05.01.2025", "2025-01-05", None, True),
        ("5.1.2025", "5 January 2025", None, True),
        ("05.01.2025", "2025-05-01", None, False),
        ("05.01.25", "2025-01-05", None, True),
        ("2025.01.05", "2025-01-05", None, True),  # year first stays year first
        ("01/05/2025", "2025-01-05", None, True),  # slashes stay month-first
        ("05.01.2025", "2025-05-01", ["MM.DD.YYYY"], True),
        ("05.01.2025", "2025-01-05", ["%m.%d.%Y"], False),
    ],
)
def test_dotted_dates_read_day_first_unless_formats_say_otherwise(
    got: str, want: str, formats: list[str] | None, hit: bool
) -> None:
    field = {"path": "d", "match": "date", **({"formats": formats} if formats else {})}
    [row] = both([{"output": json.dumps({"d": got}), "expected_output": json.dumps({"d": want})}], [field])
    assert row["fields"][0]["hit"] is hit


def test_deep_json_is_a_plain_row_error_and_the_batch_survives() -> None:
    deep = '{"a": ' + "[" * 5000 + "]" * 5000 + ', "n": 1}'
    unbalanced = '{"n": 1, "a": ' + "{" * 5000
    good = '{"n": 1}'
    rows = [
        {"output": deep, "expected_output": good},
        {"output": good, "expected_output": deep},
        {"output": unbalanced, "expected_output": good},
        {"output": good, "expected_output": good},
        {"output": '{"n": 1, "a": ' + "[" * 99 + "]" * 99 + "}", "expected_output": good},
    ]
    out = both(rows, [{"path": "n"}])
    assert [(r["status"], r["error"]) for r in out] == [
        ("error", "output: JSON nested deeper than 100 levels"),
        ("error", "expected_output: JSON nested deeper than 100 levels"),
        ("error", "output: JSON nested deeper than 100 levels"),
        ("processed", None),
        ("processed", None),  # exactly 100 levels is read
    ]
    assert out[3]["score"] == out[4]["score"] == 1.0


def test_numbers_of_any_length_and_script_give_plain_results() -> None:
    long = "9" * 5000
    fields = [{"path": "n"}, {"path": "n", "match": "numeric_tolerance", "tolerance": 0.5}]
    rows = [
        {"output": f'{{"n": {long}}}', "expected_output": f'{{"n": {long}}}'},
        {"output": f'{{"n": "{long}"}}', "expected_output": f'{{"n": {long}8}}'},
        {"output": '{"n": "١٢٣"}', "expected_output": '{"n": 123}'},
        {"output": '{"n": "١٢٣٫٥"}', "expected_output": '{"n": 123}'},
        {"output": '{"n": 1234567890123456789012345}', "expected_output": '{"n": 1234567890123456789012345.0}'},
        {"output": '{"n": 1e400}', "expected_output": '{"n": 1}'},
    ]
    out = both(rows, fields)
    reasons = [[f["reason"] for f in r["fields"]] for r in out]
    assert reasons[0] == ["equal", "diff=0.0 <= tolerance 0.5"]
    assert out[0]["fields"][0]["actual"] == long
    assert reasons[1][1] == "diff=9.000000e+5000 > tolerance 0.5"
    assert reasons[2] == ['type mismatch: got string "١٢٣", expected number 123', "diff=0.0 <= tolerance 0.5"]
    assert reasons[3][1] == 'not a number: got "١٢٣٫٥"'  # an Arabic decimal separator is not a '.'
    # 1234567890123456789012345.0 is the float 1234567890123456824475648: exactly 35463303 apart
    assert reasons[4][1] == "diff=35463303.0 > tolerance 0.5"
    assert all(r["status"] == "processed" for r in out)


def test_bad_date_formats_are_config_errors() -> None:
    for bad in ("%d %d", "%Q-%m"):
        with pytest.raises(ConfigError, match="invalid date format"):
            vision_eval.evaluate(
                [{"output": "{}", "expected_output": "{}"}],
                evaluators={
                    "f": {"type": "field_accuracy", "fields": [{"path": "d", "match": "date", "formats": [bad]}]}
                },
            )
