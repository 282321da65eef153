"""How long ``vision-eval compare`` takes on two big runs, against writing the report of the same two runs, and its
peak memory.

    PYTHONPATH=$PWD python benchmarks/bench_compare.py [--rows 1000000] [--images 150]

Two runs of ``--rows`` samples x three evaluators (``exact_match``: pass/fail; ``contains`` with two words: scores
0, 0.5, 1; ``ocr_validator``: a continuous similarity) are written once (not timed), each from its own prediction
file: the same samples, the candidate's response changed on 10% of them. Each measurement is a fresh process,
timed from its first import of vision_eval to its last file written:
- compare: what ``vision-eval compare BASELINE CANDIDATE`` does (pair the samples on id and content, the paired
  tests and intervals, comparison.parquet, comparison_flips.parquet, comparison.html with its thumbnails);
- report (the baseline): ``write_report([baseline, candidate])``, the two runs' report.html as
  ``vision-eval-report`` writes it (two variants, paired sample by sample).
Peak memory is each child's own high-water mark (``VmHWM``). The goal (issue 29): compare takes less time than the
report, under 1 GB.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STACK = {
    "exact": {"type": "exact_match"},
    "words": {"type": "contains", "value": ["red", "circles"]},
    "ocr": {"type": "ocr_validator"},
}


def _own_peak_mb() -> float:
    """This process's peak resident memory since its ``exec``, in MB."""
    try:
        status = Path("/proc/self/status").read_text()
        return next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration):
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def make_runs(rows: int, folder: Path, images: int) -> tuple[Path, Path]:
    """The two runs, written by ``evaluate`` (vectorized data: generating it is not what is measured)."""
    import polars as pl
    from bench_report import make_images

    import vision_eval as ve

    paths = {k: str(p) for k, p in enumerate(make_images(folder, images))}
    i = pl.col("i")
    sentence = "I count {} red circles and {} squares."
    base = pl.DataFrame({"i": pl.int_range(rows, eager=True)}).select(
        pl.format("r{}", i).alias("id"),
        pl.lit("Describe the image.").alias("input"),
        pl.format(sentence, i % 7, i % 3).alias("output"),
        pl.format(sentence, i % 5, i % 3).alias("expected_output"),
        pl.concat_list((i % len(paths)).replace_strict(paths, return_dtype=pl.Utf8)).alias("images"),
        i,
    )
    changed = base.with_columns(
        pl.when(i % 10 == 3)
        .then(pl.format("I see {} blue squares.", i % 4))
        .otherwise(pl.col("output"))
        .alias("output")
    )
    out = []
    for name, frame in (("baseline", base), ("candidate", changed)):
        data = folder / f"preds_{name}.parquet"  # two prediction files, as two models' outputs are exported
        frame.drop("i").write_parquet(data)
        ve.evaluate(data, evaluators=STACK, output_dir=folder / name, run={"write_report": False, "progress": False})
        out.append(folder / name)
    return out[0], out[1]


def child(mode: str, baseline: str, candidate: str, out: str) -> None:
    """One measurement in this fresh process, its imports included (compare imports scipy, the report Pillow);
    prints a JSON line."""
    start, cpu = time.perf_counter(), time.process_time()
    extra = {}
    if mode == "compare":
        from vision_eval.compare import compare, judged, load_side, write_comparison

        comparison = compare(load_side(baseline), load_side(candidate))
        write_comparison(comparison, judged(comparison.table), out)
        extra = {"flips": comparison.flips.height, "paired": comparison.pairing.paired}
    else:
        from vision_eval.report import write_report

        write_report([baseline, candidate], Path(out) / "report.html")
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    print(json.dumps({"seconds": seconds, "cpu": cpu, "peak_mb": _own_peak_mb(), **extra}))


def measure(mode: str, baseline: Path, candidate: Path, out: Path) -> dict[str, float]:
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), *sys.path])}
    proc = subprocess.run(
        [sys.executable, __file__, "--child", mode, str(baseline), str(candidate), str(out)],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        raise SystemExit(f"{mode} failed:\n{proc.stderr}")
    result: dict[str, float] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--images", type=int, default=150, help="distinct 800x600 JPEGs the rows point at")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    sys.path.insert(0, str(Path(__file__).parent))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        start = time.perf_counter()
        baseline, candidate = make_runs(args.rows, folder, args.images)
        made = time.perf_counter() - start
        report = measure("report", baseline, candidate, folder / "report")
        compared = measure("compare", baseline, candidate, folder / "compare")
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"two runs of {args.rows:,} samples x {len(STACK)} evaluators (written in {made:.1f} s, not timed); "
          f"{compared['paired']:,} samples paired, {compared['flips']:,} flips")  # fmt: skip
    print(f"load average {load} on {os.cpu_count()} cores")
    print("| step | seconds | CPU seconds (all threads) | peak MB |")
    print("|---|---|---|---|")
    for name, m in (("report of both runs (baseline)", report), ("vision-eval compare", compared)):
        print(f"| {name} | {m['seconds']:.2f} | {m['cpu']:.2f} | {m['peak_mb']:.0f} |")
    ratio, cpu_ratio = compared["seconds"] / report["seconds"], compared["cpu"] / report["cpu"]
    goal = "met" if ratio < 1 and compared["peak_mb"] < 1024 else "NOT met"
    print(f"compare / report time ratio: {ratio:.2f}x (CPU {cpu_ratio:.2f}x); "
          f"compare peak {compared['peak_mb']:.0f} MB (goal: ratio < 1 and under 1024 MB: {goal})")  # fmt: skip


if __name__ == "__main__":
    main()
