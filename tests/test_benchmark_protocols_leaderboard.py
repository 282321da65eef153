"""The leaderboard names each benchmark score's protocol and does not rank runs scored under different ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import vision_eval as ve
from vision_eval.leaderboard import markdown, unranked, write_leaderboard
from vision_eval.report.cli import main as report_main

ROWS = [
    {"id": "a", "output": "i  a", "expected_output": "a"},  # 0.5 under the references, 0 under lenient
    {"id": "b", "output": "ITC Limited", "expected_output": "itc limited"},
]


def run(tmp_path: Path, name: str, protocol: str, outputs: list[str] | None = None) -> Path:
    rows = [dict(row, output=o) for row, o in zip(ROWS, outputs, strict=True)] if outputs else ROWS
    ve.evaluate(
        rows,
        evaluators={"anls": {"type": "anls", "protocol": protocol}, "em": {"type": "exact_match"}},
        dataset={"description": name},  # a different config per run: each run is its own leaderboard row
        run={"progress": False},
        output_dir=tmp_path / name,
    )
    return tmp_path / name


def test_runs_under_one_protocol_are_ranked_with_the_protocol_beside_the_score(tmp_path: Path) -> None:
    run(tmp_path, "good", "official")
    run(tmp_path, "worse", "official", outputs=["x", "ITC Limited"])
    board, _ = write_leaderboard([tmp_path])
    anls = board.filter(board["evaluator"] == "anls").sort("rank")
    assert anls["rank"].to_list() == [1, 2] and anls["protocol"].to_list() == ["official", "official"]
    assert anls["mean_score"].to_list() == [pytest.approx(0.75), pytest.approx(0.5)]
    assert board.filter(board["evaluator"] == "em")["protocol"].to_list() == [None, None]  # not a benchmark metric
    text = markdown(board)
    assert "| 0.750 (0.500–1.000) | official |" in text and "Not ranked" not in text
    assert unranked(board) == {}


def test_runs_under_different_protocols_are_listed_but_not_ranked(tmp_path: Path, capsys) -> None:
    run(tmp_path, "reference", "official")
    run(tmp_path, "lenient", "lenient")
    board, _ = write_leaderboard([tmp_path])
    anls = board.filter(board["evaluator"] == "anls")
    assert sorted(anls["protocol"].to_list()) == ["lenient", "official"]
    assert anls["rank"].to_list() == [None, None]
    assert dict(zip(anls["protocol"], anls["mean_score"], strict=True)) == {"official": 0.75, "lenient": 0.5}
    assert board.filter(board["evaluator"] == "em")["rank"].to_list() == [1, 1]  # other evaluators still rank
    assert unranked(board) == {"anls": ["lenient", "official"]}
    assert "Not ranked: anls — its runs were scored under different protocols (lenient, official)" in markdown(board)

    # The command prints the same, writes its files and succeeds.
    assert report_main([str(tmp_path), "--no-html"]) == 0
    printed = capsys.readouterr().out
    assert "Not ranked: anls" in printed and "| official |" in printed and "| lenient |" in printed


def test_a_run_without_recorded_protocols_is_not_ranked_against_one_with(tmp_path: Path) -> None:
    old = run(tmp_path, "old", "official")
    info = json.loads((old / "run.json").read_text())
    for described in info["evaluators"].values():
        described.pop("protocol", None)  # as written before metrics had protocols
    (old / "run.json").write_text(json.dumps(info))
    run(tmp_path, "new", "official")
    board, _ = write_leaderboard([tmp_path])
    assert unranked(board) == {"anls": ["official", "not recorded"]}
