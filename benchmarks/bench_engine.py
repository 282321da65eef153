"""Engine overhead: a whole evaluate() over N rows versus a row-wise Python loop doing the same comparison.

    python benchmarks/bench_engine.py --rows 1000000

Prints rows/s for both and their ratio (measured in the same run). The engine run includes dataset
canonicalization, the prechecks (where filter, missing values), result finishing and summary.
"""

from __future__ import annotations

import argparse
import time

import polars as pl

import vision_eval as ve


def make_rows(n: int) -> pl.DataFrame:
    words = pl.Series(["cat", "Dog", "a  bird", "fish", "cow"])
    idx = pl.int_range(0, n, eager=True)
    return pl.DataFrame(
        {
            "id": idx.cast(pl.Utf8),
            "task": pl.Series(["ocr", "count"])[idx % 2],
            "output": words[idx % 5],
            "expected_output": words[(idx * 7) % 5],
        }
    )


def row_wise(frame: pl.DataFrame) -> list[dict]:
    out = []
    for row in frame.iter_rows(named=True):
        if row["task"] != "ocr":
            out.append({"sample_id": row["id"], "status": "skipped"})
            continue
        got = " ".join(row["output"].lower().split())
        want = " ".join(row["expected_output"].lower().split())
        score = 1.0 if got == want else 0.0
        out.append({"sample_id": row["id"], "status": "processed", "score": score, "passed": score >= 1.0})
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    frame = make_rows(args.rows)

    start = time.perf_counter()
    baseline = row_wise(frame)
    loop_s = time.perf_counter() - start

    start = time.perf_counter()
    result = ve.evaluate(frame, evaluators={"em": {"type": "exact_match", "where": "task = 'ocr'"}})
    engine_s = time.perf_counter() - start

    processed = result.results.filter(pl.col("status") == "processed")
    expected = sum(1 for r in baseline if r["status"] == "processed" and r["score"] == 1.0)
    assert int(processed["score"].sum()) == expected, "engine and baseline disagree"
    print(f"rows: {args.rows:,}")
    print(f"{'row-wise python loop':<24}{args.rows / loop_s:>14,.0f} rows/s  ({loop_s:.2f} s)")
    print(f"{'vision_eval.evaluate':<24}{args.rows / engine_s:>14,.0f} rows/s  ({engine_s:.2f} s)")
    print(f"{'ratio':<24}{loop_s / engine_s:>14.1f} x")


if __name__ == "__main__":
    main()
