"""Every shipped evaluator type's example (what `vision-eval describe <type>` prints) validates and runs on its
two rows: deterministic types score both rows, model-graded ones plan their requests without a judge."""

from __future__ import annotations

import json
from pathlib import Path

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


@pytest.mark.parametrize("type_name", registry.names())
def test_example_runs_on_its_two_rows(type_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
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
    result = evaluate(str(data), evaluators={f"my_{type_name}": example.settings}, run={"progress": False})
    assert result.exit_code == 0, result.problems
    statuses = result.results["status"].to_list()
    assert len(statuses) == 2 and "error" not in statuses, result.results["error"].to_list()
    cls = registry.get(type_name)
    if cls.calls_models or type_name == "judge_agents":
        assert statuses == ["skipped", "skipped"]  # no judge: each row carries the request it would send
        plans = [json.loads(d) for d in result.results["details"]]
        assert all(p.get("reason") for p in plans)
    else:
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


def test_frame_of_results_is_what_describe_promises() -> None:
    # The example rows are valid JSON Lines a user can paste.
    for name in registry.names():
        frame = pl.DataFrame(_example(name).rows)
        assert frame.height == 2 and "id" in frame.columns


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
