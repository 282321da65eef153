"""bbox_iou throughput: rows/s on rows of ≤ 20 labelled boxes, two ways:

- a user's run: ``vision_eval.evaluate`` with ``run.batch_size = --batch`` (prechecks, the engine's threads, which
  score a splittable evaluator's large batch as two halves, saved parts, dataset AP);
- ``evaluate()`` alone, batch by batch on the calling thread (the evaluator's own work);

against two per-row baselines measured in the same run: a plain loop computing only F1 (pure-Python IoU + scipy
Hungarian per row), and the evaluator's own row-wise path, which does the same work as the batch path (metrics,
details, COCO flags at ten IoU thresholds) one row at a time.

    PYTHONPATH=$PWD python benchmarks/bench_bbox.py --rows 100000 --ref-rows 5000

To compare two checkouts, run this script with ``PYTHONPATH`` pointing at each, back to back.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import polars as pl

import vision_eval as ve
from vision_eval.evaluator import EvalContext
from vision_eval.evaluators.bbox_iou import BboxIou, BboxIouSettings

LABELS = ["circle", "square", "triangle"]


def make_rows(rows: int, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    outs, exps = [], []
    for _ in range(rows):
        n = int(rng.integers(0, 21))
        xy = rng.uniform(0, 500, size=(n, 2))
        wh = rng.uniform(10, 80, size=(n, 2))
        gt = np.round(np.hstack([xy, xy + wh]), 1)
        labels = rng.choice(LABELS, size=n)
        keep = rng.random(n) > 0.1
        pred = np.round(gt[keep] + rng.normal(0, 4, size=(int(keep.sum()), 4)), 1)
        pred[:, 2:] = np.maximum(pred[:, 2:], pred[:, :2])
        exps.append(json.dumps([{"label": str(lab), "box": b.tolist()} for lab, b in zip(labels, gt)]))
        outs.append(
            json.dumps(
                [
                    {"label": str(lab), "box": b.tolist(), "score": round(float(s), 3)}
                    for lab, b, s in zip(labels[keep], pred, rng.random(int(keep.sum())))
                ]
            )
        )
    return pl.DataFrame({"id": [str(i) for i in range(rows)], "output": outs, "expected_output": exps})


def reference_row(out: str, exp: str, threshold: float = 0.5) -> float:
    """Straightforward per-row code: pure-Python IoU loops and scipy's Hungarian."""
    from scipy.optimize import linear_sum_assignment

    pred, gt = json.loads(out), json.loads(exp)
    if not pred and not gt:
        return 1.0
    iou = [[0.0] * len(gt) for _ in pred]
    for i, p in enumerate(pred):
        a = p["box"]
        for j, g in enumerate(gt):
            b = g["box"]
            if p["label"] != g["label"]:
                continue
            iw = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
            ih = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
            inter = iw * ih
            union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
            iou[i][j] = inter / union if union > 0 else float(a == b)
    tp = 0
    if pred and gt:
        w = np.array(iou)
        r, c = linear_sum_assignment(np.where(w >= threshold, 1 + w, 0), maximize=True)
        tp = int((w[r, c] >= threshold).sum())
    p = tp / len(pred) if pred else 0.0
    rc = tp / len(gt) if gt else 0.0
    return 2 * p * rc / (p + rc) if p + rc else 0.0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--ref-rows", type=int, default=5_000)
    parser.add_argument("--batch", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=3, help="best of this many timings of each way")
    args = parser.parse_args()
    frame = make_rows(args.rows)
    boxes = sum(len(json.loads(x)) for x in frame["expected_output"].head(1000)) / min(1000, args.rows)

    run_s = direct_s = float("inf")
    for _ in range(args.repeat):
        start = time.perf_counter()
        run = ve.evaluate(frame, evaluators={"b": {"type": "bbox_iou"}}, run={"batch_size": args.batch})
        run_s = min(run_s, time.perf_counter() - start)
    summary = run.run_info["metrics"]["b"]
    results = run.results.select("sample_id", "score")

    evaluator = BboxIou("bench", BboxIouSettings(), EvalContext())
    for _ in range(args.repeat):
        start = time.perf_counter()
        outs = [evaluator.evaluate(frame[o : o + args.batch]) for o in range(0, args.rows, args.batch)]
        direct_s = min(direct_s, time.perf_counter() - start)
    direct = pl.concat([o.results for o in outs])
    start = time.perf_counter()
    inputs = {name: pl.concat([o.metric_inputs[name] for o in outs]).lazy() for name in outs[0].metric_inputs}
    direct_ap = evaluator.summarize_from(direct.with_columns(pl.lit("processed").alias("status")), inputs)
    ap_s = time.perf_counter() - start

    ref_rows = min(args.ref_rows, args.rows)
    sub = frame.head(ref_rows)
    start = time.perf_counter()
    ref = [reference_row(o, e) for o, e in zip(sub["output"], sub["expected_output"])]
    ref_s = time.perf_counter() - start
    start = time.perf_counter()
    same_work = evaluator._rows(sub)
    same_s = time.perf_counter() - start
    head = results["score"].head(ref_rows).to_numpy()
    agree = np.allclose(ref, head) and np.allclose(same_work["score"].to_numpy(), head)
    agree &= results["score"].equals(direct["score"]) and direct_ap["ap50"] == summary["ap50"]
    print(f"rows={args.rows} (~{boxes:.1f} expected boxes/row) batch={args.batch}, best of {args.repeat}")
    print(f"bbox_iou in a run (vision_eval.evaluate, AP included): {run_s:.2f} s  {args.rows / run_s:,.0f} rows/s")
    print(f"bbox_iou evaluate() alone, one thread: {direct_s:.2f} s  {args.rows / direct_s:,.0f} rows/s")
    print(f"dataset AP from the metric inputs (summarize_from): {ap_s:.2f} s")
    print(f"per-row reference ({ref_rows} rows, F1 only): {ref_s:.2f} s  {ref_rows / ref_s:,.0f} rows/s")
    print(f"row-wise path, same work ({ref_rows} rows): {same_s:.2f} s  {ref_rows / same_s:,.0f} rows/s")
    for label, seconds in (("run", run_s), ("evaluate() alone", direct_s)):
        rate = args.rows / seconds
        ratios = rate / (ref_rows / ref_s), rate / (ref_rows / same_s)
        print(f"speed-up ({label}): {ratios[0]:.1f}x the F1-only loop, {ratios[1]:.1f}x the row-wise path")
    print(f"scores and AP agree (run, evaluate(), reference rows): {agree}")
    print(f"AP50={summary['ap50']:.4f} AP@[.5:.95]={summary['ap50_95']:.4f} mean F1={summary['mean_score']:.4f}")


if __name__ == "__main__":
    main()
