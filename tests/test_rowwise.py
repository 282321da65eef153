"""The per-row rule runner: each distinct input scored once, verdicts gathered back in row order, the process
pool giving exactly what the run's own process gives."""

from __future__ import annotations

import random

import polars as pl

from vision_eval.rowwise import FieldRow, RowResult, failed, processed, score_rows

CALLS: list[tuple[object, ...]] = []


def _length_rule(output: str | None, expected: str | None) -> RowResult:
    CALLS.append((output, expected))
    if output is None:
        return failed("no output")
    details = {"n": len(output), "expected": expected}
    return processed(min(1.0, len(output) / 10), details, passed=None if expected else False)


def _field_rule(output: str | None, expected: str | None) -> RowResult:
    if output is None:
        return failed("no output")
    fields = tuple(FieldRow(f"p{i}", "exact", expected, ch, 1.0, ch == expected, "r") for i, ch in enumerate(output))
    return RowResult("processed", 1.0, "{}", fields=fields)


def _rows(n: int, seed: int) -> pl.DataFrame:
    rng = random.Random(seed)
    words = [None, "", "a", "abc", "ab\u00e9", "0123456789xyz", "abc "]
    return pl.DataFrame(
        {
            "id": [f"s{i}" for i in range(n)],
            "output": [rng.choice(words) for _ in range(n)],
            "expected_output": [rng.choice(words) for _ in range(n)],
        }
    )


def _expected(frame: pl.DataFrame) -> list[RowResult]:
    return [_length_rule(o, e) for o, e in frame.select("output", "expected_output").rows()]


def test_each_distinct_input_is_scored_once_and_every_row_gets_its_own_verdict() -> None:
    frame = _rows(500, 1)
    want = _expected(frame)
    CALLS.clear()
    out = score_rows(frame["id"], frame.select("output", "expected_output"), _length_rule, workers=1)
    distinct = frame.select("output", "expected_output").unique().height
    assert len(CALLS) == distinct < frame.height
    got = out.results
    assert got["sample_id"].to_list() == frame["id"].to_list()
    assert got["status"].to_list() == [w.status for w in want]
    assert got["score"].to_list() == [w.score for w in want]
    assert got["details"].to_list() == [w.details for w in want]
    assert got["error"].to_list() == [w.error for w in want]
    assert got["passed"].to_list() == [w.passed for w in want]
    assert out.fields is None


def test_the_process_pool_gives_what_the_run_process_gives() -> None:
    frame = _rows(3000, 2)
    inputs = frame.select("output", "expected_output")
    alone = score_rows(frame["id"], inputs, _length_rule, workers=1)
    pooled = score_rows(frame["id"], inputs, _length_rule, workers=2, pool_min_rows=1)
    assert pooled.results.equals(alone.results)


def test_compared_fields_repeat_for_every_row_sharing_an_input_in_row_order() -> None:
    frame = pl.DataFrame({"id": ["a", "b", "c", "d"], "output": ["xy", None, "xy", "z"], "expected_output": "x"})
    for workers, pool_min_rows in ((1, 20_000), (2, 1)):
        out = score_rows(frame["id"], frame.select("output", "expected_output"), _field_rule, workers, pool_min_rows)
        assert out.fields is not None
        assert out.fields["sample_id"].to_list() == ["a", "a", "c", "c", "d"]
        assert out.fields["path"].to_list() == ["p0", "p1", "p0", "p1", "p0"]
        assert out.fields["hit"].to_list() == [True, False, True, False, False]
        assert out.results["status"].to_list() == ["processed", "error", "processed", "processed"]


def test_nested_inputs_are_scored_row_by_row() -> None:
    frame = pl.DataFrame({"id": ["a", "b"], "output": [["x"], ["x"]], "expected_output": ["1", "1"]})
    CALLS.clear()
    out = score_rows(frame["id"], frame.select("output", "expected_output"), _length_rule, workers=1)
    assert len(CALLS) == 2
    assert out.results["status"].to_list() == ["processed", "processed"]


def test_the_collector_is_paused_while_scoring_and_restored_after() -> None:
    import gc

    seen: list[bool] = []

    def rule(output: str | None, expected: str | None) -> RowResult:
        seen.append(gc.isenabled())
        return processed(1.0, {})

    frame = _rows(10, 3)
    for enabled in (True, False):
        (gc.enable if enabled else gc.disable)()
        try:
            score_rows(frame["id"], frame.select("output", "expected_output"), rule, workers=1)
            assert gc.isenabled() is enabled
        finally:
            gc.enable()
    assert seen and not any(seen)


def _dies(output: str | None, expected: str | None) -> RowResult:
    import os

    if output == "die":
        os._exit(1)  # a worker killed mid-batch (out of memory, a signal)
    return processed(1.0, {})


def test_a_dead_worker_fails_that_call_and_the_next_one_gets_a_fresh_pool() -> None:
    from concurrent.futures.process import BrokenProcessPool

    import pytest

    frame = pl.DataFrame({"id": ["a", "b"], "output": ["die", "ok"], "expected_output": ["x", "y"]})
    with pytest.raises(BrokenProcessPool):
        score_rows(frame["id"], frame.select("output", "expected_output"), _dies, workers=2, pool_min_rows=1)
    again = frame.with_columns(pl.lit("ok").alias("output"))
    out = score_rows(again["id"], again.select("output", "expected_output"), _dies, workers=2, pool_min_rows=1)
    assert out.results["score"].to_list() == [1.0, 1.0]
