"""Benchmark metrics (relaxed_accuracy, anls, vqa_accuracy, pope, exact_count), their protocols and the presets.

Expected numbers are worked out by hand in the comments. The preset tests load the hub-shaped fixtures in
``tests/fixtures/benchmarks/`` through the preset's own column mapping (only ``path`` is overridden) and score them
under the preset's protocol and under the others. Agreement with the reference implementations on generated edge
cases is in ``tests/test_benchmark_protocols.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml

import vision_eval as ve
from vision_eval.config import DatasetConfig
from vision_eval.evaluators.benchmarks.text import reference_answers
from vision_eval.evaluators.benchmarks.vqa_accuracy import (
    evalai_answer,
    lenient_answers,
    official_processed,
    official_text,
)

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "benchmarks"
PRESETS = ["chartqa", "docvqa", "textvqa", "pope", "countbench"]
PROTOCOL_OF_PRESET = {
    "chartqa": "lmms_eval",
    "docvqa": "official",
    "textvqa": "lmms_eval",
    "pope": "official",
    "countbench": "lmms_eval",
}


def preset_stack(name: str, protocol: str | None = None) -> dict[str, Any]:
    stack = yaml.safe_load((ROOT / "conf" / "evaluators" / f"{name}.yaml").read_text())
    if protocol is not None:
        for spec in stack.values():
            spec["protocol"] = protocol
    return stack


def run_preset(name: str, protocol: str | None = None) -> ve.EvalResult:
    dataset = yaml.safe_load((ROOT / "conf" / "dataset" / f"{name}.yaml").read_text())
    dataset["path"] = str(FIXTURES / f"{name}.parquet")
    return ve.evaluate(None, evaluators=preset_stack(name, protocol), dataset=dataset, run={"progress": False})


def by_id(result: ve.EvalResult, evaluator: str | None = None) -> dict[str, dict[str, Any]]:
    rows = result.results
    if evaluator is not None:
        rows = rows.filter(pl.col("evaluator") == evaluator)
    assert rows["sample_id"].is_unique().all()
    return {row["sample_id"]: row for row in rows.iter_rows(named=True)}


def scores(result: ve.EvalResult, evaluator: str | None = None) -> dict[str, float | None]:
    return {sid: row["score"] for sid, row in by_id(result, evaluator).items()}


def details(result: ve.EvalResult, sample_id: str, evaluator: str | None = None) -> dict[str, Any]:
    return json.loads(by_id(result, evaluator)[sample_id]["details"])


def run(rows: list[dict[str, Any]], spec: dict[str, Any]) -> ve.EvalResult:
    return ve.evaluate(rows, evaluators={"m": spec}, run={"progress": False})


# --- presets: sources, protocols, prompts ---------------------------------------------------------------------


@pytest.mark.parametrize("name", PRESETS)
def test_preset_configs_name_the_hub_dataset_protocol_and_prompt_source(name: str) -> None:
    text = (ROOT / "conf" / "dataset" / f"{name}.yaml").read_text()
    cfg = DatasetConfig.model_validate(yaml.safe_load(text))
    hub = {
        "chartqa": ("lmms-lab/ChartQA", "test"),
        "docvqa": ("lmms-lab/DocVQA", "validation"),
        "textvqa": ("lmms-lab/textvqa", "validation"),
        "pope": ("lmms-lab/POPE", "test"),
        "countbench": ("vikhyatk/CountBenchQA", "test"),
    }[name]
    assert (cfg.path, cfg.split) == hub
    assert hub[0] in cfg.description and PROTOCOL_OF_PRESET[name] in cfg.description
    assert cfg.columns.get("image") == "images"
    assert "expected_output" in cfg.columns.values() and cfg.prompt
    assert "lmms-eval tasks/" in text  # the comment names where the prompt comes from
    stack_text = (ROOT / "conf" / "evaluators" / f"{name}.yaml").read_text()
    assert all(spec["protocol"] == PROTOCOL_OF_PRESET[name] for spec in yaml.safe_load(stack_text).values())
    assert f"protocol {PROTOCOL_OF_PRESET[name]}" in stack_text.lower()


def lmms_eval_prompt(name: str, question: str) -> str:
    """The text lmms-eval's task sends for ``question``, written from its task files (doc_to_text + kwargs)."""
    if name == "chartqa":
        return question + "\nAnswer the question with a single word."
    if name == "docvqa":
        return question + "\nAnswer the question using a single word or phrase."
    if name == "textvqa":
        return question.capitalize() + "\nAnswer the question using a single word or phrase."
    if name == "pope":
        return question.strip() + "\nAnswer the question using a single word or phrase."
    pre = "Look at the image carefully and count the objects. Answer with just a number, without any additional text. "
    return pre + question.strip()


