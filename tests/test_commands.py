"""The subcommands as a new user meets them: `vision-eval --help`, `list`, `describe`, `init` (subprocesses), the
pre-run checks that name what to install or what does not exist, and Hydra usage left unchanged."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
import yaml
from conftest import BLUE, RED, shape_png

from vision_eval import registry

CLI = [sys.executable, "-m", "vision_eval.cli"]


def cli(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_help_says_what_the_tool_is_before_hydra(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    proc = cli(["--help"], tmp_path, subprocess_env)
    assert proc.returncode == 0, proc.stderr
    ours = proc.stdout.index("vision-eval: declarative batch evaluation")
    for command in ("vision-eval list", "vision-eval describe <type>", "vision-eval init <dir>"):
        assert command in proc.stdout
    assert "run.limit=10" in proc.stdout and "--config-dir <dir>" in proc.stdout
    assert ours < proc.stdout.index("== Configuration groups ==")  # Hydra's part follows


def test_list_shows_types_judges_presets_and_your_own_evaluators(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    (tmp_path / "my_evals.py").write_text(
        "from vision_eval import Evaluator, EvaluatorSettings\n\n"
        "class Sharpness(Evaluator):\n    '''Edge energy of the image, normalized.'''\n    type_name = 'sharpness'\n\n"
        "def short_answer(row):\n    '''1 when the output has at most five words.'''\n"
        "    return len(row['output'].split()) <= 5\n"
    )
    (tmp_path / "conf" / "evaluators").mkdir(parents=True)
    stack = {"sharp": {"_target_": "my_evals.Sharpness"}, "short": {"_target_": "my_evals.short_answer"}}
    (tmp_path / "conf" / "evaluators" / "mine.yaml").write_text(yaml.safe_dump(stack))
    proc = cli(["list", "--config-dir", "conf"], tmp_path, subprocess_env)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    for type_name, cls in registry.registered().items():
        line = next(x for x in lines if x.split()[:1] == [type_name])
        assert line.split()[1] == cls.__module__.split(".")[2]  # its family: its folder of vision_eval.evaluators
    assert any(x.split()[:2] == ["exact_match", "text"] and "normalization" in x for x in lines)
    assert any("image-description-judge" in x and "visual_accuracy" in x for x in lines)
    assert any(x.split()[:1] == ["chartqa"] and "ChartQA" in x for x in lines)  # a dataset preset
    assert any(x.split()[:1] == ["code_validators"] for x in lines)  # a stack
    assert any("my_evals.Sharpness (type sharpness)" in x and "Edge energy" in x for x in lines)
    assert any("my_evals.short_answer" in x and "python function" in x and "five words" in x for x in lines)
    assert any(x.split()[:2] == ["mine", "conf"] for x in lines)  # the user's stack, with its folder


def test_describe_shows_settings_columns_and_an_example(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    proc = cli(["describe", "field_accuracy"], tmp_path, subprocess_env)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert "Reads columns: output, expected_output" in text
    assert "Default threshold: 0.8" in text
    assert 'aggregation: one of: weighted_average, all_or_nothing = "weighted_average"' in text  # allowed values
    assert "weight: float = 1.0  (>= 0)" in text  # a nested field with its bound
    assert "min_pass_rate: float | null = null  (>= 0, <= 1)" in text
    assert "Quality gate: the share of processed rows that pass" in text  # the field's docstring
    assert "columns: ColumnMap = {}" in text and "Column read as ``expected_output``" in text  # nested model
    assert "my_field_accuracy:" in text and "type: field_accuracy" in text and '{"id": "a"' in text


def test_describe_an_unknown_type_suggests_the_closest(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    proc = cli(["describe", "exact_mach"], tmp_path, subprocess_env)
    assert proc.returncode == 2
    assert "did you mean 'exact_match'" in proc.stderr and "Traceback" not in proc.stderr


def test_the_example_describe_prints_runs_as_it_says(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    """Copy what `describe python` prints into files, run the command it prints: exit 0, both rows scored."""
    from vision_eval import registry

    example = registry.get("python").example
    assert example is not None
    proc = cli(["describe", "python"], tmp_path, subprocess_env)
    text = proc.stdout
    stack_text = text.split("(e.g. my_conf/evaluators/mine.yaml)\n\n", 1)[1].split("\n\n", 1)[0]
    (tmp_path / "my_conf" / "evaluators").mkdir(parents=True)
    (tmp_path / "my_conf" / "evaluators" / "mine.yaml").write_text(
        "\n".join(line[2:] for line in stack_text.splitlines())
    )
    rows_text = text.split("two dataset rows it runs on (data.jsonl):\n\n", 1)[1].split("\n\n", 1)[0]
    (tmp_path / "data.jsonl").write_text("\n".join(line.strip() for line in rows_text.splitlines()) + "\n")
    (tmp_path / "my_checks.py").write_text(example.files["my_checks.py"])
    command = text.split("Run it: ", 1)[1].split()
    assert command[0] == "vision-eval"
    run = cli([*command[1:], "hydra.run.dir=out"], tmp_path, subprocess_env)
    assert run.returncode == 0, run.stderr
    results = pl.read_parquet(tmp_path / "out" / "results.parquet")
    assert results.sort("sample_id")["score"].to_list() == [1.0, 0.0]


# --- init ----------------------------------------------------------------------------------------------------


def _user_data(folder: Path) -> Path:
    """A fresh JSONL with images, the columns named as people name them."""
    (folder / "images").mkdir(parents=True)
    (folder / "images" / "red.png").write_bytes(shape_png(RED, 2))
    (folder / "images" / "blue.png").write_bytes(shape_png(BLUE, 3))
    rows = [
        {"question": "How many circles?", "answer": 2, "prediction": "2", "image": "images/red.png"},
        {"question": "How many circles?", "answer": 3, "prediction": "three", "image": "images/blue.png"},
        {"question": "How many circles?", "answer": 3, "prediction": "4", "image": "images/blue.png"},
    ]
    path = folder / "counts.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_init_on_a_fresh_jsonl_with_images_runs_offline(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    data = _user_data(tmp_path / "data")
    proc = cli(["init", "my_conf", "--data", str(data)], tmp_path, subprocess_env)
    assert proc.returncode == 0, proc.stderr
    assert "question -> input" in proc.stdout and "prediction -> output" in proc.stdout
    dataset = yaml.safe_load((tmp_path / "my_conf" / "dataset" / "counts.yaml").read_text())
    assert dataset["columns"] == {
        "question": "input",
        "answer": "expected_output",
        "prediction": "output",
        "image": "images",
    }
    stack = yaml.safe_load((tmp_path / "my_conf" / "evaluators" / "counts.yaml").read_text())
    assert stack == {
        "count": {"type": "exact_count"},
        "image_judge": {"type": "llm_judge", "prompt": "image-description-judge"},
    }
    assert (tmp_path / "my_conf" / "judge" / "my_judge.yaml").is_file()

    run = cli(["--config-dir", "my_conf", "hydra.run.dir=out"], tmp_path, subprocess_env)
    assert run.returncode == 0, run.stderr
    results = pl.read_parquet(tmp_path / "out" / "results.parquet")
    counts = results.filter(pl.col("evaluator") == "count").sort("sample_id")
    assert counts["score"].to_list() == [1.0, 1.0, 0.0]  # "three" reads as 3
    judge = results.filter(pl.col("evaluator") == "image_judge")
    assert judge["status"].to_list() == ["skipped"] * 3  # no judge: the request it would send, nothing sent
    # Command-line choices still win over the project's.
    demo = cli(
        ["--config-dir", "my_conf", "dataset=demo", "evaluators=basic", "hydra.run.dir=demo"], tmp_path, subprocess_env
    )
    assert demo.returncode == 0, demo.stderr
    assert pl.read_parquet(tmp_path / "demo" / "results.parquet")["evaluator"].unique().to_list() == ["exact"]


def test_init_refuses_to_overwrite(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    assert cli(["init", "c"], tmp_path, subprocess_env).returncode == 0
    again = cli(["init", "c"], tmp_path, subprocess_env)
    assert again.returncode == 2 and "--force" in again.stderr
    assert cli(["init", "c", "--force"], tmp_path, subprocess_env).returncode == 0


def test_init_without_data_writes_an_example_that_runs(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    assert cli(["init", "c"], tmp_path, subprocess_env).returncode == 0
    assert (tmp_path / "c" / "data" / "example.jsonl").is_file()
    run = cli(["--config-dir", "c", "hydra.run.dir=out"], tmp_path, subprocess_env)
    assert run.returncode == 0, run.stderr
    assert pl.read_parquet(tmp_path / "out" / "results.parquet")["type"].unique().to_list() == ["exact_match"]


@pytest.mark.parametrize(
    ("rows", "fmt", "expected_stack"),
    [
        (
            [{"label": {"vendor": "Acme", "total": 42.5, "date": "2024-03-05", "lines": [1]}, "response": "{}"}],
            "jsonl",
            {
                "fields": {
                    "type": "field_accuracy",
                    "fields": [
                        {"path": "vendor", "match": "fuzzy"},
                        {"path": "total", "match": "numeric_tolerance", "tolerance": 0.01, "relative": True},
                        {"path": "date", "match": "date"},
                        {"path": "lines"},
                    ],
                }
            },
        ),
        ([{"gt": "yes", "pred": "Yes, there is."}, {"gt": "no", "pred": "No."}], "csv", {"yes_no": {"type": "pope"}}),
        (
            [{"target": 12.5, "output": "12"}, {"target": 3.0, "output": "3"}],
            "parquet",
            {"number": {"type": "relaxed_accuracy"}},
        ),
        (
            [{"answers": ["red", "dark red"], "response": "red"}],
            "parquet",
            {"answer": {"type": "anls"}},
        ),
        ([{"expected": "cat", "output": "a cat"}], "json", {"exact": {"type": "exact_match"}}),
        (
            [{"reference": '[{"box": [0, 0, 5, 5], "label": "cat"}]', "output": "[]"}],
            "jsonl",
            {"boxes": {"type": "bbox_iou", "format": "xyxy"}},
        ),
    ],
)
def test_init_picks_a_starter_stack_from_the_expected_outputs(
    tmp_path: Path, rows: list[dict], fmt: str, expected_stack: dict
) -> None:
    from vision_eval.commands.init import init_project

    path = tmp_path / f"mydata.{fmt}"
    if fmt == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    elif fmt == "json":
        path.write_text(json.dumps(rows))
    elif fmt == "csv":
        pl.DataFrame(rows).write_csv(path)
    else:
        pl.DataFrame(rows).write_parquet(path)
    result = init_project(tmp_path / "conf", path)
    assert {s.name: s.settings for s in result.stack} == expected_stack
    assert result.problems == []  # the written config passes the checks a run makes


def test_init_reads_an_imagefolder(tmp_path: Path) -> None:
    from vision_eval.commands.init import init_project

    folder = tmp_path / "photos"
    folder.mkdir()
    (folder / "a.png").write_bytes(shape_png(RED, 1))
    (folder / "b.png").write_bytes(shape_png(BLUE, 2))
    (folder / "metadata.jsonl").write_text(
        '{"file_name": "a.png", "prediction": "one red circle"}\n{"file_name": "b.png", "prediction": "two"}\n'
    )
    result = init_project(tmp_path / "conf", folder)
    assert result.mapping.get("prediction") == "output" and result.rows == 2
    assert [s.settings["type"] for s in result.stack] == ["llm_judge"]
    assert result.problems == []


def test_init_without_outputs_says_what_to_add(tmp_path: Path) -> None:
    from vision_eval.commands.init import init_project

    path = tmp_path / "qa.jsonl"
    path.write_text('{"question": "What colour?", "answer": "red"}\n')
    result = init_project(tmp_path / "conf", path)
    assert any("no output column" in p and "candidate=openai" in p for p in result.problems)


# --- checks before Hydra runs --------------------------------------------------------------------------------


def test_a_launcher_without_its_plugin_names_the_extra(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    from vision_eval.launchers import PLUGINS, _installed

    if all(_installed(module) for module in PLUGINS["slurm"][0]):
        pytest.skip("the slurm plugin is installed here (test_missing_plugin_message covers the message)")
    proc = cli(["-m", "hydra/launcher=slurm", "run.limit=1"], tmp_path, subprocess_env)
    assert proc.returncode == 2
    assert 'pip install "vision-eval[slurm]"' in proc.stderr and "Traceback" not in proc.stderr


def test_missing_plugin_message(monkeypatch: pytest.MonkeyPatch) -> None:
    from vision_eval import launchers

    # The plugin's module as it would be looked up on a machine without the extra.
    monkeypatch.setitem(launchers.PLUGINS, "slurm", (("hydra_plugins.not_installed_here",), "slurm"))
    problem = launchers.missing_launcher(["-m", "hydra/launcher=slurm", "run.shard=0/2,1/2"])
    assert problem is not None and 'pip install "vision-eval[slurm]"' in problem
    assert launchers.missing_launcher(["-m", "hydra/launcher=local_parallel"]) is None  # needs nothing more


@pytest.mark.parametrize("path", ["./my_data", "my_data.jsonl", "/no/such/data.parquet", "mydata"])
def test_a_missing_local_dataset_is_reported_at_once(path: str, tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    proc = cli([f"dataset.path={path}", "hydra.run.dir=r"], tmp_path, subprocess_env)
    assert proc.returncode == 2
    assert "not found locally" in proc.stderr and "Hugging Face" in proc.stderr
    assert "loading it as a Hugging Face dataset failed" not in proc.stderr  # the Hub was not tried


def test_a_folder_prefix_that_exists_makes_a_path_local(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    (tmp_path / "data").mkdir()
    proc = cli(["dataset.path=data/mine", "hydra.run.dir=r"], tmp_path, subprocess_env)
    assert proc.returncode == 2 and "'data/mine' not found locally" in proc.stderr


def test_a_hub_shaped_id_is_tried_on_the_hub_and_its_error_says_both(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    env = {**subprocess_env, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}  # fail fast instead of retrying
    proc = cli(["dataset.path=someone/missing-dataset", "hydra.run.dir=r"], tmp_path, env)
    assert proc.returncode == 2
    assert "'someone/missing-dataset' is not a local file or folder" in proc.stderr
    assert "loading it as a Hugging Face dataset failed" in proc.stderr


@pytest.mark.parametrize(
    ("text", "local"),
    [
        ("./data", True),
        ("../data", True),
        ("/data/x", True),
        ("~/data", True),
        ("rows.jsonl", True),
        ("exports/rows.parquet", True),
        ("lmms-lab/ChartQA", False),
        ("vikhyatk/CountBenchQA", False),
    ],
)
def test_what_looks_local(text: str, local: bool) -> None:
    from vision_eval.data.loading import looks_local

    assert looks_local(text) is local


def test_unknown_type_and_key_suggest_the_closest_and_list_the_valid_keys() -> None:
    import vision_eval as ve

    rows = [{"output": "a", "expected_output": "a"}]
    with pytest.raises(ve.ConfigError) as info:
        ve.evaluate(rows, evaluators={"e": {"type": "exact_mach"}})
    assert info.value.key == "evaluators.e.type" and "did you mean 'exact_match'" in info.value.message
    assert "vision-eval list" in info.value.message
    with pytest.raises(ve.ConfigError) as info:
        ve.evaluate(rows, evaluators={"e": {"type": "exact_match", "treshold": 0.5}})
    assert info.value.key == "evaluators.e.treshold" and "did you mean 'threshold'" in info.value.message
    assert "valid keys: type, threshold, where, description, columns" in info.value.message
    assert "case_sensitive" in info.value.message  # the type's own keys too
    with pytest.raises(ve.ConfigError) as info:  # nested settings: the keys of that level
        ve.evaluate(rows, evaluators={"f": {"type": "field_accuracy", "fields": [{"path": "a", "tolerence": 1}]}})
    assert info.value.key == "evaluators.f.fields[0].tolerence" and "did you mean 'tolerance'" in info.value.message
    with pytest.raises(ve.ConfigError) as info:  # the run config too
        ve.evaluate(rows, evaluators={}, run={"limt": 3})
    assert "did you mean 'limit'" in info.value.message
