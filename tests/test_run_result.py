"""What a finished run adds up to (vision_eval.finish): run.json's counts, gates, problems and metrics, each from the
run's own rows; a failing metric never loses the results."""

from __future__ import annotations

import contextlib
import resource
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import polars as pl
import pytest
from conftest import RED, shape_png
from interrupting import interrupter

import vision_eval as ve
from vision_eval.errors import Interrupted, OutputsNotWritten
from vision_eval.evaluators.text.text_match import ExactMatch
from vision_eval.registry import register

MINI = "openai/gpt-4o-mini"
ROWS = [
    {"id": "a", "output": "x", "expected_output": "x"},
    {"id": "b", "output": None, "expected_output": "y"},
    {"id": "c", "output": "2 cats", "expected_output": "2"},
]


def run(**evaluators: dict[str, Any]) -> dict[str, Any]:
    return ve.evaluate(ROWS, evaluators=evaluators, run={"progress": False}).run_info


def test_run_json_counts_gates_and_problems_come_from_the_rows() -> None:
    info = run(em={"type": "exact_match"}, cnt={"type": "exact_count", "protocol": "lenient"})
    assert info["counts"] == {"samples": 3, "result_rows": 6, "status": {"processed": 3, "error": 3}}
    assert info["exit_code"] == 3 and info["complete"] is True
    assert info["problems"] == [
        "em: error rate 33.3% > 10.0% (1 of 3 rows)",
        "cnt: error rate 66.7% > 10.0% (2 of 3 rows)",
    ]
    assert [(g["evaluator"], g["gate"], g["passed"]) for g in info["gates"]] == [
        ("em", "max_error_rate", False),
        ("cnt", "max_error_rate", False),
    ]
    assert info["top_errors"] == {
        "cnt": [
            {"reason": "expected_output holds no count", "rows": 1},
            {"reason": "output is missing", "rows": 1},
        ],
        "em": [{"reason": "output is missing", "rows": 1}],
    }
    assert info["evaluators"]["cnt"]["protocol"] == "lenient" and info["evaluators"]["em"]["type"] == "exact_match"
    assert info["metrics"] == {
        "em": {},
        "cnt": {"protocol": "lenient", "n": 1, "unparseable": 0, "accuracy": 1.0, "mae": 0.0},
    }
    assert info["dataset"]["rows"] == 3 and info["dataset"]["root"] is None
    assert info["resumed_batches"] == {"em": 0, "cnt": 0}


def test_a_clean_run_exits_0_with_no_problems() -> None:
    info = run(em={"type": "exact_match", "max_error_rate": 0.5})
    assert info["exit_code"] == 0 and info["problems"] == [] and info["gates"][0]["passed"] is True
    assert info["counts"]["status"] == {"processed": 2, "error": 1}


class BrokenSummary(ExactMatch):
    """exact_match whose dataset-level metric raises."""

    type_name: ClassVar[str] = "broken_summary"

    def summarize(self, results: pl.DataFrame) -> dict[str, Any]:
        raise ZeroDivisionError("no rows to divide by")


def test_a_failing_metric_is_reported_and_the_results_kept() -> None:
    register(BrokenSummary)
    result = ve.evaluate(ROWS, evaluators={"b": {"type": "broken_summary"}}, run={"progress": False})
    assert result.run_info["metrics"] == {"b": {"error": "ZeroDivisionError: no rows to divide by"}}
    assert result.results["status"].to_list() == ["processed", "error", "processed"]


def judged_rows(tmp_path: Path) -> list[dict[str, Any]]:
    (tmp_path / "red.png").write_bytes(shape_png(RED, 2))
    image = str(tmp_path / "red.png")
    return [{"id": f"r{i}", "input": "Describe.", "output": o, "images": [image]} for i, o in enumerate("abc")]


def judge(fake: Any, **extra: Any) -> dict[str, Any]:
    return {"model": MINI, "api_base": fake.openai_base, "api_key": "k", "cache": False, "max_concurrency": 1, **extra}


def gate(info: dict[str, Any], name: str) -> dict[str, Any]:
    (found,) = [g for g in info["gates"] if g["gate"] == name]
    return found


def test_a_tripped_circuit_breaker_is_a_failed_run_gate(fresh_fake: Any, tmp_path: Path) -> None:
    fresh_fake.push(*[{"status": 400}] * 2)
    result = ve.evaluate(
        judged_rows(tmp_path),
        evaluators={"e": {"type": "closed_qa", "criteria": "Red?"}},
        judge=judge(fresh_fake, circuit_breaker=2),
        run={"concurrency": 1, "progress": False},
    )
    info = result.run_info
    tripped = gate(info, "circuit_breaker")
    assert (tripped["evaluator"], tripped["passed"], tripped["exit_code"]) == ("run", False, 3)
    assert (tripped["value"], tripped["limit"]) == (None, None)
    assert tripped["message"].startswith(f"run: circuit breaker stopped calling {MINI}: 2 consecutive calls failed")
    assert info["complete"] is False and result.exit_code == 3 and tripped["message"] in info["problems"]