@pytest.mark.parametrize("name", PRESETS)
def test_preset_prompts_match_lmms_eval(name: str, tmp_path: Path) -> None:
    """A candidate with no prompt of its own asks as the preset says; the request text is lmms-eval's."""
    from vision_eval.testing.fake_providers import FakeProviders

    dataset = yaml.safe_load((ROOT / "conf" / "dataset" / f"{name}.yaml").read_text())
    dataset["path"] = str(FIXTURES / f"{name}.parquet")
    questions = pl.read_parquet(FIXTURES / f"{name}.parquet")["question"].to_list()[:3]
    # Questions that the prompt's text functions change: lowercase start, surrounding spaces.
    questions[-1] = "  what is written on the sign?  "
    data = pl.read_parquet(FIXTURES / f"{name}.parquet").head(3).with_columns(pl.Series("question", questions))
    data.write_parquet(tmp_path / "data.parquet")
    dataset["path"] = str(tmp_path / "data.parquet")
    with FakeProviders(responder=lambda request: "yes") as server:
        candidate = {"model": "openai/m", "api_base": server.openai_base, "api_key": "k", "cache": False}
        result = ve.evaluate(
            None, evaluators=preset_stack(name), dataset=dataset, candidate=candidate, run={"progress": False}
        )
        sent = [request.body["messages"][0]["content"] for request in server.requests]
    assert result.samples["output"].to_list() == ["yes"] * 3
    texts = sorted(next(part["text"] for part in content if part["type"] == "text") for content in sent)
    # The candidate appends the image after the text, with its label.
    assert [t.split("\n\nImage 1:")[0] for t in texts] == sorted(lmms_eval_prompt(name, q) for q in questions)
    assert result.run_info["config"]["candidate"]["prompt"] == dataset["prompt"]


def test_candidate_prompt_overrides_the_dataset_prompt() -> None:
    config = ve.validate_config({"dataset": {"prompt": "{{ input }} (dataset)"}, "candidate": {"prompt": "mine"}})
    assert config.candidate.prompt == "mine"
    assert ve.validate_config({"dataset": {}}).candidate.prompt == "{{ input }}"
    assert ve.validate_config({"dataset": {"prompt": "P"}}).candidate.prompt == "P"


# --- presets: scores under each protocol -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("protocol", "expected"),
    [
        # 12/12, 12%/12%, "1,000" is text, 4% off, 6% off, yes/Yes, 0.12 = 12%, a 0 label needs the text "0" (0.0 is
        # wrong), a sentence, "$1.5" is text, "0" = "0".
        ("official", [1, 1, 0, 1, 0, 1, 1, 0, 0, 0, 1]),
        ("lmms_eval", [1, 1, 0, 1, 0, 1, 1, 0, 0, 0, 1]),
        # Lenient also reads "1,000", 0.0 as 0 and "$1.5".
        ("lenient", [1, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1]),
    ],
)
def test_chartqa_preset_scores_overall_and_per_split(protocol: str, expected: list[int]) -> None:
    result = run_preset("chartqa", protocol)
    assert scores(result, "relaxed_accuracy") == {str(i): float(v) for i, v in enumerate(expected)}
    metrics = result.run_info["metrics"]
    assert metrics["relaxed_accuracy"]["relaxed_accuracy"] == pytest.approx(sum(expected) / 11)
    # Rows 0-4 are human-written questions, 5-10 generated ones: each split has its own summary.
    assert metrics["relaxed_accuracy_human"]["relaxed_accuracy"] == pytest.approx(sum(expected[:5]) / 5)
    assert metrics["relaxed_accuracy_augmented"]["relaxed_accuracy"] == pytest.approx(sum(expected[5:]) / 6)
    assert metrics["relaxed_accuracy_human"]["n"] == 5 and metrics["relaxed_accuracy"]["protocol"] == protocol
    # The details show what was compared: the reply and the deciding reference answer, as numbers here.
    assert details(result, "0", "relaxed_accuracy") == {
        "protocol": protocol,
        "prediction": "12",
        "prediction_number": 12.0,
        "answer": "12",
        "answer_number": 12.0,
        "numeric": True,
        "matched": "12",
    }
    assert result.samples["input"][0] == "What share of adults use the internet?"
    assert result.run_info["evaluators"]["relaxed_accuracy"]["protocol"] == protocol


