"""Parity of the judged benchmark presets with their references (lmms-eval), case for case and over one dataset.

The fixtures in ``tests/fixtures/benchmarks/parity/`` were made by running lmms-eval's own code on seeded fuzzed
replies, its judge calls answered by a scripted judge (``make_judged_parity.py`` there says how). Here the same
replies are read by vision_eval's rules (every case must agree), and the fixture's dataset is run end to end
through the evaluator with a fake judge server following the same script, keyed by the exact prompt the reference
built (a prompt that differs finds no script and fails the run): the dataset-level numbers must equal the
reference's.
"""

from __future__ import annotations

import json
from collections import defaultdict
from functools import cache
from typing import Any

import pytest
from test_benchmark_parity import fixture  # the fixtures' one loader

import vision_eval as ve
from vision_eval.evaluators.benchmarks.mmbench import present_options, read_option
from vision_eval.testing.fake_providers import FakeProviders, FakeRequest


def scripted_judge(scripts: dict[str, list[str]], seen: dict[str, list[float]] | None = None) -> Any:
    """A responder answering each prompt with the next reply scripted for it (the last one repeats); ``seen`` gets
    each prompt's temperatures, call after call."""
    calls: dict[str, int] = defaultdict(int)

    def answer(request: FakeRequest) -> str:
        if seen is not None:
            seen.setdefault(request.text, []).append(request.body.get("temperature"))
        replies = scripts[request.text]
        reply = replies[min(calls[request.text], len(replies) - 1)]
        calls[request.text] += 1
        return reply

    return answer


# --- MMBench --------------------------------------------------------------------------------------------------


def mmbench_agreement() -> tuple[int, int, list[dict[str, Any]]]:
    cases = fixture("mmbench")["cases"]
    options = [dict(zip("ABCD", case["options"], strict=True)) for case in cases]
    wrong = [
        case
        for case, row in zip(cases, options, strict=True)
        if read_option(case["reply"].strip(), present_options(row)) != case["read"]
    ]
    return len(cases), len(cases) - len(wrong), wrong


# test_benchmark_rules.py checks mmbench_agreement (in-process, where the mutation run sees it).


@cache
def mmbench_dataset_run() -> ve.EvalResult:
    dataset = fixture("mmbench")["dataset"]
    scripts = {row["judge_prompt"]: row["judge_replies"] for row in dataset["rows"]}
    rows = [
        {
            "id": str(row["index"]),
            "index": row["index"],
            "input": row["question"],
            "output": row["reply"],
            "expected_output": row["answer"],
            **{letter: row[letter] for letter in "ABCD"},
            "category": row["category"],
            "L2-category": row["L2-category"],
        }
        for row in dataset["rows"]
    ]
    with FakeProviders(responder=scripted_judge(scripts)) as server:
        judge = {"model": "openai/gpt-4o-2024-11-20", "api_base": server.openai_base, "api_key": "k", "cache": False}
        spec = {"type": "mmbench", "judge": {**judge, "temperature": 0, "max_tokens": 256}}
        return ve.evaluate(rows, evaluators={"m": spec}, run={"progress": False})


def test_mmbench_each_row_read_as_lmms_eval_reads_it() -> None:
    reference = {str(row["index"]): row["reference_read"] for row in fixture("mmbench")["dataset"]["rows"]}
    rows = mmbench_dataset_run().results.iter_rows(named=True)
    ours = {row["sample_id"]: json.loads(row["details"]) for row in rows}
    read = {k: "random" if d["matched_by"] == "random" else d["prediction"] for k, d in ours.items()}
    assert sum(d["matched_by"] == "judge" for d in ours.values()) > 100  # the judge's part is exercised
    assert read == reference


def test_mmbench_dataset_numbers_equal_lmms_eval() -> None:
    reference = fixture("mmbench")["dataset"]
    result = mmbench_dataset_run()
    metrics = result.run_info["metrics"]["m"]
    assert metrics["errors"] == 0 and metrics["n"] == len(reference["rows"])
    assert metrics["Overall"] == pytest.approx(reference["Overall"], abs=1e-12)
    for ours, theirs in (("categories", "categories"), ("l2_categories", "l2_categories")):
        assert {k: v["accuracy"] for k, v in metrics[ours].items()} == pytest.approx(reference[theirs], abs=1e-12)


# --- MathVista ------------------------------------------------------------------------------------------------

MATHVISTA_COLUMNS = ("query", "choices", "question_type", "answer_type", "precision", "metadata")


@cache
def mathvista_run() -> ve.EvalResult:
    cases = fixture("mathvista")["cases"]
    scripts = {case["judge_prompt"]: case["judge_replies"] for case in cases}
    rows = [
        {"id": case["pid"], "output": case["reply"], "expected_output": case["answer"]}
        | {column: case[column] for column in MATHVISTA_COLUMNS}
        for case in cases
    ]
    with FakeProviders(responder=scripted_judge(scripts)) as server:
        judge = {"model": "openai/gpt-4o-2024-11-20", "api_base": server.openai_base, "api_key": "k", "cache": False}
        spec = {"type": "mathvista", "judge": {**judge, "temperature": 0, "max_tokens": 256}}
        return ve.evaluate(rows, evaluators={"m": spec}, run={"progress": False})


