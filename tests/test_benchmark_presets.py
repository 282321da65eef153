"""The benchmark presets added for issue #30, end to end: each preset's dataset config reads its fixture (the hub
dataset's own column layout, ``tests/fixtures/benchmarks/make_preset_fixtures.py``) through its own column mapping
(only ``path`` is overridden, as a user does for a local export), a fake candidate (an OpenAI-compatible server on
127.0.0.1) answers with the fixture's ``reply``, and the preset's evaluator stack scores the answers. The
dataset-level numbers are checked against values worked out by hand in the comments; the request the candidate sent
is checked against the reference harness's prompt.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml

import vision_eval as ve
from vision_eval.testing.fake_providers import FakeProviders, FakeRequest, inspect_image

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "benchmarks"


def preset(name: str, protocol: str | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the dataset config reading the fixture, the evaluator stack, every evaluator under ``protocol``)."""
    dataset = yaml.safe_load((ROOT / "conf" / "dataset" / f"{name}.yaml").read_text())
    dataset["path"] = str(FIXTURES / f"{name}.parquet")
    stack = yaml.safe_load((ROOT / "conf" / "evaluators" / f"{name}.yaml").read_text())
    if protocol is not None:
        for spec in stack.values():
            spec["protocol"] = protocol
    return dataset, stack


def needle(text: str) -> str:
    """The longest stretch of a question between image placeholders (it appears whole in the request)."""
    import re

    text = text.replace(" Please answer yes or no.", "")  # MME's prompt drops it
    return max((part.strip() for part in re.split(r"<image \d>", text)), key=len)


@cache
def run_with_candidate(name: str, protocol: str | None = None) -> tuple[ve.EvalResult, list[FakeRequest]]:
    """The preset run with a fake candidate answering each row's ``reply`` (found by its question in the request)."""
    data = pl.read_parquet(FIXTURES / f"{name}.parquet")
    if "question" in data.columns:
        replies = {needle(q): r for q, r in zip(data["question"], data["reply"], strict=True)}

        def answer(request: FakeRequest) -> str:
            return next(reply for key, reply in replies.items() if key in request.text)

    else:  # the question is in the image: the row whose image has the request's colour
        by_colour = [(mean_rgb(image["bytes"]), r) for image, r in zip(data["image"], data["reply"], strict=True)]

        def answer(request: FakeRequest) -> str:
            sent = mean_rgb(first_image(request))
            return min(by_colour, key=lambda item: sum((a - b) ** 2 for a, b in zip(item[0], sent)))[1]

    dataset, stack = preset(name, protocol)
    with FakeProviders(responder=answer) as server:
        candidate = {"model": "openai/m", "api_base": server.openai_base, "api_key": "k", "cache": False}
        result = ve.evaluate(None, evaluators=stack, dataset=dataset, candidate=candidate, run={"progress": False})
        return result, list(server.requests)


def mean_rgb(data: bytes) -> tuple[float, ...]:
    import io

    from PIL import Image, ImageStat

    return tuple(ImageStat.Stat(Image.open(io.BytesIO(data)).convert("RGB")).mean)


def first_image(request: FakeRequest) -> bytes:
    import base64

    part = next(p for p in request.body["messages"][0]["content"] if p["type"] == "image_url")
    return base64.b64decode(part["image_url"]["url"].split(",", 1)[1])


def by_id(result: ve.EvalResult, evaluator: str) -> dict[str, dict[str, Any]]:
    rows = result.results.filter(pl.col("evaluator") == evaluator)
    return {row["sample_id"]: row for row in rows.iter_rows(named=True)}


def parts(request: FakeRequest) -> list[tuple[str, Any]]:
    """The request's content as (kind, text or the colour of the image)."""
    out: list[tuple[str, Any]] = []
    for part in request.body["messages"][0]["content"]:
        if part["type"] == "text":
            out.append(("text", part["text"]))
        else:
            import base64

            data = base64.b64decode(part["image_url"]["url"].split(",", 1)[1])
            out.append(("image", inspect_image(data).colour))
    return out


