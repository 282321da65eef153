"""Text that is not valid Unicode (lone surrogates, bytes that are not UTF-8) is a row error naming the column and
where the row came from, never a crash; the other rows are scored as usual."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import vision_eval as ve

EXACT = {"exact": {"type": "exact_match"}}
BAD_TEXT = "is not valid text"


def _by_id(result: ve.EvalResult) -> dict[str, dict]:
    rows = result.results.to_dicts()
    assert len(rows) == len({r["sample_id"] for r in rows})
    return {r["sample_id"]: r for r in rows}


def test_python_rows_with_a_lone_surrogate() -> None:
    rows = [
        {"id": "a", "output": "x \ud800", "expected_output": "x"},
        {"id": "b", "output": "x", "expected_output": "x"},
        {"id": "c", "output": "y", "expected_output": {"k": "\udfff"}},
        {"id": "d", "output": "y", "expected_output": "y", "tags": ["ok", "\ud83d"]},
    ]
    by = _by_id(ve.evaluate(rows, evaluators=EXACT))
    assert by["a"]["status"] == "error" and by["a"]["error"].startswith("row 1: column 'output' " + BAD_TEXT)
    assert by["b"]["status"] == "processed" and by["b"]["score"] == 1.0
    assert by["c"]["status"] == "error" and "column 'expected_output'" in by["c"]["error"]
    assert by["d"]["status"] == "error" and "row 4: column 'tags'" in by["d"]["error"]


def test_samples_keep_the_row_with_replacement_characters() -> None:
    result = ve.evaluate([{"id": "a", "output": "x \ud800 y", "expected_output": "x"}], evaluators=EXACT)
    sample = result.samples.row(0, named=True)
    assert sample["output"] == "x \ufffd y" and BAD_TEXT in sample["row_error"]


def test_jsonl_surrogate_escape_and_raw_bytes(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_bytes(
        b'{"id": "esc", "output": "x \\ud800", "expected_output": "x"}\n'
        b'{"id": "raw", "output": "x", "expected_output": "x \xff\xfe"}\n'
        b"\n"
        b'{"id": "ok", "output": "x", "expected_output": "x"}\n'
    )
    by = _by_id(ve.evaluate(str(path), evaluators=EXACT))
    assert by["esc"]["error"].startswith("line 1 of rows.jsonl: column 'output' " + BAD_TEXT)
    assert by["raw"]["error"].startswith("line 2 of rows.jsonl: column 'expected_output' " + BAD_TEXT)
    assert by["ok"]["status"] == "processed" and by["ok"]["score"] == 1.0


def test_json_and_csv_files_with_bytes_that_are_not_utf8(tmp_path: Path) -> None:
    json_path = tmp_path / "rows.json"
    json_path.write_bytes(b'[{"id": "a", "output": "\xc3\x28", "expected_output": "x"}, {"id": "b", "output": "x", '
                          b'"expected_output": "x"}]')  # fmt: skip
    by = _by_id(ve.evaluate(str(json_path), evaluators=EXACT))
    assert by["a"]["error"].startswith("item 1 of rows.json: column 'output' " + BAD_TEXT)
    assert by["b"]["score"] == 1.0
    csv_path = tmp_path / "rows.csv"
    csv_path.write_bytes(b"id,output,expected_output\na,x,x\nb,x \xff y,x\nc,x,x\n")
    by = _by_id(ve.evaluate(str(csv_path), evaluators=EXACT))
    assert by["b"]["error"].startswith("row 2 of rows.csv: column 'output' " + BAD_TEXT)
    assert by["a"]["score"] == by["c"]["score"] == 1.0


def test_pandas_object_column_with_a_surrogate() -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"id": ["a", "b"], "output": ["x \ud800", "x"], "expected_output": ["x", "x"]}, dtype=object)
    by = _by_id(ve.evaluate(frame, evaluators=EXACT))
    assert BAD_TEXT in by["a"]["error"] and by["b"]["score"] == 1.0


def test_cli_reports_the_row_and_exits_normally(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_bytes(
        b'{"id": "a", "output": "x \xff", "expected_output": "x"}\n{"id": "b", "output": "x", "expected_output": "x"}\n'
    )
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "vision_eval.cli", f"dataset.path={path}", "evaluators=basic",
         "~evaluators.exact.where", f"hydra.run.dir={out}", "run.write_report=false", "run.max_error_rate=1"],
        capture_output=True, text=True, env=subprocess_env, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    import polars as pl

    results = pl.read_parquet(out / "results.parquet")
    errors = results.filter(pl.col("sample_id") == "a")["error"].to_list()
    assert errors and all(BAD_TEXT in e for e in errors)
    assert results.filter(pl.col("sample_id") == "b")["status"].to_list() == ["processed"] * len(errors)
    assert json.loads((out / "run.json").read_text())["counts"]["samples"] == 2


def test_rows_built_through_arrow_are_the_frame_polars_builds_from_the_dicts() -> None:
    """``from_dicts`` builds plain columns (text, numbers, booleans, lists of text) through Arrow, not one list
    cell at a time: the same frame ``pl.DataFrame(rows)`` gives, or the fallback to it for anything else."""
    import random

    import polars as pl

    from vision_eval.data.rows import _plain_frame

    values = [
        None, "", "a", "é\x00", "\ud800", 0, -1, 2**62, 2**63, -(2**63), 2**70, 1.5, -0.0, float("nan"),
        float("inf"), True, False, [], ["x"], ["x", None], [None], [1], [1.5, "x"], ["x", ["y"]], b"\x00",
    ]  # fmt: skip
    rng = random.Random(7)
    built = 0
    for _ in range(3000):
        columns = rng.sample(["a", "b", "c"], rng.randint(1, 3))
        rows = [{c: rng.choice(values) for c in columns if rng.random() < 0.9} for _ in range(rng.randint(1, 4))]
        rows = [row for row in rows if row] or [{"a": None}]
        names = list(dict.fromkeys(c for row in rows for c in row))
        fast = _plain_frame(rows, names)
        if fast is None:
            continue
        built += 1
        reference = pl.DataFrame(rows, infer_schema_length=None)
        assert fast.schema == reference.schema, rows
        assert fast.equals(reference, null_equal=True), rows
    assert built > 500  # the fast path is taken for plain columns
