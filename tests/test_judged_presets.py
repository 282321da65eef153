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


JUDGED = ["mmbench", "mathvista", "mmvet"]


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


# --- MathVista ------------------------------------------------------------------------------------------------

MATHVISTA = pl.read_parquet(FIXTURES / "mathvista.parquet").drop("decoded_image")
MATHVISTA_JUDGE = {"The answer is (B).": "B", "There are 7 apples": "7", "between 2007 and 2008": "[2007, 2008]"}
"""What the fake judge extracts; any other reply: an empty extraction."""


def mathvista_candidate(request: FakeRequest) -> str:
    return next(str(r["reply"]) for r in MATHVISTA.iter_rows(named=True) if r["question"] in request.text)


def mathvista_judge(request: FakeRequest) -> str:
    response = request.text.removesuffix("\n\nExtracted answer: ").rsplit("\n\n", 1)[1]
    return MATHVISTA_JUDGE.get(response, "")


def test_mathvista_preset_extracts_normalises_and_aggregates() -> None:
    result, requests = run_preset("mathvista", mathvista_candidate, mathvista_judge)
    rows = by_id(result, "mathvista")
    details = {k: json.loads(v["details"]) for k, v in rows.items()}
    # 1: "8/11" is a choice (rules); 2: the judge extracts B -> blue; 3: "14" read as an integer; 4: the judge
    # extracts 7; 5: "0.6" read as a float, but round(0.6, 1.0) (the hub's float64 precision) fails -> None, wrong;
    # 6: the judge extracts the list; 7: the judge gives nothing five times -> "" -> the nearest choice (cat, the
    # first of two at distance 3), right; 8: an empty reply -> "" -> no integer -> None, wrong.
    assert {k: (d["extracted_by"], d["prediction"], rows[k]["score"]) for k, d in details.items()} == {
        "1": ("rules", "8/11", 1.0),
        "2": ("judge", "blue", 1.0),
        "3": ("rules", "14", 1.0),
        "4": ("judge", "7", 1.0),
        "5": ("rules", None, 0.0),
        "6": ("judge", "[2007, 2008]", 1.0),
        "7": ("judge", "cat", 1.0),
        "8": ("rules", None, 0.0),
    }
    judged = [r for r in requests if r.model == "gpt-4o-2024-11-20"]
    assert len(judged) == 3 + 5 and not any(r.images for r in judged)
    metrics = result.run_info["metrics"]["mathvista"]
    assert (metrics["average"], metrics["correct"]) == (6 / 8, 6)
    assert metrics["question_type"] == {
        "multi_choice": {"accuracy": 1.0, "correct": 3, "total": 3},
        "free_form": {"accuracy": 3 / 5, "correct": 3, "total": 5},
    }
    assert metrics["answer_type"]["float"] == {"accuracy": 0.0, "correct": 0, "total": 1}
    assert metrics["answer_type"]["integer"] == {"accuracy": 2 / 3, "correct": 2, "total": 3}
    assert metrics["category"]["general-vqa"] == {"accuracy": 0.5, "correct": 2, "total": 4}
    assert metrics["skills"] == {
        "algebraic reasoning": {"accuracy": 1.0, "correct": 1, "total": 1},
        "arithmetic reasoning": {"accuracy": 6 / 8, "correct": 6, "total": 8},
    }
    assert (metrics["n"], metrics["extracted_by_judge"], metrics["errors"]) == (8, 4, 0)
    assert result.run_info["evaluators"]["mathvista"]["comparable"] is True


def test_mathvista_prompt_as_lmms_eval_sends_it() -> None:
    _, requests = run_preset("mathvista", mathvista_candidate, mathvista_judge)
    asked = {r.text.split("\n\nImage 1:")[0] for r in requests if r.model == "candidate-model"}
    assert (
        "What colour is the car?\nA. red\nB. blue\nC. green\n"
        + ("Answer with the option's letter from the given choices directly.")
        in asked
    )
    assert "How long is the bar? (Unit: cm)\nAnswer the question using a single integer number." in asked
    assert (
        "What fraction faces the camera?\nAnswer the question using a single floating-point number with one "
        + ("decimal place.")
        in asked
    )
    judge = next(r.text for r in requests if "There are 7 apples" in r.text and r.model != "candidate-model")
    assert judge.startswith("Please read the following example. Then extract the answer from the model response")
    assert judge.endswith(
        "Extracted answer: B\n\nHint: Please answer the question.\nQuestion: How many apples are there?\n\n"
        "There are 7 apples\n\nExtracted answer: "
    )


# --- MM-Vet ---------------------------------------------------------------------------------------------------

MMVET = pl.read_parquet(FIXTURES / "mmvet.parquet").drop("image")
MMVET_JUDGE = {
    "x = -1 or x = -5": ["1.0"],
    "Paris": ["0.0"],
    "It says stop": ["0.8 because it reads the sign"],
    "A small kitten": ["Correctness: 1.0", "ignored", "0.9"],
    "three": [""],
    "It jokes.": ["7", "0.5"],
}
"""What the fake judge answers each reply, call after call (the last one repeats)."""


