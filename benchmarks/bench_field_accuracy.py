"""field_accuracy throughput: vectorized evaluator vs the row-wise Python reference, same data, same run.

1M rows x 5 fields (exact, numeric_tolerance, date, fuzzy, nested exact path) by default:

    PYTHONPATH=$PWD python benchmarks/bench_field_accuracy.py --rows 1000000 --ref-rows 20000

The row-wise reference (``matching.evaluate_row``: json.loads + path walk + compare per row) is timed on the
first ``--ref-rows`` rows and reported per comparison. Results of the two are checked to agree on those rows.
"""

from __future__ import annotations

import argparse
import os
import time

import polars as pl

from vision_eval.evaluator import EvalContext
from vision_eval.evaluators.field_accuracy import FieldAccuracy, FieldAccuracySettings
from vision_eval.structured import matching as m

FIELDS = [
    {"path": "invoice_number", "match": "exact"},
    {"path": "total_amount", "match": "numeric_tolerance", "tolerance": 0.01},
    {"path": "invoice_date", "match": "date", "formats": ["YYYY-MM-DD", "DD-MMM-YYYY", "MM/DD/YYYY"]},
    {"path": "vendor_name", "match": "fuzzy", "threshold": 0.85},
    {"path": "customer.address.city", "match": "exact"},
]
VENDORS = ["Acme Corp", "Globex Corporation", "Initech LLC", "Umbrella Group", "Stark Industries", "Wayne Enterprises"]
TYPOS = ["Acme Crop", "Globex Corporaton", "Initech", "Umbrela Group", "Stark Industries", "Wayne Enterprise"]
CITIES = ["Paris", "Lyon", "Berlin", "Madrid", "Rome"]


def make_frame(rows: int) -> pl.DataFrame:
    """Synthetic invoices; outputs carry typos, other date formats, currency strings and wrong totals."""
    i = pl.int_range(rows, dtype=pl.Int64)
    day = pl.date(2023, 1, 1) + pl.duration(days=i % 1000)
    amount = ((i * 7919) % 1_000_000) / 100 + 1
    vendor = pl.lit(pl.Series(VENDORS)).get(i % len(VENDORS))
    typo = pl.lit(pl.Series(TYPOS)).get(i % len(TYPOS))
    city = pl.lit(pl.Series(CITIES)).get(i % len(CITIES))
    frame = pl.select(
        pl.format("s{}", i).alias("id"),
        pl.format("INV-{}", i).alias("inv"),
        amount.alias("amount"),
        day.dt.strftime("%Y-%m-%d").alias("iso"),
        pl.when(i % 3 == 0)
        .then(day.dt.strftime("%d-%b-%Y").str.to_uppercase())
        .when(i % 3 == 1)
        .then(day.dt.strftime("%m/%d/%Y"))
        .otherwise(day.dt.strftime("%Y-%m-%d"))
        .alias("odate"),
        vendor.alias("vendor"),
        pl.when(i % 4 == 0).then(typo).otherwise(vendor).alias("ovendor"),
        city.alias("city"),
        pl.when(i % 10 == 0).then(pl.format("INV-{}", i + 1)).otherwise(pl.format("INV-{}", i)).alias("oinv"),
        pl.when(i % 5 == 0)
        .then(pl.format('"${}"', amount.round(2).cast(pl.Utf8)))
        .when(i % 7 == 0)
        .then((amount + 0.05).round(2).cast(pl.Utf8))
        .otherwise(amount.round(2).cast(pl.Utf8))
        .alias("oamount"),
    )
    doc = '{{"invoice_number": "{}", "vendor_name": "{}", "invoice_date": "{}", "total_amount": {}, "currency": "EUR", "customer": {{"address": {{"city": "{}"}}}}}}'  # noqa: E501
    return frame.select(
        "id",
        pl.format(doc, "oinv", "ovendor", "odate", "oamount", "city").alias("output"),
        pl.format(doc, "inv", "vendor", "iso", pl.col("amount").round(2).cast(pl.Utf8), "city").alias(
            "expected_output"
        ),
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--ref-rows", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=250_000)
    args = parser.parse_args()
    frame = make_frame(args.rows)
    evaluator = FieldAccuracy("bench", FieldAccuracySettings(fields=FIELDS), EvalContext())
    comparisons = args.rows * len(FIELDS)

    start = time.perf_counter()
    outs = [evaluator.evaluate(frame[o : o + args.batch]) for o in range(0, args.rows, args.batch)]
    fast_s = time.perf_counter() - start
    results = pl.concat([o.results for o in outs])
    fields = pl.concat([o.fields for o in outs])

    specs = [m.FieldSpec(**f) for f in FIELDS]
    ref_rows = min(args.ref_rows, args.rows)
    sub = frame.head(ref_rows)
    start = time.perf_counter()
    ref = [m.evaluate_row(specs, o, e, "weighted_average") for o, e in zip(sub["output"], sub["expected_output"])]
    ref_s = time.perf_counter() - start

    agree = all(abs((r.get("score") or 0) - (s or 0)) < 1e-12 for r, s in zip(ref, results["score"].head(ref_rows)))
    fast_rate = comparisons / fast_s
    ref_rate = ref_rows * len(FIELDS) / ref_s
    print(f"rows={args.rows} fields={len(FIELDS)} comparisons={comparisons} batch={args.batch}")
    print(f"load average at end: {', '.join(f'{x:.2f}' for x in os.getloadavg())} (the machine may be shared)")
    print(f"vectorized: {fast_s:.2f} s  {fast_rate / 1e6:.2f}M comparisons/s  ({fields.height} field rows)")
    print(f"row-wise reference ({ref_rows} rows): {ref_s:.2f} s  {ref_rate / 1e6:.3f}M comparisons/s")
    print(f"speed-up: {fast_rate / ref_rate:.1f}x   scores agree on the reference rows: {agree}")
    print(f"mean score {results['score'].mean():.4f}; hit rate per field:")
    print(fields.group_by("path", maintain_order=True).agg(pl.col("hit").mean().round(3)))


if __name__ == "__main__":
    main()
