"""Isolating the rows that make an evaluator raise costs a bounded amount of work: each row is scored at most three
times (the batch, its chunk, itself), whatever the share of bad rows; an evaluator that raises on most rows is not
isolated row by row to the end; and progress moves while rows are isolated. Work is counted in rows the evaluator is
asked to score, not timed (CPU seconds and memory: ``benchmarks/bench_isolation.py``)."""

from __future__ import annotations

import fault_helpers
import polars as pl
import pytest

import vision_eval as ve
from vision_eval import isolation
from vision_eval.evaluator import EvaluatorSettings
from vision_eval.isolation import run_guarded
from vision_eval.progress import Progress

ROWS = 20_000


def _rows(share: float) -> tuple[list[dict[str, str]], set[str]]:
    step = round(1 / share)
    rows = [{"id": f"r{i}", "output": f"bad {i}" if i % step == step // 2 else f"good {i}"} for i in range(ROWS)]
    return rows, {r["id"] for r in rows if r["output"].startswith("bad")}


@pytest.mark.parametrize("share", [0.01, 0.1, 0.5])
def test_isolating_scores_each_row_at_most_three_times(share: float) -> None:
    rows, bad = _rows(share)
    fault_helpers.SCORED.clear()
    result = ve.evaluate(rows, evaluators={"picky": {"_target_": "fault_helpers.CountedPicky"}},
                         run={"batch_size": ROWS, "progress": False})  # fmt: skip
    out = result.results
    assert out.height == ROWS and out["sample_id"].n_unique() == ROWS
    errors = out.filter(pl.col("status") == "error")
    assert set(errors["sample_id"]) == bad  # only the bad rows, each with its own reason
    assert (errors["error"] == "evaluator raised ValueError: cannot read bad " + errors["sample_id"].str.slice(1)).all()
    assert out.filter(pl.col("status") == "processed")["score"].min() == 1.0
    assert sum(fault_helpers.SCORED) <= 3 * ROWS, f"{sum(fault_helpers.SCORED) / ROWS:.1f}x the batch"
    if share <= 0.1:  # chunks while bad rows are rare: far fewer calls than rows
        assert len(fault_helpers.SCORED) < ROWS * (0.7 if share == 0.1 else 0.25)


def test_an_evaluator_raising_on_most_rows_is_not_isolated_to_the_end() -> None:
    rows = [{"id": f"r{i}", "output": f"good {i}" if i % 10 == 0 else f"bad {i}"} for i in range(ROWS)]
    fault_helpers.SCORED.clear()
    result = ve.evaluate(rows, evaluators={"picky": {"_target_": "fault_helpers.CountedPicky"}},
                         run={"batch_size": ROWS, "progress": False})  # fmt: skip
    out = result.results
    assert out.height == ROWS and out["sample_id"].n_unique() == ROWS
    assert len(fault_helpers.SCORED) < 500 and sum(fault_helpers.SCORED) <= 3 * ROWS
    errors = out.filter(pl.col("status") == "error")
    assert errors.height >= 0.9 * ROWS and errors["error"].str.starts_with("evaluator raised ValueError").all()
    given_up = errors.filter(pl.col("error").str.contains("rows not isolated one by one", literal=True))
    assert given_up.height > 0.8 * ROWS  # said so, with the exception raised for them
    assert given_up["error"].str.contains(r"the evaluator raised on \d+ of the \d+ rows tried alone").all()


def test_progress_moves_while_rows_are_isolated_and_counts_each_row_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(isolation, "REPORT_EVERY_S", 0.0)  # told at every settled part, not a few times a second
    rows, bad = _rows(0.1)
    batch = pl.DataFrame(rows)
    told: list[tuple[int, int]] = []
    progress = Progress(None)
    progress.add("picky", ROWS)

    def report(rows: int, errors: int) -> None:
        told.append((rows, errors))
        progress.isolating("picky", rows, errors)

    out = run_guarded(fault_helpers.Picky("picky", EvaluatorSettings()), batch, report)
    assert len(told) > 100 and sum(r for r, _ in told) == ROWS and sum(e for _, e in told) == len(bad)
    progress.advance_batch("picky", out.results)  # the batch's own report: every row counted once in all
    track = progress.tracks["picky"]
    assert (track.done, track.errors) == (ROWS, len(bad))
