"""The ``max_error_rate`` gate is inclusive: a share of error rows equal to the limit still exits 0."""

from __future__ import annotations

from typing import Any

import vision_eval as ve

COUNT = {"type": "exact_count", "protocol": "lenient"}


def rows(n: int, errors: int) -> list[dict[str, Any]]:
    """``n`` rows of which the first ``errors`` give no count at all (an ``error`` row each)."""
    return [
        {"id": str(i), "output": "no idea" if i < errors else "There are 3.", "expected_output": "3"} for i in range(n)
    ]


def gate(result: ve.EvalResult) -> dict[str, Any]:
    (found,) = [g for g in result.run_info["gates"] if g["gate"] == "max_error_rate"]
    return found


def test_one_error_in_ten_rows_at_the_default_limit_passes() -> None:
    result = ve.evaluate(rows(10, 1), evaluators={"count": COUNT}, run={"progress": False})
    assert result.results["status"].to_list() == ["error"] + ["processed"] * 9
    assert gate(result)["value"] == 0.1 and gate(result)["limit"] == 0.1 and gate(result)["passed"]
    assert result.exit_code == 0


def test_no_errors_at_a_zero_limit_passes() -> None:
    result = ve.evaluate(rows(5, 0), evaluators={"count": {**COUNT, "max_error_rate": 0}}, run={"progress": False})
    assert gate(result)["value"] == 0.0 and gate(result)["passed"]
    assert result.exit_code == 0


def test_one_error_above_the_limit_exits_3() -> None:
    result = ve.evaluate(rows(10, 2), evaluators={"count": COUNT}, run={"progress": False})
    assert gate(result)["value"] == 0.2 and not gate(result)["passed"]
    assert result.exit_code == 3
    zero = ve.evaluate(rows(5, 1), evaluators={"count": {**COUNT, "max_error_rate": 0}}, run={"progress": False})
    assert zero.exit_code == 3


def test_the_run_level_default_is_inclusive_too() -> None:
    result = ve.evaluate(rows(4, 1), evaluators={"count": COUNT}, run={"progress": False, "max_error_rate": 0.25})
    assert gate(result)["passed"] and result.exit_code == 0


def test_each_gate_message_states_the_comparison_that_held_or_failed() -> None:
    """run.json's ``message`` of a gate says what was compared and how it came out: a passing gate never carries a
    failing gate's wording (``error rate 0.0% > 10.0%`` on a gate that held)."""
    data = rows(10, 1)
    data[9]["output"] = "There are 4."  # 8 of the 9 processed rows pass
    settings = {**COUNT, "min_pass_rate": 0.5, "min_mean_score": 0.9}
    result = ve.evaluate(data, evaluators={"count": settings}, run={"progress": False})
    gates = {g["gate"]: g for g in result.run_info["gates"]}
    assert gates["max_error_rate"]["passed"]
    assert gates["max_error_rate"]["message"] == "count: error rate 10.0% \u2264 10.0% (1 of 10 rows)"
    assert gates["min_pass_rate"]["passed"] and gates["min_pass_rate"]["message"] == "count: pass rate 0.889 \u2265 0.5"
    assert not gates["min_mean_score"]["passed"]
    assert gates["min_mean_score"]["message"] == "count: mean score 0.889 < 0.9"
    assert result.run_info["problems"] == ["count: mean score 0.889 < 0.9"]
    failing = ve.evaluate(rows(10, 3), evaluators={"count": COUNT}, run={"progress": False})
    (gate,) = failing.run_info["gates"]
    assert not gate["passed"] and gate["message"] == "count: error rate 30.0% > 10.0% (3 of 10 rows)"


def test_a_value_next_to_its_limit_is_never_written_as_the_limit() -> None:
    from vision_eval.gates import compared

    assert compared(0.1004, 0.1, upper=True, percent=True) == "10.04% > 10.0%"
    assert compared(0.8996, 0.9, upper=False, percent=False) == "0.8996 < 0.9"
    assert compared(0.1, 0.1, upper=True, percent=True) == "10.0% \u2264 10.0%"
    assert compared(0.0, 0.1, upper=True, percent=True) == "0.0% \u2264 10.0%"
