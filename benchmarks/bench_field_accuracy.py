"""field_accuracy throughput against a plain per-row Python loop of the same rules, same data, same run.

    PYTHONPATH=$PWD python benchmarks/bench_field_accuracy.py                 # 10k and 1M rows
    PYTHONPATH=$PWD python benchmarks/bench_field_accuracy.py --sizes 10000 --repeat 3
    PYTHONPATH=$PWD python benchmarks/bench_field_accuracy.py --baseline ../main  # main's evaluator too, same data

The data are mixed invoices (5 fields: exact, numeric_tolerance, date, fuzzy, a nested exact path): most responses
plain JSON, some fenced, wrapped in prose, invalid (a trailing comma, cut short) or no JSON at all; dates in
eight spellings (ISO, ``15-JAN-2025``, ``15-jan-2025``, ``01/15/2025``, ``15.01.2025``, ``January 15, 2025``, and
two the field's ``formats`` do not list, left to python-dateutil); amounts as numbers and as strings with currency
signs, codes and thousands separators. Every run draws fresh data (``--seed``, default from the clock): no date
string recurs from an earlier run, and each measurement runs in a fresh process, so no cache is warm.

The loop is ``matching.evaluate_row`` (the row-wise definition the evaluator is tested against: ``json.loads``, the
path walk, the comparisons) called row by row; the evaluator is ``FieldAccuracy.evaluate`` on the whole frame
(batches of ``--batch`` rows). The data are generated first; then the loop times only its loop (its module is part of
the framework both import untimed), and the evaluator times everything a run pays for it: importing its modules (and
the libraries they load), building it, its ``warm_up`` (run on the engine's thread as a run starts it, and waited
for: a run overlaps it with loading the data, which this does not credit) and scoring, first-call costs included.
Their scores are checked to agree row for row. Both checkouts' modules are byte-compiled first, as pip compiles an
installed package's: a process started with ``PYTHONDONTWRITEBYTECODE=1`` (this machine's shells set it) would
otherwise recompile the evaluator's ~1,600 lines in every fresh process (~9 ms), a cost no installed run pays.

The ratio is of wall-clock rates. The CPU-time ratio (loop CPU / evaluator CPU, all its threads counted) is printed
too: on a shared machine it moves less with the other load, and it leaves out what the evaluator's second core buys.
"""

from __future__ import annotations

import argparse
import compileall
import gc
import hashlib
import json
import os
import random
import subprocess
import sys
import time
from datetime import date, timedelta
from pathlib import Path

import polars as pl

FIELDS = [
    {"path": "invoice_number", "match": "exact"},
    {"path": "total_amount", "match": "numeric_tolerance", "tolerance": 0.01},
    {
        "path": "invoice_date",
        "match": "date",
        "formats": ["YYYY-MM-DD", "DD-MMM-YYYY", "MM/DD/YYYY", "DD.MM.YYYY", "%B %d, %Y"],
    },
    {"path": "vendor_name", "match": "fuzzy", "threshold": 0.85},
    {"path": "customer.address.city", "match": "exact"},
]
VENDORS = ["Acme Corp", "Globex Corporation", "Initech LLC", "Umbrella Group", "Stark Industries", "Wayne Enterprises"]
TYPOS = ["Acme Crop", "Globex Corporaton", "Initech", "Umbrela Group", "Stark Industires", "Wayne Enterprise"]
CITIES = ["Paris", "Lyon", "Berlin", "Madrid", "Rome", "Zürich"]
DATE_SPELLINGS = [  # (share, spelling)
    (0.40, "%Y-%m-%d"),
    (0.14, "%d-%b-%Y upper"),
    (0.05, "%d-%b-%Y"),
    (0.14, "%m/%d/%Y"),
    (0.14, "%d.%m.%Y"),
    (0.10, "%B %d, %Y"),
    (0.02, "%d %b %Y"),  # not in the field's formats: python-dateutil
    (0.01, "%Y/%m/%d"),
]


