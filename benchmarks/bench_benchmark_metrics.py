"""Throughput of the benchmark metrics (rows/s) under each protocol, against a plain per-row Python loop of the same
definition measured in the same run, on data with realistic repetition and on all-distinct data.

The evaluator scores the data in batches of ``--batch-size`` rows (the engine's ``run.batch_size``), each through its
``evaluate``: the row rules score each distinct row once and spread a batch with many distinct rows over
``--workers`` processes (:mod:`vision_eval.rowwise`; ``1 process``: the same with ``workers: 1``); POPE, exact_count
and relaxed_accuracy run their Polars column paths (``column_scores``), which hand the rows they cannot read exactly
to the row function. The loop calls the metric's row function on every row, one after
another, in this process.
``lenient`` relaxed accuracy, ANLS and VQA are Polars expressions (no row function): their loop is a plain Python
approximation of the same reading (it differs on non-ASCII digits and the ``\\x1c``-``\\x1f`` separators).
``official`` and ``lmms_eval`` relaxed accuracy and ANLS are the same function: only ``official`` is timed.

``--old-checkout DIR`` also times the same batches with the evaluators of another checkout (e.g. the commit before
the metrics became row rules, whose column paths handed doubtful rows to the row-wise definitions:
``git worktree add /tmp/bench-old cdf29d8``), in a subprocess just before each line's own timings, as the ``old/s``
column. The machine may be shared: the load average is printed, and each time is the best of ``--repeat`` runs.

Run: ``PYTHONPATH=$PWD python benchmarks/bench_benchmark_metrics.py [--rows 100000 1000000] [--old-checkout DIR]``
(CI: ``--rows 2000``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl

if not os.environ.get("PYTHONPATH"):  # with PYTHONPATH set (--old-checkout's subprocess), that checkout is timed
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CASES: list[tuple[str, dict[str, Any]]] = [
    ("pope", {"protocol": "official"}),
    ("pope", {"protocol": "lmms_eval"}),
    ("pope", {"protocol": "lenient"}),
    ("exact_count", {"protocol": "lmms_eval"}),
    ("exact_count", {"protocol": "lenient"}),
    ("relaxed_accuracy", {"protocol": "official"}),
    ("relaxed_accuracy", {"protocol": "lenient"}),
    ("anls", {"protocol": "official"}),
    ("anls", {"protocol": "lenient"}),
    ("vqa_accuracy", {"protocol": "official"}),
    ("vqa_accuracy", {"protocol": "lmms_eval"}),
    ("vqa_accuracy", {"protocol": "lenient"}),
]
KINDS = ("repeated", "distinct")

# --- data ----------------------------------------------------------------------------------------------------

OBJECTS = ["dog", "cat", "car", "chair", "person", "bottle", "cup", "bench", "bird", "clock", "book", "bus", "kite"]
OBJECTS += ["umbrella", "bowl", "oven", "sink", "train", "boat", "horse", "sheep", "cow", "vase", "knife", "fork"]
NUMBER_NAMES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven"]
NUMBER_NAMES += ["twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"]
WORDS = [
    "nokia", "pepsi", "coca-cola", "stop", "walk", "don't", "dont", "exit", "open", "closed",
    "red", "blue", "the", "a", "an", "two", "three", "7", "ten",
]  # fmt: skip


def _pope(rng: random.Random, tag: str) -> tuple[str, str]:
    thing = rng.choice(OBJECTS)
    reply = rng.choice(
        ["Yes", "No", "Yes.", "No.", "yes", f"Yes, there is a {thing} in the image.", f"No, there is no {thing}.",
         f"There is no {thing}.", "I cannot tell."]
    )  # fmt: skip
    return (reply + tag if tag else reply), rng.choice(["yes", "no"])


def _count(rng: random.Random, tag: str) -> tuple[str, str]:
    n = rng.randint(2, 20)
    thing = rng.choice(OBJECTS)
    shown = f"{n}{tag}" if tag else str(n)
    reply = rng.choice(
        [shown, str(n + 1), NUMBER_NAMES[n], NUMBER_NAMES[n].title(), f"There are {shown} {thing}s.", "many"]
    )
    return reply, shown if tag else str(n)


def _question(metric: str, rng: random.Random, tag: str) -> tuple[list[str], str]:
    """(candidate replies, reference answers as JSON) of one question."""
    if metric == "relaxed_accuracy":
        gold = f"{rng.randint(0, 5000) / rng.choice([1, 10, 100]):g}{tag}"
        if rng.random() < 0.2:
            gold = rng.choice(["Yes", "No", "Canada", "2019"]) + tag
        near = f"{float(gold) * rng.uniform(0.9, 1.1):.2f}" if gold[0].isdigit() and not tag else gold.lower()
        return [gold, near, gold + "%", "Canada"], json.dumps([gold])
    if metric == "anls":
        gold = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4))) + f" {rng.randint(0, 999)}{tag}"
        cut = gold[: rng.randint(0, len(gold))] + rng.choice(WORDS)
        return [gold, gold.upper(), cut], json.dumps([gold, gold.replace(" ", "  ")])
    pool = [f"{rng.choice(WORDS)} {rng.randint(0, 300)}{tag}" for _ in range(3)]
    return [*pool, "The " + pool[0].title() + "."], json.dumps([rng.choice(pool) for _ in range(10)])


QUESTIONS = 5_000
"""Questions of the ``repeated`` data's benchmark (DocVQA's and TextVQA's validation splits have about as many)."""


