"""Checkpoints and resume: a killed run resumes without redoing finished batches, with the same results."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
from interrupting import interrupt_once

import vision_eval as ve

VOLATILE = ["latency_s", "cached"]


def slow_scores(frame: pl.DataFrame, config: dict) -> pl.DataFrame:
    """Scores by id parity; logs every batch it evaluates and sleeps so a test can kill the run mid-way;
    with ``stop_after``, the first run is interrupted (as by Ctrl-C) once that many batches were logged."""
    log = Path(config["log"])
    if config.get("stop_after") and log.exists() and len(log.read_text().splitlines()) >= config["stop_after"]:
        interrupt_once(config["flag"])
    with open(log, "a") as handle:
        handle.write(",".join(frame["id"].to_list()) + "\n")
    time.sleep(config.get("sleep", 0))
    return frame.select(pl.col("id"), (pl.col("id").str.slice(1).cast(pl.Int64) % 2).cast(pl.Float64).alias("score"))


def rows(n: int) -> list[dict]:
    return [{"id": f"s{i}", "output": "x"} for i in range(n)]


def stack(log: Path, sleep: float = 0, **extra: object) -> dict:
    spec = {"type": "python", "function": f"{__name__}:slow_scores", "log": str(log), "sleep": sleep}
    return {"slow": {**spec, **{k: str(v) if isinstance(v, Path) else v for k, v in extra.items()}}}


def test_a_second_run_into_the_same_dir_moves_to_a_suffix_and_a_finished_run_cannot_be_resumed(
    tmp_path: Path,
) -> None:
    log = tmp_path / "calls.log"
    first = ve.evaluate(rows(10), evaluators=stack(log), run={"batch_size": 3}, output_dir=tmp_path / "run")
    assert first.output_dir == tmp_path / "run" and not (tmp_path / "run" / "checkpoint").exists()  # complete
    second = ve.evaluate(rows(10), evaluators=stack(log), run={"batch_size": 3}, output_dir=tmp_path / "run")
    assert second.output_dir == tmp_path / "run-2" and second.run_info["moved_from"] == str(tmp_path / "run")
    assert first.run_id != second.run_id
    assert pl.read_parquet(tmp_path / "run" / "results.parquet")["run_id"].unique().to_list() == [first.run_id]
    assert pl.read_parquet(tmp_path / "run-2" / "results.parquet")["run_id"].unique().to_list() == [second.run_id]
    with pytest.raises(ve.ConfigError, match=r"run.resume: .* holds no checkpoint to resume \(its run completed"):
        ve.evaluate(rows(10), evaluators=stack(log), run={"resume": str(tmp_path / "run")})
    with pytest.raises(ve.ConfigError, match=r"run.resume: .* does not exist"):
        ve.evaluate(rows(10), evaluators=stack(log), run={"resume": str(tmp_path / "nowhere")})


def test_resume_refuses_a_changed_config_and_accepts_changed_gates(tmp_path: Path) -> None:
    log, out = tmp_path / "calls.log", tmp_path / "run"
    evaluators = stack(log, stop_after=2, flag=tmp_path / "stopped")
    with pytest.raises(KeyboardInterrupt):
        ve.evaluate(rows(8), evaluators=evaluators, run={"batch_size": 2}, output_dir=out)
    assert (out / "checkpoint" / "manifest.json").is_file() and not (out / ".vision_eval.lock").exists()
    changed = stack(log, stop_after=2, flag=tmp_path / "stopped")
    changed["slow"]["threshold"] = 0.2
    with pytest.raises(ve.ConfigError, match=r"run.resume: the checkpoint in .* different evaluators config"):
        ve.evaluate(rows(8), evaluators=changed, run={"batch_size": 2, "resume": str(out)})
    gated = stack(log, stop_after=2, flag=tmp_path / "stopped")
    gated["slow"]["min_pass_rate"] = 0.5  # a gate changes no result row: the finished batches are reused
    # Ctrl-C came during the third batch: it finishes on the engine's worker thread and is saved, nothing later starts
    finished = len(list((out / "checkpoint" / "slow").glob("[!.]*")))
    assert finished == 3
    resumed = ve.evaluate(rows(8), evaluators=gated, run={"batch_size": 2, "resume": str(out)})
    assert resumed.run_info["resumed_batches"]["slow"] == finished and len(log.read_text().splitlines()) == 4
    assert resumed.output_dir == out and resumed.exit_code == 0 and resumed.results.height == 8


def test_sigkill_then_resume_matches_an_uninterrupted_run(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    log = tmp_path / "calls.log"
    run_dir = tmp_path / "run"
    script = (
        "import sys; sys.path.insert(0, 'tests'); import vision_eval as ve, test_resume as t\n"
        "ve.evaluate(t.rows(12), evaluators=t.stack(sys.argv[1], 0.3), run={'batch_size': 2}, output_dir=sys.argv[2])\n"
    )
    repo = Path(__file__).resolve().parent.parent
    proc = subprocess.Popen([sys.executable, "-c", script, str(log), str(run_dir)], cwd=repo, env=subprocess_env)
    deadline = time.time() + 60
    while time.time() < deadline:
        done = list((run_dir / "checkpoint" / "slow").glob("[!.]*")) if (run_dir / "checkpoint").exists() else []
        if len(done) >= 2:
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (run_dir / "results.parquet").exists()
    finished = len(list((run_dir / "checkpoint" / "slow").glob("[!.]*")))
    assert 2 <= finished < 6

    resumed = ve.evaluate(rows(12), evaluators=stack(log, 0.3), run={"batch_size": 2, "resume": str(run_dir)})
    evaluated = log.read_text().splitlines()
    assert len(evaluated) - len(set(evaluated)) <= 1  # at most the batch in flight at the kill is redone
    assert resumed.run_info["resumed_batches"] == {"slow": finished}

    clean = ve.evaluate(rows(12), evaluators=stack(tmp_path / "clean.log"), run={"batch_size": 2})
    on_disk = pl.read_parquet(run_dir / "results.parquet")
    assert on_disk.drop(VOLATILE, "run_id").equals(clean.results.drop(VOLATILE, "run_id"))
    assert json.loads((run_dir / "run.json").read_text())["counts"]["samples"] == 12


def test_ctrl_c_stops_cleanly_and_the_cli_resumes(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    conf = tmp_path / "conf" / "evaluators"
    conf.mkdir(parents=True)
    log = tmp_path / "calls.log"
    (conf / "slow.yaml").write_text(
        f"slow:\n  type: python\n  function: 'test_resume:slow_scores'\n  log: '{log}'\n  sleep: 0.3\n"
    )
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows(12)))
    env = dict(subprocess_env)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parent), env["PYTHONPATH"]])
    base = [
        sys.executable,
        "-m",
        "vision_eval.cli",
        "--config-dir",
        str(tmp_path / "conf"),
        "evaluators=slow",
        f"dataset.path={data}",
        "run.batch_size=2",
        "run.write_report=false",
    ]
    proc = subprocess.Popen([*base, "hydra.run.dir=r"], cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True)
    parts = tmp_path / "r" / "checkpoint" / "slow"
    deadline = time.time() + 60
    while time.time() < deadline and len(list(parts.glob("[!.]*")) if parts.exists() else []) < 1:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "resume with run.resume=" in stderr and "Traceback" not in stderr
    kept = len(list(parts.glob("[!.]*")))
    assert 1 <= kept < 6 and not (tmp_path / "r" / "results.parquet").exists()

    done = subprocess.run(
        [*base, f"run.resume={tmp_path / 'r'}", "hydra.run.dir=r2"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert pl.read_parquet(tmp_path / "r" / "results.parquet").height == 12
    assert json.loads((tmp_path / "r" / "run.json").read_text())["resumed_batches"] == {"slow": kept}


def detection_rows(n: int, seed: int = 7) -> list[dict]:
    """Rows of labelled, scored boxes near their expected boxes (some missed, some extra); one in 40 is a plain
    box list, which takes bbox_iou's row-wise path."""
    import random

    rng = random.Random(seed)
    out = []
    for i in range(n):
        expected, predicted = [], []
        for _ in range(rng.randint(0, 5)):
            x, y, w, h = rng.uniform(0, 80), rng.uniform(0, 80), rng.uniform(4, 20), rng.uniform(4, 20)
            label = rng.choice(["cat", "dog"])
            expected.append({"label": label, "box": [x, y, x + w, y + h]})
            if rng.random() < 0.8:
                dx, dy = rng.gauss(0, 2), rng.gauss(0, 2)
                box = [x + dx, y + dy, x + w + dx, y + h + dy]
                predicted.append({"label": label, "box": box, "score": round(rng.random(), 2)})
        if rng.random() < 0.3:
            predicted.append({"label": "cat", "box": [1, 1, 9, 9], "score": round(rng.random(), 2)})
        if i % 40 == 0:
            expected = [item["box"] for item in expected]
            predicted = [item["box"] for item in predicted]
        out.append({"id": f"d{i}", "output": json.dumps(predicted), "expected_output": json.dumps(expected)})
    return out


