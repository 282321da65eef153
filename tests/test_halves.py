"""vision_eval.halves: two halves on two threads, joined in order; small frames in one call."""

from __future__ import annotations

import threading

import polars as pl

from vision_eval.halves import in_halves


def test_halves_run_on_two_threads_and_keep_row_order() -> None:
    seen: list[tuple[int, int]] = []

    def score(part: pl.DataFrame) -> pl.DataFrame:
        seen.append((threading.get_ident(), part.height))
        return part.with_columns((pl.col("x") * 2).alias("y"))

    frame = pl.DataFrame({"x": range(11)})
    out = in_halves(score, frame, min_rows=5)
    assert out["y"].to_list() == [2 * x for x in range(11)]
    assert sorted(h for _, h in seen) == [5, 6]
    assert len({t for t, _ in seen}) == 2


def test_small_frames_and_custom_join() -> None:
    calls: list[int] = []
    out = in_halves(lambda part: calls.append(part.height) or part.height, pl.DataFrame({"x": range(9)}), 5)
    assert (out, calls) == (9, [9])
    total = in_halves(lambda part: part.height, pl.DataFrame({"x": range(10)}), 5, join=lambda a, b: a + b)
    assert total == 10
