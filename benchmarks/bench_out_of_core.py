"""Datasets larger than memory: peak RSS and rows/s of a run reading a Parquet file batch by batch, against the
in-memory path on the same rows, each in a fresh process.

    PYTHONPATH=. python benchmarks/bench_out_of_core.py [--rows 1000000 5000000 20000000] [--data-dir /tmp/ooc]

The stack is three code validators (count, OCR, JSON) and ``field_accuracy`` over short synthetic rows, each
evaluator reading its own pair of columns. Every measurement is a fresh subprocess running ``vision_eval.evaluate``
with an output directory (results, dimensions, fields and samples written); its peak RSS is the child's own high-water
mark (``VmHWM`` of ``/proc/self/status``; ``ru_maxrss`` elsewhere), and its rows/s is rows / seconds of the
``evaluate`` call. Not ``ru_maxrss`` from ``os.wait4`` on Linux: a child spawned by this process keeps, across its
``exec``, the high-water mark of the memory it started in (this process, holding the generated dataset), which made
a 5M-row run read 755 MB where the run itself peaked near 400 MB.

* ``streamed``: ``evaluate("<file>.parquet")`` -- the file is read in batches (a Polars lazy scan).
* ``in memory`` (baseline, on the smallest size): ``pl.read_parquet`` first, then ``evaluate(frame)``; the time
  of the read is left out, so the baseline is the in-memory path at its fastest.

Goal (issue 16): peak RSS flat in the row count, under 2 GB at 20M rows, at >= 90% of the in-memory rows/s.
The datasets are written once under ``--data-dir`` (never in the repository) and reused.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CHUNK = 1_000_000
"""Rows generated and written at a time (the generator never holds a whole dataset)."""
STACK = {
    "count": {"type": "count_validator", "columns": {"output": "count_out", "expected_output": "count_exp"}},
    "ocr": {"type": "ocr_validator", "columns": {"output": "ocr_out", "expected_output": "ocr_exp"}},
    "json": {"type": "json_validator", "columns": {"output": "json_out", "expected_output": "json_exp"}},
    "fields": {
        "type": "field_accuracy",
        "columns": {"output": "json_out", "expected_output": "json_exp"},
        "fields": [{"path": "name"}, {"path": "total", "match": "numeric_tolerance", "tolerance": 0.5}],
    },
}
NAMES = ["acme", "globex", "initech", "umbrella", "hooli", "stark"]
SHAPES = ["circles", "squares", "stars", "cats"]
WORDS = ["total due", "invoice", "receipt no", "paid", "thank you", "balance"]


def document(name: pl.Expr, total: pl.Expr) -> pl.Expr:
    """``{"name": ..., "total": ...}`` as JSON text."""
    return pl.concat_str(pl.lit('{"name": "'), name, pl.lit('", "total": '), total, pl.lit("}"))


def chunk(start: int, rows: int) -> pl.DataFrame:
    """Rows ``start .. start + rows`` of the synthetic dataset (deterministic: row i depends on i alone)."""
    i = pl.int_range(start, start + rows, eager=True, dtype=pl.Int64)
    frame = pl.DataFrame({"i": i})
    pick = lambda values, k: pl.lit(pl.Series(values)).gather(pl.col("i") * k % len(values))  # noqa: E731
    count = pl.col("i") % 7
    total = (pl.col("i") % 500).cast(pl.Utf8)
    near = (count + (pl.col("i") % 5 == 0).cast(pl.Int64)).cast(pl.Utf8)
    return frame.select(
        pl.format("r{}", "i").alias("id"),
        pl.format("I see {} {}", near, pick(SHAPES, 3)).alias("count_out"),
        pl.format("{} {}", count, pick(SHAPES, 3)).alias("count_exp"),
        pl.format("{} {}", pick(WORDS, 7), pl.col("i") % 1000).alias("ocr_out"),
        pl.format("{} {}", pick(WORDS, 7), (pl.col("i") + (pl.col("i") % 9 == 0)) % 1000).alias("ocr_exp"),
        document(pick(NAMES, 11), total).alias("json_out"),
        document(pick(NAMES, 13), total).alias("json_exp"),
    )


def dataset(rows: int, folder: Path) -> Path:
    """The synthetic dataset of ``rows`` rows as Parquet (written a chunk at a time, reused when present)."""
    path = folder / f"rows-{rows}.parquet"
    if path.exists() and pq.ParquetFile(path).metadata.num_rows == rows:
        return path
    folder.mkdir(parents=True, exist_ok=True)
    staging = path.with_suffix(".tmp")
    writer: pq.ParquetWriter | None = None
    for start in range(0, rows, CHUNK):
        table = chunk(start, min(CHUNK, rows - start)).to_arrow()
        writer = writer or pq.ParquetWriter(staging, table.schema)
        writer.write_table(table, row_group_size=100_000)
    assert writer is not None
    writer.close()
    staging.rename(path)
    return path


def _own_peak_mb() -> float:
    """This process's peak resident memory since its ``exec``, in MB."""
    try:
        status = Path("/proc/self/status").read_text()
        return next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration):
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(mode: str, path: str, out: str, batch_size: int) -> None:
    """One measurement, in this (fresh) process; prints a JSON line."""
    import vision_eval as ve

    run = {"batch_size": batch_size, "progress": False, "write_report": False}
    data: object = path
    if mode == "memory":
        data = pl.read_parquet(path)
    start = time.perf_counter()
    result = ve.evaluate(data, evaluators=STACK, run=run, output_dir=out)
    seconds = time.perf_counter() - start
    counts = result.run_info["counts"]
    print(json.dumps({"seconds": seconds, "samples": counts["samples"], "result_rows": counts["result_rows"],
                      "peak_rss_mb": _own_peak_mb(),
                      "exit_code": result.exit_code, "status": counts["status"]}))  # fmt: skip