def mmvet_candidate(request: FakeRequest) -> str:
    return next(str(r["reply"]) for r in MMVET.iter_rows(named=True) if r["question"] in request.text)


def mmvet_judge() -> Callable[[FakeRequest], str]:
    calls: dict[str, int] = {}

    def answer(request: FakeRequest) -> str:
        reply = request.text.removesuffix(" |").rsplit(" | ", 1)[1]
        script, done = MMVET_JUDGE[reply], calls.get(reply, 0)
        calls[reply] = done + 1
        return script[min(done, len(script) - 1)]

    return answer


def test_mmvet_preset_grades_and_aggregates_by_capability() -> None:
    result, requests = run_preset("mmvet", mmvet_candidate, mmvet_judge())
    rows = by_id(result, "mmvet")
    # v1 1.0; v2 0.0; v3 "0.8 because..." -> 0.8; v4 "Correctness:" is no number -> temperature 0.5, one more call
    # (not read), then 0.9; v5 empty three times -> 0; v6 7 is out of 0..1 -> asked again -> 0.5.
    scores = {k: v["score"] for k, v in rows.items()}
    assert scores == {"v1": 1.0, "v2": 0.0, "v3": 0.8, "v4": 0.9, "v5": 0.0, "v6": 0.5}
    judged = [r for r in requests if r.model == "gpt-4o-2024-11-20"]
    assert len(judged) == 1 + 1 + 1 + 3 + 3 + 2 and not any(r.images for r in judged)
    kitten = [r.body["temperature"] for r in judged if "| A small kitten |" in r.text]
    assert kitten == [0, 0.5, 0.5] and all(r.body["max_tokens"] == 128 for r in judged)
    metrics = result.run_info["metrics"]["mmvet"]
    # Total (1 + 0 + 0.8 + 0.9 + 0 + 0.5) / 6; rec: v2, v4, v6 -> 1.4 / 3; ocr: v1, v3, v5, v6 -> 2.3 / 4;
    # know: v2, v6 -> 0.25; gen: v6; math: v1, v5 -> 0.5; no spat question. Integrations: exactly {ocr, math}: v1,
    # v5 -> 0.5; {rec, know}: v2; {ocr}: v3; {rec}: v4; {rec, gen, ocr, know}: v6.
    assert metrics["Total"] == pytest.approx(3.2 / 6)
    assert {k: (pytest.approx(v["score"]), v["n"]) for k, v in metrics["capabilities"].items()} == {
        "rec": (pytest.approx(1.4 / 3), 3),
        "ocr": (pytest.approx(2.3 / 4), 4),
        "know": (0.25, 2),
        "gen": (0.5, 1),
        "math": (0.5, 2),
    }
    assert {k: v["n"] for k, v in metrics["capability_integrations"].items()} == {
        "rec": 1,
        "ocr": 1,
        "math_ocr": 2,
        "rec_know": 1,
        "rec_gen_ocr_know": 1,
    }
    assert metrics["capability_integrations"]["math_ocr"]["score"] == 0.5
    asked = {r.text for r in requests if r.model == "candidate-model"}
    lead = "First please perform reasoning, and think step by step to provide best answer to the following question: "
    assert any(t.startswith(lead + "\n\nWhich city is this?") for t in asked)
    grading = next(r.text for r in judged if "| Paris |" in r.text)
    assert grading.endswith("| 1.0\n\nWhich city is this? | Rome | Paris |")
    assert "What is x in the equation? | -1 <AND> -5 | x = -1 or x = -5 |" in next(
        r.text for r in judged if r.text.endswith("| x = -1 or x = -5 |")
    )


@pytest.mark.parametrize(("name", "calls"), [("mmbench", 5), ("mathvista", 4), ("mmvet", 6)])
def test_a_dry_run_plans_a_judge_call_only_where_the_reference_makes_one(name: str, calls: int) -> None:
    dataset = yaml.safe_load((ROOT / "conf" / "dataset" / f"{name}.yaml").read_text())
    dataset["path"] = str(FIXTURES / f"{name}.parquet")
    dataset["columns"]["reply"] = "output"  # the replies in the export: no candidate
    stack = yaml.safe_load((ROOT / "conf" / "evaluators" / f"{name}.yaml").read_text())
    result = ve.evaluate(None, evaluators=stack, dataset=dataset, run={"progress": False, "dry_run": True})
    # MMBench: the five replies its rules cannot read; MathVista: the four its quick rules cannot extract (the
    # reference asks again on an empty reply: only the first call is planned); MM-Vet: every reply.
    planned = result.results["details"].str.json_path_match("$.calls").cast(pl.Int64).sum()
    assert planned == calls


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