def synthetic(metric: str, rows: int, kind: str = "repeated", seed: int = 0) -> pl.DataFrame:
    """``id, output, expected_output`` shaped like the benchmark's own rows (JSON answer lists where it has them).

    ``repeated``: replies as models give them: POPE and CountBench replies of a few forms; for the reference metrics
    :data:`QUESTIONS` questions, each row one of them answered with one of a few replies (several models, or runs,
    scored together). ``distinct``: every row's (output, expected_output) differs from every other's."""
    rng = random.Random(seed)
    outputs: list[str] = []
    expected: list[str] = []
    questions = [] if kind == "distinct" else [_question(metric, rng, "") for _ in range(QUESTIONS)]
    for i in range(rows):
        tag = f" #{i}" if kind == "distinct" else ""
        if metric in ("pope", "exact_count"):
            reply, answer = (_pope if metric == "pope" else _count)(rng, tag)
        else:
            replies, answer = _question(metric, rng, tag) if tag else rng.choice(questions)
            reply = rng.choice(replies)
            if tag and not reply.endswith(tag):  # "distinct": the row's own reply
                reply += tag
        outputs.append(reply)
        expected.append(answer)
    return pl.DataFrame({"id": [str(i) for i in range(rows)], "output": outputs, "expected_output": expected})


# --- plain Python readings of the lenient column protocols (the loops they are timed against) -------------------


def golds_of(expected: str) -> list[str]:
    text = expected.strip()
    if text.startswith("["):
        return [v if isinstance(v, str) else json.dumps(v) for v in json.loads(text) if v is not None]
    return [expected]


_NUM = re.compile(r"^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$")
_THOUSANDS = re.compile(r"(\d),(\d{3})")


def _to_number(text: str) -> tuple[float | None, bool]:
    t = text.strip().lstrip("$€£").rstrip(".").strip()
    percent = t.endswith("%")
    t = _THOUSANDS.sub(r"\1\2", _THOUSANDS.sub(r"\1\2", t.rstrip("%").strip()))
    return (float(t) if _NUM.match(t) else None), percent


def _close(p: float, g: float, tol: float) -> bool:
    return p == 0 if g == 0 else abs(p - g) / abs(g) <= tol + 1e-12


def relaxed_lenient(output: str, expected: str, tol: float = 0.05) -> float:
    best = 0.0
    p, pp = _to_number(output)
    for gold in golds_of(expected):
        g, gp = _to_number(gold)
        if p is not None and g is not None:
            ok = _close(p, g, tol) or (pp and _close(p / 100, g, tol)) or (gp and _close(p, g / 100, tol))
        else:
            ok = " ".join(output.lower().split()) == " ".join(gold.lower().split())
        best = max(best, float(ok))
    return best