def test_a_resumed_run_has_the_dataset_metrics_of_an_uninterrupted_one(tmp_path: Path) -> None:
    """bbox_iou's dataset AP needs every batch's detections: a resumed run reads the batches it reused from their
    saved parts (the AP inputs travel with each part), so its metrics equal an uninterrupted run's, not only its
    rows."""
    from interrupting import interrupter

    rows, out = detection_rows(240), tmp_path / "run"
    boxes = {"b": {"type": "bbox_iou"}}
    clean = ve.evaluate(rows, evaluators=boxes, run={"batch_size": 40})
    stop = {**boxes, "stop": interrupter(out, "b", 1, tmp_path / "stopped")}
    with pytest.raises(KeyboardInterrupt):
        ve.evaluate(rows, evaluators=stop, run={"batch_size": 40}, output_dir=out)
    saved = len(list((out / "checkpoint" / "b").glob("[!.]*")))
    assert 1 <= saved < 6
    resumed = ve.evaluate(rows, evaluators=stop, run={"batch_size": 40, "resume": str(out)})
    assert resumed.run_info["resumed_batches"]["b"] == saved
    metrics, expected = resumed.run_info["metrics"]["b"], clean.run_info["metrics"]["b"]
    assert expected["ap50"] is not None and 0 < expected["ap50"] < 1 and expected["rows"] == 240
    assert metrics == expected
    assert json.loads((out / "run.json").read_text())["metrics"]["b"] == expected
    assert (
        resumed.results.filter(pl.col("evaluator") == "b")
        .drop(VOLATILE, "run_id")
        .equals(clean.results.drop(VOLATILE, "run_id"))
    )


