"""What isolating the rows that make an evaluator raise costs, against the same batch with good rows only.

    python benchmarks/bench_isolation.py --rows 20000

An evaluator that scores its rows one after another in Python (about 50 µs each, so a 20,000-row batch of good
rows takes a second or so), then raises when one of them was bad, naming it (as an evaluator that checks what it
scored does). One batch of ``--rows``
rows with 0% (the baseline), 1%, 10% and 50% bad rows spread through it, each run in a fresh process through the
public API; per run: CPU seconds of the process (all threads), its peak memory (max RSS), the rows the evaluator
was asked to score (as a multiple of the batch) and its calls, and the CPU ratio against the baseline.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from typing import ClassVar

import polars as pl

SHARES = (0.0, 0.01, 0.1, 0.5)
WORK = 1500
"""Python steps per row (about 50 µs on a quiet core)."""


def child(rows: int, share: float, work: int) -> None:
    """One run in this process; prints its figures as JSON."""
    import vision_eval as ve
    from vision_eval.evaluator import EvalOutput, Evaluator
    from vision_eval.registry import register

    asked: list[int] = []

    class RowReader(Evaluator):
        """Scores every row, then raises naming the first whose output starts with "bad"."""

        type_name: ClassVar[str] = "row_reader"

        def evaluate(self, batch: pl.DataFrame) -> EvalOutput:
            asked.append(batch.height)
            scores, bad = [], None
            for text in batch["output"]:
                value = 0
                for step in range(work):
                    value = (value * 31 + step) % 1_000_003
                scores.append(1.0 if value >= 0 else 0.0)
                bad = bad or (text if text.startswith("bad") else None)
            if bad is not None:
                raise ValueError(f"cannot read {bad}")
            return EvalOutput(pl.DataFrame({"sample_id": batch["id"], "score": scores}))

    register(RowReader)
    step = round(1 / share) if share else 0
    frame = pl.DataFrame(
        {
            "id": [f"r{i}" for i in range(rows)],
            "output": [f"bad {i}" if step and i % step == step // 2 else f"good {i}" for i in range(rows)],
        }
    )
    ve.evaluate(frame.head(10), evaluators={"r": {"type": "row_reader"}}, run={"progress": False})  # warm-up
    asked.clear()
    start = time.process_time()
    result = ve.evaluate(frame, evaluators={"r": {"type": "row_reader"}}, run={"batch_size": rows, "progress": False})
    cpu = time.process_time() - start
    errors = int((result.results["status"] == "error").sum())
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"cpu": cpu, "peak_mb": peak_mb, "asked": sum(asked), "calls": len(asked), "errors": errors}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--work", type=int, default=WORK, help="Python steps per row (1500: about 50 µs)")
    parser.add_argument("--child", type=float, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        child(args.rows, args.child, args.work)
        return
    figures = {}
    for share in SHARES:
        command = [sys.executable, __file__, "--rows", str(args.rows), "--work", str(args.work), "--child", str(share)]
        proc = subprocess.run(command, capture_output=True, text=True, check=True)
        figures[share] = json.loads(proc.stdout.strip().splitlines()[-1])
    base = figures[0.0]["cpu"]
    print(f"one batch of {args.rows:,} rows; an evaluator that scores rows in Python ({args.work} steps each), then "
          "raises naming a bad row")  # fmt: skip
    print("| bad rows | error rows | rows asked (x batch) | calls | CPU s | CPU ratio | peak MB |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for share, f in figures.items():
        label = f"{share:.0%}" + (" (baseline)" if not share else "")
        print(f"| {label} | {f['errors']:,} | {f['asked'] / args.rows:.2f} | {f['calls']:,} | {f['cpu']:.2f} | "
              f"{f['cpu'] / base:.2f}x | {f['peak_mb']:.0f} |")  # fmt: skip
    print(f"10% bad rows cost {figures[0.1]['cpu'] / base:.2f}x the good rows' CPU (goal: within 3x); "
          f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")  # fmt: skip


if __name__ == "__main__":
    main()
