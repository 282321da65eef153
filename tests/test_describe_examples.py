"""Every shipped evaluator type's example (what `vision-eval describe <type>` prints) validates and runs on its
two rows: deterministic types score both rows, model-graded ones plan their requests without a judge."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from conftest import BLUE, RED, shape_png

from vision_eval import evaluate, registry
from vision_eval.commands.describe import describe, example_of
from vision_eval.example import IMAGE_NOTE, Example


def _example(type_name: str) -> Example:
    example = example_of(registry.get(type_name))
    assert example is not None, f"{type_name} has no example"
    return example


def test_every_registered_type_has_an_example() -> None:
    assert all(example_of(registry.get(name)) is not None for name in registry.names())


def _run_example(type_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The type's example as a user runs it: its files written, its two rows as a JSONL file."""
    example = _example(type_name)
    for index, (relative, content) in enumerate(example.files.items()):
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if content == IMAGE_NOTE:
            path.write_bytes(shape_png(RED if index % 2 == 0 else BLUE, index + 1))
        else:
            path.write_text(content)
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in example.rows))
    monkeypatch.chdir(tmp_path)  # a `python` example's module sits where vision-eval runs
    return evaluate(str(data), evaluators={f"my_{type_name}": example.settings}, run={"progress": False})


@pytest.mark.parametrize("type_name", registry.names())
def test_example_runs_on_its_two_rows(type_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = _run_example(type_name, tmp_path, monkeypatch)
    statuses = result.results["status"].to_list()
    assert len(statuses) == 2 and "error" not in statuses, result.results["error"].to_list()
    cls = registry.get(type_name)
    if cls.calls_models or type_name == "judge_agents":
        assert statuses == ["skipped", "skipped"]  # no judge: each row carries the request it would send
        plans = [json.loads(d) for d in result.results["details"]]
        assert all(p.get("reason") for p in plans)
        # A plan scores nothing, and the run says so (exit 3) rather than "all gates hold".
        assert result.exit_code == 3 and "nothing was scored" in result.problems[0], result.problems
    else:
        assert result.exit_code == 0, result.problems
        assert statuses == ["processed", "processed"]
        # An example shows a pass and a miss, so a user sees both verdicts.
        assert result.results["passed"].to_list() == [True, False], result.results["score"].to_list()


@pytest.mark.parametrize("type_name", registry.names())
def test_describe_prints_the_example_and_every_setting(type_name: str) -> None:
    text = describe(type_name)
    cls = registry.get(type_name)
    for name in cls.settings_model.model_fields:
        assert f"\n  {name}: " in text, name
    assert f"my_{type_name}:" in text and f"type: {type_name}" in text
    for row in _example(type_name).rows:
        assert json.dumps(row, ensure_ascii=False) in text


def test_describe_reads_columns_from_the_settings() -> None:
    # json_validator without expected output: a schema alone.
    assert "Reads columns: output, expected_output" in describe("exact_match")
    assert "Reads columns: brief, images" in describe("judge_agents")
    text = describe("select_best")
    assert "Reads columns:" in text and "output_b" in text.split("Reads columns:")[1].splitlines()[0]


SCORED = [name for name in registry.names() if not registry.get(name).calls_models and name != "judge_agents"]


@pytest.mark.parametrize("type_name", SCORED)
def test_frame_of_results_is_what_describe_promises(
    type_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What ``describe`` prints about a type's results holds in the frame of results its example produces: one row
    per example row under the example's id, the type and the evaluator's name as printed, the threshold it names
    ("Default threshold: X", unless the example sets one) and "a processed row passes when score >= threshold"."""
    text = describe(type_name)
    promised = re.search(r"^Default threshold: (\S+)  \(a processed row passes when score >= threshold\)$", text, re.M)
    assert promised is not None, text
    example = _example(type_name)
    threshold = float(example.settings.get("threshold", promised.group(1)))
    assert f"my_{type_name}:" in text
    frame = _run_example(type_name, tmp_path, monkeypatch).results
    assert frame["sample_id"].to_list() == [row["id"] for row in example.rows]
    assert set(frame["evaluator"]) == {f"my_{type_name}"} and set(frame["type"]) == {type_name}
    assert frame["status"].to_list() == ["processed", "processed"]
    assert frame["threshold"].to_list() == [threshold, threshold]
    assert frame["passed"].to_list() == [score >= threshold for score in frame["score"]]
    assert frame.select(pl.col("score").is_between(0, 1).all()).item()  # the score range describe names: 0..1


def test_describe_your_own_evaluator_class(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "my_metrics.py").write_text(
        "from typing import Literal\n"
        "from pydantic import Field\n"
        "from vision_eval import Evaluator, EvaluatorSettings\n\n"
        "class SharpSettings(EvaluatorSettings):\n"
        "    radius: int = Field(3, ge=1)\n"
        "    '''Pixels around each edge.'''\n"
        "    mode: Literal['sobel', 'laplace'] = 'sobel'\n"
        "    '''Edge operator.'''\n\n"
        "class Sharpness(Evaluator):\n"
        "    '''Edge energy of the image, normalized.'''\n"
        "    type_name = 'sharpness'\n"
        "    settings_model = SharpSettings\n"
        "    required_columns = ('images',)\n"
    )
    monkeypatch.chdir(tmp_path)  # found in the working directory, as a `_target_` would be
    text = describe("my_metrics:Sharpness")
    assert text.startswith("sharpness (family: my_metrics)")
    assert "radius: int = 3  (>= 1)" in text and "Pixels around each edge." in text
    assert 'mode: one of: sobel, laplace = "sobel"' in text
    assert "Reads columns: images" in text and "Example:" not in text  # no shipped example for a user class