def test_a_spent_budget_is_a_failed_run_gate_counting_the_rows_it_skipped(fresh_fake: Any, tmp_path: Path) -> None:
    result = ve.evaluate(
        judged_rows(tmp_path),
        evaluators={"e": {"type": "closed_qa", "criteria": "Red?"}},
        judge=judge(fresh_fake),
        run={"concurrency": 1, "progress": False, "max_cost_usd": 0.0003},
    )
    info = result.run_info
    spent = gate(info, "budget")
    assert (spent["evaluator"], spent["value"], spent["limit"], spent["passed"], spent["exit_code"]) == (
        "run",
        0.0,
        0.0003,
        False,
        3,
    )
    assert spent["message"] == (
        "run: budget exhausted ($0.0000 of $0.0003 spent); 3 result rows skipped; resume with a larger "
        "run.max_cost_usd to finish (finished calls are not paid twice)"
    )
    assert info["complete"] is False and result.exit_code == 3 and fresh_fake.calls == 0


class Tallied(ExactMatch):
    """exact_match with a run-wide table built from every row of its results and dimensions."""

    type_name: ClassVar[str] = "tallied"

    def finalize(self, results: pl.DataFrame, dimensions: pl.DataFrame) -> dict[str, pl.DataFrame]:
        counts = results.group_by("status").len().sort("status")
        return {"tally": counts.with_columns(pl.lit(dimensions.height).alias("dimension_rows"))}


def test_run_wide_tables_are_built_from_the_evaluators_own_rows() -> None:
    register(Tallied)
    result = ve.evaluate(
        ROWS, evaluators={"t": {"type": "tallied"}, "em": {"type": "exact_match"}}, run={"progress": False}
    )
    tally = result.tables["tally"].select("status", "len", "dimension_rows").rows()
    assert tally == [("error", 1, 0), ("processed", 2, 0)]  # the rows of "t" only, not those of "em"
    assert result.run_info["metrics"] == {"t": {}, "em": {}}


def test_dataset_metrics_from_the_saved_metric_inputs() -> None:
    rows = [
        {
            "id": "a",
            "output": '[{"box": [0, 0, 10, 10], "score": 0.9}]',
            "expected_output": '[{"box": [0, 0, 10, 10]}]',
        },
        {
            "id": "b",
            "output": '[{"box": [50, 50, 60, 60], "score": 0.8}]',
            "expected_output": '[{"box": [0, 0, 9, 9]}]',
        },
    ]
    for batch_size in (1, 2):  # one batch or two: the AP inputs of every batch count
        result = ve.evaluate(
            rows, evaluators={"b": {"type": "bbox_iou"}}, run={"progress": False, "batch_size": batch_size}
        )
        # One ground truth of two found at precision 1: 51 of the 101 recall points (0 to 0.5) have precision 1.
        ap = round(51 / 101, 6)
        assert result.run_info["metrics"]["b"] == {"ap50": ap, "ap50_95": ap, "mean_score": 0.5, "rows": 2}


def test_a_run_kept_on_disk_without_an_output_directory_removes_its_parts_with_the_result(
    tmp_path: Path, monkeypatch: Any
) -> None:
    import gc
    import tempfile

    import vision_eval.api

    monkeypatch.setattr(vision_eval.api, "IN_MEMORY_RESULT_ROWS", 0)  # as a run of more than a million result rows
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    result = ve.evaluate(ROWS, evaluators={"em": {"type": "exact_match"}}, run={"progress": False})
    (parts,) = tmp_path.glob("vision-eval-parts-*")
    assert result.results["status"].to_list() == ["processed", "error", "processed"]  # read from the parts
    assert result.tables == {} and result.output_dir is None
    del result
    gc.collect()
    assert not parts.exists()


def test_run_json_head_and_dataset() -> None:
    info = ve.evaluate(ROWS, evaluators={"em": {"type": "exact_match"}}, run={"progress": False}).run_info
    assert list(info)[:7] == ["run_id", "exit_code", "problems", "config", "overrides", "moved_from", "versions"]
    assert info["overrides"] == [] and info["moved_from"] is None and "polars" in info["versions"]
    assert info["config"]["evaluators"] == {"em": {"type": "exact_match"}}
    assert info["dataset"] == {
        "rows": 3,
        "selected": 3,
        "first": 0,
        "images": 0,
        "columns": ["id", "output", "expected_output"],
        "root": None,
    }


# ---------- what a run that stops says: the one line of a refused write, of Ctrl-C ----------


