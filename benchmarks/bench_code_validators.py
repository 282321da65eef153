"""Throughput of the code validators: each evaluator (its row function on each distinct row, large batches on the
process pool) against a plain Python loop of the same row function over every row, in the same run; and code_judge
batch mode against one process per row.

    PYTHONPATH=. python benchmarks/bench_code_validators.py [--rows 20000 200000] [--workers 2] [--no-judge]
    PYTHONPATH=. python benchmarks/bench_code_validators.py --rows 2000 --no-judge   # a quick smoke run (CI)

The loop calls ``row_function()`` of the evaluator (``count_row``, ``ocr_row``, ``json_row``, ``chart_row`` with its
settings bound) on ``row_inputs(batch).rows()``: the verdicts the evaluator gathers, which is checked on every row.
The evaluator runs on batches of ``--batch-size`` rows (the engine's ``run.batch_size``) with ``run.workers`` =
``--workers``; a batch of fewer than ``vision_eval.rowwise.POOL_MIN_ROWS`` distinct rows is scored in-process.
Timings are the best of ``--repeat``, alternating the two, so both see the same load on a shared machine; the load
average is printed.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from vision_eval.config import RunConfig
from vision_eval.evaluator import EvalContext
from vision_eval.evaluators.code.chart import ChartValidator, ChartValidatorSettings
from vision_eval.evaluators.code.count import _TENS, _UNITS, CountValidator, CountValidatorSettings
from vision_eval.evaluators.code.json_check import JsonValidator, JsonValidatorSettings
from vision_eval.evaluators.code.ocr import OcrValidator, OcrValidatorSettings
from vision_eval.evaluators.custom.code_judge import CodeJudge, CodeJudgeSettings
from vision_eval.pool import default_workers
from vision_eval.rowwise import POOL_MIN_ROWS, RowResult, RowRule

SHAPES = ["circles", "squares", "triangles", "stars"]
WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]


def fmt(template: str, *values: pl.Expr | pl.Series) -> pl.Expr:
    """``template`` with each ``{}`` replaced by a value (``pl.format`` refuses literal braces)."""
    pieces = template.split("{}")
    parts: list[pl.Expr] = []
    for piece, value in zip(pieces, [*values, None]):
        parts.append(pl.lit(piece))
        if value is not None:
            parts.append((pl.lit(value) if isinstance(value, pl.Series) else value).cast(pl.Utf8))
    return pl.concat_str(parts)


NOUNS = ["bottles", "cans", "cups", "boxes", "apples", "chairs", "books", "pens", "plates", "bags", "glasses", "keys"]
COLORS = ["red", "blue", "green", "white", "black", "yellow", "small", "large"]
VENDORS = ["Northwind", "Contoso", "Fabrikam", "Globex", "Initech", "Umbrella", "Stark", "Wayne", "Acme", "Hooli"]


def _typo(text: pl.Expr, at: pl.Series, apply: pl.Series) -> pl.Expr:
    """``text`` with the character at ``at`` (a fraction of its length) dropped where ``apply``."""
    pos = (pl.lit(at) * text.str.len_chars()).cast(pl.Int64)
    dropped = pl.concat_str([text.str.slice(0, pos), text.str.slice(pos + 1)])
    return pl.when(pl.lit(apply)).then(dropped).otherwise(text)


def make_frames(n: int, seed: int = 0) -> dict[str, pl.DataFrame]:
    """Test data whose texts are nearly all distinct, as model outputs are: the built-ins must not win by scoring
    repeated texts once (the share of distinct rows is printed with the results)."""
    rng = np.random.default_rng(seed)
    ids = pl.Series("id", np.arange(n).astype(str))
    scene = pl.Series(rng.integers(10_000, 10_000_000, n))
    a, b = rng.integers(1, 60, n), rng.integers(1, 60, n)
    n1, n2 = rng.integers(0, len(NOUNS), n), (rng.integers(1, len(NOUNS), n) + 0) % len(NOUNS)
    n2 = np.where(n2 == n1, (n1 + 1) % len(NOUNS), n2)
    c1, c2 = rng.integers(0, len(COLORS), n), rng.integers(0, len(COLORS), n)
    wordy = rng.random(n) < 0.3
    units, tens = _UNITS, {value: name for name, value in _TENS.items()}
    spelled = pl.Series(
        [units[x] if x < 20 else tens[x - x % 10] + (f"-{units[x % 10]}" if x % 10 else "") for x in range(60)]
    )
    first = pl.when(pl.Series(wordy)).then(spelled.gather(a)).otherwise(pl.Series(a).cast(pl.Utf8))
    nouns, colors = pl.Series(NOUNS), pl.Series(COLORS)
    count = pl.DataFrame({"id": ids}).with_columns(
        fmt(
            "Scene {}: I count {} {} {} and {} {} {} on the table.",
            scene,
            first,
            colors.gather(c1),
            nouns.gather(n1),
            pl.Series(b),
            colors.gather(c2),
            nouns.gather(n2),
        ).alias("output"),
        fmt(
            "{} {}, {} {}", pl.Series(a), nouns.gather(n1), pl.Series(b + (rng.random(n) < 0.3)), nouns.gather(n2)
        ).alias("expected_output"),
    )
    vendor = pl.Series(VENDORS).gather(rng.integers(0, len(VENDORS), n))
    amount = pl.Series(np.round(rng.uniform(10, 99_999, n), 2))
    day = pl.Series(rng.integers(1, 29, n))
    expected_ocr = fmt("Invoice INV-{} from {} Ltd, total {} EUR, due 2026-03-{}", scene, vendor, amount, day)
    ocr = pl.DataFrame({"id": ids, "vendor": vendor}).with_columns(
        pl.concat_list(pl.col("vendor").str.to_lowercase(), pl.lit("total")).alias("keywords")
    )
    ocr = ocr.drop("vendor").with_columns(
        _typo(expected_ocr, pl.Series(rng.random(n)), pl.Series(rng.random(n) < 0.5)).alias("output"),
        expected_ocr.alias("expected_output"),
    )
    total = rng.integers(100, 5000, n)
    expected = fmt(
        '{"invoice_number": "INV-{}", "vendor_name": "Northwind", "total_amount": {}, "currency": "USD", '
        '"line_items": [{"description": "Widgets", "quantity": 2, "amount": {}}]}',
        pl.Series(np.arange(n)),
        pl.Series(total),
        pl.Series(total),
    )
    wrong = pl.Series(total + (rng.random(n) < 0.2) * 7)
    output = fmt(
        'Here you go:\n```json\n{"invoice_number": "INV-{}", "vendor_name": "Northwind", "total_amount": {}, '
        '"line_items": [{"description": "Widgets", "quantity": 2, "amount": {}}]}\n```',
        pl.Series(np.arange(n)),
        wrong,
        pl.Series(total),
    )
    invoice = pl.DataFrame({"id": ids}).with_columns(output.alias("output"), expected.alias("expected_output"))
    v = np.round(rng.uniform(0.1, 99.9, (n, 2)), 1)
    growth = np.round(rng.uniform(1, 99, n), 1)
    q1, q2 = pl.Series(rng.integers(1, 5, n)), pl.Series(rng.integers(1, 5, n))
    y1, y2 = pl.Series(rng.integers(2019, 2027, n)), pl.Series(rng.integers(2019, 2027, n))
    chart = pl.DataFrame({"id": ids}).with_columns(
        fmt(
            "1. Q{} {} revenue was ${}M\n2. Q{} {} peaked at ${}M, up {}% from Q{}.",
            q1,
            y1,
            pl.Series(v[:, 0]),
            q2,
            y2,
            pl.Series(v[:, 1]),
            pl.Series(growth),
            q1,
        ).alias("output"),
        fmt(
            "Q{} {}: ${}M; Q{} {}: ${}M; growth: {}%",
            q1,
            y1,
            pl.Series(v[:, 0]),
            q2,
            y2,
            pl.Series(np.round(v[:, 1] * 1.1, 2)),
            pl.Series(np.round(growth + (rng.random(n) < 0.2), 1)),
        ).alias("expected_output"),
    )
    return {"count": count, "ocr": ocr, "json": invoice, "chart": chart}


def row_loop(evaluator: RowRule, frame: pl.DataFrame) -> list[RowResult]:
    """The evaluator's row function on every row, one after another (the baseline)."""
    function = evaluator.row_function()
    return [function(*row) for row in evaluator.row_inputs(frame).rows()]


