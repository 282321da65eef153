"""A shard reads its share: loading shard 1/8 of a dataset against loading the whole file, measured in the same run
on the same file (issue #27: shard 1/8 of 20M rows loads in at most a quarter of the whole file's load time).

    PYTHONPATH=$PWD python benchmarks/bench_shards.py [--rows 20000000] [--jsonl-rows 2000000] [--shards 8]

"Loading" is what a run does before its evaluators see a row, and what it reads while they do: open the source,
refuse repeated ids (a shard reads every shard's ids, the id column alone, so it refuses what the whole run would),
then read every canonical batch (``run.batch_size`` rows, 50,000 by default). The whole file is the same run with no
shard. Parquet is written in row groups of 100,000 rows (a shard skips the groups before its first row); JSON Lines
is timed too, at a smaller size (a shard counts the lines before its first, parsing none of them), with the
count of its rows by a byte scan against a Python pass over its lines.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import time
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from vision_eval.config import DatasetConfig
from vision_eval.data import open_dataset
from vision_eval.data.sources import count_lines, nonblank_lines

BATCH = 50_000
ROW_GROUP = 100_000


def write_rows(path: Path, rows: int) -> None:
    """``rows`` rows of a typical judged dataset (id, question, reply, reference, one image path, metadata)."""
    i = pl.col("i")
    frame = pl.LazyFrame({"i": pl.int_range(rows, eager=True)}).select(
        pl.format("s{}", i).alias("id"),
        pl.format("How many objects are in picture {}?", i % 997).alias("input"),
        pl.format("There are {} objects.", i % 13).alias("output"),
        (i % 13).cast(pl.Utf8).alias("expected_output"),
        pl.concat_list(pl.format("images/{}.png", i % 500)).alias("images"),
        (i % 7).alias("task"),
    )
    if path.suffix == ".parquet":
        frame.sink_parquet(path, row_group_size=ROW_GROUP)
    else:
        frame.sink_ndjson(path)


def load(path: Path, shard: str | None) -> tuple[float, int]:
    """Seconds to load (ids checked, every batch read) and the rows read."""
    gc.collect()
    started = time.perf_counter()
    stream = open_dataset(DatasetConfig(path=str(path)), shard=shard)
    stream.check_ids(BATCH)
    stream.open(BATCH)
    rows = sum(batch.height for batch in stream.batches())
    return time.perf_counter() - started, rows


def check_ids(path: Path, shard: str) -> float:
    """Seconds to open the source and check every shard's ids (the part of a shard's load that is not its share)."""
    started = time.perf_counter()
    open_dataset(DatasetConfig(path=str(path)), shard=shard).check_ids(BATCH)
    return time.perf_counter() - started


def measure(path: Path, rows: int, shards: int, rounds: int) -> float:
    whole = min(load(path, None)[0] for _ in range(rounds))
    times = []
    for _ in range(rounds):
        seconds, kept = load(path, f"1/{shards}")
        times.append(seconds)
    assert kept == (2 * rows // shards) - (rows // shards), kept
    part = min(times)
    ids = min(check_ids(path, f"1/{shards}") for _ in range(rounds))
    ratio = part / whole
    print(f"{path.suffix[1:]:<8} {rows:>11,} rows: whole file {whole:7.2f} s, shard 1/{shards} {part:6.2f} s "
          f"(ratio to the whole {ratio:.3f}, goal at most 0.25); all ids checked in {ids:.2f} s")  # fmt: skip
    return ratio


def count_ratio(path: Path, rounds: int) -> float:
    """Counting a JSON Lines file's rows (every shard does): the byte scan against a Python pass over its lines."""
    passes, scans = [], []
    for _ in range(max(rounds, 3)):
        started = time.perf_counter()
        expected = sum(1 for _ in nonblank_lines(path))
        passes.append(time.perf_counter() - started)
        started = time.perf_counter()
        counted = count_lines(path, small=0)
        scans.append(time.perf_counter() - started)
        assert counted == expected, (counted, expected)
    ratio = min(scans) / min(passes)
    print(f"jsonl row count: Python pass {min(passes):.3f} s, byte scan {min(scans):.3f} s (ratio {ratio:.2f})")
    return ratio


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=20_000_000, help="rows of the Parquet file")
    parser.add_argument("--jsonl-rows", type=int, default=2_000_000, help="rows of the JSON Lines file (0: skip)")
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=1, help="loads of each kind (the fastest counts)")
    args = parser.parse_args()
    print(f"load average before: {Path('/proc/loadavg').read_text().strip()} ({os.cpu_count()} cores)")
    with tempfile.TemporaryDirectory() as folder:
        for suffix, rows in ((".parquet", args.rows), (".jsonl", args.jsonl_rows)):
            if rows:
                path = Path(folder) / f"data{suffix}"
                write_rows(path, rows)
                measure(path, rows, args.shards, args.rounds)
                if suffix == ".jsonl":
                    count_ratio(path, args.rounds)
                path.unlink()
    print(f"load average after: {Path('/proc/loadavg').read_text().strip()}")


if __name__ == "__main__":
    main()