def colour(name: str, sample: str, column: str) -> str:
    row = pl.read_parquet(FIXTURES / f"{name}.parquet").filter(pl.col("id") == sample).row(0, named=True)
    return inspect_image(row[column]["bytes"]).colour


# --- MMMU -----------------------------------------------------------------------------------------------------


def test_mmmu_preset_official() -> None:
    result, _ = run_with_candidate("mmmu")
    rows = by_id(result, "mmmu")
    # (B) right; "I cannot tell." has no letter: the script draws one (random.seed(42): A, the answer); the open
    # "So the area is 12.50" reads 12.5 = 12.5; "B" right; "The answer is D" wrong (C); "A." right.
    assert {k: v["score"] for k, v in rows.items()} == {
        "validation_Art_1": 1.0,
        "validation_Art_2": 0.0,  # the row keeps its reading (none); the draw is made over the whole run
        "validation_Math_3": 1.0,
        "validation_Math_4": 1.0,
        "validation_History_5": 0.0,
        "validation_Accounting_6": 1.0,
    }
    unread = json.loads(rows["validation_Art_2"]["details"])
    assert unread["unparseable"] is True and unread["choices"] == ["A", "B", "C", "D"]
    metrics = result.run_info["metrics"]["mmmu"]
    assert metrics["Overall"] == pytest.approx(5 / 6)
    assert (metrics["n"], metrics["unparseable"], metrics["random_picks_correct"], metrics["open_questions"]) == (
        6,
        1,
        1,
        1,
    )
    assert metrics["disciplines"] == {
        "Art & Design": {"accuracy": 1.0, "n": 2},
        "Business": {"accuracy": 1.0, "n": 1},
        "Science": {"accuracy": 1.0, "n": 2},
        "Humanities & Social Science": {"accuracy": 0.0, "n": 1},
    }
    assert metrics["subjects"]["Art"] == {"accuracy": 1.0, "n": 2} and metrics["subjects"]["History"]["n"] == 1
    described = result.run_info["evaluators"]["mmmu"]
    assert described["protocol"] == "official" and "seeded 42" in described["unparseable_counted_as"]


def test_mmmu_preset_lmms_eval() -> None:
    result, _ = run_with_candidate("mmmu", "lmms_eval")
    metrics = result.run_info["metrics"]["mmmu"]
    # lmms-eval draws with seed 0 (D, not the answer A) and scores every open question 0 (12.50 included).
    assert metrics["Overall"] == pytest.approx(3 / 6)
    assert metrics["subjects"]["Art"] == {"accuracy": 0.5, "n": 2}
    assert metrics["subjects"]["Math"] == {"accuracy": 0.5, "n": 2}
    assert (metrics["unparseable"], metrics["random_picks_correct"]) == (1, 0)


def test_mmmu_prompt_and_images_as_lmms_eval_sends_them() -> None:
    _, requests = run_with_candidate("mmmu")
    sent = {next(t for k, t in parts(r) if k == "text"): parts(r) for r in requests}
    task = "\n\nAnswer with the option's letter from the given choices directly."
    two = sent["Compare"]
    # mmmu_doc_to_messages: the text split at the placeholders, each stretch stripped, the images in order.
    assert two == [
        ("text", "Compare"),
        ("image", colour("mmmu", "validation_Math_4", "image_1")),
        ("text", "and"),
        ("image", colour("mmmu", "validation_Math_4", "image_2")),
        ("text", ". Which is larger?\nA. left\nB. right" + task),
    ]
    assert colour("mmmu", "validation_Math_4", "image_1") != colour("mmmu", "validation_Math_4", "image_2")
    # A placeholder first: the image, then the rest; open questions ask for a word or phrase.
    first = next(p for p in sent.values() if p[0][0] == "image")
    assert first[1] == ("text", "What period is this?\nA. Baroque\nB. Gothic\nC. Modern\nD. Roman" + task)
    assert sent["What is the area of the shape in"][-1] == (
        "text",
        "?\n\nAnswer the question using a single word or phrase.",
    )
    assert all("Image 1" not in text for p in sent.values() for kind, text in p if kind == "text")


# --- MME ------------------------------------------------------------------------------------------------------


