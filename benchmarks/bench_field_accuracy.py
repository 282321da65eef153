"""field_accuracy throughput against AgentV's own field_accuracy and a plain per-row Python loop, same cases, same run.

    PYTHONPATH=$PWD python benchmarks/bench_field_accuracy.py                  # 10k and 100k rows
    PYTHONPATH=$PWD python benchmarks/bench_field_accuracy.py --sizes 500      # smoke run
    PYTHONPATH=$PWD python benchmarks/bench_field_accuracy.py --workers 2 --repeat 3   # on the process pool

The cases are mixed invoices (5 fields: exact, numeric_tolerance, date, fuzzy, a nested exact path): most responses
plain JSON, some fenced, wrapped in prose, invalid (a trailing comma, cut short) or no JSON at all; dates in
eight spellings (ISO, ``15-JAN-2025``, ``15-jan-2025``, ``01/15/2025``, ``15.01.2025``, ``January 15, 2025``, and
two the field's ``formats`` do not list, left to python-dateutil's rules); amounts as numbers and as strings with
currency signs, codes and thousands separators. Every run draws fresh cases (``--seed``, default from the clock) and
writes them to a JSON Lines file that all three read; each measurement runs in a fresh process, first pass: no
cache is warm.

- **ours**: ``FieldAccuracy.evaluate`` on the whole frame (batches of ``--batch`` rows; ``run.workers`` from
  ``--workers``, default unset: field_accuracy then scores in the run's process). Its time is what a run pays for
  it: importing its modules (and the libraries they load), building it, its ``warm_up`` (run on the engine's
  thread as a run starts it, and waited for: a run overlaps it with loading the data, which this does not credit)
  and scoring, first-call costs included. The framework's own import (``vision_eval.engine``) is reported apart,
  as start-up.
- **AgentV**: ``FieldAccuracyGrader`` of ``@agentv/core`` (version :data:`AGENTV_VERSION`, installed with npm into
  ``~/.cache/vision_eval/agentv-<version>`` on first use when ``node`` and ``npm`` are present), one ``evaluate``
  per case in one Node process. Its time is building the grader and scoring; importing ``@agentv/core`` (~0.35 s)
  is reported apart, as start-up, and not counted. AgentV has no ``fuzzy`` match (it scores an unknown match 0),
  so its mean score differs: both means are printed, agreement is not required.
- **loop**: :func:`~vision_eval.evaluators.fields.field_row.field_row`, the evaluator's row function, called row by row
  in a plain Python loop (no deduplication, no process pool); its module is imported untimed.

The ratios are of rows per second by those times (ours / AgentV, ours / loop). The CPU time each spent on the
same span is printed too (its process only: a process pool's workers are not counted): on a shared machine it
moves less with the other load than the wall-clock time. The 1-minute load average is printed with each
measurement: every number moves with the other load. Both checkouts' modules
are byte-compiled first, as pip compiles an installed package's.
"""

from __future__ import annotations

import argparse
import compileall
import gc
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
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
    (0.02, "%d %b %Y"),  # not in the field's formats: python-dateutil's rules
    (0.01, "%Y/%m/%d"),
]
AGENTV_VERSION = "4.42.4"
SMOKE_ROWS = 5_000
"""Below this size (a smoke run), AgentV runs only when it is installed already (its install takes minutes)."""
NODE_SCRIPT = """\
import fs from 'fs';
const [casesPath, fieldsPath] = process.argv.slice(2);
const started = performance.now();
const core = await import('@agentv/core');
const imported = performance.now();
const fields = JSON.parse(fs.readFileSync(fieldsPath, 'utf8'));
const cases = fs.readFileSync(casesPath, 'utf8').split('\\n').filter((l) => l).map((l) => JSON.parse(l));
const begin = performance.now();
const cpu = process.cpuUsage();
const grader = new core.FieldAccuracyGrader({config: {type: 'field_accuracy', fields}});
let sum = 0;
for (const c of cases) {
  let verdict = grader.evaluate({evalCase: {expected_output: [{role: 'assistant', content: c.expected_output}]},
                                 candidate: c.output});
  if (verdict && typeof verdict.then === 'function') verdict = await verdict;
  sum += verdict.score;
}
const end = performance.now();
const used = process.cpuUsage(cpu);
console.log(JSON.stringify({rows: cases.length, startup: (imported - started) / 1000, seconds: (end - begin) / 1000,
                            cpu: (used.user + used.system) / 1e6, mean: sum / cases.length}));
"""


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


def _read_cases(path: Path) -> pl.DataFrame:
    return pl.read_ndjson(path, schema={"id": pl.Utf8, "output": pl.Utf8, "expected_output": pl.Utf8})


