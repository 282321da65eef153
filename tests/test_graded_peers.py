"""promptfoo's grading contracts, case for case (issue 19), through the real call path: ``vision_eval.evaluate`` ->
the direct OpenAI transport -> the fake server, which replies what each test scripts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import RED, shape_png

import vision_eval as ve


def judge(fake: Any, tmp_path: Path) -> dict[str, Any]:
    return {"model": "openai/gpt-4o-mini", "api_base": fake.openai_base, "api_key": "k", "cache": False,
            "cache_dir": str(tmp_path / "cache")}  # fmt: skip


def graded(fake: Any, tmp_path: Path, spec: dict[str, Any], *replies: Any, **row: Any) -> dict[str, Any]:
    """One row graded by ``spec`` with the grader replying ``replies`` in order; the result row, details parsed."""
    fake.push(*({"reply": r} for r in replies))
    base = {"id": "a", "input": "Describe the image.", "output": "Two red circles.", "expected_output": "two circles"}
    result = ve.evaluate([{**base, **row}], evaluators={"e": spec}, judge=judge(fake, tmp_path))
    out = result.results.to_dicts()[0]
    return {**out, "details": json.loads(out["details"] or "{}")}


@pytest.fixture
def red(tmp_path: Path) -> str:
    (tmp_path / "red.png").write_bytes(shape_png(RED, 2))
    return str(tmp_path / "red.png")


def test_context_types_default_to_promptfoos_threshold_of_one_half(fresh_fake, tmp_path) -> None:
    reply = "1. a. So [Attributed]\n2. b. So [Not Attributed]"
    recall = graded(fresh_fake, tmp_path, {"type": "context_recall"}, reply, context="A drawing.")
    assert (recall["score"], recall["passed"], recall["threshold"]) == (0.5, True, 0.5)
    statements = "Two circles.\nThey are blue."
    faith = graded(fresh_fake, tmp_path, {"type": "context_faithfulness"}, statements,
                   "Final verdict for each statement in order: Yes. No.", context="Two red circles.")  # fmt: skip
    assert (faith["score"], faith["passed"], faith["threshold"]) == (0.5, True, 0.5)


def test_faithfulness_statements_without_a_verdict_count_as_unsupported(fresh_fake, tmp_path) -> None:
    statements = "Two circles.\nThey are red.\nThe sky is green."
    verdicts = "1. supported\nFinal verdict for each statement in order: Yes."
    row = graded(
        fresh_fake, tmp_path, {"type": "context_faithfulness"}, statements, verdicts, context="Two red circles."
    )
    assert (row["status"], row["score"], row["passed"]) == ("processed", pytest.approx(1 / 3), False)
    assert (row["details"]["unsupported"], row["details"]["verdicts"]) == (2, 1)


def test_context_recall_counts_lines_that_carry_a_mark(fresh_fake, tmp_path) -> None:
    reply = "1. Two circles. [Attributed] (clearly [Attributed])\n2. Red. So [Not Attributed]\nDone."
    row = graded(fresh_fake, tmp_path, {"type": "context_recall"}, reply, context="Two circles.")
    assert (row["score"], row["passed"]) == (0.5, True)
    assert (row["details"]["attributed"], row["details"]["sentences"]) == (1, 2)


@pytest.mark.parametrize(("score", "passed"), [(0.8, True), (0.3, False)])
def test_llm_rubric_pass_null_passes_when_the_score_allows(fresh_fake, tmp_path, score: float, passed: bool) -> None:
    spec = {"type": "llm_rubric", "rubric": "Names the shapes.", "threshold": 0.5}
    row = graded(fresh_fake, tmp_path, spec, json.dumps({"reason": "ok", "pass": None, "score": score}))
    assert (row["status"], row["score"], row["passed"]) == ("processed", score, passed)


def test_a_reply_whose_content_is_an_object(fresh_fake, tmp_path) -> None:
    rubric = {"type": "llm_rubric", "rubric": "Names the shapes."}
    row = graded(fresh_fake, tmp_path, rubric, {"reason": "names them", "pass": True, "score": 0.9})
    assert (row["status"], row["score"], row["passed"], row["details"]["reason"]) == ("processed", 0.9, True,
                                                                                       "names them")  # fmt: skip
    fresh_fake.reset()
    row = graded(fresh_fake, tmp_path, {"type": "factuality"}, {"category": "A", "reason": "subset"})
    assert (row["status"], row["error"]) == (
        "error",
        "unusable grader reply: the grader replied with an object, not text",
    )
    assert row["details"]["reply"] == {"category": "A", "reason": "subset"}


def test_a_python_dict_reply_is_read(fresh_fake, tmp_path) -> None:
    rubric = {"type": "llm_rubric", "rubric": "Names the shapes."}
    row = graded(fresh_fake, tmp_path, rubric, "{'reason': \"it's right\", 'pass': True, 'score': 0.75}")
    assert (row["status"], row["score"], row["passed"], row["details"]["reason"]) == ("processed", 0.75, True,
                                                                                       "it's right")  # fmt: skip
    fresh_fake.reset()
    row = graded(fresh_fake, tmp_path, {"type": "factuality"}, "{'category': 'B', 'reason': 'a superset'}")
    assert (row["status"], row["passed"], row["details"]["category"]) == ("processed", True, "B")


def test_factuality_parenthesised_category_does_not_pass(fresh_fake, tmp_path) -> None:
    row = graded(fresh_fake, tmp_path, {"type": "factuality"}, '{"category": "(B)", "reason": "superset"}')
    assert (row["status"], row["passed"]) == ("error", None)
    assert row["error"] == "unusable grader reply: category '(B)' is not one of A-E"


@pytest.mark.parametrize("steps", [[1, 2], ["Check the shapes.", {"step": 2}], ["Check the shapes.", "  "]])
def test_g_eval_steps_that_are_not_strings_are_a_grader_error(fresh_fake, tmp_path, steps: list[Any]) -> None:
    row = graded(fresh_fake, tmp_path, {"type": "g_eval", "criteria": "Accuracy."}, json.dumps({"steps": steps}))
    assert row["status"] == "error" and "evaluation steps must be non-blank strings" in row["error"]
    assert len(fresh_fake.requests) == 1  # no score call after unusable steps


def test_text_only_grading_without_an_images_column(fresh_fake, tmp_path) -> None:
    row = graded(fresh_fake, tmp_path, {"type": "llm_rubric", "rubric": "Names the shapes."}, '{"pass": true}')
    assert (row["status"], row["passed"]) == ("processed", True)
    assert fresh_fake.requests[0].images == [] and "Image 1" not in fresh_fake.requests[0].text
    assert row["details"]["images"] == []


def test_images_are_attached_when_the_column_exists(fresh_fake, tmp_path, red: str) -> None:
    row = graded(fresh_fake, tmp_path, {"type": "llm_rubric", "rubric": "Names the shapes."}, '{"pass": true}',
                 images=[red])  # fmt: skip
    assert row["status"] == "processed" and [i.colour for i in fresh_fake.requests[0].images] == ["red"]


@pytest.mark.parametrize(
    "spec",
    [
        {"type": "llm_rubric", "rubric": "What {{ image_reference }} shows is named."},
        {"type": "llm_rubric", "rubric": "Names the shapes.", "images": ["images"]},
        {
            "type": "closed_qa",
            "criteria": "Names the shapes?",
            "prompt": "Look at {{ image_references }}: {{ output }}",
        },
    ],
)
def test_images_a_prompt_shows_or_the_config_names_must_exist(fresh_fake, tmp_path, spec: dict[str, Any]) -> None:
    rows = [{"id": "a", "input": "q", "output": "o", "expected_output": "e"}]
    with pytest.raises(ve.ConfigError, match="needs dataset column 'images'"):
        ve.evaluate(rows, evaluators={"e": spec}, judge=judge(fresh_fake, tmp_path))
    assert fresh_fake.calls == 0