def test_mme_preset_sums_subtask_scores() -> None:
    result, requests = run_with_candidate("mme")
    rows = by_id(result, "mme")
    # "Yes" right, "no." right, "Yes" right, "Yes!" wrong, "Y" = yes right, "Maybe" = other (wrong, unparseable),
    # "Yes, it prints 3." right, "No, it does not." right.
    assert [rows[str(i)]["score"] for i in range(8)] == [1.0, 1.0, 1.0, 0.0, 1.0, 0.0, 1.0, 1.0]
    metrics = result.run_info["metrics"]["mme"]
    # existence: image 1 acc 100 + acc+ 100, image 2 acc 50 + acc+ 0 -> (200 + 50) / 2 = 125; OCR: 50 + 0 = 50.
    # Perception = 125 + 50 = 175 (a sum over subtasks, not a mean); Cognition: code_reasoning 100 + 100 = 200.
    assert metrics["categories"]["existence"] == {"score": 125.0, "acc": 75.0, "acc+": 50.0, "images": 2}
    assert metrics["categories"]["OCR"]["score"] == 50.0
    assert (metrics["Perception"], metrics["Cognition"]) == (175.0, 200.0)
    assert (metrics["n"], metrics["unparseable"], metrics["images_not_in_pairs"]) == (8, 1, 0)
    texts = sorted(r.text.split("\n\nImage 1:")[0] for r in requests)  # the candidate's image label follows
    assert "Is there a dog in this image?\nAnswer the question using a single word or phrase." in texts


# --- OCRBench -------------------------------------------------------------------------------------------------


def test_ocrbench_preset_final_score() -> None:
    result, _ = run_with_candidate("ocrbench")
    rows = by_id(result, "ocrbench")
    # "stop" inside the lowercased reply; "EX1T" is not "exit"; fullwidth "ｃｏｌａ" folds to "cola"; "starbucks";
    # "$5.00" is not inside "5.00"; HME100k "x ^ { 2 }" without spaces is inside "x^{2}+1"; "X^{2}" keeps its case.
    assert [rows[str(i)]["score"] for i in range(7)] == [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0]
    metrics = result.run_info["metrics"]["ocrbench"]
    assert metrics["Final Score"] == 4 and metrics["Text Recognition"] == 2
    assert metrics["Scene Text-centric VQA"] == 1 and metrics["Doc-oriented VQA"] == 0
    assert metrics["Handwritten Mathematical Expression Recognition"] == 1
    assert metrics["categories"]["Regular Text Recognition"] == {"points": 1, "n": 2}


# --- the numbers in the console summary and the leaderboard ---------------------------------------------------


def test_dataset_numbers_reach_the_console_summary_and_the_leaderboard(tmp_path: Path, capsys: Any) -> None:
    from vision_eval.leaderboard import write_leaderboard
    from vision_eval.summary import print_summary

    data = pl.read_parquet(FIXTURES / "mme.parquet").rename({"reply": "model_reply"})
    data.write_parquet(tmp_path / "mme.parquet")
    dataset, stack = preset("mme")
    dataset["path"] = str(tmp_path / "mme.parquet")
    dataset["columns"]["model_reply"] = "output"  # the replies as a column of the export, no candidate
    run = {"progress": False, "output_dir": str(tmp_path / "run")}
    result = ve.evaluate(None, evaluators=stack, dataset=dataset, run=run)
    print_summary(result.summary_table, result.run_info["metrics"])
    shown = capsys.readouterr().out
    assert "Perception=175.000" in shown and "Cognition=200.000" in shown
    assert "categories: existence score 125.000 acc 75.000 acc+ 50.000 (2)" in shown
    write_leaderboard([tmp_path / "run"])
    numbers = pl.read_parquet(tmp_path / "run" / "leaderboard_metrics.parquet")
    picked = numbers.filter(pl.col("metric").is_in(["Perception", "categories / OCR / score"]))
    assert picked.select("evaluator", "protocol", "metric", "value").rows() == [
        ("mme", "lmms_eval", "Perception", 175.0),
        ("mme", "lmms_eval", "categories / OCR / score", 50.0),
    ]


# --- the multiple-choice presets --------------------------------------------------------------------------------


