"""Agreement of the benchmark metrics' reference protocols with the references, case for case.

For every metric and protocol (``official``, ``lmms_eval``) a seeded set of several thousand edge cases is scored by
the evaluator (through ``vision_eval.evaluate``) and by the plain reference implementations in
``tests/protocol_references.py`` (written from the published definitions). The published examples must
all agree; the generated sets must agree on at least 99.5% of the cases (they agree on all). POPE's dataset-level
metrics must equal the references'. ``python tests/test_benchmark_protocols.py`` prints the agreement table.
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import vision_eval as ve
from tests import protocol_references as ref

CASES = 3000
TOLERANCE = 1e-12  # leave-one-out means are float sums in a different order


# --- generated edge cases -------------------------------------------------------------------------------------

NUMBER_FORMS: list[Callable[[float], str]] = [
    lambda v: f"{v:g}",
    lambda v: f"{v:.2f}",
    lambda v: f"{v:,.0f}",  # thousands commas
    lambda v: f"{v:g}%",
    lambda v: f"{v:g} %",
    lambda v: f"{v:g}%%",
    lambda v: f"${v:g}",  # currency
    lambda v: f"{v:g} kg",  # units
    lambda v: f"{v:g}m",
    lambda v: f" {v:g} ",  # whitespace Python's float() strips
    lambda v: f"{v:g}\n",
    lambda v: f"{v:e}",
    lambda v: f"+{v:g}",
    lambda v: f"{v:g}.",
    lambda v: f"{int(v):_}",  # Python's float() reads underscores
    lambda v: "".join(chr(0x660 + int(d)) if d.isdigit() else d for d in f"{v:g}"),  # Arabic-Indic digits
]
TEXT_ANSWERS = ["Yes", "yes", "YES", " yes", "No", "United States", "united states", "Straße", "STRASSE", "ΣΑΣ", "σας"]
TEXT_ANSWERS += ["İ", "i̇", "nan", "NaN", "inf", "-inf", "Infinity", "0", "0.0", "-0", "0%", "00", "", " ", "N/A", "1e3"]


def chartqa_cases(rng: random.Random) -> list[tuple[str, list[str]]]:
    cases = []
    for _ in range(CASES):
        kind = rng.random()
        if kind < 0.35:  # a number near the label: exactly 5%, just inside, just outside
            gold = rng.choice([20, 100, 0.2, 3, 12.5, 1000, 7, 0.05, 250, 40]) * rng.choice([1, -1, 10])
            factor = rng.choice([1, 1.05, 0.95, 1.0499, 1.0501, 0.9501, 1.1, 1.049999999, 1.05000001])
            prediction, targets = rng.choice(NUMBER_FORMS)(gold * factor), [rng.choice(NUMBER_FORMS)(gold)]
        elif kind < 0.6:  # both sides in any number form
            value = rng.choice([0, 0, 1, 12, 1234, 0.5, 12.25, 5000, 1e6])
            prediction, targets = rng.choice(NUMBER_FORMS)(value), [rng.choice(NUMBER_FORMS)(value)]
        elif kind < 0.85:  # texts, zero labels, special floats
            prediction, targets = rng.choice(TEXT_ANSWERS), [rng.choice(TEXT_ANSWERS)]
        else:  # several labels, duplicates included
            pool = [rng.choice(TEXT_ANSWERS), rng.choice(NUMBER_FORMS)(rng.choice([0, 12, 100]))]
            targets = [rng.choice(pool) for _ in range(rng.randint(2, 4))]
            prediction = rng.choice([*pool, rng.choice(TEXT_ANSWERS)])
        cases.append((prediction, targets))
    return cases


WORDS = ["itc", "limited", "The", "tobacco", "institute", "1/8/93", "$ 4,500", "cigarette", "Straße", "İstanbul"]
WORDS += ["ﬁle", "naïve", "a", "x", "12", "Σοφία"]
SPACES = [" ", "  ", "\t", "\n", "\x1c", "\u00a0", "\u3000"]


def _edit(text: str, rng: random.Random, edits: int) -> str:
    chars = list(text)
    for _ in range(edits):
        where = rng.randint(0, len(chars))
        action = rng.choice(["insert", "delete", "replace"])
        if action == "insert" or not chars:
            chars.insert(where, rng.choice("abxyz "))
        elif action == "delete":
            del chars[min(where, len(chars) - 1)]
        else:
            chars[min(where, len(chars) - 1)] = rng.choice("abxyz")
    return "".join(chars)


def anls_cases(rng: random.Random) -> list[tuple[str, list[str]]]:
    cases = []
    for _ in range(CASES):
        answer = rng.choice(SPACES[:2]).join(rng.choice(WORDS) for _ in range(rng.randint(1, 3)))
        if rng.random() < 0.2:  # short texts land on and around the 0.5 threshold
            answer = rng.choice(["abcd", "abxy", "ab", "a", "abcdef", "i a", ""])
        prediction = rng.choice(
            [
                answer,
                answer.upper(),
                rng.choice(SPACES) + answer + rng.choice(SPACES),
                rng.choice(SPACES).join(answer.split()),
                _edit(answer, rng, rng.randint(1, 4)),
                _edit(answer.lower(), rng, len(answer) // 2 + 1),
                rng.choice(WORDS),
                "",
            ]
        )
        answers = [answer] + [
            rng.choice([answer, _edit(answer, rng, 1), rng.choice(WORDS)]) for _ in range(rng.randint(0, 2))
        ]
        cases.append((prediction, answers))
    return cases


VQA_PIECES = ["dont", "don't", "Im", "I'm", "somebody'd", "two", "Two", "the", "a", "an", "cat", "dog's", "10,000"]
VQA_PIECES += ["10000", "3.5", "e.g.", "end.", "yes", "no", "coca-cola", "coca - cola", "what?", "(hi)", "a/b", "x;y"]
VQA_PIECES += ["it's", "its", "ten", "none", "٣.٥", "café", "\t", "\n", "...", "!", '"quoted"', "o'clock", "oclock"]


def _phrase(rng: random.Random) -> str:
    text = " ".join(rng.choice(VQA_PIECES) for _ in range(rng.randint(1, 3)))
    if rng.random() < 0.03:
        text += "." * rng.choice([31, 32, 33, 40])
    return text


def vqa_cases(rng: random.Random) -> list[tuple[str, list[str]]]:
    cases = []
    for _ in range(CASES):
        pool = [_phrase(rng) for _ in range(rng.randint(1, 3))]
        size = rng.choice([10, 10, 10, 1, 3])
        answers = [rng.choice(pool) for _ in range(size)]
        prediction = rng.choice([*pool, pool[0].upper(), pool[0] + ".", "The " + pool[0], _phrase(rng)])
        cases.append((prediction, answers))
    return cases


POPE_CORES = ["Yes", "No", "yes", "no", "YES", "NO", '"No"', "No!", "Nope", "not", "Not", "none", "There is no dog"]
POPE_CORES += ["Yes, no doubt", "I think not", "There is a dog", "", "N o", "yes\u00a0", "No, there isn't", "3.5 no"]


def pope_reply(rng: random.Random) -> str:
    core = rng.choice(POPE_CORES)
    prefix = rng.choice(["", "", " ", "Answer: ", "\n"])
    suffix = rng.choice(["", "", ".", ". There is a cat.", ", there is.", "\n", " ", "!", ". No."])
    return prefix + core + suffix


def pope_cases(rng: random.Random) -> list[tuple[str, str]]:
    return [(pope_reply(rng), rng.choice(["yes", "no"])) for _ in range(CASES)]


COUNT_REPLIES = [str(n) for n in range(25)] + ["seven", "Seven", "SEVEN", "twenty", "twenty-one", "none", "zero"]
COUNT_REPLIES += ["07", "7.", "7 dogs", "There are 7.", "", "٧", "７", "seven\n", "Seven!", " 12 ", "1e1", "7.0"]


def count_cases(rng: random.Random) -> list[tuple[str, int]]:
    cases = []
    for _ in range(CASES):
        number = rng.randint(2, 20)
        reply = rng.choice([*COUNT_REPLIES, str(number), f" {number}\n", ref.COUNT_WORDS[number].title()])
        cases.append((reply, number))
    return cases


# --- scoring both ways ----------------------------------------------------------------------------------------


def evaluator_scores(metric: str, protocol: str, cases: list[tuple[str, Any]]) -> list[float | None]:
    rows = []
    for i, (reply, expected) in enumerate(cases):
        answer = json.dumps(expected) if isinstance(expected, list) else str(expected)
        rows.append({"id": str(i), "output": reply, "expected_output": answer})
    result = ve.evaluate(rows, evaluators={"m": {"type": metric, "protocol": protocol}}, run={"progress": False})
    return result.results.sort(pl.col("sample_id").cast(pl.Int64))["score"].to_list()


REFERENCES: dict[tuple[str, str], tuple[Callable[[random.Random], list[tuple[str, Any]]], Callable[..., float]]] = {
    ("relaxed_accuracy", "official"): (chartqa_cases, ref.chartqa_score),
    ("relaxed_accuracy", "lmms_eval"): (chartqa_cases, ref.chartqa_score),
    ("anls", "official"): (anls_cases, ref.anls_score),
    ("anls", "lmms_eval"): (anls_cases, ref.anls_score),
    ("vqa_accuracy", "official"): (vqa_cases, ref.vqa_official_score),
    ("vqa_accuracy", "lmms_eval"): (vqa_cases, ref.vqa_lmms_eval_score),
    ("pope", "official"): (pope_cases, lambda reply, gold: float(ref.pope_official_answer(reply) == gold)),
    ("pope", "lmms_eval"): (pope_cases, ref.pope_lmms_eval_score),
    ("exact_count", "lmms_eval"): (count_cases, ref.count_lmms_eval_score),
}


def agreement(metric: str, protocol: str, seed: int = 18) -> tuple[int, list[tuple[str, Any, float | None, float]]]:
    """(cases, disagreements as (reply, expected, ours, reference))."""
    generate, reference = REFERENCES[(metric, protocol)]
    cases = generate(random.Random(seed))
    ours = evaluator_scores(metric, protocol, cases)
    wrong = []
    for (reply, expected), got in zip(cases, ours, strict=True):
        want = reference(reply, expected)
        if got is None or abs(got - want) > TOLERANCE:
            wrong.append((reply, expected, got, want))
    return len(cases), wrong


@pytest.mark.parametrize(("metric", "protocol"), list(REFERENCES))
def test_generated_cases_agree_with_the_reference(metric: str, protocol: str) -> None:
    total, wrong = agreement(metric, protocol)
    assert total == CASES
    assert len(wrong) <= 0.005 * total, wrong[:10]
    assert wrong == []


def test_generated_cases_cover_what_the_protocols_disagree_on() -> None:
    """The sets are not trivially easy: each reference protocol differs from lenient on many of them."""
    for metric, protocol in REFERENCES:
        cases = REFERENCES[(metric, protocol)][0](random.Random(18))
        reference = evaluator_scores(metric, protocol, cases)
        lenient = evaluator_scores(metric, "lenient", cases)
        assert sum(a != b for a, b in zip(reference, lenient, strict=True)) > 0.02 * len(cases), (metric, protocol)


# --- published examples -------------------------------------------------------------------------------------

PUBLISHED: list[tuple[str, str, str, Any, float]] = [
    # ChartQA paper, sec. 5.1: numbers within 5% of the gold answer, exact match otherwise.
    ("relaxed_accuracy", "official", "105", ["100"], 1.0),
    ("relaxed_accuracy", "official", "106", ["100"], 0.0),
    ("relaxed_accuracy", "official", "Yes", ["yes"], 1.0),
    ("relaxed_accuracy", "official", "12%", ["0.12"], 1.0),  # relaxed_correctness reads a percent as /100
    ("relaxed_accuracy", "lmms_eval", "0.0", ["0"], 0.0),  # a gold of 0 is compared as text
    ("relaxed_accuracy", "lmms_eval", "nan", ["nan"], 0.0),
    # ANLS (Biten et al. 2019), threshold 0.5; the raw-length example.
    ("anls", "official", "i  a", ["a"], 0.5),
    ("anls", "official", "ITC Limited", ["itc limited"], 1.0),
    ("anls", "official", "abc", ["axy"], 0.0),
    ("anls", "lmms_eval", "cigarettes", ["cigarette"], 0.9),
    # VQA accuracy (Antol et al. 2015, visualqa.org/evaluation): min(#humans that said it / 3, 1), averaged over
    # the 10 leave-one-out sets: 1, 2, 3, 4 matching annotators -> 0.3, 0.6, 0.9, 1.
    ("vqa_accuracy", "official", "red", ["red"] + ["blue"] * 9, 0.3),
    ("vqa_accuracy", "official", "red", ["red"] * 2 + ["blue"] * 8, 0.6),
    ("vqa_accuracy", "official", "red", ["red"] * 3 + ["blue"] * 7, 0.9),
    ("vqa_accuracy", "official", "red", ["red"] * 4 + ["blue"] * 6, 1.0),
    ("vqa_accuracy", "official", "Two", ["2"] * 10, 1.0),  # number words become digits
    ("vqa_accuracy", "official", "dont", ["don't"] * 10, 1.0),  # missing apostrophes are added
    ("vqa_accuracy", "lmms_eval", "The Dog.", ["dog"] * 10, 1.0),
    ("vqa_accuracy", "lmms_eval", "10,000", ["10000"] * 10, 1.0),
    # POPE evaluate.py: "NO" and '"No"' are yes, "Yes, no doubt." is no (the examples).
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
    assert evaluator_scores(metric, protocol, [(reply, expected)]) == [pytest.approx(score)]
    assert REFERENCES[(metric, protocol)][1](reply, expected) == pytest.approx(score)


# --- POPE dataset-level metrics -------------------------------------------------------------------------------


def _pope_summary(protocol: str, cases: list[tuple[str, str]]) -> dict[str, Any]:
    rows = [{"id": str(i), "output": r, "expected_output": g} for i, (r, g) in enumerate(cases)]
    result = ve.evaluate(rows, evaluators={"pope": {"type": "pope", "protocol": protocol}}, run={"progress": False})
    return result.run_info["metrics"]["pope"]


def test_pope_dataset_metrics_equal_the_official_script() -> None:
    cases = pope_cases(random.Random(7))
    ours = _pope_summary("official", cases)
    theirs = ref.pope_official_metrics([r for r, _ in cases], [g for _, g in cases])
    assert {k: ours[k] for k in theirs} == pytest.approx(theirs, abs=TOLERANCE)
    assert ours["n"] == len(cases)
    unread = sum(
        not {"No", "no", "not", "Yes", "yes"} & set(r.split(".")[0].replace(",", "").split(" ")) for r, _ in cases
    )
    assert ours["unparseable"] == unread > 0


def test_pope_dataset_metrics_equal_lmms_eval() -> None:
    cases = pope_cases(random.Random(7))
    ours = _pope_summary("lmms_eval", cases)
    theirs = ref.pope_lmms_eval_metrics([r for r, _ in cases], [g for _, g in cases])
    for key in ("accuracy", "precision", "recall", "f1"):
        assert ours[key] == pytest.approx(theirs[key], abs=TOLERANCE), key
    assert ours["reference_yes_ratio"] == pytest.approx(theirs["yes_ratio"], abs=TOLERANCE)
    assert ours["unparseable"] == sum(r.lower().strip() not in ("yes", "no") for r, _ in cases)


# --- the agreement table --------------------------------------------------------------------------------------


def agreement_table() -> str:
    """Markdown: per metric and protocol, generated cases and published examples scored alike by both sides."""
    lines = ["| metric | protocol | generated cases | agreeing | % | published examples | agreeing |"]
    lines.append("|---|---|---|---|---|---|---|")
    for metric, protocol in REFERENCES:
        total, wrong = agreement(metric, protocol)
        agreeing = total - len(wrong)
        examples = [
            (reply, expected, score) for m, p, reply, expected, score in PUBLISHED if (m, p) == (metric, protocol)
        ]
        ours = evaluator_scores(metric, protocol, [(reply, expected) for reply, expected, _ in examples])
        matched = sum(abs(got - score) <= TOLERANCE for got, (_, _, score) in zip(ours, examples, strict=True))
        share = f"{100 * agreeing / total:.2f}"
        lines.append(f"| {metric} | {protocol} | {total} | {agreeing} | {share} | {len(examples)} | {matched} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(agreement_table())