def anls_lenient(output: str, expected: str, cutoff: float = 0.5) -> float:
    from rapidfuzz.distance import Levenshtein

    pred = " ".join(output.lower().split())
    best = 0.0
    for gold in golds_of(expected):
        similarity = 1 - Levenshtein.normalized_distance(pred, " ".join(gold.lower().split()))
        best = max(best, 0.0 if similarity < cutoff else similarity)
    return best


def vqa_lenient(output: str, expected: str) -> float:
    from vision_eval.evaluators.benchmarks.vqa_accuracy import LENIENT_WORD_MAP, process_punctuation

    def normalized(text: str) -> str:
        text = text.replace("\n", " ").replace("\t", " ").replace("’", "'").replace("‘", "'").strip()
        words = process_punctuation(text, re.compile(r"\d,\d"), re.compile(r"\.(?!\d)")).lower().split()
        return " ".join(LENIENT_WORD_MAP.get(w, w) for w in words if w not in ("a", "an", "the"))

    pred = normalized(output)
    golds = [normalized(g) for g in golds_of(expected)]
    if len(golds) == 1:
        return float(golds[0] == pred)
    matches = golds.count(pred)
    return (matches * min(1.0, (matches - 1) / 3) + (len(golds) - matches) * min(1.0, matches / 3)) / len(golds)


LENIENT_LOOPS: dict[str, Callable[[str, str], float]] = {
    "relaxed_accuracy": relaxed_lenient,
    "anls": anls_lenient,
    "vqa_accuracy": vqa_lenient,
}

# --- timing ----------------------------------------------------------------------------------------------------


CLASSES = {
    "pope": "Pope",
    "exact_count": "ExactCount",
    "relaxed_accuracy": "RelaxedAccuracy",
    "anls": "Anls",
    "vqa_accuracy": "VqaAccuracy",
}
"""Each metric's class, in ``vision_eval.evaluators.benchmarks.<metric>`` (before the metrics had a module each:
in ``extracted`` or ``metrics`` there, which is where ``--old-checkout`` finds them)."""


def evaluator(metric: str, settings: dict[str, Any], workers: int) -> Any:
    """The metric's evaluator, on a run with ``workers`` processes for the row rules' pool."""
    import importlib

    from vision_eval.config import RunConfig
    from vision_eval.evaluator import EvalContext

    for module in (metric, "extracted", "metrics"):
        try:
            cls = getattr(importlib.import_module(f"vision_eval.evaluators.benchmarks.{module}"), CLASSES[metric])
            break
        except (ImportError, AttributeError):
            continue
    context = EvalContext(run=RunConfig(workers=workers))
    return cls(metric, cls.settings_model(type=metric, **settings), context)


def _clear_caches() -> None:
    """Forget the processed texts a previous run left behind (VQA keeps recent ones per process)."""
    try:
        from vision_eval.evaluators.benchmarks import vqa_accuracy
    except ImportError:
        return
    for name in ("official_answer", "official_gold", "official_processed", "evalai_answer"):
        cache = getattr(getattr(vqa_accuracy, name, None), "cache_clear", None)
        if cache is not None:
            cache()


def _best(fn: Callable[[], Any], repeat: int) -> float:
    """Best wall time of ``repeat`` runs (the machine may be shared: the best run is the least disturbed)."""
    best = float("inf")
    for _ in range(repeat):
        _clear_caches()
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def evaluate_rate(evaluator: Any, data: pl.DataFrame, batch_size: int, repeat: int) -> float:
    """Rows/s of the evaluator scoring ``data`` in batches of ``batch_size`` rows, as the engine hands them over."""
    batches = [data.slice(start, batch_size) for start in range(0, data.height, batch_size)]
    evaluator.evaluate(data.head(100))  # warm-up: imports (rapidfuzz, numpy) are not throughput
    return data.height / _best(lambda: [evaluator.evaluate(batch) for batch in batches], repeat)