def _date(day: date, rng: random.Random) -> str:
    roll, acc, spelling = rng.random(), 0.0, DATE_SPELLINGS[-1][1]
    for share, candidate in DATE_SPELLINGS:
        acc += share
        if roll < acc:
            spelling = candidate
            break
    if spelling.endswith(" upper"):
        return day.strftime(spelling[:-6]).upper()
    text = day.strftime(spelling)
    return text if rng.random() < 0.9 else text.replace(" 0", " ").lstrip("0")  # some without leading zeros


def _amount(value: float, rng: random.Random) -> object:
    roll = rng.random()
    if roll < 0.50:
        return value
    if roll < 0.62:
        return f"${value:,.2f}"
    if roll < 0.72:
        return f"EUR {value:,.2f}"
    if roll < 0.82:
        return f"{value:.2f}"
    if roll < 0.92:
        return round(value + 0.05, 2)
    return f"({value:.2f})"


def _envelope(doc: str, rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.78:
        return doc
    if roll < 0.85:
        return f"```json\n{doc}\n```"
    if roll < 0.90:
        return f"Here is the extracted invoice: {doc} Let me know if you need more."
    if roll < 0.95:
        return doc[:-1] + ', "notes": null,}'  # a trailing comma: invalid
    if roll < 0.98:
        return doc[: len(doc) * 2 // 3]  # cut short
    return "I could not read the invoice."


def make_rows(rows: int, seed: int) -> pl.DataFrame:
    """Fresh mixed invoices: every seed draws another decade of dates and other amounts."""
    rng = random.Random(seed)
    start = date(1990, 1, 1) + timedelta(days=seed % 20_000)
    ids, outputs, expected = [], [], []
    for i in range(rows):
        day = start + timedelta(days=rng.randrange(3650))
        amount = round(rng.uniform(1, 99_999), 2)
        vendor, city = rng.randrange(len(VENDORS)), rng.choice(CITIES)
        want = {
            "invoice_number": f"INV-{seed % 1000}-{i}",
            "vendor_name": VENDORS[vendor],
            "invoice_date": day.isoformat(),
            "total_amount": amount,
            "currency": "EUR",
            "customer": {"address": {"city": city}},
        }
        got = dict(want)
        if rng.random() < 0.1:
            got["invoice_number"] = f"INV-{seed % 1000}-{i + 1}"
        if rng.random() < 0.25:
            got["vendor_name"] = TYPOS[vendor]
        got["invoice_date"] = _date(day, rng)
        got["total_amount"] = _amount(amount, rng)
        ids.append(f"s{i}")
        outputs.append(_envelope(json.dumps(got, ensure_ascii=rng.random() < 0.5), rng))
        expected.append(json.dumps(want))
    return pl.DataFrame({"id": ids, "output": outputs, "expected_output": expected})


def _digest(scores: list[float | None]) -> str:
    return hashlib.sha256(json.dumps(scores).encode()).hexdigest()[:16]


def worker(kind: str, rows: int, seed: int, batch: int) -> dict[str, object]:
    """One measurement in this (fresh) process: ``ours`` or ``loop`` on ``make_rows(rows, seed)``."""
    started = time.perf_counter()
    from vision_eval import engine
    from vision_eval.evaluator import EvalContext
    from vision_eval.structured import matching as m

    imports = time.perf_counter() - started
    frame = make_rows(rows, seed)  # first: no one-off work of the evaluator overlaps untimed work
    # The generator's garbage (10^5 Python objects) is collected before either times anything: a run reads its data
    # with Polars, not through Python dicts, so neither should pay a full collection of the generator's objects.
    gc.collect()
    if kind == "ours":
        started, cpu = time.perf_counter(), time.process_time()
        # Everything a run pays for this evaluator: importing its modules, building it, its warm-up, scoring.
        from vision_eval.evaluators.field_accuracy import FieldAccuracy, FieldAccuracySettings

        evaluator = FieldAccuracy("bench", FieldAccuracySettings(fields=FIELDS), EvalContext())
        if hasattr(engine, "start_warm_ups"):  # older checkouts warm up in the constructor, in the background
            engine.start_warm_ups([evaluator]).join()
        outs = [evaluator.evaluate(frame[o : o + batch]) for o in range(0, rows, batch)]
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        results = pl.concat([o.results for o in outs])
        scores, statuses = results["score"].to_list(), results["status"].to_list()
    else:
        specs = [m.FieldSpec(**f) for f in FIELDS]
        outputs, expected = frame["output"].to_list(), frame["expected_output"].to_list()
        started, cpu = time.perf_counter(), time.process_time()
        refs = [m.evaluate_row(specs, o, e, "weighted_average") for o, e in zip(outputs, expected)]
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        scores, statuses = [r.get("score") for r in refs], [r["status"] for r in refs]
    return {"kind": kind, "rows": rows, "seconds": seconds, "cpu": cpu, "imports": imports, "digest": _digest(scores),
            "statuses": {s: statuses.count(s) for s in set(statuses)}}  # fmt: skip


def measure(kind: str, rows: int, seed: int, batch: int, checkout: Path | None = None) -> dict[str, object]:
    """:func:`worker` in a fresh process, importing vision_eval from ``checkout`` (default: this one)."""
    root = checkout or Path(__file__).resolve().parents[1]
    command = [sys.executable, __file__, "--worker", kind, "--sizes", str(rows), "--seed", str(seed)]
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run([*command, "--batch", str(batch)], capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000,1000000", help="comma-separated row counts")
    parser.add_argument("--seed", type=int, default=None, help="data seed (default: from the clock: fresh data)")
    parser.add_argument("--batch", type=int, default=250_000)
    parser.add_argument("--repeat", type=int, default=1, help="fresh processes per measurement (best kept)")
    parser.add_argument("--baseline", type=Path, help="another checkout (e.g. a worktree of main): its evaluator too")
    parser.add_argument("--worker", choices=["ours", "loop"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    seed = args.seed if args.seed is not None else int(time.time()) % 100_000
    if args.worker:
        print(json.dumps(worker(args.worker, sizes[0], seed, args.batch)))
        return
    for checkout in [Path(__file__).resolve().parents[1], *([args.baseline] if args.baseline else [])]:
        compileall.compile_dir(checkout / "vision_eval", quiet=1)  # as pip does at install (see the docstring)
    print(f"fields={len(FIELDS)} seed={seed} batch={args.batch} repeat={args.repeat} (best of)")
    extra = " baseline (rows/s) | baseline ratio | baseline CPU-time ratio |" if args.baseline else ""
    print(f"| rows | ours (rows/s) | loop (rows/s) | ratio | CPU-time ratio | scores agree |{extra}")
    print("| ---: | ---: | ---: | ---: | ---: | :---: |" + (" ---: | ---: | ---: |" if args.baseline else ""))
    kinds = [("ours", None), ("loop", None)] + ([("baseline", args.baseline)] if args.baseline else [])
    for rows in sizes:
        best: dict[str, dict[str, object]] = {}
        agree = True
        for r in range(args.repeat):
            digests = set()
            for name, checkout in kinds:  # interleaved: a change of the machine's load touches all alike
                got = measure("loop" if name == "loop" else "ours", rows, seed + r, args.batch, checkout)
                if name != "baseline":
                    digests.add(got["digest"])
                if name not in best or got["seconds"] < best[name]["seconds"]:  # type: ignore[operator]
                    best[name] = got
            agree = agree and len(digests) == 1  # same data in both processes: the same scores
        rate = {name: rows / float(best[name]["seconds"]) for name, _ in kinds}  # type: ignore[arg-type]
        cpu_ratio = float(best["loop"]["cpu"]) / float(best["ours"]["cpu"])  # type: ignore[arg-type]
        line = f"| {rows:,} | {rate['ours']:,.0f} | {rate['loop']:,.0f} | {rate['ours'] / rate['loop']:.1f}x "
        line += f"| {cpu_ratio:.1f}x | {agree} |"
        if args.baseline:
            base_cpu = float(best["loop"]["cpu"]) / float(best["baseline"]["cpu"])  # type: ignore[arg-type]
            line += f" {rate['baseline']:,.0f} | {rate['baseline'] / rate['loop']:.1f}x | {base_cpu:.1f}x |"
        print(line, flush=True)
    print(f"statuses (last size): {best['ours']['statuses']}")
    print(f"load average at end: {', '.join(f'{x:.2f}' for x in os.getloadavg())} (the machine may be shared)")


if __name__ == "__main__":
    main()
