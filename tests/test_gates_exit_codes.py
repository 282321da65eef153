"""The gates and the exit code they make: each limit at and just past its bound, which exit code each gate fails
with, the most severe code winning, and what a failed gate says (evaluator, counts, rates, the top reasons)."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import polars as pl
import pytest

from vision_eval.exit_codes import EXIT_CONFIG, EXIT_GATE, EXIT_INCOMPLETE, EXIT_INTERRUPTED, EXIT_OK, worst
from vision_eval.gates import (
    Gate,
    Outcome,
    candidate_gate,
    compared,
    evaluator_gates,
    judge_outcome,
    nothing_scored_gate,
    top_errors,
)
from vision_eval.results import NOT_SELECTED


def settings(**values: Any) -> SimpleNamespace:
    """An evaluator's gate settings: nothing set unless given."""
    return SimpleNamespace(**{"max_error_rate": None, "min_pass_rate": None, "min_mean_score": None, **values})


def stats(rows: int, errors: int = 0, skipped: int = 0, pass_rate: float | None = 1.0, mean: float | None = 1.0):
    return {"rows": rows, "errors": errors, "skipped": skipped, "pass_rate": pass_rate, "mean_score": mean}


def by_name(gates: list[Gate]) -> dict[str, Gate]:
    return {g.gate: g for g in gates}


@pytest.mark.parametrize(
    ("codes", "expected"),
    [
        ([], EXIT_OK),
        ([EXIT_OK], EXIT_OK),
        ([EXIT_OK, EXIT_GATE], EXIT_GATE),
        ([EXIT_GATE, EXIT_INCOMPLETE, EXIT_GATE], EXIT_INCOMPLETE),
        ([EXIT_INCOMPLETE, EXIT_CONFIG], EXIT_CONFIG),
        ([EXIT_CONFIG, EXIT_INTERRUPTED, EXIT_OK], EXIT_INTERRUPTED),
        ([EXIT_GATE, 7], EXIT_INCOMPLETE),  # an unknown code counts as incomplete
        ([7, EXIT_CONFIG], EXIT_CONFIG),
    ],
)
def test_the_most_severe_exit_code_wins(codes: list[int], expected: int) -> None:
    assert worst(codes) == expected


def test_error_rate_at_the_limit_holds_and_one_row_more_fails_with_exit_3() -> None:
    (at,) = evaluator_gates("e", settings(max_error_rate=0.2), stats(10, errors=2), 0.1)
    assert (at.gate, at.value, at.limit, at.passed, at.exit_code) == ("max_error_rate", 0.2, 0.2, True, EXIT_INCOMPLETE)
    assert at.message == "e: error rate 20.0% \u2264 20.0% (2 of 10 rows)"
    (past,) = evaluator_gates("e", settings(max_error_rate=0.2), stats(10, errors=3), 0.1)
    assert (past.value, past.passed, past.exit_code) == (0.3, False, EXIT_INCOMPLETE)
    assert past.message == "e: error rate 30.0% > 20.0% (3 of 10 rows)"


def test_error_rate_counts_only_applicable_rows_and_uses_the_run_default() -> None:
    # 2 errors in 8 applicable rows (2 of 10 skipped): 25%, over the run's default of 20%.
    (gate,) = evaluator_gates("e", settings(), stats(10, errors=2, skipped=2), 0.2)
    assert (gate.value, gate.limit, gate.passed) == (0.25, 0.2, False)
    assert gate.message == "e: error rate 25.0% > 20.0% (2 of 8 rows)"
    (zero,) = evaluator_gates("e", settings(max_error_rate=0.0), stats(4), 0.5)
    assert (zero.value, zero.limit, zero.passed) == (0.0, 0.0, True)


def test_every_applicable_row_an_error_fails_whatever_the_limit() -> None:
    (gate,) = evaluator_gates("e", settings(max_error_rate=1.0), stats(5, errors=4, skipped=1), 0.1)
    assert (gate.value, gate.passed, gate.exit_code) == (1.0, False, EXIT_INCOMPLETE)
    assert gate.message == "e: every applicable row is an error (4 of 4 rows)"
    (lone,) = evaluator_gates("e", settings(), stats(1, errors=1), 0.2)
    assert lone.message == "e: every applicable row is an error (1 of 1 row)"


def test_no_applicable_rows_no_error_rate_gate() -> None:
    assert evaluator_gates("e", settings(), stats(3, skipped=3), 0.1) == []
    assert evaluator_gates("e", settings(min_pass_rate=0.5), None, 0.1) == []


@pytest.mark.parametrize(("gate", "key"), [("min_pass_rate", "pass_rate"), ("min_mean_score", "mean_score")])
def test_quality_gates_are_inclusive_and_fail_with_exit_1(gate: str, key: str) -> None:
    def checked(value: float | None) -> Gate:
        values = {"pass_rate": 1.0, "mean": 1.0, key if key == "pass_rate" else "mean": value}
        return by_name(evaluator_gates("e", settings(**{gate: 0.75}), stats(4, **values), 0.1))[gate]

    at, below, missing = checked(0.75), checked(0.7499), checked(None)
    assert (at.value, at.limit, at.passed) == (0.75, 0.75, True)
    assert (below.passed, below.exit_code) == (False, EXIT_GATE)
    name = key.replace("_", " ")
    assert at.message == f"e: {name} 0.750 \u2265 0.75"  # the value shown to 3 decimals, the limit as written
    assert below.message == f"e: {name} 0.7499 < 0.75"  # more decimals where 3 would round onto the limit
    assert (missing.value, missing.passed, missing.exit_code) == (None, False, EXIT_GATE)
    assert missing.message == f"e: {name} none (no processed rows) < 0.75"


