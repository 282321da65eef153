"""Agreement of the benchmark metrics' reference protocols with the references' own code, case for case.

The fixtures in ``tests/fixtures/benchmarks/protocols/`` hold seeded fuzzed replies (ragged white space,
punctuation, number words, articles, contractions, unicode) with the score each reference gave them, made by
running the reference's own code at the commit named in the fixture (``make_protocol_fixtures.py`` beside them
says how). Every case is scored here by the evaluator (through ``vision_eval.evaluate``) and compared: at least
99.5% must agree, and the cases that do not must be exactly the ones listed in :data:`KNOWN_DISAGREEMENTS` (with the
reason; docs/benchmarks.md lists them too). POPE's dataset-level numbers must equal the references' aggregations.
The commit each fixture was made at must be the one the evaluator names as its ``protocol_source``.
``python tests/test_benchmark_protocols.py`` prints the agreement table of docs/benchmarks.md.
"""

from __future__ import annotations

import gzip
import json
import sys
from functools import cache
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: the table

import vision_eval as ve
from vision_eval.registry import get as evaluator_class

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "benchmarks" / "protocols"
METRICS = ["relaxed_accuracy", "anls", "vqa_accuracy", "pope", "exact_count"]
MIN_CASES = 3000
MIN_AGREEMENT = 0.995
TOLERANCE = 1e-12  # a leave-one-out mean is a float sum in another order

KNOWN_DISAGREEMENTS: dict[tuple[str, str], dict[int, str]] = {}
"""(metric, protocol) -> {case number: why the evaluator and the reference differ on it}."""