def loop_rate(evaluator: Any, metric: str, data: pl.DataFrame, repeat: int) -> float:
    """Rows/s of a plain loop calling the same definition on every row (from the frame's columns)."""
    if evaluator.protocol == "lenient" and metric in LENIENT_LOOPS:
        definition = LENIENT_LOOPS[metric]
        pairs = data.select("output", "expected_output")
        return data.height / _best(lambda: [definition(*row) for row in pairs.rows()], repeat)
    function = evaluator.row_function()
    return data.height / _best(lambda: [function(*row) for row in evaluator.row_inputs(data).rows()], repeat)


def old_rate(checkout: str, metric: str, protocol: str, kind: str, rows: int, args: argparse.Namespace) -> float:
    """Rows/s of another checkout's evaluator on the same batches, measured in a subprocess right now (the load on
    a shared machine changes: each case's old and new timings are taken one after the other)."""
    command = [sys.executable, __file__, "--only-evaluate", "--rows", str(rows), "--only", metric]
    command += ["--protocols", protocol, "--kinds", kind, "--batch-size", str(args.batch_size)]
    command += ["--workers", str(args.workers), "--repeat", str(args.repeat)]
    env = {**os.environ, "PYTHONPATH": checkout}
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return float(json.loads(done.stdout.strip().splitlines()[-1]))


def load() -> str:
    return "load average " + " ".join(f"{v:.2f}" for v in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--batch-size", type=int, default=50_000, help="rows per evaluate() call (run.batch_size)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="processes of the row rules' pool")
    parser.add_argument("--repeat", type=int, default=2, help="runs per timing (the best is kept)")
    parser.add_argument("--old-checkout", help="also time this checkout's evaluators (PYTHONPATH), in a subprocess")
    parser.add_argument("--only", help="metrics to time, comma-separated")
    parser.add_argument("--protocols", help="protocols to time, comma-separated")
    parser.add_argument("--kinds", default=",".join(KINDS), help="data to time on: repeated, distinct")
    parser.add_argument("--only-evaluate", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    cases = [
        (metric, settings, kind)
        for metric, settings in CASES
        if (not args.only or metric in args.only.split(","))
        and (not args.protocols or settings["protocol"] in args.protocols.split(","))
        for kind in args.kinds.split(",")
    ]
    if args.only_evaluate:  # the --old-checkout subprocess: one evaluator rate, as JSON
        (metric, settings, kind), rows = cases[0], args.rows[0]
        rated = evaluator(metric, settings, args.workers)
        print(json.dumps(evaluate_rate(rated, synthetic(metric, rows, kind), args.batch_size, args.repeat)))
        return
    print(f"{load()}; batches of {args.batch_size:,} rows, pool of {args.workers} workers, best of {args.repeat}")
    if args.old_checkout:
        print(f"old/s: the evaluators of {args.old_checkout}, timed on the same batches just before each line's")
    header = f"{'metric protocol':<27}{'data':<10}{'rows':>10}{'evaluate/s':>12}{'1 process/s':>13}{'loop/s':>10}"
    print(header + f"{'vs loop':>9}" + (f"{'old/s':>12}{'vs old':>8}" if args.old_checkout else ""))
    for rows in args.rows:
        for metric, settings, kind in cases:
            protocol = settings["protocol"]
            was = old_rate(args.old_checkout, metric, protocol, kind, rows, args) if args.old_checkout else None
            data = synthetic(metric, rows, kind)
            rated = evaluator(metric, settings, args.workers)
            rate = evaluate_rate(rated, data, args.batch_size, args.repeat)
            alone = evaluate_rate(evaluator(metric, settings, 1), data, args.batch_size, args.repeat)
            looped = loop_rate(rated, metric, data, args.repeat)
            line = f"{metric + ' ' + protocol:<27}{kind:<10}{rows:>10,}{rate:>12,.0f}{alone:>13,.0f}"
            line += f"{looped:>10,.0f}{rate / looped:>8.1f}x"
            if was is not None:
                line += f"{was:>12,.0f}{rate / was:>7.2f}x"
            print(line, flush=True)
        print(load(), flush=True)


if __name__ == "__main__":
    main()