def test_an_unset_quality_gate_is_not_checked() -> None:
    gates = evaluator_gates("e", settings(min_mean_score=0.5), stats(2, pass_rate=0.0, mean=0.5), 0.1)
    assert [g.gate for g in gates] == ["max_error_rate", "min_mean_score"]


def test_outcome_exit_code_and_problems_come_from_the_failed_gates_only() -> None:
    gates = [
        Gate("a", "max_error_rate", 0.0, 0.1, True, EXIT_INCOMPLETE, "a held"),
        Gate("b", "min_pass_rate", 0.2, 0.5, False, EXIT_GATE, "b failed"),
        Gate("c", "budget", 2.0, 1.0, False, EXIT_INCOMPLETE, "c failed"),
    ]
    outcome = Outcome(gates=gates, top_errors={"b": [("boom", 2), ("bang", 1)]})
    assert outcome.failed == gates[1:]
    assert outcome.exit_code == EXIT_INCOMPLETE and outcome.problems == ["b failed", "c failed"]
    assert Outcome(gates=gates[:2]).exit_code == EXIT_GATE and Outcome(gates=gates[:1]).exit_code == EXIT_OK
    as_dict = outcome.as_dict()
    assert as_dict["exit_code"] == EXIT_INCOMPLETE and as_dict["problems"] == ["b failed", "c failed"]
    assert as_dict["top_errors"] == {"b": [{"reason": "boom", "rows": 2}, {"reason": "bang", "rows": 1}]}
    assert as_dict["gates"][1] == {
        "evaluator": "b",
        "gate": "min_pass_rate",
        "value": 0.2,
        "limit": 0.5,
        "passed": False,
        "exit_code": EXIT_GATE,
        "message": "b failed",
    }