@pytest.mark.parametrize("protocol", ["official", "lmms_eval", "lenient"])
def test_docvqa_preset_anls(protocol: str) -> None:
    result = run_preset("docvqa", protocol)
    s = scores(result)
    assert s["q1"] == 1.0
    assert s["q2"] == 1.0  # case and whitespace normalized
    assert s["q3"] == 1.0  # second of two answers
    assert s["q4"] == pytest.approx(0.9)  # cigarettes/cigarette: 1 edit over 10 chars
    assert s["q5"] == 0.0  # nothing in common
    # "the tobacco institute" vs "the tobacco institut": 1 edit. The references divide by the longer raw text
    # ("The   Tobacco   Institute", 25 chars); lenient by the normalized one (21 chars).
    q6 = 1 - 1 / 21 if protocol == "lenient" else 1 - 1 / 25
    assert s["q6"] == pytest.approx(q6)
    assert s["q7"] == pytest.approx(0.5)  # abcd/abxy: similarity exactly at the cut-off is kept
    assert s["q8"] == 0.0  # abc/axy: 1/3 is below the cut-off
    rows = by_id(result)
    assert rows["q9"]["status"] == "error" and "no reference answers" in rows["q9"]["error"]
    assert rows["q10"]["status"] == "error" and rows["q10"]["error"] == "output is missing"
    assert details(result, "q4")["closest"] == "cigarette"
    # Below the cut-off the score is 0 but the details still show how close the answer was.
    assert details(result, "q8") == {
        "protocol": protocol,
        "prediction": "abc",
        "closest": "axy",
        "closest_normalized": "axy",
        "similarity": pytest.approx(1 / 3),
    }
    # Both sides as compared: stripped, lowercased, whitespace collapsed.
    assert details(result, "q6")["prediction"] == "the tobacco institute"
    assert details(result, "q6")["closest_normalized"] == "the tobacco institut"
    metrics = result.run_info["metrics"]["anls"]
    assert metrics["anls"] == pytest.approx((1 + 1 + 1 + 0.9 + 0 + q6 + 0.5 + 0) / 8)
    assert (metrics["n"], metrics["errors"], metrics["unparseable"], metrics["protocol"]) == (8, 2, 0, protocol)


def test_anls_divides_by_the_raw_lengths_under_the_reference_protocols() -> None:
    rows = [{"id": "a", "output": "i  a", "expected_output": "a"}]
    # Normalized "i a" vs "a": 2 edits. Over the raw length 4: 0.5 (kept); over the normalized length 3: 1/3 -> 0.
    assert scores(run(rows, {"type": "anls", "protocol": "official"}))["a"] == 0.5
    assert scores(run(rows, {"type": "anls", "protocol": "lmms_eval"}))["a"] == 0.5
    assert scores(run(rows, {"type": "anls", "protocol": "lenient"}))["a"] == 0.0