def sent_texts(requests: list[FakeRequest]) -> list[str]:
    return sorted(r.text.split("\n\nImage 1:")[0] for r in requests)  # the candidate's image label follows


def test_mmstar_preset_averages_sub_capabilities() -> None:
    result, requests = run_with_candidate("mmstar")
    rows = by_id(result, "mmstar")
    # "(B)" right; "C" for A wrong; "A" right; "I'm not sure" has no letter A-D (scored 0, unparseable).
    assert [rows[str(i)]["score"] for i in range(4)] == [1.0, 0.0, 1.0, 0.0]
    metrics = result.run_info["metrics"]["mmstar"]
    # math = mean(geometry 0.5, statistical reasoning 1.0) = 0.75; coarse perception 0; average over the three
    # sub-capabilities = (0.5 + 1 + 0) / 3 = 0.5 (a mean over questions would be 2/4 here too: see the next line).
    assert (metrics["math"], metrics["coarse perception"], metrics["average"]) == (0.75, 0.0, 0.5)
    assert metrics["sub_capabilities"]["geometry"] == {"accuracy": 0.5, "n": 2} and metrics["unparseable"] == 1
    # The capabilities in the paper's order (coarse perception first), not the dataset's (math first).
    assert [k for k in metrics if k in ("math", "coarse perception")] == ["coarse perception", "math"]
    post = "\nAnswer with the option's letter from the given choices directly"
    assert "What is the mean?\nOptions: A: 2, B: 3, C: 4, D: 5" + post in sent_texts(requests)


def test_seedbench_preset_image_video_all() -> None:
    result, requests = run_with_candidate("seedbench")
    rows = by_id(result, "seedbench")
    # "B" right; "(C) a dog": its first character "(" is no letter (wrong); video "A" right; "d" = D right.
    assert [rows[f"q{i}"]["score"] for i in range(4)] == [1.0, 0.0, 1.0, 1.0]
    metrics = result.run_info["metrics"]["seedbench"]
    assert (metrics["Image"], metrics["Video"], metrics["All"]) == (pytest.approx(2 / 3), 1.0, 0.75)
    assert metrics["unparseable"] == 1
    assert metrics["data_types"] == {
        "image": {"accuracy": pytest.approx(2 / 3), "n": 3},
        "video": {"accuracy": 1.0, "n": 1},
    }
    asked = "What is in the scene?\nA. cat\nB. dog\nC. bird\nD. fish\nAnswer with the option's letter from the given "
    assert asked + "choices directly." in sent_texts(requests)
    assert sorted(len(r.images) for r in requests) == [1, 1, 1, 2]  # the video row's two frames


def test_ai2d_preset() -> None:
    result, requests = run_with_candidate("ai2d")
    rows = by_id(result, "ai2d")
    # "B. the sun" -> B (the filter); "sun" compared whole with "b" (wrong, unparseable); "(a)" -> "a" once
    # punctuation is removed (right).
    assert [rows[str(i)]["score"] for i in range(3)] == [1.0, 0.0, 1.0]
    metrics = result.run_info["metrics"]["ai2d"]
    assert metrics["accuracy"] == pytest.approx(2 / 3) and metrics["unparseable"] == 1
    post = "\nAnswer with the option's letter from the given choices directly."
    assert "Which stage comes first?\nA. egg\nB. larva\nC. adult" + post in sent_texts(requests)


def test_scienceqa_preset() -> None:
    result, requests = run_with_candidate("scienceqa")
    rows = by_id(result, "scienceqa")
    # "A" right; "B. wood" -> B right; "The answer is A": not the letter, not "X." (wrong, unparseable).
    assert [rows[str(i)]["score"] for i in range(3)] == [1.0, 1.0, 0.0]
    metrics = result.run_info["metrics"]["scienceqa"]
    assert metrics["accuracy"] == pytest.approx(2 / 3) and metrics["unparseable"] == 1
    assert metrics["subject"] == {
        "natural science": {"accuracy": 1.0, "n": 2},
        "language science": {"accuracy": 0.0, "n": 1},
    }
    post = "\nAnswer with the option's letter from the given choices directly."
    texts = sent_texts(requests)
    assert "Context: Think about magnets.\nWhich object is a magnet?\nA. magnet\nB. wood" + post in texts
    assert "Which material is this?\nA. metal\nB. wood" + post in texts  # no hint, no context line