def evaluated(evaluator: RowRule, frame: pl.DataFrame, batch_size: int) -> pl.DataFrame:
    """The evaluator on ``frame`` in batches of ``batch_size`` rows."""
    parts = [evaluator.evaluate(part).results for part in frame.iter_slices(batch_size)]
    return pl.concat(parts, how="vertical_relaxed")


BUILTINS = {
    "count": (CountValidator, CountValidatorSettings()),
    "ocr": (OcrValidator, OcrValidatorSettings()),
    "json": (JsonValidator, JsonValidatorSettings()),
    "chart": (ChartValidator, ChartValidatorSettings()),
}

JUDGE = """
import json, sys
for line in sys.stdin:
    if line.strip():
        row = json.loads(line)
        print(json.dumps({"id": row["id"], "score": float(row["output"] == row["expected_output"])}))
"""


def bench_judge(rows: int, process_rows: int, batch_size: int) -> tuple[float, float]:
    import asyncio

    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "judge.py"
        script.write_text(JUDGE)
        frame = pl.DataFrame(
            {"id": [str(i) for i in range(rows)], "output": ["a"] * rows, "expected_output": ["a"] * rows}
        )
        command = [sys.executable, "-S", str(script)]
        batch = CodeJudge("j", CodeJudgeSettings(command=command, batch_size=batch_size, concurrency=2))
        start = time.perf_counter()
        out = asyncio.run(batch.aevaluate(frame)).results
        batch_rate = rows / (time.perf_counter() - start)
        assert out["status"].eq("processed").all(), out.filter(pl.col("status") != "processed").head(3)
        per_row = CodeJudge("j", CodeJudgeSettings(command=command, concurrency=2))
        start = time.perf_counter()
        out = asyncio.run(per_row.aevaluate(frame.head(process_rows))).results
        process_rate = process_rows / (time.perf_counter() - start)
        assert out["status"].eq("processed").all()
    return batch_rate, process_rate