@pytest.mark.parametrize(
    ("protocol", "expected"),
    [
        # lmms-eval processes reply and answers alike (EvalAI's processor): "dont walk" x3 -> "don't walk" (0.9),
        # "two" and "2" -> "2" (m=2: 0.6), "the coca-cola" -> "coca cola" (m=1: 0.3), "10,000" = "10000".
        ("lmms_eval", [1.0, 0.9, 0.6, 0.3, 1.0, 0.0, 1.0, 0.0]),
        ("lenient", [1.0, 0.9, 0.6, 0.3, 1.0, 0.0, 1.0, 0.0]),
        # The VQA script (a013f00) processes nothing when the annotators agree: "Nokia" is not "nokia" and "pepsi."
        # is not "pepsi" (0); when they disagree it processes the reply and every answer, as lmms-eval does.
        ("official", [0.0, 0.9, 0.6, 0.3, 0.0, 0.0, 1.0, 0.0]),
    ],
)
def test_textvqa_preset_vqa_accuracy(protocol: str, expected: list[float]) -> None:
    result = run_preset("textvqa", protocol)
    ids = [str(34602 + i) for i in range(8)]
    assert scores(result) == pytest.approx(dict(zip(ids, expected, strict=True)))
    matches = 3
    shown = details(result, "34603")
    assert {k: v for k, v in shown.items() if k != "references"} == {
        "protocol": protocol,
        "prediction": "don't walk",
        "matches": matches,
        "answers": 10,
    }
    # Every reference answer as it was compared with the prediction; `matches` counts the equal ones.
    assert len(shown["references"]) == 10 and shown["references"].count("don't walk") == matches
    passed = {row["sample_id"]: row["passed"] for row in result.results.iter_rows(named=True)}
    assert passed["34603"] is True and passed["34604"] is False  # threshold 0.9 = 3 annotators


def test_pope_preset_official() -> None:
    result = run_preset("pope")
    # First sentences: yes / "No" / "No" (gold yes) / "Yes" (gold no) / yes / no yes/no word (-> yes, unparseable) /
    # "no" / "not" (-> no, gold yes).
    assert scores(result, "pope") == {str(i): float(v) for i, v in enumerate([1, 1, 0, 0, 1, 0, 1, 0])}
    assert details(result, "5", "pope") == {
        "protocol": "official",
        "prediction": "yes",
        "expected": "no",
        "unparseable": True,
        "raw": "The image shows a kitchen.",
    }
    assert details(result, "2", "pope") == {"protocol": "official", "prediction": "no", "expected": "yes"}
    metrics = result.run_info["metrics"]["pope"]
    # TP rows 0, 4; FP 3, 5; TN 1, 6; FN 2, 7.
    assert (metrics["tp"], metrics["fp"], metrics["tn"], metrics["fn"]) == (2, 2, 2, 2)
    assert metrics["accuracy"] == metrics["precision"] == metrics["recall"] == metrics["f1"] == 0.5
    assert (metrics["yes_ratio"], metrics["n"], metrics["unparseable"]) == (0.5, 8, 1)
    # Per sampling strategy (rows 0, 3, 6 adversarial; 1, 4, 7 popular; 2, 5 random).
    adversarial = result.run_info["metrics"]["pope_adversarial"]
    assert (adversarial["n"], adversarial["accuracy"], adversarial["yes_ratio"]) == (3, 2 / 3, 2 / 3)
    popular = result.run_info["metrics"]["pope_popular"]
    assert (popular["n"], popular["accuracy"], popular["unparseable"]) == (3, 2 / 3, 0)
    random = result.run_info["metrics"]["pope_random"]
    assert (random["n"], random["accuracy"], random["recall"], random["unparseable"]) == (2, 0.0, 0.0, 1)


