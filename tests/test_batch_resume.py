"""A batch run killed while it waits for its job resumes polling the same job: the real `vision-eval` as a
subprocess, SIGKILLed while the fake holds the job in progress, then resumed; the fake counts the jobs created."""

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
from conftest import JUDGED, user_project

from vision_eval.testing.fake_providers import FakeProviders

PROVIDERS = {
    "openai": ("openai/gpt-4o-mini", "OPENAI_API_KEY"),
    "anthropic": ("anthropic/claude-sonnet-4-5", "ANTHROPIC_API_KEY"),
    "gemini": ("gemini/gemini-2.5-flash", "GEMINI_API_KEY"),
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    rows = [{"id": f"s{i}", "input": "Describe the image.", "output": f"{'red' if i % 2 else 'blue'} circles ({i})",
             "images": ["red.png" if i % 2 else "blue.png"]} for i in range(8)]  # fmt: skip
    return user_project(tmp_path, rows, {"judged": JUDGED})


def command(project: Path, fake: FakeProviders, provider: str, *extra: str) -> list[str]:
    model, _ = PROVIDERS[provider]
    base = fake.openai_base if provider == "openai" else fake.base
    return [sys.executable, "-m", "vision_eval.cli", "--config-dir", str(project / "conf"), "dataset=mine",
            "evaluators=judged", f"judge={provider}", f"judge.model={model}", f"judge.api_base={base}",
            f"judge.cache_dir={project / 'cache'}", "judge.batch=true", "judge.batch_poll_s=0.2", *extra]  # fmt: skip


@pytest.mark.parametrize("provider", list(PROVIDERS))
def test_killed_while_waiting_the_run_resumes_polling_the_same_job(
    provider: str, project: Path, fresh_fake: FakeProviders, subprocess_env: dict[str, str]
) -> None:
    env = {**subprocess_env, PROVIDERS[provider][1]: "sk-test"}
    fresh_fake.batches.hold = True  # the job stays in progress until released
    run_dir = project / "r"
    first = subprocess.Popen(command(project, fresh_fake, provider, f"hydra.run.dir={run_dir}"), cwd=project, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.time() + 120
    while time.time() < deadline and (fresh_fake.batches.total_created == 0 or fresh_fake.batches.polls == 0):
        if first.poll() is not None:
            pytest.fail(f"the run ended before waiting for its job: {first.communicate()}")
        time.sleep(0.05)
    assert fresh_fake.batches.total_created == 1, "the run never submitted its job"
    os.kill(first.pid, signal.SIGKILL)  # killed while the job is in progress
    first.communicate()
    assert (run_dir / "checkpoint" / "batches.sqlite").is_file() and not (run_dir / "results.parquet").exists()
    live_before = fresh_fake.calls

    fresh_fake.batches.release()
    resumed = subprocess.run(command(project, fresh_fake, provider, f"run.resume={run_dir}"), cwd=project, env=env,
                             capture_output=True, text=True, timeout=300)  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert fresh_fake.batches.total_created == 1  # zero resubmitted jobs: the resume polled the same one
    assert fresh_fake.calls == live_before == 1  # only the first run's preflight ping went live (then cached)
    assert len(fresh_fake.requests) == 8 + 1  # the job's 8 requests, answered once, and the ping
    results = pl.read_parquet(run_dir / "results.parquet")
    assert results["status"].to_list() == ["processed"] * 8
    assert (results["cost_usd"] > 0).all()
    info = json.loads((run_dir / "run.json").read_text())
    assert info["scheduler"]["batch"]["jobs"] == {"submitted": 0, "resumed": 1, "done": 1, "running": 0}
    assert "jobs 1 submitted (1 resumed)" in resumed.stderr
    assert not (run_dir / "checkpoint").exists()  # complete: the checkpoint (and the job store) is gone
