"""Judge reliability end to end: ``samples: k``, ``panel``, and calibration against human labels."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from conftest import RED, shape_png

import vision_eval as ve


@pytest.fixture
def red(tmp_path: Path) -> str:
    (tmp_path / "red.png").write_bytes(shape_png(RED, 2))
    return str(tmp_path / "red.png")


def judge(fake: Any, tmp_path: Path, **extra: Any) -> dict[str, Any]:
    return {"model": "openai/gpt-4o-mini", "api_base": fake.openai_base, "api_key": "k",
            "cache_dir": str(tmp_path / "cache"), "max_concurrency": 1, **extra}  # fmt: skip


def rows(keys: list[str], image: str, **columns: list[Any]) -> list[dict[str, Any]]:
    out = [{"id": k, "input": "Describe.", "output": f"OUT-{k}", "images": [image]} for k in keys]
    for name, values in columns.items():
        for row, value in zip(out, values, strict=True):
            row[name] = value
    return out


def rubric(score: float, passed: bool = True) -> dict[str, str]:
    return {"reply": json.dumps({"reason": "r", "pass": passed, "score": score})}


def evaluate(data: list[dict], spec: dict, fake: Any, tmp_path: Path, **judge_extra: Any) -> Any:
    return ve.evaluate(data, evaluators={"e": spec}, judge=judge(fake, tmp_path, **judge_extra),
                       run={"concurrency": 1})  # fmt: skip


def test_samples_mean_spread_and_distinct_cache_entries(fresh_fake, red, tmp_path) -> None:
    fresh_fake.push(rubric(0.2), rubric(0.5), rubric(0.8))
    spec = {"type": "llm_rubric", "rubric": "r", "samples": 3}
    first = evaluate(rows(["a"], red), spec, fresh_fake, tmp_path).results.row(0, named=True)
    assert fresh_fake.calls == 3
    assert first["score"] == pytest.approx(0.5) and first["passed"] is True
    assert first["score_std"] == pytest.approx(math.sqrt(0.06))
    samples = json.loads(first["details"])["samples"]
    assert (samples["k"], samples["valid"], samples["errors"]) == (3, 3, [])
    assert samples["temperature"] == {MINI: 0.0}
    assert (samples["min"], samples["max"]) == (0.2, 0.8) and sorted(samples["scores"]) == [0.2, 0.5, 0.8]
    fresh_fake.reset()  # a re-run hits the cache for every sample, each with its own reply
    again = evaluate(rows(["a"], red), spec, fresh_fake, tmp_path).results.row(0, named=True)
    assert fresh_fake.calls == 0 and again["cached"] is True
    assert again["score"] == pytest.approx(0.5) and again["score_std"] == pytest.approx(math.sqrt(0.06))


def test_samples_errors_are_excluded_and_counted(fresh_fake, red, tmp_path) -> None:
    fresh_fake.push(rubric(0.4), {"reply": "no json here"}, rubric(0.8))
    spec = {"type": "llm_rubric", "rubric": "r", "samples": 3}
    row = evaluate(rows(["a"], red), spec, fresh_fake, tmp_path, cache=False).results.row(0, named=True)
    assert row["status"] == "processed" and row["score"] == pytest.approx(0.6)
    samples = json.loads(row["details"])["samples"]
    assert samples["valid"] == 2 and len(samples["errors"]) == 1 and "no JSON" in samples["errors"][0]
    fresh_fake.push(rubric(0.4), {"reply": "no json"}, {"status": 400})
    bad = evaluate(rows(["a"], red), spec, fresh_fake, tmp_path, cache=False).results.row(0, named=True)
    assert bad["status"] == "error" and bad["score"] is None and bad["passed"] is None
    assert bad["error"].startswith("1 valid judgement(s) of 3, 2 needed")
    assert len(json.loads(bad["details"])["errors"]) == 2


def test_samples_majority_and_median(fresh_fake, red, tmp_path) -> None:
    spec = {"type": "closed_qa", "criteria": "c", "samples": 3, "aggregate": "majority"}
    fresh_fake.push({"reply": "Y"}, {"reply": "N"}, {"reply": "N"})
    row = evaluate(rows(["a"], red), spec, fresh_fake, tmp_path, cache=False).results.row(0, named=True)
    assert (row["score"], row["passed"]) == (0.0, False)
    fresh_fake.push({"reply": "Y"}, {"reply": "N"}, {"reply": "Y"})
    row = evaluate(rows(["a"], red), {**spec, "aggregate": "mean"}, fresh_fake, tmp_path, cache=False).results
    assert (row["score"][0], row["passed"][0]) == (pytest.approx(2 / 3), True)
    geval = {"type": "g_eval", "criteria": "c", "steps": ["s"], "samples": 3, "aggregate": "median", "logprobs": False}
    fresh_fake.push(*[{"reply": json.dumps({"score": v, "reason": "r"})} for v in (9, 2, 6)])
    row = evaluate(rows(["a"], red), geval, fresh_fake, tmp_path, cache=False).results
    assert (row["score"][0], row["passed"][0]) == (pytest.approx(0.6), False)  # median 6/10 < 0.7


MINI, BIG = "openai/gpt-4o-mini", "openai/gpt-4o"
PANEL_SCORES = {MINI: {"a": (0.2, False), "b": (0.6, True), "c": (1.0, True)},
                BIG: {"a": (0.4, True), "b": (0.6, True), "c": (0.8, True)}}  # fmt: skip


def panel_responder(request: Any) -> str:
    key = request.text.split("OUT-")[1][0]
    score, passed = PANEL_SCORES[f"openai/{request.model}"][key]
    return json.dumps({"reason": "r", "pass": passed, "score": score})


def test_panel_dimensions_aggregate_alpha_and_per_model_calibration(fresh_fake, red, tmp_path) -> None:
    fresh_fake.responder = panel_responder
    try:
        spec = {"type": "llm_rubric", "rubric": "r", "panel": [MINI, BIG], "human_score": "human",
                "human_scale": [1, 3]}  # fmt: skip
        result = evaluate(rows(["a", "b", "c"], red, human=[1, 2, 3]), spec, fresh_fake, tmp_path, cache=False)
    finally:
        fresh_fake.responder = None
    out = {r["sample_id"]: r for r in result.results.to_dicts()}
    assert [out[k]["score"] for k in "abc"] == pytest.approx([0.3, 0.6, 0.9])
    assert [out[k]["passed"] for k in "abc"] == [False, True, True]  # 1 of 2 verdicts is no strict majority
    assert out["a"]["score_std"] == pytest.approx(0.1)
    dims = result.dimensions.filter(sample_id="a").sort("dimension")
    assert dims["dimension"].to_list() == [f"model:{BIG}", f"model:{MINI}"]
    assert dims["score"].to_list() == pytest.approx([0.4, 0.2])
    panel = result.run_info["metrics"]["e"]["panel"]
    # interval: units (.2,.4) (.6,.6) (1,.8): Do = .16/6, De = 4.8/30 -> 1 - (.16/6)/.16 = 5/6
    assert panel["alpha_interval"] == pytest.approx(5 / 6)
    # nominal verdicts (F,T) (T,T) (T,T): Do = 2/6, De = 10/30 -> 0
    assert panel["alpha_nominal"] == pytest.approx(0.0)
    assert panel["mean_score"] == pytest.approx({MINI: 0.6, BIG: 0.6})
    calibration = result.tables["calibration"]
    by_dim = {r["dimension"]: r for r in calibration.to_dicts()}
    assert by_dim[None]["spearman"] == pytest.approx(1.0) and by_dim[f"model:{MINI}"]["kendall"] == pytest.approx(1.0)
    assert set(calibration["evaluator"]) == {"e"}


def test_panel_member_failure_and_strict_majority(fresh_fake, red, tmp_path) -> None:
    third = "openai/gpt-4.1-mini"
    fresh_fake.push(rubric(0.9, True), {"status": 400}, rubric(0.1, False))
    spec = {"type": "llm_rubric", "rubric": "r", "panel": [MINI, BIG, third], "panel_aggregate": "majority"}
    row = evaluate(rows(["a"], red), spec, fresh_fake, tmp_path, cache=False).results.row(0, named=True)
    assert row["status"] == "processed" and row["passed"] is False  # 1 of 2 valid verdicts
    details = json.loads(row["details"])
    assert len(details["panel"]["errors"]) == 1 and next(iter(details["panel"]["errors"].values())).startswith("grader")
    fresh_fake.push({"status": 400}, {"status": 400}, rubric(0.1, False))
    row = evaluate(rows(["a"], red), spec, fresh_fake, tmp_path, cache=False).results.row(0, named=True)
    assert row["status"] == "error" and row["error"].startswith("1 valid panel judgement(s) of 3, 2 needed")


def test_calibration_against_human_scores_and_pass_labels(fresh_fake, red, tmp_path) -> None:
    replies = {"a": (0.1, False), "b": (0.4, True), "c": (0.35, True), "d": (0.8, True)}
    fresh_fake.responder = lambda req: json.dumps(
        {
            "reason": "r",
            "pass": replies[req.text.split("OUT-")[1][0]][1],
            "score": replies[req.text.split("OUT-")[1][0]][0],
        }
    )
    try:
        data = rows(list("abcd"), red, human=[1, 2, 3, 4], ok=["fail", "fail", "pass", "pass"])
        spec = {"type": "llm_rubric", "rubric": "r", "human_score": "human", "human_pass": "ok", "human_scale": [1, 4]}
        result = evaluate(data, spec, fresh_fake, tmp_path, cache=False)
    finally:
        fresh_fake.responder = None
    row = result.tables["calibration"].row(0, named=True)
    assert row["dimension"] is None and row["n"] == 4
    assert row["spearman"] == pytest.approx(0.8) and row["kendall"] == pytest.approx(4 / 6)
    # judge levels [0,1,1,2] vs human [0,1,2,3] on 4 levels, quadratic: 1 - 0.5 / 2
    assert row["kappa"] == pytest.approx(0.75) and row["kappa_levels"] == 4
    assert row["accuracy"] == pytest.approx(0.75) and row["pass_n"] == 4  # passed F,T,T,T vs F,F,T,T
    assert result.run_info["metrics"]["e"]["calibration"][0]["spearman"] == pytest.approx(0.8)
    out = result.write(tmp_path / "run")
    assert (out / "calibration.parquet").is_file()


def test_calibration_with_a_label_column(fresh_fake, red, tmp_path) -> None:
    replies = {"a": rubric(0.9, True), "b": rubric(0.2, False), "c": rubric(0.7, True), "d": rubric(0.6, True)}
    fresh_fake.responder = lambda req: replies[req.text.split("OUT-")[1][0]]["reply"]
    try:
        data = rows(list("abcd"), red, label=[True, False, False, True])
        spec = {"type": "llm_rubric", "rubric": "r", "human_score": "label"}
        row = evaluate(data, spec, fresh_fake, tmp_path, cache=False).tables["calibration"].row(0, named=True)
    finally:
        fresh_fake.responder = None
    # verdicts T,F,T,T vs labels T,F,F,T: accuracy 3/4; Cohen's kappa: po = .75, pe = .75*.5 + .25*.5 = .5 -> .5
    assert row["accuracy"] == pytest.approx(0.75) and row["kappa"] == pytest.approx(0.5) and row["kappa_levels"] == 2


def test_missing_human_column_is_reported_not_fatal(fresh_fake, red, tmp_path) -> None:
    fresh_fake.push(rubric(0.9))
    spec = {"type": "llm_rubric", "rubric": "r", "human_score": "rating"}
    result = evaluate(rows(["a"], red), spec, fresh_fake, tmp_path, cache=False)
    assert result.results["status"][0] == "processed"
    assert "rating" in result.run_info["metrics"]["e"]["calibration_warning"]
    assert result.tables["calibration"]["n"].to_list() == [0]


def test_judge_files_get_samples_and_panel_through_the_graded_base(fresh_fake, red, tmp_path) -> None:
    spec = {"type": "llm_judge", "prompt": "image-description",
            "samples": 2, "panel": [MINI, BIG]}  # fmt: skip
    data = [{"id": "a", "input": "Describe.", "output": "Two red circles.", "images": [red]},
            {"id": "b", "input": "Describe.", "output": "A green square.", "images": [red]}]  # fmt: skip
    result = evaluate(data, spec, fresh_fake, tmp_path, cache=False)
    assert fresh_fake.calls == 8  # 2 rows x 2 models x 2 samples
    out = {r["sample_id"]: r for r in result.results.to_dicts()}
    # the fake's verdict is grounded in the pixels: 0.9 when the text names the red of the image, else 0.3
    assert (out["a"]["score"], out["a"]["passed"]) == (pytest.approx(0.9), True)
    assert (out["b"]["score"], out["b"]["passed"]) == (pytest.approx(0.3), False)
    assert out["a"]["type"] == "llm_judge" and out["a"]["threshold"] == 0.7 and out["a"]["score_std"] == 0
    dims = result.dimensions.filter(sample_id="a")
    assert set(dims["dimension"]) == {f"model:{MINI}", f"model:{BIG}", "visual_accuracy", "completeness", "clarity",
                                      "relevance"}  # fmt: skip
    assert dims.filter(dimension="visual_accuracy")["weight"].to_list() == [0.4]
    assert result.run_info["metrics"]["e"]["panel"]["alpha_interval"] == pytest.approx(1.0)