def test_pope_preset_lmms_eval() -> None:
    result = run_preset("pope", "lmms_eval")
    # Only a reply that is exactly yes/no (after lowercase and strip) is read: rows 3 ("Yes") and 4 ("yes").
    assert scores(result, "pope") == {str(i): float(i == 4) for i in range(8)}
    assert details(result, "1", "pope") == {
        "protocol": "lmms_eval",
        "prediction": None,
        "expected": "no",
        "unparseable": True,
        "raw": "No.",
    }
    metrics = result.run_info["metrics"]["pope"]
    assert (metrics["tp"], metrics["fp"], metrics["tn"], metrics["fn"], metrics["unparseable"]) == (1, 1, 0, 0, 6)
    assert metrics["accuracy"] == 1 / 8 and metrics["precision"] == 0.5 and metrics["recall"] == 1.0
    assert metrics["f1"] == pytest.approx(2 / 3) and metrics["yes_ratio"] == 2 / 8
    assert metrics["reference_yes_ratio"] == 0.5  # what lmms-eval prints as pope_yes_ratio


def test_pope_preset_lenient() -> None:
    result = run_preset("pope", "lenient")
    rows = by_id(result, "pope")
    assert scores(result, "pope") == {"0": 1.0, "1": 1.0, "2": 0.0, "3": 0.0, "4": 1.0, "5": None, "6": 1.0, "7": None}
    assert json.loads(rows["2"]["details"]) == {"protocol": "lenient", "prediction": "no", "expected": "yes"}
    # Unparseable replies are errors that keep the raw text, not guesses.
    assert rows["5"]["status"] == "error"
    assert json.loads(rows["5"]["details"])["raw"] == "The image shows a kitchen."
    assert rows["7"]["status"] == "error"  # says both yes and no
    # Processed: TP = rows 0, 4; TN = 1, 6; FN = 2; FP = 3.
    metrics = result.run_info["metrics"]["pope"]
    assert metrics["accuracy"] == pytest.approx(4 / 6)
    assert metrics["precision"] == pytest.approx(2 / 3)
    assert metrics["recall"] == pytest.approx(2 / 3)
    assert metrics["f1"] == pytest.approx(2 / 3)
    assert metrics["yes_ratio"] == pytest.approx(3 / 6)
    assert (metrics["unparseable"], metrics["n"]) == (2, 6)
    popular = result.run_info["metrics"]["pope_popular"]
    assert (popular["n"], popular["accuracy"], popular["unparseable"]) == (2, 1.0, 1)


def test_countbench_preset_lmms_eval() -> None:
    result = run_preset("countbench")
    # "7", "Seven" -> 7, "8", " 10\n" -> 10; "There are 10 pencils.", "three." and "" are not a count; "05" is not "5".
    assert scores(result) == {str(i): float(v) for i, v in enumerate([1, 1, 0, 1, 0, 0, 0, 0])}
    assert details(result, "1") == {"protocol": "lmms_eval", "predicted": "7", "expected": "7"}
    assert details(result, "5") == {
        "protocol": "lmms_eval",
        "predicted": "three.",
        "expected": "3",
        "unparseable": True,
        "raw": "three.",
    }
    metrics = result.run_info["metrics"]["exact_count"]
    assert (metrics["accuracy"], metrics["unparseable"], metrics["n"]) == (3 / 8, 3, 8)
    assert metrics["mae"] == pytest.approx(1 / 5)  # |8 - 7| over the five replies that are numbers
    assert result.samples["input"][0] == "How many apples are there?"


def test_countbench_preset_lenient() -> None:
    result = run_preset("countbench", "lenient")
    # The first number in the reply: "There are 10 pencils." -> 10, "three." -> 3, "05" -> 5; "" has none.
    assert scores(result) == {"0": 1.0, "1": 1.0, "2": 0.0, "3": 1.0, "4": 1.0, "5": 1.0, "6": 1.0, "7": None}
    assert by_id(result)["7"]["error"] == "cannot extract a count from the output"
    assert details(result, "0") == {"protocol": "lenient", "predicted": 7.0, "expected": 7.0, "found": [7.0]}
    assert details(result, "4")["found"] == [10.0]  # "There are 10 pencils."
    metrics = result.run_info["metrics"]["exact_count"]
    assert (metrics["accuracy"], metrics["unparseable"], metrics["n"]) == (6 / 7, 1, 7)


