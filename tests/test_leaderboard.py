"""Leaderboards over sweeps and shards, with bootstrap intervals checked by hand."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import stats

import vision_eval as ve
from vision_eval.leaderboard import (
    BOOTSTRAP_RESAMPLES,
    bootstrap_interval,
    leaderboard,
    markdown,
    run_columns,
    write_leaderboard,
)
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


def _scored_run(folder: Path, name: str, scores: list[float], order: list[int] | None = None, **extra: object) -> Path:
    """A run whose `score` evaluator scores sample i as scores[i] (rows written in ``order``), and a `shorts`
    evaluator that applies only to the first 6 samples (the others skipped by its `where`)."""
    order = order if order is not None else list(range(len(scores)))
    rows = [{"id": f"s{i:02d}", "input": f"q{i}", "output": str(scores[i]), "expected_output": "x", "n": i}
            for i in order]  # fmt: skip
    stack = {
        "score": {"type": "python", "function": "tests.fixtures.py_judges:score_from_output", "threshold": 0.5},
        "shorts": {"type": "exact_match", "where": "n < 6"},
    }
    ve.evaluate(rows, evaluators=stack, output_dir=folder / name, run={"write_report": False, "progress": False})
    info = json.loads((folder / name / "run.json").read_text())
    info["overrides"] = [f"variant={name}"]
    info["config"]["candidate"] = {"model": name, **extra}  # a different config per variant, as a sweep's jobs have
    (folder / name / "run.json").write_text(json.dumps(info))
    return folder / name


def test_identical_per_row_scores_tie_in_rank(tmp_path: Path) -> None:
    """The same scores summed in another order give means that differ in their last bits (the issue's
    0.858305052790347 and 0.8583050527903469): they share rank 1, and the next variant is ranked 3."""
    scores = list(np.round(np.random.default_rng(0).random(30), 3))
    by_score = sorted(range(30), key=lambda i: scores[i])
    runs = [_scored_run(tmp_path, "a", scores), _scored_run(tmp_path, "b", scores, by_score),
            _scored_run(tmp_path, "c", scores), _scored_run(tmp_path, "d", [s * 0.5 for s in scores])]  # fmt: skip
    board, _ = write_leaderboard(runs, tmp_path)
    rows = {r["candidate"]: r for r in board.filter(pl.col("evaluator") == "score").iter_rows(named=True)}
    assert rows["a"]["mean_score"] != rows["b"]["mean_score"]  # the float noise the ranks must see through
    assert abs(rows["a"]["mean_score"] - rows["b"]["mean_score"]) < 1e-12
    assert {k: r["rank"] for k, r in rows.items()} == {"a": 1, "b": 1, "c": 1, "d": 4}
    assert "| score | 1 | b |" in markdown(board) and "| score | 4 | d |" in markdown(board)


def test_rows_count_what_was_scored_and_the_judge_column_only_judges(tmp_path: Path) -> None:
    scores = [float(i % 2) for i in range(30)]
    stack_judge = {"judged": {"type": "llm_rubric", "rubric": "says yes", "images": []}}
    run = _scored_run(tmp_path, "a", scores)
    ve.evaluate([{"id": "s00", "input": "q", "output": "yes"}], evaluators=stack_judge, output_dir=tmp_path / "j",
                run={"write_report": False, "progress": False})  # fmt: skip
    board, _ = write_leaderboard([run, tmp_path / "j"], tmp_path)
    rows = {r["evaluator"]: r for r in board.iter_rows(named=True)}
    assert (rows["shorts"]["rows"], rows["shorts"]["skipped"], rows["shorts"]["errors"]) == (6, 24, 0)
    assert (rows["score"]["rows"], rows["score"]["skipped"]) == (30, 0)
    assert rows["shorts"]["judge"] is None and rows["score"]["judge"] is None  # they call no judge
    assert rows["judged"]["judge"] == "none" and rows["judged"]["skipped"] == 1  # a judge type, none configured
    assert "| shorts | 1 | a | - |" in markdown(board) and "| 6 (24 skipped) |" in markdown(board)


def test_variants_not_significantly_different_from_the_best_are_marked(tmp_path: Path) -> None:
    """Paired on their samples (exact McNemar on the discordant pairs): 2 of 60 flips from the best is no
    difference, 20 is; without the samples, the bootstrap intervals decide."""
    best = [1.0] * 50 + [0.0] * 10
    near = [0.0, 0.0, *best[2:]]  # two fewer passes
    worse = [0.0] * 20 + best[20:]  # twenty fewer
    runs = [_scored_run(tmp_path, n, s) for n, s in (("best", best), ("near", near), ("worse", worse))]
    board, _ = write_leaderboard(runs, tmp_path)
    rows = {r["candidate"]: r for r in board.filter(pl.col("evaluator") == "score").iter_rows(named=True)}
    assert [rows[k]["rank"] for k in ("best", "near", "worse")] == [1, 2, 3]
    assert [rows[k]["tied_with_best"] for k in ("best", "near", "worse")] == [True, True, False]
    assert rows["near"]["vs_best_test"] == "mcnemar_exact"
    assert rows["near"]["p_vs_best"] == pytest.approx(stats.binomtest(0, 2).pvalue)
    assert rows["worse"]["p_vs_best"] == pytest.approx(stats.binomtest(0, 20).pvalue)
    assert "| score | 2 (\u2248 best) | near |" in markdown(board)
    # Without samples to pair on: the intervals (near's reaches the best's, worse's does not).
    results = pl.concat([pl.read_parquet(r / "results.parquet").with_columns(
        candidate=pl.lit(r.name), judge=pl.lit(None, pl.Utf8), variant=pl.lit(r.name), run_dir=pl.lit(str(r)))
        for r in runs])  # fmt: skip
    alone = {
        r["candidate"]: r for r in leaderboard(results).filter(pl.col("evaluator") == "score").iter_rows(named=True)
    }
    assert [alone[k]["vs_best_test"] for k in ("best", "near", "worse")] == [None, "intervals", "intervals"]
    assert [alone[k]["tied_with_best"] for k in ("best", "near", "worse")] == [True, True, False]


def test_each_evaluator_s_judge_is_the_models_it_calls() -> None:
    """From run.json: a model-graded evaluator's models (the run's judge when it names none), a judge-agent panel's
    distinct models in order (an agent without a model adds none), no judge for a rule."""
    info = {
        "config": {"judge": {"model": "openai/gpt-4o-mini"}},
        "evaluators": {
            "graded": {"type": "llm_rubric", "models": ["a/m1", "b/m2"]},
            "configured": {"type": "llm_rubric", "models": []},
            "panel": {
                "type": "judge_agents",
                "agents": [{"model": "x/1"}, {"name": "no model"}, {"model": "x/1"}, {"model": "y/2"}],
            },
            "rule": {"type": "exact_match"},
        },
    }
    labels, evaluators = run_columns(info, "v")
    assert labels == {"candidate": "dataset output", "judge": "openai/gpt-4o-mini", "variant": "v"}
    assert {name: d["judge"] for name, d in evaluators.items()} == {
        "graded": "a/m1, b/m2",
        "configured": "openai/gpt-4o-mini",
        "panel": "x/1, y/2",
        "rule": None,
    }


def test_dataset_numbers_carry_their_protocol_and_a_partial_board_says_so(tmp_path: Path) -> None:
    """leaderboard_metrics.parquet: one row per number (nested ones by path) with the protocol it was computed
    under and the run's judge for an evaluator that calls none, typed as documented even when no number has a
    protocol; ``partial`` marks every leaderboard row."""
    rows = [{"id": "0", "output": "The sign says STOP.", "expected_output": '["stop"]', "dataset": "IIIT5K",
             "question_type": "Regular Text Recognition"}]  # fmt: skip
    ve.evaluate(rows, evaluators={"o": {"type": "ocrbench"}, "em": {"type": "exact_match"}}, output_dir=tmp_path / "r",
                run={"progress": False, "write_report": False})  # fmt: skip
    board, folder = write_leaderboard([tmp_path / "r"], tmp_path / "board", partial=True)
    assert board["partial"].to_list() == [True, True]
    numbers = pl.read_parquet(folder / "leaderboard_metrics.parquet")
    assert numbers.select("judge", "evaluator", "protocol", "comparable", "metric", "value").rows() == [
        ("none", "o", "lmms_eval", True, "n", 1.0),
        ("none", "o", "lmms_eval", True, "errors", 0.0),
        ("none", "o", "lmms_eval", True, "unparseable", 0.0),
        ("none", "o", "lmms_eval", True, "Final Score", 1.0),
        ("none", "o", "lmms_eval", True, "Text Recognition", 1.0),
        ("none", "o", "lmms_eval", True, "categories / Regular Text Recognition / points", 1.0),
        ("none", "o", "lmms_eval", True, "categories / Regular Text Recognition / n", 1.0),
    ]
    boxes = [{"id": "a", "output": "[[0, 0, 10, 10]]", "expected_output": "[[0, 0, 10, 10]]"}]
    ve.evaluate(boxes, evaluators={"b": {"type": "bbox_iou"}}, output_dir=tmp_path / "boxes",
                run={"progress": False, "write_report": False})  # fmt: skip
    _, folder = write_leaderboard([tmp_path / "boxes"], tmp_path / "box-board")
    numbers = pl.read_parquet(folder / "leaderboard_metrics.parquet")
    assert numbers.schema == pl.Schema(
        {"candidate": pl.Utf8, "judge": pl.Utf8, "variant": pl.Utf8, "evaluator": pl.Utf8, "protocol": pl.Utf8,
         "comparable": pl.Boolean, "metric": pl.Utf8, "value": pl.Float64, "run_dir": pl.Utf8}
    )  # fmt: skip
    assert numbers.filter(pl.col("metric") == "ap50").select("protocol", "comparable", "value").row(0) == (
        None,
        None,
        1.0,
    )
