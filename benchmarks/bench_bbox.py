"""bbox_iou throughput: rows/s on rows of ≤ 20 labelled boxes a side, three ways, measured in the same run:

- a plain per-row loop: ``bbox_iou``'s row function called on each row in turn, in this process (the baseline);
- ``evaluate()`` batch by batch (``--batch`` rows): each distinct row scored once, a large batch spread over a
  process pool (``run.workers``, default the cores), the AP inputs read back from the details;
- a user's run, ``vision_eval.evaluate`` with ``run.batch_size = --batch`` (prechecks, the engine's threads, dataset
  AP);

at each ``--rows`` size (rows are distinct but for the ~5% without boxes), with the ratio to the loop and the load
average. The verdicts of the three ways are compared.

    PYTHONPATH=$PWD python benchmarks/bench_bbox.py                 # 100k and 1M rows (minutes)
    PYTHONPATH=$PWD python benchmarks/bench_bbox.py --rows 2000     # smoke test (seconds)
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import TypeVar

import numpy as np
import polars as pl

import vision_eval as ve
from vision_eval.evaluator import EvalContext
from vision_eval.evaluators.bbox_iou import BboxIou, BboxIouSettings
from vision_eval.pool import default_workers
from vision_eval.rowwise import RowResult

T = TypeVar("T")
LABELS = ["circle", "square", "triangle"]
BEFORE = (
    "before this change, measured at commit 43f635a (DuckDB batch reader + padded numpy arrays, one thread; this "
    "script's predecessor), 100,000 rows, load average 3.5 on 2 cores: evaluate() 36,570 rows/s, a run 29,758 rows/s; "
    "its row-wise path (the same work, one row at a time) 3,209 rows/s"
)
"""Measured with this script's predecessor at the earlier commit (the code it measured is gone)."""


def make_rows(rows: int, seed: int = 0) -> pl.DataFrame:
    """Rows of 0-20 expected boxes (3 labels) and the predictions: 90% of them, moved by a few pixels, scored."""
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 21, size=rows)
    total = int(counts.sum())
    xy = rng.uniform(0, 500, size=(total, 2))
    gt = np.round(np.hstack([xy, xy + rng.uniform(10, 80, size=(total, 2))]), 1)
    labels = rng.choice(LABELS, size=total).tolist()
    kept = rng.random(total) > 0.1
    pred = np.round(gt + rng.normal(0, 4, size=(total, 4)), 1)
    pred[:, 2:] = np.maximum(pred[:, 2:], pred[:, :2])
    scores = np.round(rng.random(total), 3).tolist()
    gt_items = [f'{{"label": "{lab}", "box": [{a}, {b}, {c}, {d}]}}' for lab, (a, b, c, d) in zip(labels, gt.tolist())]
    pred_items = [
        f'{{"label": "{lab}", "box": [{a}, {b}, {c}, {d}], "score": {s}}}' if keep else ""
        for lab, (a, b, c, d), s, keep in zip(labels, pred.tolist(), scores, kept.tolist())
    ]
    ends = np.cumsum(counts).tolist()
    starts = [0, *ends[:-1]]
    exps = ["[" + ", ".join(gt_items[s:e]) + "]" for s, e in zip(starts, ends)]
    outs = ["[" + ", ".join(x for x in pred_items[s:e] if x) + "]" for s, e in zip(starts, ends)]
    return pl.DataFrame({"id": [f"r{i}" for i in range(rows)], "output": outs, "expected_output": exps})


def timed(work: Callable[[], T]) -> tuple[float, T, float]:
    """Seconds, result, and the 1-minute load average at the end."""
    start = time.perf_counter()
    result = work()
    return time.perf_counter() - start, result, os.getloadavg()[0]


def per_row_loop(function: Callable[..., RowResult], frame: pl.DataFrame) -> list[str | None]:
    """The baseline: the rows read into Python, the row function called on each in turn; their details (a million
    rows' verdicts kept whole are gigabytes)."""
    return [function(o, e).details for o, e in frame.select("output", "expected_output").rows()]


def measure(rows: int, batch: int) -> None:
    """The three ways on ``rows`` rows: one table line each, then whether they agree."""
    evaluator = BboxIou("bench", BboxIouSettings(), EvalContext())
    function = evaluator.row_function()
    frame = make_rows(rows)
    batches = [frame[o : o + batch] for o in range(0, rows, batch)]
    loop_s, loop_details, loop_load = timed(lambda: per_row_loop(function, frame))
    direct_s, outs, direct_load = timed(lambda: [evaluator.evaluate(b) for b in batches])
    stack = {"b": {"type": "bbox_iou"}}
    run_s, run, run_load = timed(lambda: ve.evaluate(frame, evaluators=stack, run={"batch_size": batch}))
    for way, seconds, load in (
        ("per-row loop (one process)", loop_s, loop_load),
        ("evaluate(), batch by batch", direct_s, direct_load),
        ("a run (vision_eval.evaluate)", run_s, run_load),
    ):
        rate, ratio = rows / seconds, loop_s / seconds
        print(f"{rows:>10,} {way:<30} {seconds:>8.2f} {rate:>9,.0f} {ratio:>6.2f}x {load:>5.2f}")
    details = pl.concat([o.results for o in outs])["details"].to_list()
    same = details == loop_details == run.results["details"].to_list()
    metrics = run.run_info["metrics"]["b"]
    print(f"{'':>10} same verdicts three ways: {same}; AP50 {metrics['ap50']:.4f}, mean F1 {metrics['mean_score']:.4f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--batch", type=int, default=50_000, help="rows per evaluate() call, and run.batch_size")
    args = parser.parse_args()
    BboxIou("warm", BboxIouSettings()).evaluate(make_rows(300, seed=1))  # imports (scipy's solver), out of the timings
    print(f"bbox_iou: {default_workers()} cores, batches of {args.batch:,} rows, load average {os.getloadavg()}")
    print(f"{'rows':>10} {'way':<30} {'seconds':>8} {'rows/s':>9} {'x loop':>7} {'load':>5}")
    for rows in args.rows:
        measure(rows, args.batch)
    print(BEFORE)


if __name__ == "__main__":
    main()
