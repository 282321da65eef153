"""How long report.html takes for a few thousand rows, against the run it reports on (same process, same data).

    PYTHONPATH=$PWD python benchmarks/bench_report.py [rows] [distinct_images]

Baseline: evaluating the rows with three vectorized evaluators and writing the Parquet files.
Measured: building report.html (thumbnails, payload, page), its size, and the share spent on thumbnails.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path


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


def main(rows: int = 3000, distinct: int = 150) -> None:
    import vision_eval as ve
    from vision_eval.report import build_html
    from vision_eval.report.thumbs import build_thumbnails

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        images = make_images(folder, distinct)
        data = [
            {
                "id": f"r{i}",
                "task": "count" if i % 2 else "ocr",
                "input": "Describe the image. " * 5,
                "output": f"I count {i % 7} red circles and {i % 3} squares. " * 3,
                "expected_output": f"I count {i % 5} red circles and {i % 3} squares. " * 3,
                "images": [str(images[i % distinct])],
            }
            for i in range(rows)
        ]
        stack = {
            "exact": {"type": "exact_match"},
            "circles": {"type": "contains", "value": ["circle", "red"]},
            "squares": {"type": "contains", "value": "squares", "where": "task = 'count'"},
        }
        ve.evaluate(data[:10], evaluators=stack, run={"write_report": False})  # warm-up: imports, registry
        build_html(ve.evaluate(data[:1], evaluators=stack, run={"write_report": False}), thumb_size=8)
        start = time.perf_counter()
        result = ve.evaluate(data, evaluators=stack, run={"write_report": False})
        result.write(folder / "run")
        baseline = time.perf_counter() - start

        start = time.perf_counter()
        thumbs = build_thumbnails(result.samples["images"])
        thumb_s = time.perf_counter() - start

        start = time.perf_counter()
        html = build_html(result)
        report_s = time.perf_counter() - start

    print(f"{rows} rows x {len(stack)} evaluators, {distinct} distinct 800x600 JPEGs ({len(thumbs)} thumbnails)")
    print(f"baseline (evaluate + write Parquet): {baseline:.2f} s")
    print(f"report.html: {report_s:.2f} s = {report_s / baseline:.2f}x baseline; thumbnails alone {thumb_s:.2f} s")
    print(f"report size: {len(html.encode()) / 1e6:.1f} MB ({len(html.encode()) / rows / 1e3:.1f} kB per row)")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
