"""SLURM for real: a one-node cluster on this machine (tests/slurm_cluster.py: Debian's slurm-wlm and munge, no
accounting daemon), a 4-shard sweep judged by the fake provider through ``hydra/launcher=slurm`` with the shipped
defaults. One task is killed (kill -9), one cancelled (``scancel``), one requeued (``scontrol requeue``): the
sweep never hangs, the requeued task continues its own checkpoint, the killed and the cancelled ones are named
with the commands that finish them, and once those have run the merged sweep equals a single-process run, each
row judged once (a kill loses at most the calls in flight)."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
from conftest import JUDGED, user_project
from polars.testing import assert_frame_equal
from slurm_cluster import KILL_WAIT_S, slurm_cluster, why_not

from vision_eval.config import shard_range
from vision_eval.testing.fake_providers import Action, FakeProviders

pytest.importorskip("submitit", reason='needs pip install "vision-eval[slurm]"')
pytestmark = [pytest.mark.slurm, pytest.mark.slow]

KEY = "sk-test-0123456789abcdef"
PING = "Reply with the word OK."
ROWS = 48
SHARDS = 4
VERDICT = ["sample_id", "evaluator", "status", "score", "passed"]
BOARD = ["evaluator", "rows", "skipped", "errors", "mean_score", "pass_rate"]


@pytest.fixture(scope="module")
def cluster() -> dict[str, str]:
    reason = why_not()
    if reason is not None:
        pytest.skip(f"no SLURM cluster: {reason}")
    manager = slurm_cluster()
    try:
        env = manager.__enter__()
    except RuntimeError as exc:
        pytest.skip(f"no SLURM cluster: {exc}")
    yield env
    manager.__exit__(None, None, None)


def _lock(job_dir: Path) -> dict:
    return json.loads((job_dir / ".vision_eval.lock").read_text())


def _wait_for_a_saved_batch(job_dir: Path, sweep: subprocess.Popen, timeout_s: float = 240) -> dict:
    """The job's lock once it has saved a batch (and is still running)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        parts = list((job_dir / "checkpoint" / "desc").glob("[!.]*/results.part"))
        if parts and (job_dir / ".vision_eval.lock").is_file():
            return _lock(job_dir)
        assert sweep.poll() is None, "the sweep ended early"
        time.sleep(0.2)
    raise AssertionError(f"{job_dir} saved no batch in {timeout_s} s")


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def _start_now(task: str, env: dict[str, str], logs: Path, timeout_s: float = 180) -> None:
    """SLURM holds a requeued job back for two minutes once it is pending again (or holds it, on a busy
    controller): let it start at once."""
    deadline, state, again = time.monotonic() + timeout_s, "", True
    while time.monotonic() < deadline:
        state = subprocess.run(["squeue", "-h", "-j", task, "--states=all", "-o", "%T"], env=env, capture_output=True,
                               text=True).stdout.strip()  # fmt: skip
        if state == "RUNNING":
            return
        if state == "FAILED" and again:
            # On a loaded machine SLURM may record the step the requeue stopped (exit 130) as the job's end and leave
            # it FAILED instead of pending: requeue it once more (what this test checks is the task's own resume).
            subprocess.run(["scontrol", "requeue", task], env=env, capture_output=True)
            again = False
        if state == "PENDING":
            subprocess.run(["scontrol", "update", f"jobid={task}", "starttime=now"], env=env, capture_output=True)
        if state in ("REQUEUE_HOLD", "SPECIAL_EXIT"):
            subprocess.run(["scontrol", "release", task], env=env, capture_output=True)
        time.sleep(0.5)
    job = subprocess.run(["scontrol", "show", "job", task], env=env, capture_output=True, text=True).stdout
    tails = "".join(
        f"\n--- {p.name}:\n" + "\n".join(p.read_text().splitlines()[-8:]) for p in sorted(logs.glob("*_log.*"))
    )
    raise AssertionError(f"the requeued task {task} did not start again in {timeout_s} s (last state {state!r})\n"
                         f"{job}{tails}")  # fmt: skip


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vision_eval.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)  # fmt: skip


