"""What rows a `where` filter skips cost, next to the scoring of the rows it selects.

    python benchmarks/bench_skipped.py --rows 1000000

The demo's pattern at scale: 1M rows of 8 tasks (counting, OCR, invoice JSON and chart texts, two tasks each,
nearly every text distinct) and 6 validators (count, ocr, json, chart, field_accuracy, exact_match), each
applying to 3 of the 8 tasks through `where`, so 62.5% of the result rows are `skipped` placeholders (as in the
issue's measurement). Prints, from one run, the CPU seconds (all threads; steadier than wall time on a shared
machine) of: scoring (the evaluators' own work on the rows they select), finishing the scored rows (checks,
`passed`), the placeholders (building the skipped rows and putting every row back in dataset order), the
selection itself (evaluating the `where` filters) and the whole run, and the placeholders' share of the scoring.
Goal: under 10%. `--cheap` scores with exact_match only, the cheapest scoring there is (the placeholders' cost
per row is the same; their share is not).
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import polars as pl
from bench_code_validators import make_frames

import vision_eval as ve
import vision_eval.engine as engine
import vision_eval.prechecks as prechecks

KINDS = ("count", "ocr", "json", "chart")
TASKS = [f"{kind}{k}" for kind in KINDS for k in (1, 2)]
STACK = {
    "counts": ("count_validator", ["count1", "count2", "ocr1"], {}),
    "ocr": ("ocr_validator", ["ocr1", "ocr2", "chart1"], {}),
    "invoice_json": ("json_validator", ["json1", "json2", "count1"], {}),
    "chart": ("chart_validator", ["chart1", "chart2", "json1"], {}),
    "invoice_fields": ("field_accuracy", ["json1", "json2", "chart2"],
                       {"fields": [{"path": "invoice_number"}, {"path": "total_amount", "match": "numeric_tolerance"},
                                   {"path": "vendor_name", "match": "fuzzy"}]}),
    "exact": ("exact_match", ["count2", "ocr2", "chart1"], {}),
}  # fmt: skip


def make_rows(n: int) -> pl.DataFrame:
    """``n`` rows, task by task in turn, each task's texts from the code-validator benchmark's generators."""
    frames = make_frames(n // len(TASKS) + 1)
    parts = []
    for task in TASKS:
        part = frames[task[:-1]].select("output", "expected_output")
        parts.append(part.with_columns(pl.lit(task).alias("task"), pl.int_range(0, part.height).alias("_k")))
    rows = pl.concat(parts).sort("_k", "task").head(n).drop("_k")
    return rows.with_row_index("id").with_columns(pl.col("id").cast(pl.Utf8))


def stack(cheap: bool = False) -> dict[str, dict[str, Any]]:
    out = {}
    for name, (kind, tasks, extra) in STACK.items():
        where = "task in (" + ", ".join(f"'{t}'" for t in tasks) + ")"
        out[name] = {"type": "exact_match", "where": where} if cheap else {"type": kind, "where": where, **extra}
    return out


def timed(spent: Counter, phase: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            spent[phase] += time.process_time() - start

    return run


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--cheap", action="store_true", help="exact_match only (the cheapest scoring)")
    args = parser.parse_args()
    frame = make_rows(args.rows)
    spent: Counter = Counter()
    engine.run_guarded = timed(spent, "scoring", engine.run_guarded)
    prechecks.precheck = timed(spent, "selection (where filters)", prechecks.precheck)
    prechecks.held_rows_results = timed(spent, "placeholders", prechecks.held_rows_results)
    engine.in_batch_order = timed(spent, "placeholders", engine.in_batch_order)
    engine._finish = timed(spent, "finishing scored rows", engine._finish)

    start, cpu = time.perf_counter(), time.process_time()
    result = ve.evaluate(frame, evaluators=stack(args.cheap), run={"progress": False})
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu

    skipped = int((result.results["status"] == "skipped").sum())
    print(f"{args.rows:,} rows x 6 evaluators: {result.results.height:,} result rows, {skipped:,} skipped")
    print(f"{'phase':<28}{'CPU s':>8}")
    for phase in ("scoring", "finishing scored rows", "selection (where filters)", "placeholders"):
        print(f"{phase:<28}{spent[phase]:>8.2f}")
    print(f"{'whole run':<28}{cpu:>8.2f}   (wall {wall:.2f} s)")
    print(f"placeholders / scoring: {spent['placeholders'] / spent['scoring']:.1%} (goal < 10%)")


if __name__ == "__main__":
    main()