def test_a_resumed_g_eval_run_reports_the_step_calls_of_an_uninterrupted_one(tmp_path: Path, fresh_fake) -> None:
    """g_eval asks for evaluation steps once per (judge, criteria text): the count it reports is read from every
    batch's saved part, so a resumed run (which evaluates only the remaining batches) reports the whole run's."""
    from interrupting import interrupter

    def respond(request) -> str:
        if "evaluation procedures" in request.text:
            return '{"steps": ["look", "compare"]}'
        return '{"score": 7, "reason": "on topic"}'

    fresh_fake.responder = respond
    fresh_fake.latency = 0.02  # the interrupt lands mid-run
    try:
        rows = [{"id": f"g{i:02d}", "output": f"text {i}", "topic": f"topic {i}"} for i in range(40)]
        judge = {"model": "openai/gpt-4o-mini", "api_base": fresh_fake.openai_base, "api_key": "k", "cache": False}
        graded = {"g": {"type": "g_eval", "criteria": "Stays on {{ topic }}", "logprobs": False}}
        clean = ve.evaluate(rows, evaluators=graded, judge=judge, run={"batch_size": 10})
        out = tmp_path / "run"
        stop = {**graded, "stop": interrupter(out, "g", 2, tmp_path / "stopped")}
        with pytest.raises(KeyboardInterrupt):
            ve.evaluate(rows, evaluators=stop, judge=judge, run={"batch_size": 10}, output_dir=out)
        saved = len(list((out / "checkpoint" / "g").glob("[!.]*")))
        assert 2 <= saved < 20
        resumed = ve.evaluate(rows, evaluators=stop, judge=judge, run={"batch_size": 10, "resume": str(out)})
    finally:
        fresh_fake.responder, fresh_fake.latency = None, 0.0
    assert resumed.run_info["resumed_batches"]["g"] == saved
    assert clean.run_info["metrics"]["g"]["step_calls"] == 40  # one criteria text per row
    assert resumed.run_info["metrics"]["g"]["step_calls"] == 40
    assert json.loads((out / "run.json").read_text())["metrics"]["g"]["step_calls"] == 40
    scores = resumed.results.filter(pl.col("evaluator") == "g").sort("sample_id")
    assert scores["score"].to_list() == [0.7] * 40


