"""Panel math by hand-checked numbers: aggregate, rankings, plateaus, feedback order."""

from __future__ import annotations

import polars as pl
import pytest

from vision_eval.agents.panel import aggregate_scores, optimization_feedback, plateaus, rankings


def test_weighted_aggregate_by_hand() -> None:
    verdicts = pl.DataFrame(
        {
            "sample_id": ["a", "a", "a", "b", "b", "b"],
            "agent": ["brand", "comp", "tech"] * 2,
            "score": [0.80, 0.50, 0.90, 0.60, None, 0.70],
        }
    )
    weights = {"brand": 80, "comp": 50, "tech": 30}
    out = aggregate_scores(verdicts, weights).sort("sample_id")
    # a: (0.8*80 + 0.5*50 + 0.9*30) / 160 = (64 + 25 + 27) / 160 = 0.725
    assert out["score"][0] == pytest.approx(0.725)
    assert out["weight_total"][0] == 160
    # b: comp failed -> no score when every agent is required
    assert out["score"][1] is None
    assert out["agents_failed"][1].to_list() == ["comp"]
    relaxed = aggregate_scores(verdicts, weights, require_all=False).sort("sample_id")
    # b re-normalized over brand and tech: (0.6*80 + 0.7*30) / 110 = 69 / 110
    assert relaxed["score"][1] == pytest.approx(69 / 110)
    assert relaxed["agents_scored"].to_list() == [3, 2]


def test_zero_weights_give_no_score() -> None:
    verdicts = pl.DataFrame({"sample_id": ["a"], "agent": ["x"], "score": [0.5]})
    assert aggregate_scores(verdicts, {"x": 0})["score"][0] is None


def test_rankings_per_group_and_iteration() -> None:
    scores = pl.DataFrame(
        {
            "sample_id": ["p1", "p2", "p3", "q1", "q2", "r1", "r2"],
            "brief_id": ["p", "p", "p", "p", "p", "r", "r"],
            "iteration": [1, 1, 1, 2, 2, 1, 1],
            "score": [0.5, 0.7, 0.7, 0.4, None, 0.9, 0.1],
        }
    )
    out = rankings(scores)
    rows = {r["sample_id"]: (r["rank"], r["winner"]) for r in out.to_dicts()}
    # p/1: p2 and p3 tie at 0.7 -> both rank 1, p2 wins on id; p1 third
    assert rows["p2"] == (1, True)
    assert rows["p3"] == (1, False)
    assert rows["p1"] == (3, False)
    assert rows["q1"] == (1, True)
    assert rows["q2"] == (None, False)
    assert rows["r1"] == (1, True) and rows["r2"] == (2, False)
    assert out.filter(pl.col("winner")).height == 3


def test_rankings_without_group_or_iteration_columns() -> None:
    out = rankings(pl.DataFrame({"sample_id": ["a", "b"], "score": [0.2, 0.3]}))
    assert out.filter(pl.col("winner"))["sample_id"].to_list() == ["b"]


def _ranked(best: dict[str, list[float]]) -> pl.DataFrame:
    rows = []
    for brief, values in best.items():
        for i, v in enumerate(values, start=1):
            rows.append({"sample_id": f"{brief}{i}", "brief_id": brief, "iteration": i, "score": v})
    return rankings(pl.DataFrame(rows))


def test_plateau_detection_by_hand() -> None:
    ranked = _ranked(
        {
            # windows of 3: gains .13, .08, .025 (>= .02), then [.70,.705,.71] gain .01 < .02 -> detected at 6
            "flat": [0.55, 0.62, 0.68, 0.70, 0.705, 0.71],
            "rising": [0.40, 0.50, 0.60, 0.70],
            "short": [0.5, 0.5],
        }
    )
    out = {r["brief_id"]: r for r in plateaus(ranked).to_dicts()}
    assert out["flat"]["plateaued"] is True
    assert out["flat"]["plateau_iteration"] == 4
    assert out["flat"]["detected_at"] == 6
    assert out["flat"]["best_iteration"] == 6
    assert out["rising"]["plateaued"] is False and out["rising"]["plateau_iteration"] is None
    assert out["short"]["plateaued"] is False
    # A wider threshold catches "rising" late? gains .2 each window: threshold .25 -> detected at 3
    wide = {r["brief_id"]: r for r in plateaus(ranked, threshold=0.25).to_dicts()}
    assert wide["rising"]["plateau_iteration"] == 1 and wide["rising"]["detected_at"] == 3
    # window 2 on "flat": steps .07, .06, .02 (not < .02), .005 -> detected at 5, started at 4
    two = {r["brief_id"]: r for r in plateaus(ranked, window=2).to_dicts()}
    assert (two["flat"]["plateau_iteration"], two["flat"]["detected_at"]) == (4, 5)


def test_plateau_drop_counts_as_not_improving() -> None:
    ranked = _ranked({"b": [0.6, 0.7, 0.65, 0.69]})
    # windows: [.6,.7,.65] gain .1; [.7,.65,.69] gain -.01 -> detected at 4, started at 2
    row = plateaus(ranked).to_dicts()[0]
    assert (row["plateau_iteration"], row["detected_at"], row["best_score"]) == (2, 4, 0.7)


def test_feedback_order_and_dedup() -> None:
    verdicts = pl.DataFrame(
        {
            "sample_id": ["s1", "s1", "s1", "s1", "s2"],
            "brief_id": ["b"] * 5,
            "iteration": [1, 1, 1, 1, 2],
            "agent": ["brand", "comp", "tech", "muted", "brand"],
            "optimization_weight": [60.0, 90.0, 40.0, 0.0, 60.0],
            "severity": ["major", "major", "critical", "critical", None],
            "problem": ["logo blurred", "off-centre", "jpeg artifacts", "ignored", None],
            "fix": ["sharp logo", "centre it", "clean render", "ignored", None],
            "prompt_instructions": [
                ["Logo must read ACME", "Centre the bottle"],
                ["centre the  bottle", "Soft light"],
                ["Clean render"],
                ["never shown"],
                [],
            ],
        }
    )
    out = optimization_feedback(verdicts)
    first = out.filter(pl.col("iteration") == 1).to_dicts()[0]
    # critical first, then the two majors by optimization weight (comp 90 before brand 60); muted (0) left out
    assert [i["agent"] for i in first["top_issues"]] == ["tech", "comp", "brand"]
    assert first["top_issues"][0]["fix"] == "clean render"
    assert first["prompt_instructions"] == ["Clean render", "centre the  bottle", "Soft light", "Logo must read ACME"]
    second = out.filter(pl.col("iteration") == 2).to_dicts()[0]
    assert second["top_issues"] == [] and second["prompt_instructions"] == []