def test_pope_where_filter_selects_one_category() -> None:
    dataset = yaml.safe_load((ROOT / "conf" / "dataset" / "pope.yaml").read_text())
    dataset["path"] = str(FIXTURES / "pope.parquet")
    result = ve.evaluate(
        None,
        evaluators={"adv": {"type": "pope", "where": "category = 'adversarial'"}},
        dataset=dataset,
        run={"progress": False},
    )
    status = dict(zip(result.results["sample_id"], result.results["status"], strict=True))
    assert [k for k, v in status.items() if v != "skipped"] == ["0", "3", "6"]
    assert result.run_info["metrics"]["adv"]["accuracy"] == pytest.approx(2 / 3)  # rows 0 and 6 right, 3 wrong


def test_pope_preset_keeps_the_source_id() -> None:
    result = run_preset("pope")
    assert result.samples["pope_id"].to_list() == [str(i) for i in range(8)]
    assert result.samples["category"][0] == "adversarial"


@pytest.mark.parametrize("name", PRESETS)
def test_presets_compose_as_hydra_config_groups(name: str) -> None:
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base=None):
        cfg = compose(overrides=[f"+dataset={name}", f"+evaluators={name}"])
    raw = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(raw, dict)
    raw["dataset"]["path"] = str(FIXTURES / f"{name}.parquet")
    result = ve.run_config(ve.validate_config({**raw, "run": {"progress": False}}))
    assert result.results.height > 0
    assert set(result.results["status"]) <= {"processed", "error", "skipped"}
    assert (result.results["status"] == "processed").any()
    assert {e["protocol"] for e in result.run_info["evaluators"].values()} == {PROTOCOL_OF_PRESET[name]}


# --- settings -------------------------------------------------------------------------------------------------


def test_protocols_a_metric_does_not_offer_are_config_errors() -> None:
    rows = [{"id": "a", "output": "3", "expected_output": "3"}]
    with pytest.raises(ve.ConfigError, match="no scoring script") as info:
        run(rows, {"type": "exact_count", "protocol": "official"})
    assert info.value.key == "evaluators.m.protocol"
    with pytest.raises(ve.ConfigError, match="protocol"):
        run(rows, {"type": "anls", "protocol": "strict"})
    with pytest.raises(ve.ConfigError, match="pick applies to protocol lenient only"):
        run(rows, {"type": "exact_count", "pick": "last"})


@pytest.mark.parametrize(
    ("metric", "default"),
    [
        ("relaxed_accuracy", "official"),
        ("anls", "official"),
        ("vqa_accuracy", "official"),
        ("pope", "official"),
        ("exact_count", "lmms_eval"),
    ],
)
def test_default_protocol_is_recorded_in_details_run_json_and_summary(metric: str, default: str) -> None:
    result = run([{"id": "a", "output": "yes", "expected_output": "yes"}], {"type": metric})
    assert details(result, "a")["protocol"] == default
    described = result.run_info["evaluators"]["m"]
    assert described["protocol"] == default and described["comparable"] is True and described["protocol_source"]
    assert result.run_info["metrics"]["m"]["protocol"] == default
    assert "unparseable" in result.run_info["metrics"]["m"]


# --- reference answers -------------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", ["official", "lenient"])
def test_answers_column_list_and_json_text_agree(protocol: str) -> None:
    rows = [
        {"id": "a", "output": "Canada", "answers": ["USA", "canada"]},
        {"id": "b", "output": "12", "answers": ["13"]},
        {"id": "c", "output": "x", "answers": []},
    ]
    spec = {"type": "relaxed_accuracy", "protocol": protocol}
    listed = run(rows, {**spec, "answers_column": "answers"})
    assert scores(listed) == {"a": 1.0, "b": 0.0, "c": None}
    assert by_id(listed)["c"]["error"] == "no reference answers in answers"
    as_text = [{"id": r["id"], "output": r["output"], "expected_output": json.dumps(r["answers"])} for r in rows]
    assert scores(run(as_text, spec)) == {"a": 1.0, "b": 0.0, "c": None}


