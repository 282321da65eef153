"""The README's first command, timed: CPU seconds of the demo evaluation (29 rows x 20 evaluators, offline) against
the CLI's start-up alone (``vision-eval --help``: Python, the package, Hydra), both measured in this run.

    python benchmarks/bench_demo.py --runs 5

Each run is a fresh process (as a user runs it); CPU is user + system of the child, all its threads. Goal (issue 28):
the demo under 2 s of CPU.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

GOAL_CPU_S = 2.0


def cpu_of(command: list[str], cwd: Path) -> float:
    """CPU seconds (user + system) of one run of ``command`` in a fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, cwd=cwd, check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5, help="fresh processes per measurement (median printed)")
    args = parser.parse_args()
    cli = [sys.executable, "-m", "vision_eval.cli"]
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        startup, demo = [], []
        for i in range(args.runs):  # interleaved: a change of the machine's load touches both alike
            startup.append(cpu_of([*cli, "--help"], work))
            demo.append(cpu_of([*cli, f"hydra.run.dir=run{i}"], work))
    floor, total = statistics.median(startup), statistics.median(demo)
    print(f"| measurement (median of {args.runs} fresh processes) | CPU s |")
    print("|---|---:|")
    print(f"| start-up: vision-eval --help (baseline) | {floor:.2f} |")
    print(f"| the demo evaluation | {total:.2f} |")
    print(f"demo / start-up: {total / floor:.1f}x; demo / goal ({GOAL_CPU_S:.0f} s): {total / GOAL_CPU_S:.0%}")
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
