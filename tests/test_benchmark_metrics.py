"""Benchmark metrics (relaxed_accuracy, anls, vqa_accuracy, pope, exact_count) and the benchmark presets.

Expected numbers are worked out by hand in the comments. The preset tests load the hub-shaped fixtures in
``tests/fixtures/benchmarks/`` through the preset's own column mapping (only ``path`` is overridden).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml

import vision_eval as ve
from vision_eval.config import DatasetConfig
from vision_eval.evaluators._benchmark_text import reference_lists, vqa_normalize

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "benchmarks"
PRESETS = ["chartqa", "docvqa", "textvqa", "pope", "countbench"]


def run_preset(name: str) -> ve.EvalResult:
    dataset = yaml.safe_load((ROOT / "conf" / "dataset" / f"{name}.yaml").read_text())
    stack = yaml.safe_load((ROOT / "conf" / "evaluators" / f"{name}.yaml").read_text())
    dataset["path"] = str(FIXTURES / f"{name}.parquet")
    return ve.evaluate(None, evaluators=stack, dataset=dataset, run={"progress": False})


def by_id(result: ve.EvalResult, evaluator: str | None = None) -> dict[str, dict[str, Any]]:
    rows = result.results
    if evaluator is not None:
        rows = rows.filter(pl.col("evaluator") == evaluator)
    assert rows["sample_id"].is_unique().all()
    return {row["sample_id"]: row for row in rows.iter_rows(named=True)}


def scores(result: ve.EvalResult, evaluator: str | None = None) -> dict[str, float | None]:
    return {sid: row["score"] for sid, row in by_id(result, evaluator).items()}


def run(rows: list[dict[str, Any]], spec: dict[str, Any]) -> ve.EvalResult:
    return ve.evaluate(rows, evaluators={"m": spec}, run={"progress": False})


# --- presets -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", PRESETS)
def test_preset_configs_are_valid_and_name_the_hub_dataset(name: str) -> None:
    raw = yaml.safe_load((ROOT / "conf" / "dataset" / f"{name}.yaml").read_text())
    cfg = DatasetConfig.model_validate(raw)
    hub = {
        "chartqa": ("HuggingFaceM4/ChartQA", "test"),
        "docvqa": ("lmms-lab/DocVQA", "validation"),
        "textvqa": ("lmms-lab/textvqa", "validation"),
        "pope": ("lmms-lab/POPE", "test"),
        "countbench": ("nielsr/countbench", "train"),
    }[name]
    assert (cfg.path, cfg.split) == hub
    assert hub[0] in cfg.description
    assert cfg.columns.get("image") == "images"
    assert "expected_output" in cfg.columns.values()


def test_chartqa_preset_relaxed_accuracy() -> None:
    result = run_preset("chartqa")
    # Row order of the fixture (ids are row numbers: ChartQA has no id column).
    assert scores(result) == {
        "0": 1.0,  # "12%" vs 12: percent sign dropped
        "1": 1.0,  # "12" vs "12%"
        "2": 1.0,  # "1,000" vs 1000
        "3": 1.0,  # 1040 vs 1000: 4% off
        "4": 0.0,  # 1060 vs 1000: 6% off
        "5": 1.0,  # "yes" vs "Yes": case-insensitive
        "6": 1.0,  # 0.12 vs "12%" read as a fraction
        "7": 1.0,  # second of two labels
        "8": 0.0,  # 0.5 vs 0: a zero gold needs exactly 0
        "9": 0.0,  # a sentence is not the number
        "10": 1.0,  # "$1.5" vs 1.5
    }
    details = json.loads(by_id(result)["0"]["details"])
    assert details == {"matched": "12", "numeric": True}
    assert result.run_info["metrics"]["relaxed_accuracy"]["relaxed_accuracy"] == pytest.approx(8 / 11)
    assert result.samples["input"][0] == "What share of adults use the internet?"


def test_docvqa_preset_anls() -> None:
    result = run_preset("docvqa")
    s = scores(result)
    assert s["q1"] == 1.0
    assert s["q2"] == 1.0  # case and whitespace normalized
    assert s["q3"] == 1.0  # second of two answers
    assert s["q4"] == pytest.approx(0.9)  # cigarettes/cigarette: 1 edit over 10 chars
    assert s["q5"] == 0.0  # nothing in common
    # "the tobacco institute" (21 chars after normalization) vs "the tobacco institut": 1 - 1/21.
    # Taking the length before normalization (25 chars) would give 0.96.
    assert s["q6"] == pytest.approx(1 - 1 / 21)
    assert s["q7"] == pytest.approx(0.5)  # abcd/abxy: similarity exactly at the cut-off is kept
    assert s["q8"] == 0.0  # abc/axy: 1/3 is below the cut-off
    rows = by_id(result)
    assert rows["q9"]["status"] == "error" and "no reference answers" in rows["q9"]["error"]
    assert rows["q10"]["status"] == "error" and rows["q10"]["error"] == "output is missing"
    assert json.loads(rows["q4"]["details"])["closest"] == "cigarette"
    # Below the cut-off the score is 0 but the details still show how close the answer was.
    assert json.loads(rows["q8"]["details"]) == {"closest": "axy", "similarity": pytest.approx(1 / 3)}
    mean = (1 + 1 + 1 + 0.9 + 0 + (1 - 1 / 21) + 0.5 + 0) / 8
    metrics = result.run_info["metrics"]["anls"]
    assert metrics["anls"] == pytest.approx(mean)
    assert (metrics["n"], metrics["errors"]) == (8, 2)


def test_textvqa_preset_vqa_accuracy() -> None:
    result = run_preset("textvqa")
    assert scores(result) == pytest.approx(
        {
            "34602": 1.0,  # 10/10 "nokia"
            # "dont walk" x3 -> "don't walk": m=3 -> (3 * 2/3 + 7 * 1) / 10
            "34603": 0.9,
            # "two" and "2" both -> "2": m=2 -> (2 * 1/3 + 8 * 2/3) / 10
            "34604": 0.6,
            # "the coca-cola" -> "coca cola" (hyphen -> space, article dropped): m=1 -> (0 + 9 * 1/3) / 10
            "34605": 0.3,
            "34606": 1.0,  # trailing period stripped
            "34607": 0.0,  # "3.5" keeps its decimal point, so it is not "35"
            "34608": 1.0,  # "10,000" and "10000" are the same answer
            "34609": 0.0,
        }
    )
    assert json.loads(by_id(result)["34603"]["details"]) == {"prediction": "don't walk", "matches": 3, "answers": 10}
    passed = {row["sample_id"]: row["passed"] for row in result.results.iter_rows(named=True)}
    assert passed["34603"] is True and passed["34604"] is False  # default threshold 0.9 = three annotators


def test_pope_preset_metrics() -> None:
    result = run_preset("pope")
    rows = by_id(result, "pope")
    assert scores(result, "pope") == {"0": 1.0, "1": 1.0, "2": 0.0, "3": 0.0, "4": 1.0, "5": None, "6": 1.0, "7": None}
    assert json.loads(rows["2"]["details"]) == {"prediction": "no", "expected": "yes"}
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
    # Per sampling strategy (rows 0, 3, 6 adversarial; 1, 4, 7 popular; 2, 5 random).
    adversarial = result.run_info["metrics"]["pope_adversarial"]
    assert (adversarial["n"], adversarial["accuracy"], adversarial["yes_ratio"]) == (3, 2 / 3, 2 / 3)
    popular = result.run_info["metrics"]["pope_popular"]
    assert (popular["n"], popular["accuracy"], popular["unparseable"]) == (2, 1.0, 1)
    random = result.run_info["metrics"]["pope_random"]
    assert (random["n"], random["accuracy"], random["recall"]) == (1, 0.0, 0.0)


def test_countbench_preset_exact_count() -> None:
    result = run_preset("countbench")
    assert scores(result) == {"0": 1.0, "1": 1.0, "2": 0.0, "3": 1.0, "4": 1.0, "5": None, "6": 1.0, "7": 0.0}
    rows = by_id(result)
    assert rows["5"]["error"] == "cannot extract a count from the output"
    assert json.loads(rows["0"]["details"]) == {"predicted": 7.0, "expected": 7.0}
    metrics = result.run_info["metrics"]["exact_count"]
    assert metrics["accuracy"] == pytest.approx(5 / 7)
    assert metrics["mae"] == pytest.approx(2 / 7)  # |8 - 7| + |3 - 4| over 7 rows


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


# --- reference answers -------------------------------------------------------------------------------------


def test_answers_column_list_and_json_text_agree() -> None:
    rows = [
        {"id": "a", "output": "Canada", "answers": ["USA", "canada"]},
        {"id": "b", "output": "12", "answers": ["13"]},
        {"id": "c", "output": "x", "answers": []},
    ]
    listed = run(rows, {"type": "relaxed_accuracy", "answers_column": "answers"})
    assert scores(listed) == {"a": 1.0, "b": 0.0, "c": None}
    assert by_id(listed)["c"]["error"] == "no reference answers in answers"
    as_text = [{"id": r["id"], "output": r["output"], "expected_output": json.dumps(r["answers"])} for r in rows]
    assert scores(run(as_text, {"type": "relaxed_accuracy"})) == {"a": 1.0, "b": 0.0, "c": None}


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


def test_reference_lists_numbers_in_json_become_text() -> None:
    frame = pl.DataFrame({"id": ["a", "b"], "expected_output": ["[12, 1.5]", "12"]})
    refs = reference_lists(frame, "expected_output")
    assert refs["golds"].to_list() == [["12", "1.5"], ["12"]]


# --- metric details ------------------------------------------------------------------------------------


def test_relaxed_accuracy_tolerance_setting() -> None:
    rows = [{"id": "a", "output": "1060", "expected_output": "1000"}]
    assert scores(run(rows, {"type": "relaxed_accuracy"}))["a"] == 0.0
    assert scores(run(rows, {"type": "relaxed_accuracy", "tolerance": 0.1}))["a"] == 1.0


def test_vqa_normalization_matches_the_official_rules() -> None:
    cases = {
        "Two dogs": "2 dogs",  # number word
        "the  dont.": "don't",  # article, contraction, final period
        "5,000": "5000",  # a digit,digit comma deletes punctuation
        "hello-world": "hello world",  # a mark with no space beside it becomes a space
        "well - known": "well known",  # a mark next to a space is deleted
        "e.g. a cat!": "eg cat",
        "3.14": "3.14",  # a period before a digit stays
        "I’m": "i'm",  # typographic apostrophe
        "Its ten o'clock": "its 10 o'clock",
    }
    normalized = vqa_normalize(pl.Series(list(cases)))
    assert dict(zip(cases, normalized.to_list(), strict=True)) == cases


def test_vqa_single_answer_is_exact_match() -> None:
    rows = [
        {"id": "a", "output": "The Cat.", "expected_output": "cat"},
        {"id": "b", "output": "dog", "expected_output": "cat"},
    ]
    assert scores(run(rows, {"type": "vqa_accuracy"})) == {"a": 1.0, "b": 0.0}


def test_exact_count_pick_modes() -> None:
    rows = [
        {"id": "a", "output": "Let me count: one, two, three. There are 3.", "expected_output": "3"},
        {"id": "b", "output": "I see twenty-one birds", "expected_output": "21"},
        {"id": "c", "output": "3 dogs and 2 cats", "expected_output": "three"},
    ]
    assert scores(run(rows, {"type": "exact_count", "pick": "first"})) == {"a": 0.0, "b": 1.0, "c": 1.0}
    assert scores(run(rows, {"type": "exact_count", "pick": "last"})) == {"a": 1.0, "b": 1.0, "c": 0.0}
    only = run(rows, {"type": "exact_count", "pick": "only"})
    assert scores(only)["b"] == 1.0
    assert by_id(only)["c"]["error"] == "the output gives several different counts"


def test_pope_gold_must_be_yes_or_no() -> None:
    result = run([{"id": "a", "output": "yes", "expected_output": "maybe"}], {"type": "pope"})
    assert by_id(result)["a"]["error"] == "expected_output is not yes or no"


# --- vectorized == row-wise reference ------------------------------------------------------------------


def _bench_module() -> Any:
    spec = importlib.util.spec_from_file_location("bench_bm", ROOT / "benchmarks" / "bench_benchmark_metrics.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("metric", ["relaxed_accuracy", "anls", "vqa_accuracy", "pope", "exact_count"])
def test_vectorized_metric_equals_row_wise_reference(metric: str) -> None:
    bench = _bench_module()
    data = bench.synthetic(metric, 2000, seed=11)
    got = bench.vectorized_scores(metric, data)["score"].to_list()
    reference = bench.REFERENCES[metric]
    want = [reference(o, e) for o, e in zip(data["output"], data["expected_output"], strict=True)]
    assert len(got) == len(want)
    assert any(w not in (None, 0.0, 1.0) for w in want) or metric in ("relaxed_accuracy", "pope", "exact_count")
    mismatches = [
        (i, g, w)
        for i, (g, w) in enumerate(zip(got, want, strict=True))
        if (g is None) != (w is None) or (g is not None and abs(g - w) > 1e-9)
    ]
    assert mismatches == []


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


def test_pope_preset_keeps_the_source_id() -> None:
    result = run_preset("pope")
    assert result.samples["pope_id"].to_list() == [str(i) for i in range(8)]
    assert result.samples["category"][0] == "adversarial"