def test_answers_column_must_exist() -> None:
    with pytest.raises(ve.ConfigError, match="answers"):
        run([{"id": "a", "output": "x", "expected_output": "x"}], {"type": "anls", "answers_column": "answers"})


def test_bad_json_list_errors_only_its_row() -> None:
    rows = [
        {"id": "ok", "output": "walk", "expected_output": '["walk", "go"]'},
        {"id": "bad", "output": "walk", "expected_output": '["walk", "go"'},
        {"id": "plain", "output": "[draft]", "expected_output": "draft"},
    ]
    result = run(rows, {"type": "anls"})
    assert scores(result)["ok"] == 1.0
    assert by_id(result)["bad"]["status"] == "error"
    assert "do not parse" in by_id(result)["bad"]["error"]
    assert scores(result)["plain"] == pytest.approx(1 - 2 / 7)  # "[draft]" vs "draft": 2 edits over 7 chars


def test_reference_answers_numbers_in_json_become_text() -> None:
    assert reference_answers("[12, 1.5, true, null]", "expected_output") == (["12", "1.5", "true"], None)
    assert reference_answers("12", "expected_output") == (["12"], None)


# --- metric details ------------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", ["official", "lmms_eval", "lenient"])
def test_relaxed_accuracy_tolerance_setting(protocol: str) -> None:
    rows = [{"id": "a", "output": "1060", "expected_output": "1000"}]
    assert scores(run(rows, {"type": "relaxed_accuracy", "protocol": protocol}))["a"] == 0.0
    assert scores(run(rows, {"type": "relaxed_accuracy", "protocol": protocol, "tolerance": 0.1}))["a"] == 1.0


def test_vqa_processing_of_each_protocol() -> None:
    cases = {
        # reply: (official when the annotators disagree, lmms_eval, lenient)
        "Two dogs": ("2 dogs", "2 dogs", "2 dogs"),  # number word
        "the  dont.": ("don't", "don't", "don't"),  # article, contraction, final period
        "5,000": ("5000", "5000", "5000"),  # a digit,digit comma deletes punctuation
        "hello-world": ("hello world", "hello world", "hello world"),  # a lone mark becomes a space
        "well - known": ("well known", "well known", "well known"),  # a mark next to a space is deleted
        "e.g. a cat!": ("eg cat", "eg cat", "eg cat"),
        "3.14": ("3.14", "3.14", "3.14"),  # a period before a digit stays
        "I’m": ("i’m", "i’m", "i'm"),  # typographic apostrophe: only lenient reads it
        "Im here": ("im here", "im here", "i'm here"),  # the published table's "Im" key never matches
        "Its ten o'clock": ("its 10 o'clock", "its 10 o'clock", "its 10 o'clock"),
        "the dog's bone?": ("dog's bone", "dog 's bone", "dog's bone"),  # EvalAI splits 's and drops ?
        "somebody'd": ("somebodyd", "somebodyd", "somebody'd"),  # the published table's typo
        "a" + "." * 40 + "b": ("a" + "." * 8 + "b", "a" + "." * 8 + "b", "ab"),  # at most 32 periods go
        # vqaEval.py runs on Python 2: \d is an ASCII digit, lower() maps İ to i and has no final sigma.
        "٣.٥": ("٣٥", "٣.٥", "٣.٥"),
        "٣,٥ x": ("٣ ٥ x", "٣٥ x", "٣٥ x"),
        "İ ΣΑΣ": ("i σασ", "i̇ σας", "i̇ σας"),
    }
    official = {reply: official_processed(official_text(reply)) for reply in cases}
    assert official == {k: v[0] for k, v in cases.items()}
    assert {reply: evalai_answer(reply) for reply in cases} == {k: v[1] for k, v in cases.items()}
    lenient = lenient_answers(pl.Series(list(cases))).to_list()
    assert dict(zip(cases, lenient, strict=True)) == {k: v[2] for k, v in cases.items()}


