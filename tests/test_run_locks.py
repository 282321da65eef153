"""A run directory's lock: taken over, with a message, from a holder that is provably gone (its pid gone from this
host, or reused by another process; on a cluster, tests/test_slurm.py: its SLURM job over), respected when its
holder may still run; a fresh run whose directory holds an interrupted run of the same config continues it, which
is what makes a requeued or retried sweep job resume its own checkpoint; several processes racing for one
directory never share it."""

from __future__ import annotations

import json
import multiprocessing
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_resume import rows, stack

import vision_eval as ve
from vision_eval.rundir import LOCK


def _interrupted_run(tmp_path: Path, out: Path) -> dict:
    """A run stopped (as by Ctrl-C) after two of four batches; returns its evaluators config."""
    evaluators = stack(tmp_path / "calls.log", stop_after=2, flag=tmp_path / "stopped")
    with pytest.raises(KeyboardInterrupt):
        ve.evaluate(rows(8), evaluators=evaluators, run={"batch_size": 2}, output_dir=out)
    assert (out / "checkpoint" / "manifest.json").is_file() and not (out / LOCK).exists()
    return evaluators


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _lock(directory: Path, **owner: object) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / LOCK).write_text(json.dumps({"host": socket.gethostname(), "started": 0, **owner}))


def test_the_lock_of_a_killed_run_is_taken_over_with_a_message(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "run"
    evaluators = _interrupted_run(tmp_path, out)
    pid = _dead_pid()
    _lock(out, pid=pid)  # what a kill -9 leaves behind
    resumed = ve.evaluate(rows(8), evaluators=evaluators, run={"batch_size": 2, "resume": str(out)})
    assert resumed.output_dir == out and resumed.exit_code == 0 and resumed.run_info["resumed_batches"]["slow"] >= 2
    assert (
        f"took over {out} from pid {pid} on host {socket.gethostname()}: its process is gone" in capsys.readouterr().err
    )
    assert not (out / LOCK).exists()


def test_a_pid_now_used_by_another_process_is_not_the_holder(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "run"
    evaluators = _interrupted_run(tmp_path, out)
    _lock(out, pid=os.getppid(), process_start="1")  # a live pid, but one that started after the lock was written
    resumed = ve.evaluate(rows(8), evaluators=evaluators, run={"batch_size": 2, "resume": str(out)})
    assert resumed.output_dir == out
    assert "the pid now belongs to another process" in capsys.readouterr().err


def test_a_holder_that_may_still_run_is_respected(tmp_path: Path) -> None:
    out = tmp_path / "run"
    evaluators = _interrupted_run(tmp_path, out)
    _lock(out, pid=os.getpid(), host="node-elsewhere")  # another machine: nothing here can prove it gone
    with pytest.raises(ve.ConfigError) as refused:
        ve.evaluate(rows(8), evaluators=evaluators, run={"batch_size": 2, "resume": str(out)})
    message = str(refused.value)
    assert f"pid {os.getpid()} on host node-elsewhere may still be running" in message
    assert f"delete {out / LOCK} and resume again" in message
    fresh = ve.evaluate(rows(8), evaluators=evaluators, run={"batch_size": 2}, output_dir=out)
    assert fresh.output_dir == tmp_path / "run-2"  # a fresh run never writes beside a live one
    _lock(out, pid=os.getpid())  # this very process, alive
    with pytest.raises(ve.ConfigError, match="may still be running"):
        ve.evaluate(rows(8), evaluators=evaluators, run={"batch_size": 2, "resume": str(out)})


def test_a_directory_left_with_only_a_dead_lock_is_reused(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "job"
    _lock(out, pid=_dead_pid())  # killed before it wrote anything
    done = ve.evaluate(rows(4), evaluators=stack(tmp_path / "calls.log"), output_dir=out)
    assert done.output_dir == out and (out / "results.parquet").is_file()
    assert f"took over {out}" in capsys.readouterr().err


def test_a_fresh_run_continues_an_interrupted_run_of_the_same_config(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    out = tmp_path / "job"
    evaluators = _interrupted_run(tmp_path, out)
    _lock(out, pid=_dead_pid())
    again = ve.evaluate(rows(8), evaluators=evaluators, run={"batch_size": 2}, output_dir=out)  # a retried job
    assert again.output_dir == out and again.run_info["resumed_batches"]["slow"] >= 2 and again.results.height == 8
    assert f"continuing the interrupted run in {out}" in capsys.readouterr().err
    logged = (tmp_path / "calls.log").read_text().splitlines()
    assert len(logged) - len(set(logged)) <= 1  # finished batches are not evaluated again

    other, second = tmp_path / "other", tmp_path / "second"
    second.mkdir()
    _interrupted_run(second, other)
    changed = stack(second / "calls.log", stop_after=2, flag=second / "stopped")
    changed["slow"]["threshold"] = 0.2  # another config: its checkpoint is not this run's to continue
    beside = ve.evaluate(rows(8), evaluators=changed, run={"batch_size": 2}, output_dir=other)
    assert beside.output_dir == tmp_path / "other-2"


def _claim(directory: str, fingerprint: dict, start: Any, out: Any) -> None:
    from vision_eval.rundir import claim_or_continue

    start.wait()
    rundir, _, health = claim_or_continue(directory, fingerprint)
    out.put((str(rundir.path), health is not None))
    start.wait()  # hold the directory until every process has claimed one


def test_processes_racing_for_an_interrupted_runs_directory_never_share_it(tmp_path: Path) -> None:
    out = tmp_path / "job"
    _interrupted_run(tmp_path, out)
    _lock(out, pid=_dead_pid())
    fingerprint = json.loads((out / "checkpoint" / "manifest.json").read_text())["config"]
    context = multiprocessing.get_context("spawn")
    start, results = context.Barrier(4), context.Queue()
    procs = [context.Process(target=_claim, args=(str(out), fingerprint, start, results)) for _ in range(4)]
    for proc in procs:
        proc.start()
    claimed = [results.get(timeout=120) for _ in procs]
    for proc in procs:
        proc.join(timeout=60)
    assert sorted(path for path, _ in claimed) == [str(out)] + [str(tmp_path / f"job-{i}") for i in (2, 3, 4)]
    assert [continued for path, continued in claimed if path == str(out)] == [True]


def test_an_earlier_attempt_of_this_very_job_on_another_node_is_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """A requeued SLURM task keeps its job id and may land on another node: the lock its dead attempt left there is
    recognised by that id (this process runs as SLURM's task 77_1, the variables SLURM sets)."""
    out = tmp_path / "job"
    evaluators = _interrupted_run(tmp_path, out)
    _lock(out, pid=os.getpid(), host="node-elsewhere", job="slurm:77_1")
    monkeypatch.setenv("SLURM_ARRAY_JOB_ID", "77")
    monkeypatch.setenv("SLURM_ARRAY_TASK_ID", "2")  # another task of the array, and no squeue to ask about 77_1
    monkeypatch.setenv("PATH", str(tmp_path / "no-slurm-here"))
    with pytest.raises(ve.ConfigError, match=r"node-elsewhere \(SLURM job 77_1\) may still be running"):
        ve.evaluate(rows(8), evaluators=evaluators, run={"batch_size": 2, "resume": str(out)})
    monkeypatch.setenv("SLURM_ARRAY_TASK_ID", "1")
    again = ve.evaluate(rows(8), evaluators=evaluators, run={"batch_size": 2}, output_dir=out)
    assert again.output_dir == out and again.exit_code == 0
    assert "it was an earlier attempt of this job, which was requeued or retried" in capsys.readouterr().err
