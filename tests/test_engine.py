"""Engine guarantees: result schema, no row lost, bad rows isolated, outputs written."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import ClassVar

import polars as pl
import pytest

import vision_eval as ve
from vision_eval.results import DIMENSION_SCHEMA, FIELD_SCHEMA, RESULT_SCHEMA

ROWS = [{"id": f"r{i}", "output": f"out {i}", "expected_output": f"out {i}" if i % 2 else "other"} for i in range(8)]


def fails_on_r5(frame: pl.DataFrame) -> pl.DataFrame:
    """Vectorized function that raises whenever r5 is in the batch."""
    if "r5" in frame["id"].to_list():
        raise ValueError("cannot score r5")
    return frame.select(pl.col("id"), pl.lit(0.75).alias("score"))


def out_of_range(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.select(pl.col("id"), pl.when(pl.col("id") == "r0").then(1.5).otherwise(0.5).alias("score"))


def drops_rows(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.filter(pl.col("id") != "r3").select(pl.col("id"), pl.lit(1.0).alias("score"))


def row_raises(row: dict) -> dict:
    if row["id"] == "r2":
        raise RuntimeError("boom")
    return {"score": 1.0, "passed": True}


def test_result_schema_is_the_public_contract() -> None:
    result = ve.evaluate(ROWS, evaluators={"em": {"type": "exact_match"}})
    assert result.results.schema == pl.Schema(RESULT_SCHEMA)
    assert result.dimensions.schema == pl.Schema(DIMENSION_SCHEMA)
    assert result.fields.schema == pl.Schema(FIELD_SCHEMA)
    for column in (
        "sample_id",
        "evaluator",
        "type",
        "status",
        "score",
        "passed",
        "threshold",
        "details",
        "error",
        "input_tokens",
        "output_tokens",
        "cost_usd",
        "latency_s",
    ):
        assert column in result.results.columns
    assert result.results["score"].to_list() == [0.0, 1.0] * 4
    assert result.results["passed"].to_list() == [False, True] * 4


def test_a_raising_evaluator_only_errors_the_bad_row() -> None:
    result = ve.evaluate(ROWS, evaluators={"f": {"type": "python", "function": f"{__name__}:fails_on_r5"}})
    by = {r["sample_id"]: r for r in result.results.iter_rows(named=True)}
    assert len(by) == 8
    assert by["r5"]["status"] == "error" and "cannot score r5" in by["r5"]["error"]
    assert all(by[f"r{i}"]["score"] == 0.75 for i in range(8) if i != 5)


def test_row_function_exception_is_that_rows_error() -> None:
    result = ve.evaluate(ROWS, evaluators={"f": {"type": "python", "function": f"{__name__}:row_raises"}})
    errors = result.results.filter(pl.col("status") == "error")
    assert errors["sample_id"].to_list() == ["r2"] and "boom" in errors["error"][0]


def test_bad_scores_and_missing_rows_become_errors() -> None:
    result = ve.evaluate(
        ROWS,
        evaluators={
            "range": {"type": "python", "function": f"{__name__}:out_of_range"},
            "drop": {"type": "python", "function": f"{__name__}:drops_rows"},
        },
    )
    rng = result.results.filter(pl.col("evaluator") == "range")
    assert rng.filter(pl.col("sample_id") == "r0")["error"][0] == "evaluator returned score 1.5 outside 0..1"
    assert rng.filter(pl.col("sample_id") == "r0")["score"][0] is None
    drop = result.results.filter(pl.col("evaluator") == "drop")
    assert drop.height == 8
    assert drop.filter(pl.col("sample_id") == "r3")["error"][0] == "evaluator returned no result for this row"


def test_missing_values_and_where_filter() -> None:
    rows = [
        {"id": "a", "task": "ocr", "output": "x", "expected_output": "x"},
        {"id": "b", "task": "ocr", "output": None, "expected_output": "x"},
        {"id": "c", "task": "count", "output": "x", "expected_output": "x"},
    ]
    result = ve.evaluate(rows, evaluators={"em": {"type": "exact_match", "where": "task = 'ocr'"}})
    by = {r["sample_id"]: r for r in result.results.iter_rows(named=True)}
    assert by["a"]["status"] == "processed" and by["a"]["passed"] is True
    assert by["b"]["status"] == "error" and by["b"]["error"] == "output is missing" and by["b"]["score"] is None
    assert by["c"]["status"] == "skipped" and by["c"]["passed"] is None
    assert json.loads(by["c"]["details"])["reason"] == "row not selected by where: task = 'ocr'"
    summary = result.summary.row(0, named=True)
    assert (summary["processed"], summary["errors"], summary["skipped"]) == (1, 1, 1)


def test_a_row_whose_filter_column_is_null_is_not_selected() -> None:
    """SQL's three-valued logic: ``task = 'count'`` is null, not true, for a row without a task, so that row is
    ``skipped`` with the reason, never scored (also when the output would have matched)."""
    rows = [
        {"id": "a", "task": "count", "output": "3", "expected_output": "3"},
        {"id": "n", "task": None, "output": "3", "expected_output": "3"},
        {"id": "o", "task": "ocr", "output": "3", "expected_output": "3"},
    ]
    result = ve.evaluate(rows, evaluators={"em": {"type": "exact_match", "where": "task = 'count'"}})
    by = {r["sample_id"]: r for r in result.results.iter_rows(named=True)}
    assert by["a"]["status"] == "processed" and by["a"]["score"] == 1.0
    for skipped in ("n", "o"):
        assert by[skipped]["status"] == "skipped", by[skipped]
        assert by[skipped]["score"] is None and by[skipped]["passed"] is None
        assert json.loads(by[skipped]["details"])["reason"] == "row not selected by where: task = 'count'"
    summary = result.summary.row(0, named=True)
    assert (summary["processed"], summary["errors"], summary["skipped"]) == (1, 0, 2)


def test_threshold_override_changes_passed_not_score() -> None:
    rows = [{"output": "a b c", "expected_output": ""}]
    low = ve.evaluate(rows, evaluators={"c": {"type": "contains", "value": ["a", "z"], "threshold": 0.5}})
    high = ve.evaluate(rows, evaluators={"c": {"type": "contains", "value": ["a", "z"], "threshold": 0.9}})
    assert low.results["score"][0] == high.results["score"][0] == 0.5
    assert low.results["passed"][0] is True and high.results["passed"][0] is False
    assert high.results["threshold"][0] == 0.9


class SlowAsync(ve.Evaluator):
    """An async evaluator: checks the engine awaits async evaluators concurrently."""

    type_name: ClassVar[str] = "test_slow_async"
    is_async = True
    default_threshold = 0.5

    async def aevaluate(self, batch: pl.DataFrame) -> ve.EvalOutput:
        await asyncio.sleep(0.2)
        rows = batch.select(
            pl.col("id").alias("sample_id"), pl.lit("processed").alias("status"), pl.lit(0.6).alias("score")
        )
        dims = batch.select(
            pl.col("id").alias("sample_id"),
            pl.lit("d1").alias("dimension"),
            pl.lit(0.6).alias("score"),
            pl.lit(1.0).alias("weight"),
        )
        return ve.EvalOutput(rows, dimensions=dims)


def test_async_evaluators_run_concurrently() -> None:
    import time

    start = time.perf_counter()
    result = ve.evaluate(
        ROWS, evaluators={f"a{i}": {"_target_": f"{__name__}.SlowAsync"} for i in range(4)}, run={"batch_size": 4}
    )
    elapsed = time.perf_counter() - start
    assert result.results.height == 32 and result.results["passed"].all()
    assert result.dimensions.height == 32 and set(result.dimensions["evaluator"]) == {"a0", "a1", "a2", "a3"}
    assert elapsed < 4 * 2 * 0.2  # eight sleeps of 0.2 s overlapped, not run one after another


def test_write_creates_all_outputs(tmp_path: Path) -> None:
    result = ve.evaluate(ROWS, evaluators={"em": {"type": "exact_match"}}, output_dir=tmp_path / "run")
    out = tmp_path / "run"
    for name in ("results.parquet", "dimensions.parquet", "fields.parquet", "samples.parquet", "run.json"):
        assert (out / name).is_file(), name
    assert pl.read_parquet(out / "results.parquet").equals(result.results)
    info = json.loads((out / "run.json").read_text())
    assert info["counts"]["samples"] == 8 and info["counts"]["status"] == {"processed": 8}
    assert info["versions"]["polars"] == pl.__version__
    assert info["summary"][0]["evaluator"] == "em" and info["totals"]["cost_usd"] is None
    assert "evaluate_s" in info["timings"]


def test_empty_dataset_reports_nothing_and_does_not_crash(tmp_path: Path) -> None:
    """No rows: the results still have every column with its type (as a one-row run's), the summary counts zero
    rows of each status with no score, and the run exits 0 with its files written."""
    em = {"em": {"type": "exact_match"}}
    result = ve.evaluate(
        pl.DataFrame({"output": [], "expected_output": []}, schema={"output": pl.Utf8, "expected_output": pl.Utf8}),
        evaluators=em,
        output_dir=tmp_path / "run",
    )
    one = ve.evaluate([{"id": "a", "output": "x", "expected_output": "x"}], evaluators=em)
    assert result.results.height == 0 and result.results.schema == one.results.schema
    assert {"sample_id", "evaluator", "status", "score", "passed", "details", "error"} <= set(result.results.columns)
    assert result.results["status"].to_list() == []
    assert result.summary.to_dicts() == [
        {"evaluator": "em", "type": "exact_match", "rows": 0, "processed": 0, "errors": 0, "skipped": 0,
         "mean_score": None, "pass_rate": None, "input_tokens": 0, "output_tokens": 0, "cost_usd": None}
    ]  # fmt: skip
    assert result.exit_code == 3 and result.problems == [
        "run: nothing was scored: there are no result rows; set run.allow_nothing_scored=true if the config means it"
    ]
    assert {"id", "output", "expected_output"} <= set(result.samples.columns) and result.samples.height == 0
    written = pl.read_parquet(tmp_path / "run" / "results.parquet")
    assert written.height == 0 and written.schema == one.results.schema
    info = json.loads((tmp_path / "run" / "run.json").read_text())
    assert info["counts"] == {"samples": 0, "result_rows": 0, "status": {}} and info["exit_code"] == 3


@pytest.mark.parametrize("batch_size", [1, 3, 100])
def test_batching_does_not_change_results(batch_size: int) -> None:
    result = ve.evaluate(ROWS, evaluators={"em": {"type": "exact_match"}}, run={"batch_size": batch_size})
    assert result.results["sample_id"].to_list() == [r["id"] for r in ROWS]
    assert result.results["score"].to_list() == [0.0, 1.0] * 4


def test_heavy_libraries_load_only_when_used(subprocess_env: dict[str, str]) -> None:
    """Importing the package, every built-in evaluator and running a deterministic stack loads neither litellm
    (~3 s) nor DuckDB, and no evaluator does: json_validator and field_accuracy are row functions, whatever the
    batch or the paths."""
    import subprocess
    import sys

    loaded = "print(sorted(m for m in ('litellm', 'duckdb') if m in sys.modules))\n"
    json_rows = "[{'id': str(i), 'output': '{\"a\": %d}' % i, 'expected_output': '{\"a\": 1}'} for i in range(N)]"
    code = (
        "import sys, vision_eval\n"
        "from vision_eval import registry\n"
        "assert 'field_accuracy' in registry.names()\n"
        "vision_eval.evaluate([{'id': 'a', 'output': 'x', 'expected_output': 'x'}],"
        " evaluators={'m': {'type': 'exact_match'}})\n"
        f"{loaded}"
        f"vision_eval.evaluate({json_rows.replace('N', '3000')}, evaluators={{'j': {{'type': 'json_validator'}}}})\n"
        f"{loaded}"
        "vision_eval.evaluate([{'id': 'a', 'output': '{\"a\": 1}', 'expected_output': '{\"a\": 1}'}],"
        " evaluators={'f': {'type': 'field_accuracy', 'fields': [{'path': 'a'}]}})\n"
        f"{loaded}"
        "vision_eval.evaluate([{'id': 'a', 'output': '{\"a\": [1]}', 'expected_output': '{\"a\": [1]}'}],"
        " evaluators={'f': {'type': 'field_accuracy', 'fields': [{'path': 'a[0]'}]}})\n"
        f"{loaded}"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=subprocess_env, check=True)
    assert out.stdout.split("\n")[:4] == ["[]", "[]", "[]", "[]"], out.stdout + out.stderr


class WarmingUpSettings(ve.EvaluatorSettings):
    fail: bool = False
    """The warm-up raises."""


class WarmingUp(ve.Evaluator[WarmingUpSettings]):
    """Records the thread its warm-up ran on."""

    type_name: ClassVar[str] = "warming_up"
    required_columns = ()
    threads: ClassVar[list[str]] = []

    def warm_up(self) -> None:
        WarmingUp.threads.append(threading.current_thread().name)
        if self.settings.fail:
            raise RuntimeError("no head start today")

    def evaluate(self, batch: pl.DataFrame) -> ve.EvalOutput:
        return ve.EvalOutput(batch.select(pl.col("id").alias("sample_id"), pl.lit(1.0).alias("score")))


def test_the_run_warms_evaluators_up_on_a_thread_of_its_own_and_a_failed_warm_up_costs_nothing() -> None:
    WarmingUp.threads.clear()
    stack = {"a": {"_target_": f"{__name__}.WarmingUp", "fail": True}, "b": {"_target_": f"{__name__}.WarmingUp"}}
    result = ve.evaluate([{"id": "x"}, {"id": "y"}], evaluators=stack)
    for thread in threading.enumerate():  # a head start: the run does not wait for it
        if thread.name == "vision-eval-warm-up":
            thread.join()
    assert WarmingUp.threads == ["vision-eval-warm-up"] * 2  # b warmed up after a failed
    assert result.results["score"].to_list() == [1.0] * 4
