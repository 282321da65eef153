"""Photos through a judge, end to end: how many 4000x3000 JPEGs per second an ``llm_judge`` run prepares and sends.

    PYTHONPATH=$PWD python benchmarks/bench_photos.py [--photos 96] [--concurrency 8]

N distinct photo-like JPEGs (4000x3000, q90, about 2.5 MB each; generated into a temporary folder) are judged by
one ``llm_judge`` against the fake OpenAI server (its own process, zero latency, images not decoded there), so the
client's image preparation is what is measured. One run measures, in photos per second of wall time and client
CPU seconds per photo:

- before: the preparation as it was (each row's image decoded at full size, no store of prepared images);
- after, default policy: the same bytes (checked: the sha256 of every sent image equals the baseline's);
- after, ``judge.image.fast_decode: true``: JPEGs decoded at reduced size (same sent sizes, bytes differ: the
  pixel difference against the baseline is measured on a few photos);
- the same photo in several places: N rows over N/4 photos, judged by two evaluators with the same policy,
  before (every row decodes) and after (each photo prepared once);

and, for the choice of how preparation runs off the event loop, the preparation alone (no judge) in a thread
pool of 1, 2 and the default ``asyncio.to_thread`` size, and in a process pool of 2.

Goal (issue 16): 60 photos/s end to end on a 2-core machine, sent bytes unchanged. The machine is shared, so wall
times swing with other processes' load; the ceiling column (cores / client CPU seconds per photo) is what the
client's own work allows on idle cores.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import vision_eval as ve  # noqa: E402
import vision_eval.grading.base as grading_base  # noqa: E402
from vision_eval.config import ImagePolicy  # noqa: E402
from vision_eval.images.policy import prepare_image  # noqa: E402
from vision_eval.testing.fake_providers import serve_in_subprocess  # noqa: E402
from vision_eval.testing.photos import photo  # noqa: E402

PROMPT = "---\ndimensions: {accuracy: 1}\n---\nDoes {{ image_reference }} show this?\nAnswer: {{ output }}\n"


@contextmanager
def old_preparation() -> Iterator[None]:
    """The preparation as it was before the store of prepared images: every row prepares its own images."""
    original = grading_base.prepared_images_of
    grading_base.prepared_images_of = lambda context: None
    try:
        yield
    finally:
        grading_base.prepared_images_of = original


def judge_run(base: str, paths: list[Path], folder: Path, concurrency: int, image: dict[str, Any],
              evaluators: int = 1) -> dict[str, Any]:  # fmt: skip
    rows = [{"id": f"r{k}", "output": f"a photo ({k})", "images": [str(p)]} for k, p in enumerate(paths)]
    prompt = folder / "bench-photo.md"
    prompt.write_text(PROMPT)
    judge = {"model": "openai/gpt-4o-mini", "api_base": base, "api_key": "k", "cache": False,
             "max_concurrency": concurrency, "max_tokens": 256, "image": image}  # fmt: skip
    stack = {f"j{k}": {"type": "llm_judge", "prompt": str(prompt)} for k in range(evaluators)}
    cpu, wall = time.process_time(), time.perf_counter()
    result = ve.evaluate(rows, evaluators=stack, judge=judge, run={"concurrency": concurrency, "progress": False})
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    frame = result.results
    assert frame["status"].eq("processed").all(), frame["error"].drop_nulls().head(3).to_list()
    sent = {}
    for sample, evaluator, details in frame.select("sample_id", "evaluator", "details").iter_rows():
        (record,) = json.loads(details)["images"]
        sent[(sample, evaluator)] = (record["sha256"], tuple(record["size"]), record["bytes"])
    return {"wall": wall, "cpu": cpu, "images": len(frame), "sent": sent}


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run of median wall time (the machine is shared: single runs swing with other processes' load)."""
    return sorted(runs, key=lambda r: r["wall"])[len(runs) // 2]


def line(name: str, run: dict[str, Any], baseline: dict[str, Any] | None) -> None:
    """One row of the table; the ceiling is what the client's CPU seconds per photo allow on idle cores."""
    rate = run["images"] / run["wall"]
    ratio = f"{rate / (baseline['images'] / baseline['wall']):5.2f}x" if baseline else "    - "
    ceiling = (os.cpu_count() or 1) * run["images"] / run["cpu"]
    print(f"{name:<46} {run['images']:>5} {run['wall']:7.2f} s {rate:7.1f}/s {ratio}  "
          f"CPU {1000 * run['cpu'] / run['images']:6.1f} ms/photo  ceiling {ceiling:5.1f}/s")  # fmt: skip


def scenarios(
    base: str, folder: Path, paths: list[Path], c: int, rounds: int, evaluators: int
) -> dict[str, dict[str, Any]]:
    """Before, after and after with fast_decode, interleaved ``rounds`` times; the median run of each."""
    runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": [], "fast": []}
    for _ in range(rounds):
        with old_preparation():
            runs["before"].append(judge_run(base, paths, folder, c, {}, evaluators))
        runs["after"].append(judge_run(base, paths, folder, c, {}, evaluators))
        runs["fast"].append(judge_run(base, paths, folder, c, {"fast_decode": True}, evaluators))
    for name, found in runs.items():  # every round sent the same bytes as the first
        assert all(r["sent"] == found[0]["sent"] for r in found), name
    return {name: median_run(found) for name, found in runs.items()}


def compare_sent(run: dict[str, Any], baseline: dict[str, Any]) -> str:
    same_bytes = sum(run["sent"][k][0] == v[0] for k, v in baseline["sent"].items())
    same_size = sum(run["sent"][k][1] == v[1] for k, v in baseline["sent"].items())
    total = sum(v[2] for v in run["sent"].values()) / sum(v[2] for v in baseline["sent"].values())
    return (f"identical sent bytes {same_bytes}/{len(baseline['sent'])}, same sent size "
            f"{same_size}/{len(baseline['sent'])}, total sent bytes {total:.4f}x the baseline's")  # fmt: skip


def pixel_difference(paths: list[Path]) -> str:
    import numpy as np
    from PIL import Image

    def pixels(data: bytes) -> Any:
        return np.asarray(Image.open(io.BytesIO(data)).convert("RGB")).astype(int)

    worst, means, p999 = 0, [], []
    for path in paths:
        data = path.read_bytes()
        for fmt in ("jpeg", "png"):
            exact = prepare_image(data, ImagePolicy(format=fmt)).data
            fast = prepare_image(data, ImagePolicy(format=fmt, fast_decode=True)).data
            diff = np.abs(pixels(fast) - pixels(exact))
            if fmt == "png":
                worst, means, p999 = (
                    max(worst, int(diff.max())),
                    [*means, diff.mean()],
                    [*p999, np.percentile(diff, 99.9)],
                )
            else:
                jpeg = (int(diff.max()), float(diff.mean()))
    return (f"fast_decode pixels vs a full decode ({len(paths)} photos, 0-255 levels): lossless (png) output max "
            f"{worst}, mean {max(means):.2f}, 99.9% within {max(p999):.0f}; jpeg q85 output of the last photo max "
            f"{jpeg[0]}, mean {jpeg[1]:.2f}")  # fmt: skip


def prepare_all(data: bytes, fast: bool) -> int:
    return len(prepare_image(data, ImagePolicy(fast_decode=fast)).data)


def pool_rate(make: Callable[[], Executor], sources: list[bytes], fast: bool) -> float:
    with make() as pool:
        list(pool.map(prepare_all, sources[:2], [fast] * 2))  # start the workers
        wall = time.perf_counter()
        list(pool.map(prepare_all, sources, [fast] * len(sources)))
        return len(sources) / (time.perf_counter() - wall)


def pools(sources: list[bytes], rounds: int) -> None:
    default_threads = min(32, (os.cpu_count() or 1) + 4)
    makers: list[tuple[str, Callable[[], Executor]]] = [
        ("1 thread", lambda: ThreadPoolExecutor(1)),
        ("2 threads", lambda: ThreadPoolExecutor(2)),
        (f"{default_threads} threads (asyncio.to_thread's default)", lambda: ThreadPoolExecutor(default_threads)),
        ("2 processes", lambda: ProcessPoolExecutor(2)),
    ]
    rates: dict[tuple[str, bool], list[float]] = {}
    for k in range(rounds):  # the order alternates: a burst of load elsewhere hits each pool alike
        for name, make in makers if k % 2 == 0 else makers[::-1]:
            for fast in (False, True):
                rates.setdefault((name, fast), []).append(pool_rate(make, sources, fast))
    print(f"\npreparation alone, {len(sources)} photos, median of {rounds} (photos/s)   full decode   fast_decode")
    for name, _ in makers:
        full, fast = (sorted(rates[(name, f)])[rounds // 2] for f in (False, True))
        print(f"  {name:<52} {full:8.1f}   {fast:11.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--photos", type=int, default=96)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--pool-photos", type=int, default=24, help="photos for the thread/process pool comparison")
    parser.add_argument("--rounds", type=int, default=3, help="each measurement repeated, interleaved; the median")
    args = parser.parse_args()
    n = args.photos
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; {n} distinct 4000x3000 JPEGs, "
          f"concurrency {args.concurrency}, fake at zero latency (images not decoded there)\n")  # fmt: skip
    proc, base = serve_in_subprocess()
    with tempfile.TemporaryDirectory(prefix="bench-photos-") as tmp:
        folder = Path(tmp)
        start = time.perf_counter()
        paths = []
        for k in range(n):
            paths.append(folder / f"photo{k:04d}.jpg")
            paths[-1].write_bytes(photo(1000 + k))
        size = sum(p.stat().st_size for p in paths) / n / 1e6
        print(f"generated in {time.perf_counter() - start:.1f} s, {size:.2f} MB per photo\n")
        try:
            c = args.concurrency
            judge_run(base, paths[:4], folder, c, {})  # warm-up: imports, connections, prices
            print(f"{'distinct photos, median of ' + str(args.rounds):<46} {'sent':>5} {'wall':>9} {'photos/s':>9} "
                  f"{'ratio':>6}  (ceiling: {os.cpu_count()} idle cores / CPU seconds per photo)")  # fmt: skip
            runs = scenarios(base, folder, paths, c, args.rounds, 1)
            line("before (full decode, no store)", runs["before"], None)
            line("after, default policy", runs["after"], runs["before"])
            line("after, fast_decode: true", runs["fast"], runs["before"])
            print(f"  default policy: {compare_sent(runs['after'], runs['before'])}")
            print(f"  fast_decode:    {compare_sent(runs['fast'], runs['before'])}")
            print(f"  {pixel_difference(paths[:3])}")

            distinct = max(1, n // 4)
            repeated = [paths[k % distinct] for k in range(n)]
            print(f"\n{n} rows over {distinct} photos, 2 evaluators")
            runs = scenarios(base, folder, repeated, c, args.rounds, 2)
            line("before (every row decodes)", runs["before"], None)
            line("after, default policy (each photo once)", runs["after"], runs["before"])
            line("after, fast_decode: true", runs["fast"], runs["before"])
            print(f"  default policy: {compare_sent(runs['after'], runs['before'])}")
        finally:
            proc.terminate()
            proc.wait(10)
        pools([p.read_bytes() for p in paths[: args.pool_photos]], max(args.rounds, 5))


if __name__ == "__main__":
    main()
