"""Leaderboards over sweeps and shards, with bootstrap intervals checked by hand."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import stats

import vision_eval as ve
from vision_eval.leaderboard import BOOTSTRAP_RESAMPLES, bootstrap_interval, leaderboard, markdown, write_leaderboard
from vision_eval.runs import find_run_dirs


def test_bootstrap_interval_edges() -> None:
    assert bootstrap_interval(np.array([0.4])) == (0.4, 0.4)
    assert bootstrap_interval(np.array([0.7] * 50)) == pytest.approx((0.7, 0.7))
    low, high = bootstrap_interval(np.array([0.0, 1.0] * 200), seed=1)
    # 200 of 400 pass: a resampled mean is Binomial(400, 0.5) / 400, whose 2.5% and 97.5% quantiles are 0.45 and
    # 0.55 (the 90% interval's, 0.46 and 0.54, are further from them than the tolerance).
    quantiles = stats.binom.ppf([0.025, 0.975, 0.05, 0.95], 400, 0.5) / 400
    assert list(quantiles) == [0.45, 0.55, 0.46, 0.54]
    tolerance = 0.006
    assert quantiles[2] - quantiles[0] > tolerance and quantiles[1] - quantiles[3] > tolerance
    assert low == pytest.approx(quantiles[0], abs=tolerance) and high == pytest.approx(quantiles[1], abs=tolerance)
    assert all(np.isnan(x) for x in bootstrap_interval(np.array([])))


def scipy_percentile_interval(values: np.ndarray, seed: int, resamples: int, level: float) -> tuple[float, float]:
    """``scipy.stats.bootstrap``'s percentile interval of the mean, resampling with ``default_rng(seed)``."""
    rng = np.random.default_rng(seed)
    kw = {"rng": rng} if "rng" in inspect.signature(stats.bootstrap).parameters else {"random_state": rng}
    res = stats.bootstrap((values,), np.mean, n_resamples=resamples, method="percentile", confidence_level=level,
                          vectorized=True, **kw)  # fmt: skip
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def test_drawn_bootstrap_is_scipys_percentile_95_interval() -> None:
    """Many distinct scores: resamples are drawn row by row, exactly as ``scipy.stats.bootstrap`` draws them with the
    same Generator, so the interval is scipy's percentile 95% one (to rounding), and not its 90% one."""
    values = np.random.default_rng(7).normal(size=40)
    for seed, resamples in ((3, 1000), (11, 9999)):
        wanted = scipy_percentile_interval(values, seed, resamples, 0.95)
        ninety = scipy_percentile_interval(values, seed, resamples, 0.90)
        tolerance = 1e-9
        assert min(abs(wanted[0] - ninety[0]), abs(wanted[1] - ninety[1])) > 1000 * tolerance
        assert bootstrap_interval(values, seed=seed, resamples=resamples) == pytest.approx(wanted, abs=tolerance)


def test_counted_bootstrap_is_the_binomial_95_interval() -> None:
    """Few distinct scores (pass/fail): resamples are drawn as counts, so a resampled mean is Binomial(n, p) / n and,
    with many resamples, the interval is that distribution's 2.5% and 97.5% quantiles (not its 5% and 95%)."""
    values = (np.arange(4000) % 5 < 3).astype(float)
    quantiles = stats.binom.ppf([0.025, 0.975, 0.05, 0.95], 4000, 0.6) / 4000
    tolerance = 0.0005  # the Monte Carlo error of 200,000 resamples is about 0.00007
    assert quantiles[2] - quantiles[0] > 4 * tolerance and quantiles[1] - quantiles[3] > 4 * tolerance
    low, high = bootstrap_interval(values, seed=5, resamples=200_000)
    assert low == pytest.approx(quantiles[0], abs=tolerance) and high == pytest.approx(quantiles[1], abs=tolerance)


def test_leaderboard_intervals_are_the_bootstrap_ones_for_both_ways_of_drawing() -> None:
    """The leaderboard's intervals, per group, from its streaming counts: a pass/fail group (drawn as counts) and a
    group of many distinct scores (drawn row by row) each get the interval of its scores, seed 0."""
    drawn = np.random.default_rng(7).normal(size=40)
    counted = (np.arange(4000) % 5 < 3).astype(float)
    results = pl.DataFrame(
        {
            "candidate": "c",
            "judge": None,
            "variant": None,
            "evaluator": ["drawn"] * 40 + ["counted"] * 4000 + ["counted", "drawn"],
            "status": ["processed"] * 4040 + ["error", "skipped"],
            "score": [*drawn, *counted, None, None],
            "passed": [*(drawn > 0), *(counted > 0), None, None],
            "input_tokens": 0,
            "output_tokens": 0,
            "cost_usd": None,
            "run_dir": "r",
        },
        schema_overrides={"judge": pl.Utf8, "variant": pl.Utf8, "cost_usd": pl.Float64},
    )
    board = {row["evaluator"]: row for row in leaderboard(results).iter_rows(named=True)}
    assert (board["drawn"]["ci_low"], board["drawn"]["ci_high"]) == pytest.approx(
        scipy_percentile_interval(drawn, 0, BOOTSTRAP_RESAMPLES, 0.95), abs=1e-9
    )
    assert (board["counted"]["ci_low"], board["counted"]["ci_high"]) == bootstrap_interval(counted, seed=0)
    # 1,000 resamples, seed 0: within 0.0015 of the binomial 95% quantiles; the 90% ones are 0.0025 from them.
    quantiles = stats.binom.ppf([0.025, 0.975, 0.05, 0.95], 4000, 0.6) / 4000
    assert quantiles[2] - quantiles[0] > 0.0015 * 1.5 and quantiles[1] - quantiles[3] > 0.0015 * 1.5
    assert board["counted"]["ci_low"] == pytest.approx(quantiles[0], abs=0.0015)
    assert board["counted"]["ci_high"] == pytest.approx(quantiles[1], abs=0.0015)


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