@cache
def fixture(metric: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(header, cases) of a metric's fixture."""
    lines = gzip.decompress((FIXTURES / f"{metric}.jsonl.gz").read_bytes()).decode().splitlines()
    return json.loads(lines[0]), [json.loads(line) for line in lines[1:]]


def protocols_of(metric: str) -> list[str]:
    return [name for name in fixture(metric)[0]["references"] if name != "dataset"]


PROTOCOLS = [(metric, protocol) for metric in METRICS for protocol in protocols_of(metric)]


def rows_of(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for i, case in enumerate(cases):
        expected = json.dumps(case["answers"]) if "answers" in case else str(case["expected"])
        rows.append({"id": str(i), "output": case["output"], "expected_output": expected})
    return rows


def evaluator_scores(metric: str, protocol: str, cases: list[dict[str, Any]]) -> list[float | None]:
    spec = {"type": metric, "protocol": protocol}
    result = ve.evaluate(rows_of(cases), evaluators={"m": spec}, run={"progress": False})
    return result.results.sort(pl.col("sample_id").cast(pl.Int64))["score"].to_list()


@cache
def agreement(metric: str, protocol: str) -> tuple[int, dict[int, tuple[str, Any, float | None, float]]]:
    """(cases the reference took, disagreements by case number as (reply, answers, ours, reference))."""
    cases = fixture(metric)[1]
    taken = [i for i, case in enumerate(cases) if case.get(protocol) is not None]
    ours = evaluator_scores(metric, protocol, [cases[i] for i in taken])
    wrong = {}
    for i, got in zip(taken, ours, strict=True):
        case = cases[i]
        if got is None or abs(got - case[protocol]) > TOLERANCE:
            wrong[i] = (case["output"], case.get("answers", case.get("expected")), got, case[protocol])
    return len(taken), wrong


@pytest.mark.parametrize(("metric", "protocol"), PROTOCOLS)
def test_every_fuzzed_case_agrees_with_the_reference_code(metric: str, protocol: str) -> None:
    total, wrong = agreement(metric, protocol)
    assert total >= MIN_CASES
    assert len(wrong) <= (1 - MIN_AGREEMENT) * total, list(wrong.items())[:10]
    known = KNOWN_DISAGREEMENTS.get((metric, protocol), {})
    assert {i: wrong[i] for i in wrong if i not in known} == {}
    assert sorted(known) == sorted(wrong), "a listed disagreement is gone: update KNOWN_DISAGREEMENTS and the docs"


@pytest.mark.parametrize(("metric", "protocol"), PROTOCOLS)
def test_the_evaluator_names_the_commit_its_fixture_was_made_at(metric: str, protocol: str) -> None:
    reference = fixture(metric)[0]["references"][protocol]
    source = evaluator_class(metric).protocols[protocol]
    assert reference["repository"] in source and reference["commit"][:7] in source, source
    docs = (ROOT / "docs" / "benchmarks.md").read_text()
    assert reference["commit"][:7] in docs


def test_the_fuzzed_cases_are_not_trivial() -> None:
    """Each reference scores some cases right and many wrong, and each differs from lenient on many of them."""
    for metric, protocol in PROTOCOLS:
        cases = [case for case in fixture(metric)[1] if case.get(protocol) is not None]
        right = sum(case[protocol] > 0 for case in cases)
        assert 0.1 * len(cases) < right < 0.9 * len(cases), (metric, protocol, right)
        lenient = evaluator_scores(metric, "lenient", cases)
        differ = sum(a != case[protocol] for a, case in zip(lenient, cases, strict=True))
        assert differ > 0.02 * len(cases), (metric, protocol)


# --- published examples ---------------------------------------------------------------------------------------

PUBLISHED: list[tuple[str, str, str, Any, float]] = [
    # ChartQA paper, sec. 5.1: numbers within 5% of the gold answer, exact match otherwise.
    ("relaxed_accuracy", "official", "105", ["100"], 1.0),
    ("relaxed_accuracy", "official", "106", ["100"], 0.0),
    ("relaxed_accuracy", "official", "Yes", ["yes"], 1.0),
    ("relaxed_accuracy", "official", "12%", ["0.12"], 1.0),  # relaxed_correctness reads a percent as /100
    ("relaxed_accuracy", "official", "12\n", ["12%"], 0.0),  # pix2struct scores the text as given
    ("relaxed_accuracy", "lmms_eval", "0.0", ["0"], 0.0),  # a gold of 0 is compared as text
    ("relaxed_accuracy", "lmms_eval", "nan", ["nan"], 0.0),
    ("relaxed_accuracy", "lmms_eval", " Yes\n", ["yes"], 1.0),  # lmms-eval strips every reply
    ("relaxed_accuracy", "lmms_eval", "12%\n", ["0.12"], 1.0),
    # ANLS (Biten et al. 2019), threshold 0.5; the raw-length example.
    ("anls", "official", "i  a", ["a"], 0.5),
    ("anls", "official", "ITC Limited", ["itc limited"], 1.0),
    ("anls", "official", "abc", ["axy"], 0.0),
    ("anls", "official", "cigarettes ", ["cigarette"], 1 - 1 / 11),  # the RRC script divides by the raw reply
    ("anls", "lmms_eval", "cigarettes ", ["cigarette"], 0.9),  # lmms-eval strips the reply first
    # VQA accuracy (Antol et al. 2015, visualqa.org/evaluation): min(#humans that said it / 3, 1), averaged over
    # the 10 leave-one-out sets: 1, 2, 3, 4 matching annotators -> 0.3, 0.6, 0.9, 1.
    ("vqa_accuracy", "official", "red", ["red"] + ["blue"] * 9, 0.3),
    ("vqa_accuracy", "official", "red", ["red"] * 2 + ["blue"] * 8, 0.6),
    ("vqa_accuracy", "official", "red", ["red"] * 3 + ["blue"] * 7, 0.9),
    ("vqa_accuracy", "official", "red", ["red"] * 4 + ["blue"] * 6, 1.0),
    # vqaEval.py since a013f00: the reply is processed only when the annotators disagree, and then every answer is
    # processed too (the examples).
    ("vqa_accuracy", "official", "e.g.", ["e.g."] * 10, 1.0),
    ("vqa_accuracy", "official", "2", ["2", "2", "two", *["3"] * 7], 0.9),
    ("vqa_accuracy", "official", "Two", ["2"] * 10, 0.0),
    ("vqa_accuracy", "lmms_eval", "The Dog.", ["dog"] * 10, 1.0),
    ("vqa_accuracy", "lmms_eval", "10,000", ["10000"] * 10, 1.0),
    # POPE evaluate.py: "NO" and '"No"' are yes, "Yes, no doubt." is no.
    ("pope", "official", "NO", "no", 0.0),
    ("pope", "official", '"No"', "no", 0.0),
    ("pope", "official", "Yes, no doubt.", "yes", 0.0),
    ("pope", "official", "No, there is no dog.", "no", 1.0),
    ("pope", "official", "Yes", "yes", 1.0),
    ("pope", "lmms_eval", "Yes", "yes", 1.0),
    ("pope", "lmms_eval", "Yes.", "yes", 0.0),
    # lmms-eval countbench: the whole reply, a number word as digits.
    ("exact_count", "lmms_eval", "seven", 7, 1.0),
    ("exact_count", "lmms_eval", " 7 ", 7, 1.0),
    ("exact_count", "lmms_eval", "7.", 7, 0.0),
    ("exact_count", "lmms_eval", "There are 7.", 7, 0.0),
]


@pytest.mark.parametrize(("metric", "protocol", "reply", "expected", "score"), PUBLISHED)
def test_published_examples(metric: str, protocol: str, reply: str, expected: Any, score: float) -> None:
    case = {"output": reply, "answers" if isinstance(expected, list) else "expected": expected}
    assert evaluator_scores(metric, protocol, [case]) == [pytest.approx(score)]


# --- POPE dataset-level metrics -------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", ["official", "lmms_eval"])
def test_pope_dataset_metrics_equal_the_references(protocol: str) -> None:
    header, cases = fixture("pope")
    result = ve.evaluate(
        rows_of(cases), evaluators={"pope": {"type": "pope", "protocol": protocol}}, run={"progress": False}
    )
    ours = result.run_info["metrics"]["pope"]
    theirs = header["references"]["dataset"][protocol]
    assert {k: ours[k] for k in theirs} == pytest.approx(theirs, abs=TOLERANCE)
    assert ours["n"] == len(cases)
    if protocol == "official":
        unread = [c for c in cases if not {"No", "no", "not", "Yes", "yes"} & set(first_words(c["output"]))]
    else:
        unread = [c for c in cases if c["output"].lower().strip() not in ("yes", "no")]
    assert ours["unparseable"] == len(unread) > 0


def first_words(reply: str) -> list[str]:
    return reply.split(".")[0].replace(",", "").split(" ")


# --- the ChartQA preset against lmms-eval's pipeline ------------------------------------------------------------


def test_chartqa_preset_scores_what_lmms_eval_scores_on_the_same_replies() -> None:
    """The preset is lmms-eval's chartqa task (its split and prompt): on the fixture's replies its three numbers are
    lmms-eval's relaxed_overall, relaxed_human_split and relaxed_augmented_split (means of the per-question scores
    lmms-eval's own code gave, its ``mean`` aggregation)."""
    stack = yaml.safe_load((ROOT / "conf" / "evaluators" / "chartqa.yaml").read_text())
    cases = [case for case in fixture("relaxed_accuracy")[1] if case["lmms_eval"] is not None]
    rows = rows_of(cases)
    for i, row in enumerate(rows):
        row["type"] = "human_test" if i % 2 == 0 else "augmented_test"
    metrics = ve.evaluate(rows, evaluators=stack, run={"progress": False}).run_info["metrics"]

    def mean(selected: list[dict[str, Any]]) -> float:
        return sum(case["lmms_eval"] for case in selected) / len(selected)

    assert metrics["relaxed_accuracy"]["relaxed_accuracy"] == pytest.approx(mean(cases), abs=TOLERANCE)
    assert metrics["relaxed_accuracy_human"]["relaxed_accuracy"] == pytest.approx(mean(cases[::2]), abs=TOLERANCE)
    assert metrics["relaxed_accuracy_augmented"]["relaxed_accuracy"] == pytest.approx(mean(cases[1::2]), abs=TOLERANCE)


# --- the agreement table --------------------------------------------------------------------------------------


def agreement_table() -> str:
    """Markdown: per metric and protocol, the fuzzed cases, how many agree, and the reference's commit."""
    lines = ["| metric | protocol | reference (file @ commit) | cases | agreeing | % |", "|---|---|---|---|---|---|"]
    for metric, protocol in PROTOCOLS:
        total, wrong = agreement(metric, protocol)
        ref = fixture(metric)[0]["references"][protocol]
        where = f"{ref['repository']} `{ref['file']}` @{ref['commit'][:7]}"
        share = f"{100 * (total - len(wrong)) / total:.2f}"
        lines.append(f"| {metric} | {protocol} | {where} | {total} | {total - len(wrong)} | {share} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(agreement_table())
    for metric, protocol in PROTOCOLS:
        for i, (reply, answers, ours, theirs) in agreement(metric, protocol)[1].items():
            print(f"{metric} {protocol} #{i}: {reply!r} {answers!r} ours={ours} reference={theirs}")