def mathvista_agreement() -> tuple[int, int, list[dict[str, Any]]]:
    cases = fixture("mathvista")["cases"]
    ours = {row["sample_id"]: row for row in mathvista_run().results.iter_rows(named=True)}
    wrong = []
    for case in cases:
        row = ours[case["pid"]]
        details = json.loads(row["details"]) if row["details"] else {}
        read = (details.get("extraction"), details.get("prediction"), row["score"] == 1.0)
        asked = details.get("extracted_by") == "judge"
        if read != (case["extraction"], case["prediction"], case["true_false"]) or asked != case["asked_judge"]:
            wrong.append({"case": case, "ours": details})
    return len(cases), len(cases) - len(wrong), wrong


def test_mathvista_extraction_and_normalisation_agree_with_lmms_eval() -> None:
    total, agreeing, wrong = mathvista_agreement()
    assert total >= 3000
    assert sum(case["asked_judge"] for case in fixture("mathvista")["cases"]) > 1000  # the judge's part is exercised
    assert agreeing == total, wrong[:3]


def test_mathvista_dataset_numbers_equal_lmms_eval() -> None:
    reference = fixture("mathvista")["dataset"]
    metrics = mathvista_run().run_info["metrics"]["m"]
    assert metrics["errors"] == 0
    assert round(metrics["average"] * 100, 2) == reference["average"]
    for key, groups in reference["groups"].items():
        ours = {
            value: {"accuracy": f"{v['accuracy'] * 100:.2f}", "correct": v["correct"], "total": v["total"]}
            for value, v in metrics[key].items()
        }
        assert ours == groups, key


# --- MM-Vet ---------------------------------------------------------------------------------------------------


@cache
def mmvet_run() -> tuple[ve.EvalResult, dict[str, list[float]]]:
    cases = fixture("mmvet")["cases"]
    scripts = {case["judge_prompt"]: case["judge_replies"] for case in cases}
    rows = [
        {"id": case["question_id"], "input": case["question"], "output": case["reply"]}
        | {"expected_output": case["answer"], "capability": case["capability"]}
        for case in cases
    ]
    seen: dict[str, list[float]] = {}
    with FakeProviders(responder=scripted_judge(scripts, seen)) as server:
        judge = {"model": "openai/gpt-4o-2024-11-20", "api_base": server.openai_base, "api_key": "k", "cache": False}
        spec = {"type": "mmvet", "judge": {**judge, "temperature": 0, "max_tokens": 128}}
        return ve.evaluate(rows, evaluators={"m": spec}, run={"progress": False}), seen


def mmvet_agreement() -> tuple[int, int, list[dict[str, Any]]]:
    """Cases where the score, the number of judge calls and their temperatures are the reference's."""
    cases = fixture("mmvet")["cases"]
    result, seen = mmvet_run()
    scores = {row["sample_id"]: row["score"] for row in result.results.iter_rows(named=True)}
    wrong = [
        case
        for case in cases
        if scores[case["question_id"]] != case["score"] or seen.get(case["judge_prompt"]) != case["temperatures"]
    ]
    return len(cases), len(cases) - len(wrong), wrong


def test_mmvet_grades_agree_with_lmms_eval_call_for_call() -> None:
    total, agreeing, wrong = mmvet_agreement()
    assert total >= 3000
    assert sum(case["calls"] > 1 for case in fixture("mmvet")["cases"]) > 1000  # the retries are exercised
    assert agreeing == total, wrong[:3]


def test_mmvet_dataset_numbers_equal_lmms_eval() -> None:
    reference = fixture("mmvet")["dataset"]
    metrics = mmvet_run()[0].run_info["metrics"]["m"]
    assert metrics["errors"] == 0
    assert metrics["Total"] * 100 == pytest.approx(reference["Total"], abs=1e-9)
    ours = {**metrics["capabilities"], **metrics["capability_integrations"]}
    printed = {k: v for k, v in reference["printed"].items() if k in ours or v != "0.00"}
    assert {k: f"{ours[k]['score'] * 100:.2f}" for k in printed} == printed


AGREEMENTS = {"mmbench": mmbench_agreement, "mathvista": mathvista_agreement, "mmvet": mmvet_agreement}

if __name__ == "__main__":
    for name, measure in AGREEMENTS.items():
        total, agreeing, _ = measure()
        source = f"{fixture(name)['reference']} @{fixture(name)['commit'][:7]}"
        print(f"| {name} | lmms_eval | {source} | {total} | {agreeing} | {agreeing / total:.2%} |")
