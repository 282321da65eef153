"""Reading a dataset: a JSON Lines file into frames, and an ``images`` column of paths into image references, each
against the per-row construction it replaced, measured in the same run on the same data.

    PYTHONPATH=$PWD python benchmarks/bench_loading.py [--rows 200000] [--images 150]

- JSONL: ``JsonlSource.chunks`` (50k lines at a time; ``json.loads`` per line, objects kept as JSON text) with
  plain columns built through Arrow, against the same reader building every chunk with ``pl.DataFrame(rows)``
  (Polars builds a list cell, such as an ``images`` list, one Series at a time).
- Image paths: ``images_series`` (each distinct path resolved and hashed once, the rows gathered by Polars)
  against a per-row loop building one list of references per row (what ``images_series`` did before, with the
  same per-path cache).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from vision_eval.data import rows as rows_module
from vision_eval.data.sources import JsonlSource
from vision_eval.images.refs import IMAGES_DTYPE, image_ref, images_series
from vision_eval.images.roots import ImageRoots


def write_data(folder: Path, rows: int, images: int) -> Path:
    from PIL import Image

    for k in range(images):
        Image.new("RGB", (32, 24), (k % 256, 90, 160)).save(folder / f"i{k}.png")
    i = pl.col("i")
    frame = pl.DataFrame({"i": pl.int_range(rows, eager=True)}).select(
        pl.format("s{}", i).alias("id"),
        pl.lit("How many cats are there?").alias("input"),
        pl.concat_str(pl.lit('{"count": '), (i % 5).cast(pl.Utf8), pl.lit("}")).alias("output"),
        (i % 4).alias("expected_output"),
        (i % 7 / 3).alias("confidence"),
        pl.concat_list(pl.format("i{}.png", i % images)).alias("images"),
        pl.struct((i % 3).alias("shard"), pl.lit("x").alias("tag")).alias("meta"),
    )
    path = folder / "data.jsonl"
    frame.write_ndjson(path)
    return path


def read_all(path: Path) -> pl.DataFrame:
    return pl.concat(list(JsonlSource(path, path.parent).chunks(50_000)))


def per_row_images(values: pl.Series, roots: ImageRoots) -> pl.Series:
    seen: dict[str, Any] = {}

    def ref(item: str) -> Any:
        if item not in seen:
            seen[item] = image_ref(item, roots)
        return seen[item]

    return pl.Series("images", [[ref(item) for item in cell or []] for cell in values.to_list()], dtype=IMAGES_DTYPE)


def timed(run: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    out = run()
    return time.perf_counter() - start, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--images", type=int, default=150)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = write_data(Path(tmp), args.rows, args.images)
        read_all(path)  # imports (pyarrow) and the file in the page cache, for both
        now_s, frame = timed(lambda: read_all(path))
        arrow = rows_module._plain_frame
        rows_module._plain_frame = lambda rows, columns: None  # every chunk built by pl.DataFrame(rows)
        try:
            before_s, before = timed(lambda: read_all(path))
        finally:
            rows_module._plain_frame = arrow
        assert frame.equals(before), "the two constructions differ"
        roots = ImageRoots.for_dataset(tmp)
        column = frame["images"]
        refs_s, refs = timed(lambda: images_series(column, roots))
        loop_s, looped = timed(lambda: per_row_images(column, roots))
        assert refs.to_list() == looped.to_list(), "the image references differ"
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"{args.rows:,} rows, {args.images} distinct images; load average {load} on {os.cpu_count()} cores")
    print("| step | now rows/s | per-row construction rows/s | ratio |")
    print("|---|---|---|---|")
    print(f"| JSONL -> frames | {args.rows / now_s:,.0f} | {args.rows / before_s:,.0f} | {before_s / now_s:.2f}x |")
    print(f"| image paths -> references | {args.rows / refs_s:,.0f} | {args.rows / loop_s:,.0f} ", end="")
    print(f"| {loop_s / refs_s:.1f}x |")


if __name__ == "__main__":
    main()
