"""Grading failures as rows (``vision_eval.grading.outcomes.GradeFailure``), through the real call path: a prompt
that fails to render for one row, calls the circuit breaker refuses, and quorums no judgement could meet."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import RED, shape_png

import vision_eval as ve

MINI = "openai/gpt-4o-mini"


@pytest.fixture
def red(tmp_path: Path) -> str:
    (tmp_path / "red.png").write_bytes(shape_png(RED, 2))
    return str(tmp_path / "red.png")


def judge(fake: Any, **extra: Any) -> dict[str, Any]:
    return {"model": MINI, "api_base": fake.openai_base, "api_key": "k", "cache": False, "max_concurrency": 1, **extra}


def rows(image: str, outputs: list[Any]) -> list[dict[str, Any]]:
    return [{"id": f"r{i}", "input": "Describe.", "output": o, "images": [image]} for i, o in enumerate(outputs)]


def test_a_rubric_that_fails_to_render_for_one_row_is_that_rows_error(fresh_fake, red) -> None:
    fresh_fake.responder = lambda request: '{"reason": "ok", "pass": true, "score": 1}'
    try:
        spec = {"type": "llm_rubric", "rubric": "Names the {{ output.split()[1] }}."}  # r0 has no second word
        result = ve.evaluate(rows(red, ["one", "red circle"]), evaluators={"e": spec}, judge=judge(fresh_fake))
    finally:
        fresh_fake.responder = None
    bad, good = (result.results.filter(sample_id=key).row(0, named=True) for key in ("r0", "r1"))
    assert (good["status"], good["score"]) == ("processed", 1.0)
    assert bad["status"] == "error" and bad["error"].startswith("prompt template error: ")
    details = json.loads(bad["details"])
    assert details["errors"] == [{"error": bad["error"]}] and details["model"] == MINI
    assert fresh_fake.calls == 1  # the row whose prompt did not render sent nothing


def test_calls_the_circuit_breaker_refuses_are_errors_saying_so(fresh_fake, red) -> None:
    fresh_fake.push(*[{"status": 400}] * 2)
    result = ve.evaluate(rows(red, ["a", "b", "c"]), evaluators={"e": {"type": "closed_qa", "criteria": "Red?"}},
                         judge=judge(fresh_fake, circuit_breaker=2), run={"concurrency": 1})  # fmt: skip
    assert fresh_fake.calls == 2
    failed = [json.loads(d) for d in result.results.sort("sample_id")["details"]]
    refused = [d for d in failed if "not_attempted" in d]
    assert len(refused) == 1 and refused[0]["not_attempted"] == "circuit_breaker"
    assert refused[0]["errors"][0]["error"].startswith("not attempted: ")
    assert set(refused[0]["errors"][0]) == {"error", "not_attempted"}
    called = [d for d in failed if "not_attempted" not in d]
    assert [set(d["errors"][0]) for d in called] == [{"error", "attempts", "failures"}] * 2


@pytest.mark.parametrize(
    ("extra", "message"),
    [({"samples": 2, "min_valid": 3}, "min_valid is at most samples"),
     ({"panel": [MINI, "openai/gpt-4o"], "panel_min_valid": 3}, "panel_min_valid at most the panel's size")],
)  # fmt: skip
def test_a_quorum_no_judgement_can_meet_is_refused_at_start(fresh_fake, red, extra, message) -> None:
    spec = {"type": "llm_rubric", "rubric": "r", **extra}
    with pytest.raises(ve.ConfigError, match=message):
        ve.evaluate(rows(red, ["a"]), evaluators={"e": spec}, judge=judge(fresh_fake))
    assert fresh_fake.calls == 0