@contextlib.contextmanager
def file_size_limit(limit: int) -> Iterator[None]:
    """Files this process writes stop at ``limit`` bytes (``RLIMIT_FSIZE``): a longer write fails with "File too
    large", as on a full disk (the signal the kernel sends then is ignored, so the write fails instead)."""
    before = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, before[1]))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, before)
        signal.signal(signal.SIGXFSZ, handler)


MANY = [{"id": f"r{i:03d}", "output": "x", "expected_output": "x" if i % 3 else "y"} for i in range(200)]
EM = {"em": {"type": "exact_match"}}


def test_an_output_file_the_disk_refuses_names_it_what_was_written_and_how_to_go_on(tmp_path: Path) -> None:
    """report.html (the largest file) is refused: the run's problem names it, the files written before it, and
    either the checkpoint a resume finishes from or that nothing is kept; the run exits 3."""
    clean = tmp_path / "clean"
    ve.evaluate(MANY, evaluators=EM, run={"progress": False}, output_dir=clean)
    limit = (clean / "report.html").stat().st_size // 2
    assert max(p.stat().st_size for p in clean.iterdir() if p.name != "report.html") < limit
    written = "results.parquet, dimensions.parquet, fields.parquet, samples.parquet"
    for checkpoint in (True, False):
        out = tmp_path / str(checkpoint)
        with file_size_limit(limit):
            info = ve.evaluate(MANY, evaluators=EM, run={"progress": False, "checkpoint": checkpoint}, output_dir=out)
        refused = f"the outputs could not be written: {out / 'report.html'}: File too large; written: {written}; "
        kept = (
            f"finished work is kept in {out / 'checkpoint'}: free some space and resume with run.resume={out}"
            if checkpoint
            else "nothing is kept to resume from: free some space and run again"
        )
        assert info.run_info["problems"] == [refused + kept]
        assert info.run_info["exit_code"] == 3


def test_a_checkpoint_the_disk_refuses_stops_the_run_saying_what_is_kept(tmp_path: Path) -> None:
    """A write refused while the run evaluates stops it (exit 3) with one line: no output file was written, and
    either the checkpoint (how many finished batches it holds) a resume starts from, or that nothing is kept
    because the checkpoint itself could not be started."""
    out = tmp_path / "tiny"
    with file_size_limit(100), pytest.raises(OutputsNotWritten) as tiny:  # not even the checkpoint's manifest
        ve.evaluate(MANY, evaluators=EM, run={"progress": False}, output_dir=out)
    assert str(tiny.value) == (
        f"the outputs could not be written: {out / 'checkpoint' / 'manifest.json'}: File too large; no output file "
        "was written; nothing is kept to resume from: free some space and run again"
    )
    out = tmp_path / "small"
    with file_size_limit(2000), pytest.raises(OutputsNotWritten) as small:  # the manifest, and no batch
        ve.evaluate(MANY, evaluators=EM, run={"progress": False}, output_dir=out)
    line = str(small.value)
    assert line.startswith(f"the outputs could not be written: {out / 'checkpoint'}/"), line
    assert line.endswith(
        f"; no output file was written; finished work is kept in {out / 'checkpoint'} (0 finished batches): free "
        f"some space and resume with run.resume={out}"
    ), line
    assert (out / "checkpoint" / "manifest.json").is_file() and not (out / "results.parquet").exists()


def test_ctrl_c_says_what_is_kept_and_how_to_resume(tmp_path: Path) -> None:
    """Ctrl-C (a real SIGINT) in a run: with a checkpoint, how many finished batches it keeps (one, none) and the
    resume command; without one, why nothing is kept."""
    watched = tmp_path / "watched"
    watched.mkdir()
    now = {"_target_": "interrupting.InterruptAfter", "watch": str(watched), "after": 0}  # at its first batch

    def hint(evaluators: dict[str, Any], out: Path | None, **run: Any) -> str:
        with pytest.raises(Interrupted) as stopped:
            ve.evaluate(MANY, evaluators=evaluators, run={"progress": False, **run}, output_dir=out)
        return stopped.value.hint

    out = tmp_path / "one"
    one = {**EM, "stop": interrupter(out, "em", 1, tmp_path / "flag-one")}
    assert (
        hint(one, out, batch_size=200)
        == f"interrupted: finished work is kept (1 finished batch); resume with run.resume={out}"
    )
    out = tmp_path / "none"
    assert hint({"stop": {**now, "flag": str(tmp_path / "flag-none")}}, out) == (
        f"interrupted: finished work is kept (0 finished batches); resume with run.resume={out}"
    )
    assert hint({"stop": {**now, "flag": str(tmp_path / "flag-off")}}, tmp_path / "off", checkpoint=False) == (
        "interrupted: nothing is kept to resume from (run.checkpoint is off)"
    )
    assert hint({"stop": {**now, "flag": str(tmp_path / "flag-nowhere")}}, None) == (
        "interrupted: nothing is kept to resume from (the run has no output directory)"
    )