def worker(kind: str, cases: Path, batch: int, workers: int | None) -> dict[str, object]:
    """One measurement in this (fresh) process: ``ours`` or ``loop`` on the cases of a JSON Lines file."""
    started = time.perf_counter()
    from vision_eval import engine
    from vision_eval.config import RunConfig
    from vision_eval.evaluator import EvalContext

    startup = time.perf_counter() - started
    frame = _read_cases(cases)  # first: no one-off work of the evaluator overlaps untimed work
    gc.collect()  # the reading's garbage is not the evaluator's to collect
    if kind == "ours":
        started, cpu = time.perf_counter(), time.process_time()
        # Everything a run pays for this evaluator: importing its modules, building it, its warm-up, scoring.
        from vision_eval.evaluators.fields.field_accuracy import FieldAccuracy, FieldAccuracySettings

        context = EvalContext(run=RunConfig(workers=workers))
        evaluator = FieldAccuracy("bench", FieldAccuracySettings(fields=FIELDS), context)
        engine.start_warm_ups([evaluator]).join()
        setup = time.perf_counter() - started
        outs = [evaluator.evaluate(frame[o : o + batch]) for o in range(0, frame.height, batch)]
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        results = pl.concat([o.results for o in outs])
        scores, statuses = results["score"].to_list(), results["status"].to_list()
    else:
        from vision_eval.evaluators.fields.field_row import FieldPlan, field_row
        from vision_eval.evaluators.fields.matching import FieldSpec

        plan = FieldPlan([FieldSpec(**f) for f in FIELDS], "weighted_average")
        pairs = list(zip(frame["output"].to_list(), frame["expected_output"].to_list()))
        started, cpu = time.perf_counter(), time.process_time()
        verdicts = [field_row(plan, output, expected) for output, expected in pairs]
        seconds, cpu, setup = time.perf_counter() - started, time.process_time() - cpu, 0.0
        scores, statuses = [v.score for v in verdicts], [v.status for v in verdicts]
    counted = [s for s in scores if s is not None]
    return {"kind": kind, "rows": frame.height, "seconds": seconds, "setup": setup, "cpu": cpu, "startup": startup,
            "digest": _digest(scores), "mean": sum(counted) / max(1, len(scores)),
            "statuses": {s: statuses.count(s) for s in set(statuses)}}  # fmt: skip


def measure(kind: str, cases: Path, batch: int, workers: int | None) -> dict[str, object]:
    """:func:`worker` in a fresh process."""
    root = Path(__file__).resolve().parents[1]
    command = [sys.executable, __file__, "--worker", kind, "--cases", str(cases), "--batch", str(batch)]
    command += ["--workers", str(workers)] if workers else []
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def agentv_folder() -> Path:
    return Path("~/.cache/vision_eval").expanduser() / f"agentv-{AGENTV_VERSION}"


def agentv_ready(install: bool) -> tuple[Path | None, str]:
    """The folder holding ``@agentv/core`` (installed there with npm when ``install``), or ``None`` and why not."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        return None, "AgentV: skipped (node and npm not found)"
    folder = agentv_folder()
    package = folder / "node_modules" / "@agentv" / "core" / "package.json"
    if not package.exists():
        if not install:
            return None, (
                f"AgentV: skipped (not installed in {folder}; a run of {SMOKE_ROWS:,} rows or more installs it)"
            )
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "package.json").write_text('{"private": true}\n')
        print(f"installing @agentv/core@{AGENTV_VERSION} into {folder} (npm, once)...", flush=True)
        npm = ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", f"@agentv/core@{AGENTV_VERSION}"]
        done = subprocess.run(npm, cwd=folder, capture_output=True, text=True)
        if done.returncode != 0 or not package.exists():
            return None, f"AgentV: skipped (npm install failed: {done.stderr.strip()[-300:]})"
    version = json.loads(package.read_text())["version"]
    if version != AGENTV_VERSION:
        return None, f"AgentV: skipped ({folder} holds @agentv/core {version}, not {AGENTV_VERSION})"
    (folder / "bench_field_accuracy.mjs").write_text(NODE_SCRIPT)
    (folder / "fields.json").write_text(json.dumps(FIELDS))
    return folder, f"AgentV: @agentv/core {version} (node {_node_version()})"


def _node_version() -> str:
    return subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()


def measure_agentv(folder: Path, cases: Path) -> dict[str, object]:
    """AgentV's grader on the cases, in a fresh Node process."""
    command = ["node", str(folder / "bench_field_accuracy.mjs"), str(cases), str(folder / "fields.json")]
    out = subprocess.run(command, capture_output=True, text=True, check=True, cwd=folder)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _load() -> str:
    return f"{os.getloadavg()[0]:.1f}"


