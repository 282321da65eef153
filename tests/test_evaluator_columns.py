"""Per-evaluator columns: `columns: {output, expected_output, input, images}` on any evaluator reads other dataset
columns as the canonical ones, checked before the run; `where` still sees the dataset's own columns."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from conftest import BLUE, GREEN, RED, shape_png

import vision_eval as ve
from vision_eval.errors import ConfigError

ROWS = [
    {
        "id": "inv1",
        "task": "invoice",
        "output": '{"vendor": "Acme", "total": 42}',
        "answer_json": {"vendor": "Acme", "total": 42},
        "answer_count": 3,
        "count_reply": "3",
    },
    {
        "id": "inv2",
        "task": "invoice",
        "output": '{"vendor": "Acme", "total": 40}',
        "answer_json": {"vendor": "Acme", "total": 42},
        "answer_count": 5,
        "count_reply": "four",
    },
]
STACK = {
    "fields": {
        "type": "field_accuracy",
        "fields": [{"path": "vendor"}, {"path": "total", "match": "numeric_tolerance"}],
        "columns": {"expected_output": "answer_json"},
    },
    "count": {"type": "exact_count", "columns": {"output": "count_reply", "expected_output": "answer_count"}},
}


def by(result: ve.EvalResult, evaluator: str) -> dict[str, dict]:
    rows = result.results.filter(pl.col("evaluator") == evaluator)
    return {r["sample_id"]: r for r in rows.iter_rows(named=True)}


def test_one_dataset_feeds_a_json_field_check_and_a_count_from_different_columns() -> None:
    result = ve.evaluate(ROWS, evaluators=STACK, run={"progress": False})
    fields, count = by(result, "fields"), by(result, "count")
    assert fields["inv1"]["score"] == 1.0 and fields["inv2"]["score"] == 0.5
    assert count["inv1"]["score"] == 1.0 and count["inv2"]["score"] == 0.0  # "four" vs 5
    assert json.loads(count["inv2"]["details"])["expected"] == "5"  # the number column read as text
    found = result.fields.filter(pl.col("sample_id") == "inv2").sort("path")
    assert found["expected"].to_list() == ["42", '"Acme"']
    # Nothing renamed in what is written: samples keep the dataset's own columns.
    assert {"answer_json", "answer_count", "count_reply", "output"} <= set(result.samples.columns)


def test_the_same_stack_from_files_on_the_command_line(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    conf = tmp_path / "conf" / "evaluators"
    conf.mkdir(parents=True)
    (conf / "mixed.yaml").write_text(json.dumps(STACK))  # JSON is YAML
    command = [
        sys.executable,
        "-m",
        "vision_eval.cli",
        "--config-dir",
        "conf",
        "evaluators=mixed",
        "dataset.path=rows.jsonl",
        "hydra.run.dir=out",
    ]
    proc = subprocess.run(command, cwd=tmp_path, env=subprocess_env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    results = pl.read_parquet(tmp_path / "out" / "results.parquet").sort("evaluator", "sample_id")
    assert results["score"].to_list() == [1.0, 0.0, 1.0, 0.5]
    # A mapped column the dataset does not have stops the run before anything is evaluated, naming key and file.
    (conf / "mixed.yaml").write_text(json.dumps({"count": {"type": "exact_count", "columns": {"output": "reply"}}}))
    proc = subprocess.run(command, cwd=tmp_path, env=subprocess_env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    assert "evaluators.count.columns.output: dataset column 'reply' is not in the dataset" in proc.stderr
    assert str(conf / "mixed.yaml") in proc.stderr and "count_reply" in proc.stderr  # what exists


def test_where_sees_the_datasets_own_columns() -> None:
    rows = [
        {"id": "a", "output": "keep", "answer": "x", "guess": "x"},
        {"id": "b", "output": "drop", "answer": "x", "guess": "y"},
    ]
    stack = {
        "m": {
            "type": "exact_match",
            "where": "output = 'keep'",
            "columns": {"output": "guess", "expected_output": "answer"},
        }
    }
    rows_out = by(ve.evaluate(rows, evaluators=stack, run={"progress": False}), "m")
    assert rows_out["a"]["status"] == "processed" and rows_out["a"]["score"] == 1.0
    assert rows_out["b"]["status"] == "skipped"


def test_a_missing_value_in_a_mapped_column_is_a_row_error_naming_it() -> None:
    rows = [{"id": "a", "output": "x", "answer": None}, {"id": "b", "output": "x", "answer": "x"}]
    out = by(
        ve.evaluate(rows, evaluators={"m": {"type": "exact_match", "columns": {"expected_output": "answer"}}}), "m"
    )
    assert out["a"]["status"] == "error" and out["a"]["error"] == "answer (read as expected_output) is missing"
    assert out["b"]["score"] == 1.0


def test_bad_column_settings_are_config_errors_with_suggestions() -> None:
    with pytest.raises(ConfigError) as info:
        ve.evaluate(ROWS, evaluators={"m": {"type": "exact_match", "columns": {"expected": "answer_count"}}})
    assert info.value.key == "evaluators.m.columns.expected"
    assert "did you mean 'expected_output'" in info.value.message
    assert "valid keys: output, expected_output, input, images" in info.value.message
    with pytest.raises(ConfigError) as info:
        ve.evaluate(ROWS, evaluators={"m": {"type": "exact_match", "columns": {"output": "count_rep"}}})
    assert "did you mean 'count_reply'" in info.value.message


def test_python_and_code_judge_accept_the_mapping_besides_their_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "judge.py").write_text(
        "import json, sys\nrow = json.load(sys.stdin)\nprint(json.dumps({'score': float(row['output'] == '3')}))\n"
    )
    (tmp_path / "column_checks.py").write_text(
        "def is_three(row):\n    return row['output'] == '3'\n\n"
        "def reply_is_three(row):\n    return row['count_reply'] == '3'\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    stack = {
        "py": {"type": "python", "function": "column_checks:is_three", "columns": {"output": "count_reply"}},
        "cmd": {
            "type": "code_judge",
            "command": [sys.executable, str(tmp_path / "judge.py")],
            "columns": {"output": "count_reply"},
        },
        "listed": {"type": "python", "function": "column_checks:reply_is_three", "columns": ["count_reply"]},
    }
    result = ve.evaluate(ROWS, evaluators=stack, run={"progress": False})
    for name in ("py", "cmd", "listed"):
        assert by(result, name)["inv1"]["score"] == 1.0 and by(result, name)["inv2"]["score"] == 0.0, name


def test_images_from_other_columns_reach_the_judge_in_order(fresh_fake, tmp_path: Path) -> None:
    (tmp_path / "photo.png").write_bytes(shape_png(RED, 1))
    (tmp_path / "sketch.png").write_bytes(shape_png(GREEN, 3))
    (tmp_path / "other.png").write_bytes(shape_png(BLUE, 2))
    rows = [
        {
            "id": "a",
            "input": "What changed?",
            "output": "One red circle became three green ones.",
            "images": ["other.png"],
            "photo": "photo.png",
            "sketch": ["sketch.png"],
        },
        {
            "id": "b",
            "input": "What changed?",
            "output": "Nothing.",
            "images": ["other.png"],
            "photo": "missing.png",
            "sketch": ["sketch.png"],
        },
    ]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    judge = {
        "model": "openai/gpt-4o-mini",
        "api_base": fresh_fake.openai_base,
        "api_key": "sk-test",
        "cache_dir": str(tmp_path / "cache"),
    }
    stack = {"cmp": {"type": "llm_judge", "prompt": "comparison", "columns": {"images": ["photo", "sketch"]}}}
    result = ve.evaluate(str(tmp_path / "rows.jsonl"), evaluators=stack, judge=judge, run={"progress": False})
    seen = [(i.label, i.colour, i.shapes) for i in fresh_fake.requests[0].images]
    assert seen == [("Image 1", "red", 1), ("Image 2", "green", 3)]  # not the `images` column
    rows_out = by(result, "cmp")
    assert rows_out["a"]["status"] == "processed"
    # The other image columns are references like `images`: a missing file is that row's error, said plainly.
    assert rows_out["b"]["status"] == "error" and "image file not found: missing.png" in rows_out["b"]["error"]
    assert fresh_fake.calls == 1
    # samples.parquet holds paths and hashes of every image column, never bytes.
    photo = result.samples.sort("id")["photo"].to_list()[0][0]
    assert set(photo) == {"path", "sha256", "source", "error"} and photo["path"].endswith("photo.png")
