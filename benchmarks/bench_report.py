"""How long writing report.html takes, against the run it reports on (same process, same data), and its size.

    PYTHONPATH=$PWD python benchmarks/bench_report.py [rows ...] [--images N]

Default rows: 100000 and 1000000. For each size, in the same process:
- whole run: ``evaluate()`` (load the rows, three vectorized evaluators) + writing the Parquet files, i.e. the run
  without its report;
- evaluators: the evaluators alone, as the run timed them (run.json ``timings.evaluate_s``): what the issue calls
  "the evaluation itself" (its 3.7 s report was 2.7x that);
- report: ``write_report`` as a run calls it (choose the cards, thumbnails, payload, page), its size in MB; and
  the same report without thumbnails (``Limits(thumb_bytes=0)``), to tell the per-row work from the fixed cost of
  decoding each distinct image shown (about 1 ms of CPU per image, whatever the row count).
The goal: the report under 10% of the evaluation, and under ~10 MB whatever the row count.
"""

from __future__ import annotations

import argparse
import gc
import os
import tempfile
import time
from pathlib import Path
from typing import Any


def make_images(folder: Path, count: int) -> list[Path]:
    from PIL import Image, ImageDraw

    paths = []
    for i in range(count):
        image = Image.new("RGB", (800, 600), (240 - i % 50, 230, 220 + i % 30))
        draw = ImageDraw.Draw(image)
        for k in range(12):
            x, y = (i * 37 + k * 61) % 700, (i * 53 + k * 29) % 500
            draw.ellipse((x, y, x + 90, y + 90), fill=((k * 40) % 255, (i * 7) % 255, 120))
        draw.text((20, 20), f"image {i}", fill="black")
        path = folder / f"img{i}.jpg"
        image.save(path, quality=90)
        paths.append(path)
    return paths


STACK = {
    "exact": {"type": "exact_match"},
    "circles": {"type": "contains", "value": ["circle", "red"]},
    "squares": {"type": "contains", "value": "squares", "where": "task = 'count'"},
}


def rows_frame(rows: int, images: list[Path]) -> Any:
    """The dataset as a Polars frame, built vectorized (generating it is not what is measured): most rows fail
    `exact`, as in a real run with a few thousand failures to show."""
    import polars as pl

    i = pl.col("i")
    sentence = "I count {} red circles and {} squares. " * 3
    paths = {k: str(path) for k, path in enumerate(images)}
    return pl.DataFrame({"i": pl.int_range(rows, eager=True)}).select(
        pl.format("r{}", i).alias("id"),
        pl.when(i % 2 == 1).then(pl.lit("count")).otherwise(pl.lit("ocr")).alias("task"),
        pl.lit("Describe the image. " * 5).alias("input"),
        pl.format(sentence, *[i % 7, i % 3] * 3).alias("output"),
        pl.format(sentence, *[i % 5, i % 3] * 3).alias("expected_output"),
        pl.concat_list((i % len(images)).replace_strict(paths, return_dtype=pl.Utf8)).alias("images"),
    )


def measure(rows: int, folder: Path, images: list[Path]) -> dict[str, float]:
    import vision_eval as ve
    from vision_eval.report import Limits, write_report

    frame = rows_frame(rows, images)
    gc.collect()
    start = time.perf_counter()
    result = ve.evaluate(frame, evaluators=STACK, run={"write_report": False, "progress": False})
    out = result.write(folder / f"run{rows}")
    evaluation = time.perf_counter() - start
    start = time.perf_counter()
    page = write_report(result, out)
    report = time.perf_counter() - start
    size = page.stat().st_size / 1e6
    start = time.perf_counter()
    write_report(result, out, limits=Limits(thumb_bytes=0))
    without_thumbs = time.perf_counter() - start
    return {
        "rows": rows,
        "run_s": evaluation,
        "evaluators_s": float(result.run_info["timings"]["evaluate_s"]),
        "report_s": report,
        "no_thumbs_s": without_thumbs,
        "report_mb": size,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rows", nargs="*", type=int, default=[100_000, 1_000_000])
    parser.add_argument("--images", type=int, default=150, help="distinct 800x600 JPEGs the rows point at")
    args = parser.parse_args()

    import vision_eval as ve
    from vision_eval.report import build_html

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        images = make_images(folder, args.images)
        warm = ve.evaluate(rows_frame(10, images), evaluators=STACK, run={"write_report": False, "progress": False})
        build_html(warm, thumb_size=8)  # imports, registry, Pillow
        lines = []
        for rows in args.rows:
            m = measure(rows, folder, images)
            lines.append(
                f"| {m['rows']:>9,} | {m['run_s']:6.2f} | {m['evaluators_s']:6.2f} | {m['report_s']:5.2f} "
                f"| {m['report_s'] / m['evaluators_s']:6.1%} | {m['report_s'] / m['run_s']:6.1%} "
                f"| {m['no_thumbs_s']:5.2f} | {m['no_thumbs_s'] / m['evaluators_s']:6.1%} | {m['report_mb']:5.1f} |"
            )
            print(lines[-1], flush=True)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    cores = os.cpu_count()
    print(f"\n{len(STACK)} evaluators, {args.images} distinct 800x600 JPEGs; load average {load} on {cores} cores")
    print("whole run = evaluate() + Parquet files; evaluators = run.json timings.evaluate_s (the issue's 'evaluation')")
    print(
        "| rows | whole run s | evaluators s | report s | report / evaluators | report / whole run "
        "| report without thumbnails s | that / evaluators | MB |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
