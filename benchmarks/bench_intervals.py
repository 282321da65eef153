"""The leaderboard's and the report's 95% intervals at large sizes (issue #27 item 5: ≤ 10 s per evaluator at 10M
rows, time linear in rows).

    PYTHONPATH=$PWD python benchmarks/bench_intervals.py [--rows 10000000 ...]

For each size and each kind of score an evaluator gives (pass/fail, a 1-10 judge scale, continuous similarity
scores), :func:`vision_eval.stats.bootstrap_interval` with the leaderboard's resamples, beside a baseline measured
in the same run on the same values: one ``np.sort`` (what any exact percentile of the rows costs). Printed: seconds,
the ratio to the baseline and the load average.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from functools import partial
from typing import TypeVar

import numpy as np

from vision_eval.stats import BOOTSTRAP_RESAMPLES, bootstrap_interval

T = TypeVar("T")


def scores(kind: str, rows: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "pass/fail":
        return (rng.random(rows) < 0.7).astype(float)
    if kind == "1-10 scale":
        return rng.integers(1, 11, rows).astype(float) / 10
    return rng.random(rows)


def timed(work: Callable[[], T]) -> tuple[T, float]:
    start = time.perf_counter()
    out = work()
    return out, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print(f"load average before: {os.getloadavg()}")
    print("| rows | scores | interval s | baseline np.sort s | interval / baseline | interval |")
    print("|---:|---|---:|---:|---:|---|")
    for rows in args.rows:
        for kind in ("pass/fail", "1-10 scale", "continuous"):
            values = scores(kind, rows, rng)
            _, base = timed(partial(np.sort, values))
            (low, high), took = timed(partial(bootstrap_interval, values, 0, BOOTSTRAP_RESAMPLES))
            print(f"| {rows:,} | {kind} | {took:.3f} | {base:.3f} | {took / base:.2f}x | [{low:.4f}, {high:.4f}] |")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