def results_frame(rows: list[tuple[str, str, str | None]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema={"evaluator": pl.Utf8, "status": pl.Utf8, "error": pl.Utf8}, orient="row")


def test_top_errors_are_the_most_common_reasons_per_evaluator_ties_by_text() -> None:
    rows = [("x", "error", r) for r in ["d", "b", "b", "a", "c", "c", "c"]]
    rows += [("w", "error", "only"), ("w", "processed", None), ("v", "processed", None), ("x", "skipped", "b")]
    rows += [(name, "error", "e") for name in ("u", "t", "s", "r")]
    found = top_errors(results_frame(rows))
    assert list(found) == ["r", "s", "t", "u", "w", "x"]  # evaluators in name order
    assert found["w"] == [("only", 1)] and found["x"] == [("c", 3), ("b", 2), ("a", 1)]
    assert top_errors(results_frame(rows).lazy(), limit=1)["x"] == [("c", 3)]


def test_judge_outcome_gates_each_evaluator_from_its_summary_row() -> None:
    summary = pl.DataFrame(
        [
            {"evaluator": "ok", "rows": 10, "errors": 0, "skipped": 0, "pass_rate": 0.9, "mean_score": 0.9},
            {"evaluator": "bad", "rows": 10, "errors": 5, "skipped": 0, "pass_rate": 0.2, "mean_score": 0.2},
        ]
    )
    results = results_frame([("bad", "error", "boom")] * 5 + [("ok", "processed", None)])
    evaluators = [
        SimpleNamespace(name="ok", settings=settings(min_pass_rate=0.9)),
        SimpleNamespace(name="bad", settings=settings(min_pass_rate=0.1)),
        SimpleNamespace(name="unscored", settings=settings(min_pass_rate=0.5)),  # no summary row: no gate
    ]
    run_gate = Gate("run", "budget", 1.0, 0.5, True, EXIT_INCOMPLETE, "budget")
    outcome = judge_outcome(summary, results, evaluators, 0.1, [run_gate])
    assert [(g.evaluator, g.gate, g.passed) for g in outcome.gates] == [
        ("run", "budget", True),
        ("ok", "max_error_rate", True),
        ("ok", "min_pass_rate", True),
        ("bad", "max_error_rate", False),
        ("bad", "min_pass_rate", True),
    ]
    assert outcome.exit_code == EXIT_INCOMPLETE and outcome.top_errors == {"bad": [("boom", 5)]}
    clean = judge_outcome(summary.filter(pl.col("evaluator") == "ok"), results, evaluators[:1], 0.1)
    assert clean.exit_code == EXIT_OK and clean.top_errors == {}  # no evaluator with errors: no reasons read


def samples(errors: list[str | None]) -> pl.DataFrame:
    return pl.DataFrame({"id": [str(i) for i in range(len(errors))], "candidate_error": errors})


def test_candidate_gate_is_inclusive_and_names_the_most_common_failure() -> None:
    at = candidate_gate(samples(["429", None, None, None]), 0.25)
    assert at is not None and (at.value, at.limit, at.passed, at.exit_code) == (0.25, 0.25, True, EXIT_INCOMPLETE)
    past = candidate_gate(samples(["b", "a", "a", "b", "c", None]), 0.5)
    assert past is not None and (past.gate, past.value, past.passed) == ("max_error_rate", 5 / 6, False)
    assert past.message == "candidate: 5 of 6 generations failed (83.3% > 50.0%): most often 'a'"  # ties: by text


def test_candidate_failing_every_row_fails_even_at_a_limit_of_1() -> None:
    gate = candidate_gate(samples(["x", "x"]), 1.0)
    assert gate is not None and (gate.value, gate.passed) == (1.0, False)
    assert (
        gate.message
        == "candidate: 2 of 2 generations failed (100.0% \u2264 100.0%, every generation failed): most often 'x'"
    )


def test_candidate_gate_absent_without_a_candidate_or_rows() -> None:
    assert candidate_gate(pl.DataFrame({"id": ["a"]}), 0.1) is None
    assert candidate_gate(samples([]).cast({"candidate_error": pl.Utf8}), 0.1) is None
    clean = candidate_gate(samples([None, None]).cast({"candidate_error": pl.Utf8}).lazy(), 0.0)
    assert clean is not None and (clean.value, clean.passed) == (0.0, True)
    assert clean.message.startswith("candidate: 0 of 2 generations failed (") and clean.message.endswith(")")


def _skipped(reasons: list[str | None]) -> pl.DataFrame:
    """Result rows, all skipped, with these reasons in their details (``None``: no details)."""
    details = [None if r is None else json.dumps({"reason": r}) for r in reasons]
    return pl.DataFrame(
        {"status": ["skipped"] * len(reasons), "details": details}, schema={"status": pl.Utf8, "details": pl.Utf8}
    )


def test_nothing_scored_says_how_many_rows_were_skipped_and_why() -> None:
    """Every row skipped: the run-level gate fails (exit 3) saying how many result rows, the most common reason
    other than a ``where`` filter, and how many rows the filters left out; allowed, it passes and says so. Rows
    that are errors are not "nothing scored" (their evaluators' error-rate gates say why)."""
    summary = pl.DataFrame({"evaluator": ["a", "b"], "rows": [3, 3], "processed": [0, 0], "errors": [0, 0],
                            "skipped": [3, 3]})  # fmt: skip
    results = _skipped([
        f"{NOT_SELECTED}: output = 'x'", f"{NOT_SELECTED}: output = 'x'",
        "candidate generation failed: timeout", "candidate generation failed: timeout",
        "candidate generation failed: 429", None,
    ])  # fmt: skip
    what = (
        "run: nothing was scored: every one of the 6 result rows was skipped; most often skipped: 'candidate "
        "generation failed: timeout' (2 rows); 2 rows not selected by their evaluator's where"
    )
    refused = nothing_scored_gate(summary, results, allowed=False)
    assert refused is not None and (refused.evaluator, refused.gate, refused.passed) == ("run", "nothing_scored", False)
    assert refused.exit_code == EXIT_INCOMPLETE
    assert refused.message == what + "; set run.allow_nothing_scored=true if the config means it"
    allowed = nothing_scored_gate(summary, results.lazy(), allowed=True)
    assert allowed is not None and allowed.passed and allowed.message == what + " (allowed: run.allow_nothing_scored)"
    unnamed = nothing_scored_gate(summary.with_columns(pl.lit(1).alias("rows")), _skipped([None]), allowed=False)
    assert unnamed is not None and unnamed.message.startswith(
        "run: nothing was scored: every one of the 2 result rows was skipped; most often skipped: 'no reason given' "
        "(1 row); set"
    )
    one = summary.head(1).with_columns(pl.lit(1).alias("rows"))
    single = nothing_scored_gate(one, _skipped([f"{NOT_SELECTED}: output = 'x'"]), allowed=False)
    assert single is not None and single.message.startswith(
        "run: nothing was scored: its one result row was skipped; 1 row not selected by its evaluator's where; set"
    )
    empty = nothing_scored_gate(summary.head(0), _skipped([]), allowed=False)
    assert empty is not None and empty.message.startswith("run: nothing was scored: there are no result rows; set")
    errors = summary.with_columns(pl.lit(2).alias("errors"), pl.lit(1).alias("skipped"))
    assert nothing_scored_gate(errors, results, allowed=False) is None


def test_a_value_next_to_its_limit_gets_the_decimals_that_tell_them_apart_up_to_12() -> None:
    assert compared(0.1 + 1e-9, 0.1, upper=True, percent=True) == "10.0000001% > 10.0%"
    assert compared(0.1 + 1e-15, 0.1, upper=True, percent=True) == "10.000000000000% > 10.0%"  # at most 12
    assert compared(0.9 - 1e-15, 0.9, upper=False, percent=False) == "0.900000000000 < 0.9"