def load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[20_000, 200_000], help="rows per validator (sizes)")
    parser.add_argument("--workers", type=int, default=default_workers(), help="run.workers (default: the cores)")
    parser.add_argument("--repeat", type=int, default=2, help="best of this many timings")
    parser.add_argument("--batch-size", type=int, default=50_000, help="rows per evaluate() call (run.batch_size)")
    parser.add_argument("--judge-rows", type=int, default=20_000, help="rows for batch-mode code_judge")
    parser.add_argument("--process-rows", type=int, default=20, help="rows for process-per-row code_judge")
    parser.add_argument("--only", nargs="*", choices=list(BUILTINS), help="validators to run (default: all)")
    parser.add_argument("--no-judge", action="store_true", help="skip the code_judge measurement")
    args = parser.parse_args()

    print(f"load average at start: {load()}")
    print(
        f"run.workers={args.workers}, run.batch_size={args.batch_size:,}, pool from {POOL_MIN_ROWS:,} distinct rows"
        f" a batch\n"
    )
    print(
        f"{'validator':<9} {'rows':>9} {'distinct':>8} {'evaluator rows/s':>17} {'loop rows/s':>12} {'loop µs/row':>12}"
        f" {'ratio':>7}   mean score, every row the loop's verdict"
    )
    context = EvalContext(run=RunConfig(workers=args.workers))
    for rows in args.rows:
        frames = make_frames(rows)
        for kind, (cls, settings) in BUILTINS.items():
            if args.only and kind not in args.only:
                continue
            frame = frames[kind]
            evaluator = cls(kind, settings, context)
            evaluator_rate = loop_rate = 0.0
            for _ in range(args.repeat):  # alternate, so both see the same load on a shared machine
                start = time.perf_counter()
                results = evaluated(evaluator, frame, args.batch_size)
                evaluator_rate = max(evaluator_rate, frame.height / (time.perf_counter() - start))
                start = time.perf_counter()
                looped = row_loop(evaluator, frame)
                loop_rate = max(loop_rate, frame.height / (time.perf_counter() - start))
            built = results.select("status", "score", "passed", "details", "error").rows()
            agree = built == [(r.status, r.score, r.passed, r.details, r.error) for r in looped]
            distinct = frame.drop("id").n_unique() / frame.height
            print(
                f"{kind:<9} {frame.height:>9,} {distinct:>8.0%} {evaluator_rate:>17,.0f} {loop_rate:>12,.0f}"
                f" {1e6 / loop_rate:>12.1f} {evaluator_rate / loop_rate:>6.2f}x"
                f"   {results['score'].mean():.4f}, {agree}"
            )
    print(f"\nload average at end: {load()}")
    if args.no_judge:
        return
    batch_rate, process_rate = bench_judge(args.judge_rows, args.process_rows, batch_size=5_000)
    print(
        f"\ncode_judge batch mode: {batch_rate:,.0f} rows/s ({args.judge_rows:,} rows, batches of 5,000); "
        f"process per row: {process_rate:,.1f} rows/s ({args.process_rows} rows sampled); "
        f"speed-up {batch_rate / process_rate:,.0f}x"
    )


if __name__ == "__main__":
    main()
