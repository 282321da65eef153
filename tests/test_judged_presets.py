"""The judged benchmark presets of issue #30 (MMBench, MathVista, MM-Vet), end to end: each preset's dataset config
reads its fixture (the hub dataset's own column layout, ``tests/fixtures/benchmarks/make_judged_fixtures.py``; only
``path`` is overridden, as a user does for a local export), a fake candidate answers each row's ``reply`` and a fake
judge (both OpenAI-compatible servers on 127.0.0.1, told apart by the model asked) answers as scripted here. The
dataset-level numbers are checked against values worked out by hand in the comments, the requests against the
reference harness's prompts, and ``comparable`` against the judge model used.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml

import vision_eval as ve
from vision_eval.testing.fake_providers import FakeProviders, FakeRequest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "benchmarks"
CANDIDATE = "openai/candidate-model"


JUDGED = ["mmbench"]


def run_preset(
    name: str,
    candidate: Callable[[FakeRequest], str],
    judge: Callable[[FakeRequest], str],
    judge_model: str | None = None,
    output_dir: Path | None = None,
    **settings: Any,
) -> tuple[ve.EvalResult, list[FakeRequest]]:
    """The preset run against the fixture, the candidate and the judge answering through one fake server."""
    dataset = yaml.safe_load((ROOT / "conf" / "dataset" / f"{name}.yaml").read_text())
    dataset["path"] = str(FIXTURES / f"{name}.parquet")
    stack = yaml.safe_load((ROOT / "conf" / "evaluators" / f"{name}.yaml").read_text())

    def answer(request: FakeRequest) -> str:
        return candidate(request) if request.model == CANDIDATE.split("/", 1)[1] else judge(request)

    with FakeProviders(responder=answer) as server:
        for spec in stack.values():
            spec["judge"] = {**spec["judge"], "api_base": server.openai_base, "api_key": "k", "cache": False}
            if judge_model:
                spec["judge"]["model"] = judge_model
            spec.update(settings)
        model = {"model": CANDIDATE, "api_base": server.openai_base, "api_key": "k", "cache": False}
        run: dict[str, Any] = {"progress": False, **({"output_dir": str(output_dir)} if output_dir else {})}
        result = ve.evaluate(None, evaluators=stack, dataset=dataset, candidate=model, run=run)
        return result, list(server.requests)


def by_id(result: ve.EvalResult, evaluator: str) -> dict[str, dict[str, Any]]:
    rows = result.results.filter(pl.col("evaluator") == evaluator)
    return {row["sample_id"]: row for row in rows.iter_rows(named=True)}


# --- MMBench --------------------------------------------------------------------------------------------------

MMBENCH = pl.read_parquet(FIXTURES / "mmbench.parquet").drop("image")
MMBENCH_JUDGE = {"a small kitten": "C", "The pet": "A"}
"""What the fake judge answers for a reply the rules cannot read; any other: a reply the rules cannot read either."""


def mmbench_candidate(request: FakeRequest) -> str:
    """The row whose question and first option are in the request."""
    for row in MMBENCH.iter_rows(named=True):
        if row["question"] in request.text and f"\nA. {row['A']}\n" in request.text:
            return str(row["reply"])
    raise AssertionError(f"no fixture row for {request.text!r}")


def mmbench_judge(request: FakeRequest) -> str:
    prediction = request.text.rsplit("\nAnswer: ", 1)[1].split("\nYour output: ")[0]
    return MMBENCH_JUDGE.get(prediction, "I cannot decide")


def mmbench_run(**settings: Any) -> tuple[ve.EvalResult, list[FakeRequest]]:
    return run_preset("mmbench", mmbench_candidate, mmbench_judge, **settings)


def test_mmbench_preset_circular_with_the_reference_judge() -> None:
    result, requests = mmbench_run()
    rows = list(by_id(result, "mmbench").values())
    details = {MMBENCH["index"][int(r["sample_id"])]: json.loads(r["details"]) for r in rows}
    # The rules read A, "D." and "(C)" (right), B (right), C (wrong); the judge reads "a small kitten" as C (the
    # answer is B) and "The pet" as A (right); "hmm", "unsure" and "dunno" the judge cannot place three times.
    assert {i: (d["matched_by"], d.get("prediction")) for i, d in details.items()} == {
        0: ("rules", "A"),
        1000000: ("rules", "D"),
        2000000: ("rules", "C"),
        3000000: ("judge", "C"),
        1: ("rules", "B"),
        1000001: ("judge", "A"),
        2: ("rules", "C"),
        1000002: ("random", None),
        3: ("random", None),
        4: ("random", None),
    }
    judged = [r for r in requests if r.model == "gpt-4o-2024-11-20"]
    assert len(judged) == 2 + 3 * 3  # only where the rules fail; three attempts for an unplaceable reply
    assert all(r.body["temperature"] == 0 and r.body["max_tokens"] == 256 and not r.images for r in judged)
    metrics = result.run_info["metrics"]["mmbench"]
    # Circular, per question: Q0 wrong (its copy 3000000 read C, answer B); Q1 right; Q2 wrong (copy 2 reads C, so
    # its copy 1000002 draws nothing); Q3 draws first: random.Random(2680).randint(0, 4) = 4 -> E (answer A), wrong;
    # Q4 draws second: 3 -> D, right. Overall 2/5; image_scene Q0, Q1 -> 1/2; color_attribute Q2-Q4 -> 1/3.
    assert metrics["Overall"] == pytest.approx(2 / 5)
    assert metrics["categories"] == {
        "image_scene": {"accuracy": 0.5, "n": 2},
        "color_attribute": {"accuracy": pytest.approx(1 / 3), "n": 3},
    }
    assert metrics["l2_categories"]["Fine-grained Perception"] == {"accuracy": pytest.approx(1 / 3), "n": 3}
    assert (metrics["n"], metrics["questions"], metrics["unparseable"], metrics["matched_by_judge"]) == (10, 5, 3, 2)
    described = result.run_info["evaluators"]["mmbench"]
    assert described["comparable"] is True and described["models"] == ["openai/gpt-4o-2024-11-20"]
    assert described["reference_judge"] == "gpt-4o-2024-11-20"


def test_mmbench_prompt_as_lmms_eval_sends_it() -> None:
    _, requests = mmbench_run()
    asked = {r.text.split("\n\nImage 1:")[0] for r in requests if r.model == "candidate-model"}
    tail = "\nAnswer with the option's letter from the given choices directly."
    furry = "Look closely. Which animal is furry? There are several options:\nA. apple\nB. dog\nC. rock\nD. cup"
    assert furry + tail in asked
    assert "What colour is grass? There are several options:\nA. green\nB. pink\nC. grey" + tail in asked
    judge = next(r.text for r in requests if "Answer: The pet\n" in r.text)
    assert judge.endswith(
        "Example 3: \nQuestion: Which animal is furry??\nOptions: There are several options: \n"
        "A. dog\nB. rock\nC. cup\nD. apple\n\nAnswer: The pet\nYour output: "
    )


def test_mmbench_not_circular_and_another_judge_is_not_comparable() -> None:
    result, _ = mmbench_run(judge_model="openai/gpt-4o-mini", circular=False)
    metrics = result.run_info["metrics"]["mmbench"]
    # The original copies alone: Q0 A right, Q1 B right, Q2 C wrong, Q3 draws E (wrong), Q4 draws D (right): 3/5.
    assert metrics["Overall"] == pytest.approx(3 / 5)
    assert metrics["categories"]["image_scene"] == {"accuracy": 1.0, "n": 2}
    described = result.run_info["evaluators"]["mmbench"]
    assert described["comparable"] is False and described["models"] == ["openai/gpt-4o-mini"]
    assert len(described["not_comparable_because"]) == 2


def test_the_leaderboard_marks_a_run_with_another_judge_not_comparable(tmp_path: Path) -> None:
    from vision_eval.leaderboard import markdown, write_leaderboard

    run_preset("mmbench", mmbench_candidate, mmbench_judge, output_dir=tmp_path / "reference")
    run_preset("mmbench", mmbench_candidate, mmbench_judge, "openai/gpt-4o-mini", tmp_path / "mini")
    board, _ = write_leaderboard([tmp_path])
    comparable = dict(zip(board["judge"], board["comparable"], strict=True))
    assert comparable == {"openai/gpt-4o-2024-11-20": True, "openai/gpt-4o-mini": False}
    numbers = pl.read_parquet(tmp_path / "leaderboard_metrics.parquet").filter(pl.col("metric") == "Overall")
    assert dict(zip(numbers["judge"], numbers["comparable"], strict=True)) == comparable
    table = markdown(board)
    assert table.count("lmms_eval (not comparable)") == 1 and "gpt-4o-mini" in table


def test_vision_eval_list_shows_each_judged_preset_with_its_reference(capsys: Any) -> None:
    from vision_eval.commands import dispatch

    dispatch(["list"])
    shown = capsys.readouterr().out
    datasets = shown.split("Dataset presets")[1].split("\n\n")[0].splitlines()
    stacks = shown.split("Evaluator stacks")[1].split("\n\n")[0].splitlines()
    for name in JUDGED:
        dataset = next(line for line in datasets if line.split()[:1] == [name])
        stack = next(line for line in stacks if line.split()[:1] == [name])
        assert "lmms-eval's" in dataset and "protocol" in dataset and "judge" in dataset
        assert "protocol" in stack and "lmms-eval tasks/" in stack and "judge" in stack
