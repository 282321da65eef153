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