def test_a_sweep_on_slurm_survives_a_killed_a_cancelled_and_a_requeued_task(
    cluster: dict[str, str], tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    rows = [{"id": f"s{i:02d}", "input": "Describe the image.",
             "output": f"{'red' if i % 3 else 'blue'} circles (row {i})", "expected_output": f"red circles (row {i})",
             "images": ["images/red.png" if i % 2 else "images/blue.png"]}
            for i in range(ROWS)]  # fmt: skip
    project = user_project(tmp_path, rows, {"judged": JUDGED}, "images")
    env = {**subprocess_env, **cluster, "OPENAI_API_KEY": KEY}
    with FakeProviders(latency=0.25) as fake:
        common = ["--config-dir", str(project / "conf"), "dataset=mine", "evaluators=judged", "judge=openai",
                  f"judge.api_base={fake.openai_base}", "judge.cache=false", "run.batch_size=3",
                  "run.concurrency=1", "run.write_report=false"]  # fmt: skip
        command = [sys.executable, "-m", "vision_eval.cli", *common, "hydra/launcher=slurm", f"run.shards={SHARDS}",
                   "hydra.sweep.dir=sweep"]  # fmt: skip
        # shard 3 answers slowly: it is requeued mid-run, never as it finishes (a requeue of a finished job runs it
        # again), however busy the machine
        first, stop = shard_range(ROWS, 3, SHARDS)
        for i in range(first, stop):
            fake.push_for(f"(row {i})", Action(delay=1.5))
        started = time.monotonic()
        sweep = subprocess.Popen(command, cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True)  # fmt: skip
        try:
            jobs = project / "sweep"
            killed = _wait_for_a_saved_batch(jobs / "1", sweep)
            os.kill(killed["pid"], signal.SIGKILL)

            cancelled = _wait_for_a_saved_batch(jobs / "2", sweep)
            subprocess.run(["scancel", cancelled["job"].removeprefix("slurm:")], env=env, check=True)
            asked = time.monotonic()
            while not _gone(cancelled["pid"]) and time.monotonic() - asked < KILL_WAIT_S + 10:
                time.sleep(0.2)
            stopped_after = time.monotonic() - asked

            requeued = _wait_for_a_saved_batch(jobs / "3", sweep)
            task = requeued["job"].removeprefix("slurm:")
            subprocess.run(["scontrol", "requeue", task], env=env, check=True)
            _start_now(task, env, jobs / ".submitit" / task)
            _, err = sweep.communicate(timeout=600)
        finally:
            if sweep.poll() is None:
                sweep.kill()
        took = time.monotonic() - started

        # scancel's SIGTERM stopped the task (submitit ignores it; vision-eval's job stops as on Ctrl-C), well
        # before SLURM's SIGKILL would have
        assert stopped_after < KILL_WAIT_S - 5, stopped_after
        assert sweep.returncode == 130, err  # the worst: a cancelled job (130) beside a killed one (3)
        last = err.strip().splitlines()[-5:]
        assert re.match(r"vision-eval: sweep: job 1 \(run\.shard=1/4\) did not finish: SLURM state FAILED", last[0])
        assert re.match(r"vision-eval: sweep: job 2 \(run\.shard=2/4\) did not finish: SLURM state CANCELLED", last[2])
        assert last[-1].startswith("vision-eval: sweep exit 130: 2 of 4 jobs finished; not finished: job 1, 2")
        finish = [line.split("finish it: ", 1)[1] for line in last if "finish it: " in line]
        assert [f"run.resume={jobs.relative_to(project)}/{n}" in cmd for n, cmd in zip((1, 2), finish)] == [True] * 2

        # the requeued task continued its own checkpoint, in its own directory
        assert sorted(p.name for p in jobs.iterdir() if not p.name.startswith(".")) == ["0", "1", "2", "3",
                                                                                        "multirun.yaml"]  # fmt: skip
        logs = "".join(p.read_text() for p in (jobs / ".submitit").glob(f"{task}/*_log.err"))
        assert "continuing the interrupted run in" in logs and (jobs / "3" / "results.parquet").is_file()

        # the killed task ran on "another node" as far as this resume can tell: only squeue can say it is over
        lock = _lock(jobs / "1")
        (jobs / "1" / ".vision_eval.lock").write_text(json.dumps({**lock, "host": "node-elsewhere"}))
        for cmd in finish:
            done = _run(shlex.split(cmd)[1:], project, env)
            assert done.returncode == 0, done.stderr
            if "run.resume=sweep/1" in cmd:
                assert "its SLURM job is FAILED" in done.stderr and "node-elsewhere" in done.stderr
        sent = sum(1 for r in fake.requests if r.text != PING)
        assert ROWS <= sent <= ROWS + 3, sent  # every row judged once; a stop loses at most the call in flight

        single = _run([*common, "run.concurrency=4", "hydra.run.dir=single"], project, env)
        assert single.returncode == 0, single.stderr
    merged = pl.concat([pl.read_parquet(p) for p in sorted(jobs.glob("*/results.parquet"))])
    alone = pl.read_parquet(project / "single" / "results.parquet")
    assert merged.height == alone.height == ROWS
    assert merged.select(VERDICT).sort("sample_id").equals(alone.select(VERDICT).sort("sample_id"))
    for folder in (jobs, project / "single"):
        report = subprocess.run([sys.executable, "-m", "vision_eval.report.cli", str(folder)], cwd=project, env=env,
                                capture_output=True, text=True, timeout=300)  # fmt: skip
        assert report.returncode == 0, report.stderr
    boards = [pl.read_parquet(f / "leaderboard.parquet").select(BOARD) for f in (jobs, project / "single")]
    assert_frame_equal(boards[0], boards[1])  # means summed in another order may differ in their last bits
    assert boards[0]["rows"].to_list() == [ROWS]
    load = Path("/proc/loadavg").read_text().split()[0]
    print(f"sweep with a kill, a cancel and a requeue: {took:.0f} s (load average {load})")