def test_realworldqa_preset() -> None:
    result, _ = run_with_candidate("realworldqa")
    rows = by_id(result, "realworldqa")
    # "B." -> B right; "There are 2 cars." is not "2"; "downhill." = "Downhill" once lowercased, period dropped.
    assert [rows[str(i)]["score"] for i in range(3)] == [1.0, 0.0, 1.0]
    assert result.run_info["metrics"]["realworldqa"]["accuracy"] == pytest.approx(2 / 3)


# --- MMMU-Pro ---------------------------------------------------------------------------------------------------


def test_mmmu_pro_standard_preset() -> None:
    result, requests = run_with_candidate("mmmu_pro_standard")
    rows = by_id(result, "mmmu_pro")
    # "(C)" right; "I am unsure" reads as I (lmms-eval's reader: a letter followed by a space, and I is the ninth of
    # ten options), wrong; "B" right. No reply is left unread, so nothing is drawn.
    assert [rows[i]["score"] for i in ("test_Art_1", "test_Math_2", "test_Math_3")] == [1.0, 0.0, 1.0]
    assert json.loads(rows["test_Math_2"]["details"])["prediction"] == "I"
    metrics = result.run_info["metrics"]["mmmu_pro"]
    assert metrics["Overall"] == pytest.approx(2 / 3) and metrics["subjects"]["Math"] == {"accuracy": 0.5, "n": 2}
    assert (metrics["setting"], metrics["unparseable"]) == ("standard", 0)
    # Not interleaved: the placeholder stays in the text, the image follows it.
    text = next(r.text for r in requests if "cheapest" in r.text)
    assert text.startswith("Which medium is cheapest? <image 1>\nA. oil\nB. fresco") and "J. wax\n\nAnswer with" in text


def test_mmmu_pro_vision_preset() -> None:
    result, requests = run_with_candidate("mmmu_pro_vision")
    rows = by_id(result, "mmmu_pro")
    # "A" right; "The answer is B" is not the letter (the task keeps the whole reply): wrong; " C " stripped: right.
    assert [rows[i]["score"] for i in ("test_Art_1", "test_Art_2", "test_Math_3")] == [1.0, 0.0, 1.0]
    metrics = result.run_info["metrics"]["mmmu_pro"]
    assert metrics["Overall"] == pytest.approx(2 / 3) and metrics["unparseable"] == 1
    assert {r.text.split("\n\nImage 1:")[0] for r in requests} == {
        "Answer with the option letter from the given choices directly."
    }


# --- VQAv2 and InfoVQA: the existing metrics at their protocols -------------------------------------------------


def test_vqav2_preset_reads_the_annotation_answers() -> None:
    result, requests = run_with_candidate("vqav2")
    rows = by_id(result, "vqa_accuracy")
    # "yes" against ten "yes": 1; "3" against 6x"2", 2x"3", 2x"4": leaving out a "3" leaves 1 match (1/3), any
    # other 2 matches (2/3): (2 x 1/3 + 8 x 2/3) / 10 = 0.6; "no" against ten "yes": 0.
    assert [rows[str(1000 + i)]["score"] for i in range(3)] == pytest.approx([1.0, 0.6, 0.0])
    metrics = result.run_info["metrics"]
    assert metrics["vqa_accuracy"]["vqa_accuracy"] == pytest.approx(1.6 / 3)
    assert metrics["vqa_accuracy_other"]["n"] == 3 and metrics["vqa_accuracy_yes_no"]["n"] == 0
    asked = "How many birds are there?\nAnswer the question using a single word or phrase."
    assert asked in {r.text.split("\n\nImage 1:")[0] for r in requests}


