"""How long the listing commands take to print (issue 26: "a listing command imports nothing it does not print"):
CPU seconds of fresh processes of ``vision-eval list``, ``describe exact_match`` and ``--help``, against the bare
interpreter (``python -c pass``) and against importing the whole engine (``import vision_eval.api``, what every
command paid before), all measured in this run, interleaved.

    python benchmarks/bench_startup.py --runs 7

CPU is user + system of the child (all its threads); the median of ``--runs`` fresh processes is printed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

from bench_demo import cpu_of  # the same measurement as the demo's


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7, help="fresh processes per measurement (median printed)")
    args = parser.parse_args()
    cli = [sys.executable, "-m", "vision_eval.cli"]
    commands = {
        "python -c pass (floor)": [sys.executable, "-c", "pass"],
        "import vision_eval.api (the engine)": [sys.executable, "-c", "import vision_eval.api"],
        "vision-eval list": [*cli, "list"],
        "vision-eval describe exact_match": [*cli, "describe", "exact_match"],
        "vision-eval --help": [*cli, "--help"],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(args.runs):  # interleaved: a change of the machine's load touches every command alike
            for name, command in commands.items():
                times[name].append(cpu_of(command, Path(folder)))
    median = {name: statistics.median(values) for name, values in times.items()}
    floor, engine = median["python -c pass (floor)"], median["import vision_eval.api (the engine)"]
    print(f"| command (median of {args.runs} fresh processes) | CPU s | x floor | / engine import |")
    print("|---|---:|---:|---:|")
    for name, value in median.items():
        print(f"| {name} | {value:.3f} | {value / floor:.1f}x | {value / engine:.0%} |")
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