def test_vqa_single_answer() -> None:
    rows = [
        {"id": "a", "output": "The Cat.", "expected_output": "cat"},
        {"id": "b", "output": "dog", "expected_output": "cat"},
    ]
    # One reference answer: every leave-one-out subset is empty, so the references score 0; lenient is exact match.
    assert scores(run(rows, {"type": "vqa_accuracy", "protocol": "lenient"})) == {"a": 1.0, "b": 0.0}
    assert scores(run(rows, {"type": "vqa_accuracy", "protocol": "official"})) == {"a": 0.0, "b": 0.0}
    assert scores(run(rows, {"type": "vqa_accuracy", "protocol": "lmms_eval"})) == {"a": 0.0, "b": 0.0}


def test_vqa_summary_counts_the_rows_too_few_answers_keep_below_one() -> None:
    """Under leave-one-out a row needs 4 reference answers to score 1: the summary says how many scored rows have
    fewer (a single-answer dataset scored 0 by the official protocol says why); with enough answers it says nothing."""
    answers = [["cat"], ["cat", "cat"], ["cat"] * 3, ["cat"] * 4, ["cat"] * 10]
    rows = [{"id": str(len(a)), "output": "cat", "expected_output": json.dumps(a)} for a in answers]
    rows.append({"id": "bad", "output": "cat", "expected_output": "[1, [2]]"})  # an error row is not counted
    for protocol in ("official", "lmms_eval"):
        result = run(rows, {"type": "vqa_accuracy", "protocol": protocol})
        assert scores(result) == {"1": 0.0, "2": 1 / 3, "3": 2 / 3, "4": 1.0, "10": 1.0, "bad": None}
        assert result.metrics["m"]["rows_under_4_answers"] == 3
        assert "rows_under_4_answers" not in run(rows[3:5], {"type": "vqa_accuracy", "protocol": protocol}).metrics["m"]
    assert "rows_under_4_answers" not in run(rows, {"type": "vqa_accuracy", "protocol": "lenient"}).metrics["m"]


def test_exact_count_pick_modes() -> None:
    rows = [
        {"id": "a", "output": "Let me count: one, two, three. There are 3.", "expected_output": "3"},
        {"id": "b", "output": "I see twenty-one birds", "expected_output": "21"},
        {"id": "c", "output": "3 dogs and 2 cats", "expected_output": "three"},
    ]
    lenient = {"type": "exact_count", "protocol": "lenient"}
    assert scores(run(rows, {**lenient, "pick": "first"})) == {"a": 0.0, "b": 1.0, "c": 1.0}
    assert scores(run(rows, {**lenient, "pick": "last"})) == {"a": 1.0, "b": 1.0, "c": 0.0}
    only = run(rows, {**lenient, "pick": "only"})
    assert scores(only)["b"] == 1.0
    assert by_id(only)["c"]["error"] == "the output gives several different counts"
    # lmms_eval reads the whole reply: none of these is a count ("three" as a reference is 3).
    strict = run(rows, {"type": "exact_count"})
    assert scores(strict) == {"a": 0.0, "b": 0.0, "c": 0.0}
    assert strict.run_info["metrics"]["m"]["unparseable"] == 3


def test_exact_count_lenient_reads_digits_of_any_script() -> None:
    """Digits of other scripts are numbers (Python's float reads them): one count, not "several different counts"."""
    rows = [
        {"id": "arabic", "output": "I see ٣ cats", "expected_output": "3"},
        {"id": "fullwidth", "output": "１２ birds", "expected_output": "12"},
        {"id": "ascii", "output": "3 cats", "expected_output": "3"},
    ]
    result = run(rows, {"type": "exact_count", "protocol": "lenient", "pick": "only"})
    assert scores(result) == {"arabic": 1.0, "fullwidth": 1.0, "ascii": 1.0}
    assert details(result, "arabic")["found"] == [3.0]


@pytest.mark.parametrize("protocol", ["official", "lmms_eval", "lenient"])
def test_pope_gold_must_be_yes_or_no(protocol: str) -> None:
    result = run([{"id": "a", "output": "yes", "expected_output": "maybe"}], {"type": "pope", "protocol": protocol})
    assert by_id(result)["a"]["error"] == "expected_output is not yes or no"