def _run(name: str, cases: Path, args: argparse.Namespace, folder: Path | None) -> dict[str, object]:
    if name == "agentv":
        assert folder is not None
        return measure_agentv(folder, cases)
    return measure(name, cases, args.batch, args.workers)


def _row(rows: int, best: dict[str, dict[str, float]], loads: dict[str, str]) -> str:
    """The table row of one size (``best``: per measurement, its numbers)."""
    rate = {name: rows / got["seconds"] for name, got in best.items()}
    ours, agentv = best["ours"], best.get("agentv")
    cells = [
        f"{rows:,}",
        f"{rate['ours']:,.0f}",
        f"{rate['agentv']:,.0f}" if agentv else "-",
        f"{rate['loop']:,.0f}",
        f"{rate['ours'] / rate['agentv']:.2f}x" if agentv else "-",
        f"{rate['ours'] / rate['loop']:.2f}x",
        f"{ours['setup']:.3f} + {ours['seconds'] - ours['setup']:.3f}",
        f"{agentv['seconds']:.3f}" if agentv else "-",
        f"{ours['startup']:.3f}",
        f"{agentv['startup']:.3f}" if agentv else "-",
        " / ".join(f"{best[k]['cpu']:.3f}" if k in best else "-" for k in ("ours", "agentv", "loop")),
        " / ".join(loads.get(k, "-") for k in ("ours", "agentv", "loop")),
    ]
    return "| " + " | ".join(cells) + " |"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated row counts")
    parser.add_argument("--seed", type=int, default=None, help="data seed (default: from the clock: fresh data)")
    parser.add_argument("--batch", type=int, default=250_000)
    parser.add_argument("--workers", type=int, default=None, help="run.workers for ours (default: unset)")
    parser.add_argument("--repeat", type=int, default=1, help="fresh processes per measurement (best kept)")
    parser.add_argument("--no-agentv", action="store_true", help="do not run AgentV")
    parser.add_argument("--worker", choices=["ours", "loop"], help=argparse.SUPPRESS)
    parser.add_argument("--cases", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.cases, args.batch, args.workers)))
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    seed = args.seed if args.seed is not None else int(time.time()) % 100_000
    compileall.compile_dir(Path(__file__).resolve().parents[1] / "vision_eval", quiet=1)  # as pip does at install
    folder, note = (None, "AgentV: skipped (--no-agentv)") if args.no_agentv else agentv_ready(max(sizes) >= SMOKE_ROWS)
    names = ["ours", *(["agentv"] if folder is not None else []), "loop"]  # interleaved: the machine's load
    print(f"fields={len(FIELDS)} seed={seed} batch={args.batch} run.workers={args.workers or 'unset'} "
          f"repeat={args.repeat} (best of)")  # fmt: skip
    print(note)
    print(
        "| rows | ours (rows/s) | AgentV (rows/s) | loop (rows/s) | ours / AgentV | ours / loop | ours set-up "
        "+ scoring (s) | AgentV scoring (s) | ours start-up (s) | AgentV import (s) | CPU (s): ours / AgentV / loop "
        "| load: ours / AgentV / loop |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | :---: | :---: |")
    means, statuses = [], {}
    with tempfile.TemporaryDirectory(prefix="bench_field_accuracy") as tmp:
        for rows in sizes:
            best: dict[str, dict[str, float]] = {}
            loads: dict[str, str] = {}
            for r in range(args.repeat):
                cases = Path(tmp) / f"cases-{rows}-{r}.jsonl"
                make_rows(rows, seed + r).write_ndjson(cases)
                digests = set()
                for name in names:
                    got = _run(name, cases, args, folder)
                    digests |= {got["digest"]} if "digest" in got else set()
                    numbers = {k: float(v) for k, v in got.items() if isinstance(v, int | float)}
                    if name not in best or numbers["seconds"] < best[name]["seconds"]:
                        best[name], loads[name] = numbers, _load()
                    statuses = got.get("statuses", statuses)
                assert len(digests) == 1, "ours and the loop scored the same cases differently"
            print(_row(rows, best, loads), flush=True)
            agentv = f", AgentV {best['agentv']['mean']:.4f}" if "agentv" in best else ""
            means.append(f"{rows:,} rows: ours {best['ours']['mean']:.4f}{agentv}")
    print(f"mean scores (AgentV has no fuzzy match: it scores vendor_name 0): {'; '.join(means)}")
    print(f"statuses (last size, loop): {statuses}")
    print(f"load average at end: {', '.join(f'{x:.2f}' for x in os.getloadavg())} (the machine may be shared)")


if __name__ == "__main__":
    main()
