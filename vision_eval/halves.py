"""Scoring a batch as two halves on two threads.

The vectorized evaluators spend most of their time in Polars, DuckDB and numpy, which release the GIL, but many of
their steps use one core (a string operation on one column, a join, a Python glue step). Two halves scored at once
overlap one half's single-core stretches with the other's and keep both cores busy: 1.2-1.6x on a 2-core machine,
measured by the benchmarks in ``benchmarks/``.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import polars as pl

T = TypeVar("T")


def _concat(first: Any, second: Any) -> Any:
    return pl.concat([first, second])


def in_halves(
    score: Callable[[pl.DataFrame], T],
    frame: pl.DataFrame,
    min_rows: int,
    join: Callable[[T, T], T] = _concat,
) -> T:
    """``score(frame)``, computed as ``join(score(first half), score(second half))`` on two threads when each half
    has at least ``min_rows`` rows (below that, thread start-up and per-call costs outweigh the overlap)."""
    if frame.height < 2 * min_rows:
        return score(frame)
    half = frame.height // 2
    with ThreadPoolExecutor(1) as pool:
        later = pool.submit(score, frame[half:])
        first = score(frame[:half])
        return join(first, later.result())
