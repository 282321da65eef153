"""What the rows a `where` filter skips cost, against scoring only the rows it selects (same run, same data).

    python benchmarks/bench_skipped.py --rows 1000000

The demo's pattern at scale: rows of 4 tasks and 4 evaluators (count_validator, ocr_validator, field_accuracy,
exact_match), each applying to 2 of the 4 tasks through `where`, so half of the result rows are `skipped`
placeholders. The baseline runs each evaluator on exactly the rows it selects, with no filter (what a user would pay
without the placeholders); the run under test is one `evaluate()` over every row with the filters. Both through the
public API, CPU seconds of all threads (steadier than wall time on a shared machine). Prints both and the share the
filters and placeholders add.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from typing import Any

import polars as pl

import vision_eval as ve

TASKS = ("count", "ocr", "invoice", "label")
STACK: dict[str, tuple[dict[str, Any], tuple[str, str]]] = {
    "counts": ({"type": "count_validator"}, ("count", "label")),
    "ocr": ({"type": "ocr_validator"}, ("ocr", "label")),
    "fields": (
        {"type": "field_accuracy", "fields": [{"path": "total", "match": "numeric_tolerance"}, {"path": "vendor"}]},
        ("invoice", "count"),
    ),
    "exact": ({"type": "exact_match"}, ("label", "ocr")),
}


def make_rows(n: int, seed: int = 0) -> pl.DataFrame:
    """``n`` rows, the tasks in turn, most texts distinct."""
    rng = random.Random(seed)
    ids, tasks, outputs, expected = [], [], [], []
    for i in range(n):
        task = TASKS[i % len(TASKS)]
        k = rng.randrange(50)
        if task == "count":
            out, want = f"I count {k} bottles and {i % 7} cans", f"{k} bottles"
        elif task == "ocr":
            out, want = f"Invoice {i} total {k}.00 EUR", f"Invoice {i} total {k}.00 EUR" if k % 3 else f"Invoice {i}"
        elif task == "invoice":
            out = json.dumps({"total": k + 0.001 * (i % 3), "vendor": f"Acme {i % 11}"})
            want = json.dumps({"total": k, "vendor": f"Acme {i % 11}"})
        else:
            out, want = rng.choice(["cat", "dog"]), rng.choice(["cat", "dog"])
        ids.append(f"s{i}")
        tasks.append(task)
        outputs.append(out)
        expected.append(want)
    return pl.DataFrame({"id": ids, "task": tasks, "output": outputs, "expected_output": expected})


def _cpu(function: Any) -> tuple[float, Any]:
    start = time.process_time()
    out = function()
    return time.process_time() - start, out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    frame = make_rows(args.rows)
    run = {"progress": False, "workers": 1}

    def filtered() -> Any:
        stack = {name: {**settings, "where": f"task in {tasks!r}"} for name, (settings, tasks) in STACK.items()}
        return ve.evaluate(frame, evaluators=stack, run=run)

    def selected_only() -> list[Any]:
        return [
            ve.evaluate(frame.filter(pl.col("task").is_in(tasks)), evaluators={name: settings}, run=run)
            for name, (settings, tasks) in STACK.items()
        ]

    ve.evaluate(frame.head(100), evaluators={n: s for n, (s, _) in STACK.items()}, run=run)  # imports, warm-up
    base_cpu, parts = _cpu(selected_only)
    cpu, result = _cpu(filtered)
    scored = sum(p.results.height for p in parts)
    same = sum(int(p.results["score"].sum() or 0) for p in parts) == int(result.results["score"].sum() or 0)
    skipped = int((result.results["status"] == "skipped").sum())
    print(f"{args.rows:,} rows x {len(STACK)} evaluators: {result.results.height:,} result rows, {skipped:,} skipped")
    print("| run | result rows | CPU s |")
    print("|---|---:|---:|")
    print(f"| each evaluator on its selected rows only (baseline) | {scored:,} | {base_cpu:.2f} |")
    print(f"| one run over every row, `where` filters | {result.results.height:,} | {cpu:.2f} |")
    print(f"filters + placeholders add {cpu / base_cpu - 1:+.1%} to the baseline (ratio {cpu / base_cpu:.2f}x)")
    print(f"scores agree: {same}; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