def measure(mode: str, path: Path, batch_size: int, scratch: Path) -> dict[str, object]:
    out = Path(tempfile.mkdtemp(prefix=f"{mode}-", dir=scratch))
    command = [sys.executable, __file__, "--child", mode, str(path), str(out / "run"), str(batch_size)]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, env=env, text=True)
    assert proc.stdout is not None
    stdout = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{mode} run failed ({proc.returncode}):\n{stdout}")
    report = json.loads(stdout.strip().splitlines()[-1])
    files = {p.name: p.stat().st_size for p in (out / "run").glob("*.parquet")}
    results = pl.scan_parquet(out / "run" / "results.parquet").select(pl.len()).collect().item()
    assert results == report["result_rows"] == report["samples"] * len(STACK), (results, report)
    shutil.rmtree(out, ignore_errors=True)
    return {"peak_rss_mb": usage.ru_maxrss / 1024, **report, "files_mb": sum(files.values()) / 2**20}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 5_000_000, 20_000_000])
    parser.add_argument("--baseline-rows", type=int, default=None, help="in-memory baseline size (default: smallest)")
    parser.add_argument("--batch-size", type=int, default=50_000)
    parser.add_argument("--data-dir", type=Path, default=Path(tempfile.gettempdir()) / "vision_eval_ooc")
    parser.add_argument("--child", nargs=4, metavar=("MODE", "PATH", "OUT", "BATCH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        mode, path, out, batch = args.child
        child(mode, path, out, int(batch))
        return
    sizes = sorted(args.rows)
    base_rows = args.baseline_rows or sizes[0]
    scratch = args.data_dir / "runs"
    scratch.mkdir(parents=True, exist_ok=True)
    print(f"load average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; batch_size {args.batch_size:,}")
    rows_out = []
    baseline = measure("memory", dataset(base_rows, args.data_dir), args.batch_size, scratch)
    rows_out.append(("in memory (baseline)", base_rows, baseline))
    for size in sizes:
        rows_out.append(("streamed", size, measure("stream", dataset(size, args.data_dir), args.batch_size, scratch)))
    base_rate = base_rows / float(baseline["seconds"])  # type: ignore[arg-type]
    header = f"{'path':<22}{'rows':>12}{'seconds':>10}{'rows/s':>12}{'vs baseline':>13}{'peak RSS MB':>13}"
    print(f"{header}{'files MB':>10}")
    for label, size, m in rows_out:
        rate = size / float(m["seconds"])  # type: ignore[arg-type]
        print(
            f"{label:<22}{size:>12,}{float(m['seconds']):>10.1f}{rate:>12,.0f}{rate / base_rate:>12.0%}"  # type: ignore[arg-type]
            f"{float(m['peak_rss_mb']):>13,.0f}{float(m['files_mb']):>10,.0f}"  # type: ignore[arg-type]
        )
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