def test_infovqa_preset_anls() -> None:
    result, _ = run_with_candidate("infovqa")
    rows = by_id(result, "anls")
    # exact; "Blue" = "blue" once lowercased; abxy/abcd: 2 edits over 4 characters = 0.5 (kept); tobacco/cigarette:
    # far below 0.5 -> 0.
    assert [rows[str(9000 + i)]["score"] for i in range(4)] == pytest.approx([1.0, 1.0, 0.5, 0.0])
    assert result.run_info["metrics"]["anls"]["anls"] == pytest.approx(2.5 / 4)


# --- MATH-Vision -----------------------------------------------------------------------------------------------


def test_mathvision_preset_overall_subjects_and_levels() -> None:
    result, requests = run_with_candidate("mathvision")
    rows = by_id(result, "mathvision")
    # \boxed{\frac{1}{2}} is 0.5; "(C)." reads C, not D (nor the option "6"); \sqrt{12} is the option 2\sqrt{3}
    # to two decimals; "I cannot tell" is no answer; (\frac{1}{2},2) is the list (0.5,2). lmms-eval's own
    # mathvision_process_results gives the same five verdicts.
    assert [rows[str(i)]["score"] for i in range(1, 6)] == [1.0, 0.0, 1.0, 0.0, 1.0]
    assert json.loads(rows["2"]["details"])["prediction"] == "c"
    metrics = result.run_info["metrics"]["mathvision"]
    assert metrics["Overall"] == 60.0 and metrics["n"] == 5
    assert metrics["subjects"]["combinatorics"] == {"accuracy": 0.0, "n": 2}
    assert metrics["subjects"]["metric geometry - length"] == {"accuracy": 100.0, "n": 1}
    assert metrics["levels"]["2"] == {"accuracy": 100.0, "n": 2} and metrics["levels"]["1"]["accuracy"] == 0.0
    head = 'Please solve the problem step by step and put your answer in one "\\boxed{}".'
    sent = sent_texts(requests)
    assert head + "What share of the square is shaded?" in sent
    choices = "\nChoices: A. 3\nB. 4\nC. 5\nD. 6\nE. 7"
    post = "\nAnswer the question with the option's letter from the given choices directly."
    assert head + "How many edges does the solid have?" + choices + post in sent


# --- every preset as a Hydra config group, and in `vision-eval list` --------------------------------------------

PRESETS = [
    "mmmu",
    "mmmu_pro_standard",
    "mmmu_pro_vision",
    "mme",
    "ocrbench",
    "mmstar",
    "seedbench",
    "ai2d",
    "scienceqa",
    "realworldqa",
    "vqav2",
    "infovqa",
    "mathvision",
]


@pytest.mark.parametrize("name", PRESETS)
def test_presets_compose_as_hydra_config_groups_and_read_a_local_export(name: str) -> None:
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base=None):
        cfg = compose(overrides=[f"+dataset={name}", f"+evaluators={name}", f"dataset.path={FIXTURES / name}.parquet"])
    raw = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(raw, dict)
    raw["dataset"]["columns"]["reply"] = "output"  # replies already in the export: no candidate
    result = ve.run_config(ve.validate_config({**raw, "run": {"progress": False}}))
    statuses = result.results["status"]
    assert set(statuses) <= {"processed", "skipped"} and (statuses == "processed").any()  # vqav2: per answer_type
    assert result.run_info["metrics"][next(iter(raw["evaluators"]))]["n"] > 0
    text = (ROOT / "conf" / "dataset" / f"{name}.yaml").read_text()
    assert "lmms-eval tasks/" in text and "local file" in text  # the comment names the prompt's source


def test_vision_eval_list_shows_each_preset_with_its_reference(capsys: Any) -> None:
    from vision_eval.commands import dispatch

    dispatch(["list"])
    shown = capsys.readouterr().out
    datasets = shown.split("Dataset presets")[1].split("\n\n")[0].splitlines()
    stacks = shown.split("Evaluator stacks")[1].split("\n\n")[0].splitlines()
    for name in PRESETS:
        dataset = next(line for line in datasets if line.split()[:1] == [name])
        stack = next(line for line in stacks if line.split()[:1] == [name])
        assert "lmms-eval's" in dataset and "protocol" in dataset  # whose prompt, which protocol
        assert "protocol" in stack and ("lmms-eval tasks/" in stack or "MMMU-Benchmark/MMMU" in stack)  # its reference
