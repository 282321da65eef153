"""The seven model-graded assertions end to end: ``vision_eval.evaluate`` -> litellm/direct -> fake servers.

Rows carry a marker (``OUT-<key>``) in their output; the fake answers each request with the canned grader
reply for the marker it finds, so concurrency cannot shuffle replies between rows.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from conftest import BLUE, RED, shape_png

import vision_eval as ve


@pytest.fixture
def images(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "red.png").write_bytes(shape_png(RED, 2))
    (tmp_path / "blue.png").write_bytes(shape_png(BLUE, 3))
    return {"red": str(tmp_path / "red.png"), "blue": str(tmp_path / "blue.png")}


@pytest.fixture
def scripted(fresh_fake) -> Iterator[tuple[Any, Callable[[Callable[[Any], str]], None]]]:
    def use(responder: Callable[[Any], str]) -> None:
        fresh_fake.responder = responder

    yield fresh_fake, use
    fresh_fake.responder = None


def by_marker(replies: dict[str, str]) -> Callable[[Any], str]:
    def respond(request: Any) -> str:
        return replies[re.search(r"OUT-(\w+)", request.text).group(1)]  # type: ignore[union-attr]

    return respond


def judge(fake: Any, tmp_path: Path, **extra: Any) -> dict[str, Any]:
    return {"model": "openai/gpt-4o-mini", "api_base": fake.openai_base, "api_key": "k",
            "cache_dir": str(tmp_path / "cache"), "cache": False, **extra}  # fmt: skip


def rows_for(keys: list[str], image: str, **columns: Any) -> list[dict[str, Any]]:
    return [{"id": k, "input": "Describe the image.", "output": f"OUT-{k}", "expected_output": "two red circles",
             "images": [image], **columns} for k in keys]  # fmt: skip


def run(rows: list[dict], spec: dict, fake: Any, tmp_path: Path, **judge_extra: Any) -> Any:
    return ve.evaluate(rows, evaluators={"e": spec}, judge=judge(fake, tmp_path, **judge_extra))


def table(result: Any) -> dict[str, dict[str, Any]]:
    return {r["sample_id"]: {**r, "details": json.loads(r["details"] or "{}")} for r in result.results.to_dicts()}


RUBRIC = {
    "p_low": ('{"reason": "ok", "pass": true, "score": 0.3}', "processed", 0.3, True),
    "nopass": ('{"reason": "only a reason"}', "processed", 1.0, True),
    "str_yes": ('{"pass": "yes", "score": "0.6"}', "processed", 0.6, True),
    "str_other": ('{"pass": "nope", "score": 0.9}', "processed", 0.9, False),
    "fail": ('{"pass": false}', "processed", 0.0, False),
    "fenced": ('Verdict:\n```json\n{\n // checked\n "pass": true,\n "score": 0.8,\n}\n```', "processed", 0.8, True),
    "prose": ("It looks right to me.", "error", None, None),
    "range": ('{"pass": true, "score": 7}', "error", None, None),
}


def test_llm_rubric_contract(scripted, images, tmp_path) -> None:
    fake, use = scripted
    use(by_marker({k: v[0] for k, v in RUBRIC.items()}))
    spec = {"type": "llm_rubric", "rubric": "Names the colour of {{ expected_output }}"}
    out = table(run(rows_for(list(RUBRIC), images["red"]), spec, fake, tmp_path))
    for key, (_, status, score, passed) in RUBRIC.items():
        assert (out[key]["status"], out[key]["score"], out[key]["passed"]) == (status, score, passed), key
    assert out["prose"]["details"]["reply"] == "It looks right to me." and "no JSON" in out["prose"]["error"]
    assert "outside 0..1" in out["range"]["error"]
    assert "Names the colour of two red circles" in fake.requests[0].text  # the rubric is a template


def test_llm_rubric_threshold_and_scale(scripted, images, tmp_path) -> None:
    fake, use = scripted
    use(by_marker({"a": '{"pass": true, "score": 3}', "b": '{"pass": true, "score": 2}',
                   "c": '{"pass": false, "score": 5}'}))  # fmt: skip
    spec = {"type": "llm_rubric", "rubric": "good", "scale": [0, 5], "threshold": 2.5}
    out = table(run(rows_for(["a", "b", "c"], images["red"]), spec, fake, tmp_path))
    assert [(out[k]["score"], out[k]["passed"]) for k in "abc"] == [(0.6, True), (0.4, False), (1.0, False)]
    assert out["a"]["threshold"] == 2.5


def test_factuality_contract_and_custom_scores(scripted, images, tmp_path) -> None:
    fake, use = scripted
    use(by_marker({"a": '{"category": "A", "reason": "subset"}', "d": '{"category": "D", "reason": "conflict"}',
                   "e": "(E) differences do not matter", "b": '{"category": "B", "reason": "superset"}',
                   "x": '{"category": "Z"}'}))  # fmt: skip
    rows = rows_for(["a", "d", "e", "b", "x"], images["red"])
    out = table(run(rows, {"type": "factuality"}, fake, tmp_path))
    assert [(out[k]["score"], out[k]["passed"]) for k in "adeb"] == [(1, True), (0, False), (1, True), (1, True)]
    assert out["e"]["details"]["category"] == "E" and out["x"]["status"] == "error"
    custom = table(run(rows[:4], {"type": "factuality", "scores": {"superset": 0, "E": 0.5}}, fake, tmp_path))
    assert [(custom[k]["score"], custom[k]["passed"]) for k in "adeb"] == [(1, True), (0, False), (0.5, True),
                                                                            (0, False)]  # fmt: skip
    text = fake.requests[0].text
    assert "[Expert]: two red circles" in text and "[Question]: Describe the image." in text
    with pytest.raises(ve.ConfigError, match="unknown factuality category"):
        ve.evaluate(rows, evaluators={"e": {"type": "factuality", "scores": {"F": 1}}})


def test_closed_qa_is_grounded_in_the_pixels(scripted, images, tmp_path) -> None:
    fake, use = scripted
    use(lambda req: "The image is red.\nY\nY" if req.images[0].colour == "red" else "It is not red.\nN\nN")
    rows = [{**r, "colour": "red"} for r in rows_for(["r"], images["red"]) + rows_for(["b"], images["blue"])]
    out = table(run(rows, {"type": "closed_qa", "criteria": "Is the image mostly {{ colour }}?"}, fake, tmp_path))
    assert (out["r"]["score"], out["r"]["passed"]) == (1.0, True)
    assert (out["b"]["score"], out["b"]["passed"]) == (0.0, False)
    assert all("[Criterion]: Is the image mostly red?" in r.text for r in fake.requests)
    use(lambda req: "I think so.")
    bad = table(run(rows[:1], {"type": "closed_qa", "criteria": "ok?"}, fake, tmp_path))
    assert bad["r"]["status"] == "error" and bad["r"]["details"]["reply"] == "I think so."


def geval_responder(score_reply: str, steps_reply: str = '{"steps": ["Look at the image", "Compare"]}') -> Any:
    return lambda req: steps_reply if "evaluation procedures" in req.text else score_reply


def test_g_eval_steps_are_asked_once_for_all_rows(scripted, images, tmp_path) -> None:
    fake, use = scripted
    use(geval_responder('{"score": 8, "reason": "accurate colours"}'))
    spec = {"type": "g_eval", "criteria": "Accuracy of colours", "logprobs": False}
    result = run(rows_for(["a", "b", "c", "d"], images["red"]), spec, fake, tmp_path)
    out = table(result)
    assert fake.calls == 5  # one step-1 call + one score call per row
    assert result.run_info["metrics"]["e"]["step_calls"] == 1
    steps_requests = [r for r in fake.requests if "evaluation procedures" in r.text]
    assert len(steps_requests) == 1 and steps_requests[0].images == []
    assert all(r.images and r.images[0].colour == "red" for r in fake.requests if r not in steps_requests)
    assert all(o["score"] == 0.8 and o["passed"] and o["details"]["mode"] == "single" for o in out.values())
    assert out["a"]["details"]["steps"] == ["Look at the image", "Compare"]
    assert "- Look at the image" in next(r for r in fake.requests if r not in steps_requests).text


def test_g_eval_criteria_list_is_averaged_with_dimensions(scripted, images, tmp_path) -> None:
    fake, use = scripted
    use(lambda req: '{"steps": ["s"]}' if "evaluation procedures" in req.text else
        ('{"score": 9, "reason": "r"}' if "Colours" in req.text else '{"score": 4, "reason": "r"}'))  # fmt: skip
    spec = {"type": "g_eval", "criteria": {"colour": "Colours", "count": "Counts"}, "logprobs": False}
    result = run(rows_for(["a", "b"], images["red"]), spec, fake, tmp_path)
    out = table(result)
    assert out["a"]["score"] == pytest.approx(0.65) and out["a"]["passed"] is False
    assert fake.calls == 2 + 4  # two criteria: two step-1 calls in all, two score calls per row
    dims = result.dimensions.filter(sample_id="a").sort("dimension")
    assert dims["dimension"].to_list() == ["colour", "count"] and dims["score"].to_list() == pytest.approx([0.9, 0.4])


def test_g_eval_errors_and_given_steps(scripted, images, tmp_path) -> None:
    fake, use = scripted
    use(by_marker({"hi": '{"score": 12, "reason": "r"}', "blank": '{"score": 5, "reason": ""}',
                   "ok": '{"score": 6, "reason": "r"}'}))  # fmt: skip
    spec = {"type": "g_eval", "criteria": "c", "steps": ["check the colour"], "logprobs": False}
    out = table(run(rows_for(["hi", "blank", "ok"], images["red"]), spec, fake, tmp_path))
    assert fake.calls == 3  # no step-1 call with given steps
    assert "outside 0..10" in out["hi"]["error"] and "blank" in out["blank"]["error"]
    assert (out["ok"]["score"], out["ok"]["passed"]) == (0.6, False)


def test_g_eval_logprob_weighting(fresh_fake, images, tmp_path) -> None:
    import math

    fresh_fake.push({"reply": '{"steps": ["s"]}'},
                    {"reply": '{"score": 8, "reason": "r"}', "top_logprobs": {"8": math.log(0.5), "6": math.log(0.25),
                                                                             "9": math.log(0.25)}})  # fmt: skip
    spec = {"type": "g_eval", "criteria": "c"}
    out = table(run(rows_for(["a"], images["red"]), spec, fresh_fake, tmp_path))["a"]
    assert out["score"] == pytest.approx((8 * 0.5 + 6 * 0.25 + 9 * 0.25) / 10)  # 0.775
    assert out["details"]["mode"] == "logprobs" and out["details"]["raw_score"] == 8
    assert fresh_fake.requests[1].body["top_logprobs"] == 20 and fresh_fake.requests[1].body["logprobs"] is True


def test_g_eval_n_samples_without_logprobs(fresh_fake, images, tmp_path) -> None:
    fresh_fake.push({"reply": '{"steps": ["s"]}'}, *[{"reply": f'{{"score": {v}, "reason": "r"}}'} for v in (6, 7, 9)])
    spec = {"type": "g_eval", "criteria": "c", "n_samples": 3, "logprobs": False}
    out = table(run(rows_for(["a"], images["red"]), spec, fresh_fake, tmp_path, max_concurrency=1))["a"]
    assert out["score"] == pytest.approx(22 / 30) and out["details"]["mode"] == "n_samples"
    assert sorted(out["details"]["raw_scores"]) == [6, 7, 9]


def test_context_recall_and_faithfulness(scripted, images, tmp_path) -> None:
    fake, use = scripted
    use(lambda req: (
        "1. Two circles. So [Attributed]\n2. They are red. So [Attributed]\n3. On grass. So [Not attributed]"
        if "classification:" in req.text else
        "There are two circles.\nThey are red.\nThe sky is green." if "statements:" in req.text and "context" not in
        req.text.split("statements:")[0] else "1. yes\n2. yes\n3. no\nFinal verdict for each statement in order: "
        "Yes. Yes. No."))  # fmt: skip
    rows = rows_for(["a"], images["red"], context=["A drawing.", "Circles, red."])
    recall = table(run(rows, {"type": "context_recall", "threshold": 0.6}, fake, tmp_path))["a"]
    assert (recall["score"], recall["passed"]) == (pytest.approx(2 / 3), True)
    assert "context: A drawing.\n\nCircles, red." in fake.requests[0].text and fake.requests[0].images
    assert "answer: two red circles" in fake.requests[0].text
    fake.reset()
    faith = table(run(rows, {"type": "context_faithfulness"}, fake, tmp_path))["a"]
    assert (faith["score"], faith["passed"], faith["threshold"]) == (pytest.approx(2 / 3), True, 0.5)  # promptfoo's
    assert faith["details"]["statements"] == ["There are two circles.", "They are red.", "The sky is green."]
    assert fake.requests[0].images == [] and fake.requests[1].images[0].colour == "red"
    assert "3. The sky is green." in fake.requests[1].text
    with pytest.raises(ve.ConfigError, match="'context'"):
        ve.evaluate(rows_for(["a"], images["red"]), evaluators={"e": {"type": "context_recall"}})


def test_select_best_swaps_orders_and_reports_position_bias_as_a_tie(scripted, images, tmp_path) -> None:
    fake, use = scripted
    use(lambda req: "1")  # always the candidate in position 1
    rows = rows_for(["a"], images["red"], output_b="Three blue squares.", output_c="Nothing.")
    spec = {"type": "select_best", "criteria": "Matches the image", "candidates": ["output", "output_b"]}
    result = run(rows, spec, fake, tmp_path)
    out = table(result)["a"]
    assert out["details"]["tie"] is True and out["details"]["winner"] is None
    assert (out["score"], out["passed"]) == (0.5, False)
    assert fake.calls == 2 and all(r.images[0].colour == "red" for r in fake.requests)
    assert sorted(result.dimensions["score"].to_list()) == [0.5, 0.5]
    assert result.run_info["metrics"]["e"] | {"wins": {}, "ties": 1, "tie_rate": 1.0} == result.run_info["metrics"]["e"]
    # a grader that really prefers the red description wins in every order
    use(lambda req: str(req.text.split("<Text")[1:].index(next(t for t in req.text.split("<Text")[1:]
                                                               if "OUT-a" in t))))  # fmt: skip
    spec3 = {**spec, "candidates": ["output", "output_b", "output_c"], "orders": 3}
    result3 = run(rows, spec3, fake, tmp_path)
    out3 = table(result3)["a"]
    assert result3.run_info["metrics"]["e"]["wins"] == {"output": 1} and result3.run_info["metrics"]["e"]["ties"] == 0
    assert out3["details"]["winner"] == "output" and (out3["score"], out3["passed"]) == (1.0, True)
    assert [p["order"][0] for p in out3["details"]["picks"]] == ["output", "output_b", "output_c"]


def test_select_best_list_column_and_bad_index(scripted, images, tmp_path) -> None:
    fake, use = scripted
    use(lambda req: "candidate 7")
    rows = rows_for(["a"], images["red"], sweep=["OUT-a", "x", "y"])
    out = table(run(rows, {"type": "select_best", "criteria": "c", "candidates": ["sweep"]}, fake, tmp_path))["a"]
    assert out["status"] == "error" and "outside 0..2" in out["error"]


@pytest.mark.parametrize(
    ("spec", "reply"),
    [({"type": "llm_rubric", "rubric": "r"}, '{"pass": true}'), ({"type": "factuality"}, '{"category": "C"}'),
     ({"type": "closed_qa", "criteria": "c"}, "Y"), ({"type": "g_eval", "criteria": "c", "steps": ["s"]},
     '{"score": 5, "reason": "r"}'), ({"type": "context_recall"}, "x [Attributed]"),
     ({"type": "context_faithfulness"}, "s1\nFinal verdict for each statement in order: Yes."),
     ({"type": "select_best", "criteria": "c", "candidates": ["output", "output_b"], "orders": 1}, "0")],
)  # fmt: skip
def test_images_reach_the_grader_for_every_type(scripted, images, tmp_path, spec, reply) -> None:
    fake, use = scripted
    use(lambda req: reply)
    rows = [{**r, "images": [images["red"], images["blue"]]} for r in rows_for(["a"], images["red"],
            context="ctx", output_b="b")]  # fmt: skip
    out = table(run(rows, spec, fake, tmp_path))["a"]
    assert out["status"] == "processed", out["error"]
    with_images = [r for r in fake.requests if r.images]
    assert with_images and all([(i.label, i.colour, i.shapes) for i in r.images] ==
                               [("Image 1", "red", 2), ("Image 2", "blue", 3)] for r in with_images)  # fmt: skip
    assert [i["label"] for i in out["details"]["images"]] == ["Image 1", "Image 2"]


def test_transport_failure_is_an_error_not_a_fail(fresh_fake, images, tmp_path) -> None:
    fresh_fake.push({"status": 400})
    out = table(run(rows_for(["a"], images["red"]), {"type": "closed_qa", "criteria": "c"}, fresh_fake, tmp_path))
    assert out["a"]["status"] == "error" and out["a"]["passed"] is None
    assert "grader call failed after 1 attempt(s)" in out["a"]["error"] and out["a"]["details"]["failures"]
    fresh_fake.push({"malformed": True}, {"malformed": True})
    spec = {"type": "llm_rubric", "rubric": "r"}
    out = table(run(rows_for(["a"], images["red"]), spec, fresh_fake, tmp_path, max_retries=1))
    assert out["a"]["status"] == "error" and "after 2 attempt(s)" in out["a"]["error"] and fresh_fake.calls == 3


def test_without_judge_rows_are_skipped_with_the_plan(images) -> None:
    rows = rows_for(["a"], images["red"], context="ctx")
    evaluators = {"g": {"type": "g_eval", "criteria": "c", "samples": 3},
                  "f": {"type": "context_faithfulness"}, "r": {"type": "llm_rubric", "rubric": "r"}}  # fmt: skip
    result = ve.evaluate(rows, evaluators=evaluators)
    out = {r["evaluator"]: json.loads(r["details"]) for r in result.results.to_dicts()}
    assert set(result.results["status"]) == {"skipped"}
    assert out["g"]["calls"] == 6 and out["g"]["request"]["image_count"] == 1  # (score + steps) x 3 samples
    assert out["f"]["calls"] == 2 and out["r"]["calls"] == 1
    assert result.run_info["metrics"]["g"]["planned_calls"] == 6


def test_shipped_graded_stack_plans_the_demo_offline() -> None:
    import yaml

    root = Path(__file__).resolve().parents[1]
    stack = yaml.safe_load((root / "conf/evaluators/graded.yaml").read_text())
    result = ve.evaluate(root / "datasets/demo/demo.jsonl", evaluators=stack)
    assert set(result.results["status"]) == {"skipped"}
    metrics = result.run_info["metrics"]
    assert all(metrics[name]["planned_calls"] > 0 for name in stack)
    planned = result.results.filter(pl.col("details").str.contains('"request"'))
    assert planned.height == 4 + 4 + 5 + 5 + 3 + 3 + 4  # the rows each evaluator's where selects


def test_promptfoo_style_custom_prompts_render_unchanged(scripted, images, tmp_path) -> None:
    fake, use = scripted
    use(lambda req: "(D) The submission disagrees.")
    prompt = "[Question]: {{input}}\n[Expert]: {{ideal}}\n[Submission]: {{completion}}\nPick (A)-(E)."
    out = table(run(rows_for(["a"], images["red"]), {"type": "factuality", "prompt": prompt}, fake, tmp_path))["a"]
    assert (out["details"]["category"], out["score"], out["passed"]) == ("D", 0.0, False)
    assert "[Expert]: two red circles\n[Submission]: OUT-a" in fake.requests[0].text
    assert fake.requests[0].images[0].colour == "red"  # the images follow a prompt that never mentions them
    use(lambda req: '{"score": 10, "reason": "all correct"}')
    geval = {"type": "g_eval", "criteria": "c", "steps": ["one", "two"], "logprobs": False,
             "prompt": "Steps:\n- {{steps}}\nRate 0 to {{maxScore}}.\n{{output}}"}  # fmt: skip
    out = table(run(rows_for(["a"], images["red"]), geval, fake, tmp_path))["a"]
    assert out["score"] == 1.0 and "Steps:\n- one\n- two\nRate 0 to 10." in fake.requests[-1].text
