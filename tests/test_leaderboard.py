"""Leaderboards over sweeps and shards, with bootstrap intervals checked by hand."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import vision_eval as ve
from vision_eval.leaderboard import bootstrap_interval, markdown, write_leaderboard
from vision_eval.runs import find_run_dirs


def test_bootstrap_interval_edges() -> None:
    assert bootstrap_interval(np.array([0.4])) == (0.4, 0.4)
    assert bootstrap_interval(np.array([0.7] * 50)) == pytest.approx((0.7, 0.7))
    low, high = bootstrap_interval(np.array([0.0, 1.0] * 200), seed=1)
    assert 0.4 < low < 0.5 < high < 0.6  # sd of the mean is 0.025: the 95% interval is about ±0.05
    assert all(np.isnan(x) for x in bootstrap_interval(np.array([])))


def test_shards_merge_into_one_row(tmp_path: Path) -> None:
    rows = [{"id": f"s{i}", "output": "a", "expected_output": "a" if i < 6 else "b"} for i in range(10)]
    for index in range(2):
        ve.evaluate(
            rows,
            evaluators={"em": {"type": "exact_match"}},
            run={"shard": f"{index}/2"},
            output_dir=tmp_path / f"shard{index}",
        )
    board, target = write_leaderboard([str(tmp_path / "shard*")], out_dir=tmp_path)
    assert board.height == 1
    row = board.row(0, named=True)
    assert row["rows"] == 10 and row["runs"] == 2 and row["mean_score"] == 0.6 and row["pass_rate"] == 0.6
    assert row["ci_low"] <= 0.6 <= row["ci_high"]
    assert pl.read_parquet(target / "leaderboard.parquet").equals(board)
    assert "| em |" in markdown(board)


def test_multirun_variants_are_separate_rows(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "vision_eval.cli",
            "-m",
            "evaluators=basic",
            "evaluators.exact.threshold=0.5,1.0",
            "hydra.sweep.dir=sweep",
        ],
        cwd=tmp_path,
        env=subprocess_env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert len(find_run_dirs([tmp_path / "sweep"])) == 2
    board, _ = write_leaderboard([tmp_path / "sweep"])
    assert sorted(board["variant"].to_list()) == ["evaluators.exact.threshold=0.5", "evaluators.exact.threshold=1.0"]
    assert (tmp_path / "sweep" / "leaderboard.parquet").is_file()