def test_a_judge_checkpoints_whole_data_batches_and_a_resume_pays_nothing_twice(tmp_path: Path, fresh_fake) -> None:
    """A model-graded evaluator sends its calls in small pieces but saves one part per data batch (issue #27: a
    100M-row run is not millions of 64-row folders); the resume reuses the saved batches and sends only the calls
    no earlier attempt finished (the pieces of an unsaved batch come from the run's call journal)."""
    from interrupting import interrupter

    fresh_fake.responder = lambda request: '{"steps": ["look"]}' if "evaluation procedures" in request.text else (
        '{"score": 7, "reason": "ok"}')  # fmt: skip
    fresh_fake.latency = 0.01
    try:
        rows = [{"id": f"g{i:03d}", "output": f"text {i}", "topic": "t"} for i in range(300)]
        judge = {"model": "openai/gpt-4o-mini", "api_base": fresh_fake.openai_base, "api_key": "k", "cache": False}
        graded = {"g": {"type": "g_eval", "criteria": "Stays on {{ topic }}", "logprobs": False}}
        out = tmp_path / "run"
        stop = {**graded, "stop": interrupter(out, "g", 1, tmp_path / "stopped")}
        before = fresh_fake.wait_idle()
        with pytest.raises(KeyboardInterrupt):
            ve.evaluate(rows, evaluators=stop, judge=judge, run={"batch_size": 100}, output_dir=out)
        first = fresh_fake.wait_idle() - before
        saved = sorted(p for p in (out / "checkpoint" / "g").glob("[!.]*"))
        heights = [pl.read_parquet(p / "results.part").height for p in saved]
        assert 1 <= len(saved) < 3 and heights == [100] * len(saved), heights  # pieces were 6 rows each
        resumed = ve.evaluate(rows, evaluators=stop, judge=judge, run={"batch_size": 100, "resume": str(out)})
        second = fresh_fake.wait_idle() - before - first
    finally:
        fresh_fake.responder, fresh_fake.latency = None, 0.0
    assert resumed.run_info["resumed_batches"]["g"] == len(saved)
    assert resumed.run_info["scheduler"]["resent"] == 0
    journal = resumed.run_info["scheduler"]["journal_hits"]
    assert journal > 0  # pieces of the batch that was not saved yet: answered from the journal, not paid again
    assert second == 300 - 100 * len(saved) - journal + 1, (first, second)  # (+1: this process's criteria steps)
    assert resumed.results.filter(pl.col("evaluator") == "g")["score"].to_list() == [0.7] * 300
