"""The on-demand mutation run over the modules that hold rules users act on (docs/testing.md).

Runs ``mutmut run`` as configured in pyproject.toml's ``[tool.mutmut]`` (which modules are mutated, which tests
cover them), timed, with the load average before and after, then prints the score of each module: the share of the
mutants run that a test kills. ``--sample N`` runs a seeded sample of at most N mutants per module (the whole run
is long on a busy machine: docs/testing.md); ``--report`` prints the scores of the last run without running
anything; ``--survivors`` lists the mutants that survived (``mutmut show NAME`` prints one's diff).

    python tools/mutation.py                     # every mutant
    python tools/mutation.py --sample 150        # at most 150 mutants per module
    python tools/mutation.py --report --survivors
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MUTANTS = ROOT / "mutants"
KILLED = {1, 3}
"""mutmut's exit codes of a mutant some test failed on."""
TIMEOUT = {-24, 24, 152, 255, 36}
"""A mutant that made its tests run past mutmut's limit (an endless loop): counted as killed, listed apart."""
SURVIVED = 0
NO_TESTS = {5, 33}


def load() -> str:
    return Path("/proc/loadavg").read_text().strip() if Path("/proc/loadavg").exists() else "unknown"


def run(max_children: int, fresh: bool, sample: int | None, seed: int) -> float:
    """``mutmut run`` (of every mutant, or of a sample per module); the seconds it took."""
    if fresh and MUTANTS.exists():
        shutil.rmtree(MUTANTS)
    mutmut = [str(Path(sys.executable).with_name("mutmut")), "run", "--max-children", str(max_children)]
    started = time.monotonic()
    if sample is None:
        subprocess.run(mutmut, cwd=ROOT, check=False)
    else:  # mutants and the call records are made by a first run of the smallest module's mutants
        subprocess.run([*mutmut, "vision_eval.secrets.*"], cwd=ROOT, check=False)
        rng = random.Random(seed)
        names = []
        for codes in statuses().values():
            pending = sorted(name for name, code in codes.items() if code is None)
            names += rng.sample(pending, min(sample, len(pending)))
        if names:
            subprocess.run([*mutmut, *names], cwd=ROOT, check=False)
    return time.monotonic() - started


def statuses() -> dict[str, dict[str, int | None]]:
    """Per mutated module, each mutant's exit code (``None``: not run)."""
    out = {}
    for meta in sorted(MUTANTS.rglob("*.py.meta")):
        module = str(meta.relative_to(MUTANTS)).removesuffix(".meta")
        out[module] = json.loads(meta.read_text())["exit_code_by_key"]
    return out


def kind(code: int | None) -> str:
    if code in KILLED:
        return "killed"
    if code in TIMEOUT:
        return "timeout"
    if code == SURVIVED:
        return "survived"
    if code in NO_TESTS:
        return "no tests"
    return "not run" if code is None else f"other ({code})"


def report(show_survivors: bool) -> None:
    by_module = statuses()
    if not by_module:
        print("no mutation results: run `python tools/mutation.py` first")
        return
    total: Counter[str] = Counter()
    print(
        f"{'module':<52} {'mutants':>7} {'run':>5} {'killed':>7} {'timeout':>7} {'survived':>8} {'no tests':>8} "
        f"{'score':>6}"
    )
    for module, codes in by_module.items():
        counts = Counter(kind(c) for c in codes.values())
        total += counts
        print(line(module, len(codes), counts))
    print(line("all", sum(total.values()), total))
    if show_survivors:
        for codes in by_module.values():
            for name, code in codes.items():
                if kind(code) in ("survived", "no tests"):
                    print(f"{kind(code)}: {name}")


def line(label: str, mutants: int, counts: Counter[str]) -> str:
    detected = counts["killed"] + counts["timeout"]
    scored = mutants - counts["not run"]
    score = f"{detected / scored:.1%}" if scored else "-"
    return (
        f"{label:<52} {mutants:>7} {scored:>5} {counts['killed']:>7} {counts['timeout']:>7} {counts['survived']:>8} "
        f"{counts['no tests']:>8} {score:>6}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--report", action="store_true", help="print the last run's scores, run nothing")
    parser.add_argument("--survivors", action="store_true", help="list the mutants no test killed")
    parser.add_argument("--max-children", type=int, default=os.cpu_count() or 2, help="mutants tested at once")
    parser.add_argument("--keep", action="store_true", help="keep earlier results (only new mutants are run)")
    parser.add_argument("--sample", type=int, help="run at most this many mutants of each module")
    parser.add_argument("--seed", type=int, default=0, help="the sample's seed")
    args = parser.parse_args()
    if not args.report:
        before = load()
        seconds = run(args.max_children, not args.keep, args.sample, args.seed)
        print(f"\nmutation run: {seconds / 60:.1f} min on {os.cpu_count()} cores; load before {before}, after {load()}")
    report(args.survivors)


if __name__ == "__main__":
    main()
