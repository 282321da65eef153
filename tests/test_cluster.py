"""The cluster path, run for real on one machine: `hydra/launcher=local_submitit` is submitit's local executor,
which starts each job in its own process exactly as `hydra/launcher=slurm` submits them to SLURM."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
import yaml

pytest.importorskip("hydra_plugins.hydra_submitit_launcher", reason='needs pip install "vision-eval[slurm]"')


def cli(
    args: list[str], cwd: Path, env: dict[str, str], module: str = "vision_eval.cli"
) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", module, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)  # fmt: skip


def test_sharded_sweep_through_submitit_merges_into_one_run(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    rows = [{"id": f"r{i}", "output": "a", "expected_output": "a" if i % 5 else "b"} for i in range(30)]
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    proc = cli(["hydra/launcher=local_submitit", "run.shards=3", "evaluators=basic", f"dataset.path={data}",
                "evaluators.exact.where=null", "evaluators.exact.min_pass_rate=0.5", "hydra.sweep.dir=sweep"],
               tmp_path, subprocess_env)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    jobs = sorted((tmp_path / "sweep").glob("*/results.parquet"))
    assert [j.parent.name for j in jobs] == ["0", "1", "2"]
    shards = [set(pl.read_parquet(j)["sample_id"]) for j in jobs]
    assert all(shards) and set.union(*shards) == {r["id"] for r in rows} and sum(map(len, shards)) == 30
    assert [json.loads((j.parent / "run.json").read_text())["config"]["run"]["shard"] for j in jobs] == [
        "0/3", "1/3", "2/3"
    ]  # fmt: skip
    report = cli(["sweep"], tmp_path, subprocess_env, module="vision_eval.report.cli")
    assert report.returncode == 0, report.stderr
    board = pl.read_parquet(tmp_path / "sweep" / "leaderboard.parquet")
    assert board.height == 1 and board["rows"][0] == 30  # the shards are one run, each row counted once


def test_a_failing_gate_in_one_shard_is_the_sweeps_exit_code(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    rows = [{"id": f"r{i}", "output": "a", "expected_output": "a" if i < 5 else "b"} for i in range(10)]
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    proc = cli(["hydra/launcher=local_submitit", "run.shards=2", "evaluators=basic", f"dataset.path={data}",
                "evaluators.exact.where=null", "evaluators.exact.min_pass_rate=0.5", "hydra.sweep.dir=sweep"],
               tmp_path, subprocess_env)  # fmt: skip
    codes = sorted(json.loads(p.read_text())["exit_code"] for p in (tmp_path / "sweep").glob("*/run.json"))
    assert proc.returncode == max(codes) == 1 and len(codes) == 2, proc.stderr


def test_slurm_launcher_config_composes_and_bad_shards_are_exit_2(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    proc = cli(["hydra/launcher=slurm", "--cfg", "hydra"], tmp_path, subprocess_env)
    assert proc.returncode == 0, proc.stderr
    assert "hydra_plugins.vision_eval_launchers.launchers.SubmititSlurmLauncher" in proc.stdout
    launcher = yaml.safe_load(proc.stdout)["hydra"]["launcher"]
    assert launcher["cpus_per_task"] <= 2 and launcher["mem_gb"] <= 4  # the defaults fit a small node
    bad = cli(["run.shards=0"], tmp_path, subprocess_env)
    assert bad.returncode == 2 and "run.shards: must be a whole number of shards >= 1" in bad.stderr
