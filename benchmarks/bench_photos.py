"""Photos through a judge, end to end: how many 4000x3000 JPEGs per second an ``llm_judge`` run prepares and sends.

    PYTHONPATH=$PWD python benchmarks/bench_photos.py [--photos 128] [--concurrency 8] [--rounds 3] [--pools]

N distinct photo-like JPEGs (4000x3000, q90, about 2.5 MB each; generated into a temporary folder) are judged by
one ``llm_judge`` against the fake OpenAI server (its own process, zero latency, images not decoded there), so the
client's image preparation is what is measured. One run measures, interleaved ``--rounds`` times (the median run
of each is shown), in photos per second of wall time, client CPU seconds per photo and the fake server's:

- before: the exact path, ``judge.image.fast_decode: false`` (full decode, Pillow's LANCZOS to 1024x768);
- fast_decode as it was: a JPEG decoded at 1/2 size by Pillow, then Pillow's LANCZOS (for comparison);
- after, the default decoding: decoded at 1/2 size, then libvips' Lanczos-3 (SIMD);

each under a judge's cost cap, ``judge.image: {max_side: 1024, format: jpeg}`` (without one, a photo goes at its
provider's size: to a server of your own, such as the fake, as its source bytes, with nothing to prepare);

then the sent images: size, format and bytes per photo against the exact path's, and the PSNR of the default's
sent pixels against the exact path's (on ``--psnr-photos`` of them, re-prepared and checked to be the bytes the
judge was sent), beside what the JPEG q85 encoding itself costs the exact path (its sent pixels against the
downscaled pixels before encoding). Then the same photo in several places: N rows over N/4 photos, two evaluators
with one policy, before (every row decodes) and after (each photo prepared once). ``--pools``: the preparation
alone (no judge) in a thread pool of 1, 2 and the default ``asyncio.to_thread`` size, and in a process pool of 2.

Goal (issue 16, settled): bounded by JPEG decoding, about 46 photos/s end to end on a 2-core machine is accepted (it
scales with cores), sent bytes unchanged (read: the same sent size,
format and quality, bytes within about 2%, the pixel difference measured). The machine is shared, so wall times
swing with other processes' load; the ceiling column (cores / client CPU seconds per photo) is what the client's
own work allows on idle cores, and the last column counts the fake server's CPU too.
"""

from __future__ import annotations

import argparse
import io
import json
import multiprocessing
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
import vision_eval.images.policy as policy_module  # noqa: E402
from vision_eval.config import ImagePolicy  # noqa: E402
from vision_eval.images.policy import prepare_image  # noqa: E402
from vision_eval.testing.fake_providers import serve_in_subprocess  # noqa: E402
from vision_eval.testing.photos import photo  # noqa: E402

PROMPT = "---\ndimensions: {accuracy: 1}\n---\nDoes {{ image_reference }} show this?\nAnswer: {{ output }}\n"
CAP = {"max_side": 1024, "format": "jpeg"}
"""A judge's cost cap, the path measured here (by default a photo goes at its provider's size; to the fake, a server
of your own, as its source bytes, with nothing to prepare)."""
EXACT = {"fast_decode": False, **CAP}
CORES = os.cpu_count() or 1


@contextmanager
def old_preparation() -> Iterator[None]:
    """The preparation as it was before the store of prepared images: every row prepares its own images."""
    original = grading_base.prepared_images_of
    grading_base.prepared_images_of = lambda context: None
    try:
        yield
    finally:
        grading_base.prepared_images_of = original


@contextmanager
def pillow_lanczos() -> Iterator[None]:
    """fast_decode as it was: the reduced decode resized by Pillow's LANCZOS instead of libvips."""
    from PIL import Image

    original = policy_module.lanczos
    policy_module.lanczos = lambda image, size, box=None: image.resize(size, Image.Resampling.LANCZOS, box=box)
    try:
        yield
    finally:
        policy_module.lanczos = original


@contextmanager
def as_is() -> Iterator[None]:
    yield


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux ``/proc``; NaN elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def judge_run(base: str, server: int, paths: list[Path], folder: Path, concurrency: int, image: dict[str, Any],
              evaluators: int = 1) -> dict[str, Any]:  # fmt: skip
    rows = [{"id": f"r{k}", "output": f"a photo ({k})", "images": [str(p)]} for k, p in enumerate(paths)]
    prompt = folder / "bench-photo.md"
    prompt.write_text(PROMPT)
    judge = {"model": "openai/gpt-4o-mini", "api_base": base, "api_key": "k", "cache": False,
             "max_concurrency": concurrency, "max_tokens": 256, "image": image}  # fmt: skip
    stack = {f"j{k}": {"type": "llm_judge", "prompt": str(prompt)} for k in range(evaluators)}
    served, cpu, wall = cpu_seconds(server), time.process_time(), time.perf_counter()
    result = ve.evaluate(rows, evaluators=stack, judge=judge, run={"concurrency": concurrency, "progress": False})
    wall, cpu, served = time.perf_counter() - wall, time.process_time() - cpu, cpu_seconds(server) - served
    frame = result.results
    assert frame["status"].eq("processed").all(), frame["error"].drop_nulls().head(3).to_list()
    sent = {}
    for sample, evaluator, details in frame.select("sample_id", "evaluator", "details").iter_rows():
        (record,) = json.loads(details)["images"]
        sent[(sample, evaluator)] = (record["sha256"], tuple(record["size"]), record["bytes"], record["media_type"])
    return {"wall": wall, "cpu": cpu, "server": served, "images": len(frame), "sent": sent}


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run of median wall time (the machine is shared: single runs swing with other processes' load)."""
    return sorted(runs, key=lambda r: r["wall"])[len(runs) // 2]


HEADER = (f"{'':<44} {'sent':>5} {'wall':>9} {'photos/s':>9} {'ratio':>6}  {'client CPU':>12} {'ceiling':>9}  "
          f"{'fake CPU':>10} {'with fake':>9}")  # fmt: skip


def line(name: str, run: dict[str, Any], baseline: dict[str, Any] | None) -> None:
    """One row of the table: the ceilings are what the CPU seconds per photo allow on idle cores (the client's
    alone, and with the fake server's)."""
    n = run["images"]
    rate = n / run["wall"]
    ratio = f"{rate / (baseline['images'] / baseline['wall']):5.2f}x" if baseline else "    - "
    print(f"{name:<44} {n:>5} {run['wall']:7.2f} s {rate:7.1f}/s {ratio}  {run['cpu'] / n:7.4f} s/ph "
          f"{CORES * n / run['cpu']:7.1f}/s  {run['server'] / n:6.4f} s/ph "
          f"{CORES * n / (run['cpu'] + run['server']):7.1f}/s")  # fmt: skip


SCENARIOS: dict[str, tuple[Callable[[], Any], dict[str, Any]]] = {
    "before": (as_is, EXACT),
    "pillow": (pillow_lanczos, CAP),
    "after": (as_is, CAP),
}


def scenarios(
    base: str, server: int, folder: Path, paths: list[Path], c: int, rounds: int, evaluators: int, names: list[str]
) -> dict[str, dict[str, Any]]:
    """Each scenario interleaved ``rounds`` times (the order alternating); the median run of each."""
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    for k in range(rounds):
        for name in names if k % 2 == 0 else names[::-1]:
            context, image = SCENARIOS[name.removesuffix("-nostore")]
            with context(), old_preparation() if name.endswith("-nostore") else as_is():
                runs[name].append(judge_run(base, server, paths, folder, c, image, evaluators))
    for name, found in runs.items():  # every round sent the same bytes as the first
        assert all(r["sent"] == found[0]["sent"] for r in found), name
    return {name: median_run(found) for name, found in runs.items()}


def compare_sent(run: dict[str, Any], baseline: dict[str, Any]) -> str:
    keys = baseline["sent"]
    same_bytes = sum(run["sent"][k][0] == v[0] for k, v in keys.items())
    same_size = sum(run["sent"][k][1:2] + run["sent"][k][3:] == v[1:2] + v[3:] for k, v in keys.items())
    mean = sum(v[2] for v in run["sent"].values()) / len(run["sent"])
    base = sum(v[2] for v in keys.values()) / len(keys)
    return (f"same sent size and format {same_size}/{len(keys)}, identical bytes {same_bytes}/{len(keys)}, "
            f"{mean / 1000:.1f} kB per photo ({mean / base:.4f}x the baseline's {base / 1000:.1f} kB)")  # fmt: skip


def psnr(pixels: Any, reference: Any) -> float:
    import numpy as np

    error = float(np.mean((pixels.astype(np.float64) - reference.astype(np.float64)) ** 2))
    return float("inf") if error == 0 else 10 * float(np.log10(255**2 / error))


def pixel_difference(paths: list[Path], run: dict[str, Any], baseline: dict[str, Any]) -> None:
    """PSNR of the default's sent pixels against the exact path's, on photos re-prepared here and checked to be
    the bytes each run sent; beside it, what the JPEG q85 encoding costs the exact path."""
    import numpy as np
    from PIL import Image

    def pixels(data: bytes) -> Any:
        return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))

    ours, encoding = [], []
    for k, path in enumerate(paths):
        data = path.read_bytes()
        exact = prepare_image(data, ImagePolicy(**EXACT))
        fast = prepare_image(data, ImagePolicy(**CAP))
        assert exact.sha256 == baseline["sent"][(f"r{k}", "j0")][0] and fast.sha256 == run["sent"][(f"r{k}", "j0")][0]
        full = Image.open(io.BytesIO(data))
        downscaled = np.asarray(full.resize((exact.width, exact.height), Image.Resampling.LANCZOS).convert("RGB"))
        ours.append(psnr(pixels(fast.data), pixels(exact.data)))
        encoding.append(psnr(pixels(exact.data), downscaled))
    print(f"  PSNR of the default's sent pixels against the exact path's ({len(paths)} photos): min {min(ours):.1f} "
          f"dB, median {sorted(ours)[len(ours) // 2]:.1f} dB; the exact path's own JPEG q{ImagePolicy().quality} "
          f"encoding: median {sorted(encoding)[len(encoding) // 2]:.1f} dB")  # fmt: skip


def prepare_all(data: bytes, fast: bool) -> int:
    return len(prepare_image(data, ImagePolicy(**CAP, fast_decode=fast)).data)


def pool_rate(make: Callable[[], Executor], sources: list[bytes], fast: bool) -> float:
    with make() as pool:
        list(pool.map(prepare_all, sources[:2], [fast] * 2))  # start the workers
        wall = time.perf_counter()
        list(pool.map(prepare_all, sources, [fast] * len(sources)))
        return len(sources) / (time.perf_counter() - wall)


def pools(sources: list[bytes], rounds: int) -> None:
    default_threads = min(32, CORES + 4)
    makers: list[tuple[str, Callable[[], Executor]]] = [
        ("1 thread", lambda: ThreadPoolExecutor(1)),
        ("2 threads", lambda: ThreadPoolExecutor(2)),
        (f"{default_threads} threads (asyncio.to_thread's default)", lambda: ThreadPoolExecutor(default_threads)),
        # spawned, not forked: a worker forked from a process whose libvips threads have run can hang in libvips
        ("2 processes (spawned)", lambda: ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn"))),
    ]
    rates: dict[tuple[str, bool], list[float]] = {}
    for k in range(rounds):  # the order alternates: a burst of load elsewhere hits each pool alike
        for name, make in makers if k % 2 == 0 else makers[::-1]:
            for fast in (False, True):
                rates.setdefault((name, fast), []).append(pool_rate(make, sources, fast))
    print(f"\npreparation alone, {len(sources)} photos, median of {rounds} (photos/s)   exact path   default")
    for name, _ in makers:
        full, fast = (sorted(rates[(name, f)])[rounds // 2] for f in (False, True))
        print(f"  {name:<52} {full:8.1f}   {fast:9.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--photos", type=int, default=128)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3, help="each measurement repeated, interleaved; the median")
    parser.add_argument("--psnr-photos", type=int, default=12, help="photos whose sent pixels are compared")
    parser.add_argument("--pools", action="store_true", help="also compare thread and process pools (no judge)")
    parser.add_argument("--pool-photos", type=int, default=24, help="photos for the thread/process pool comparison")
    args = parser.parse_args()
    n, c = args.photos, args.concurrency
    load = os.getloadavg()[0]  # other processes' (during the run, this one's threads count too)
    print(f"{CORES} cores, load average {load:.2f}; {n} distinct 4000x3000 JPEGs, concurrency {c}, "
          f"fake at zero latency (images not decoded there)")  # fmt: skip
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
            judge_run(base, proc.pid, paths[:4], folder, c, CAP)  # warm-up: imports, connections, prices
            print(f"{'distinct photos, median of ' + str(args.rounds):<44}{HEADER[44:]}")
            runs = scenarios(base, proc.pid, folder, paths, c, args.rounds, 1, ["before", "pillow", "after"])
            line("before: exact path (fast_decode: false)", runs["before"], None)
            line("fast_decode as it was (Pillow LANCZOS)", runs["pillow"], runs["before"])
            line("after: default (libvips Lanczos-3)", runs["after"], runs["before"])
            print(f"  exact path: {compare_sent(runs['before'], runs['before'])}")
            print(f"  default:    {compare_sent(runs['after'], runs['before'])}")
            pixel_difference(paths[: args.psnr_photos], runs["after"], runs["before"])
            rate = runs["after"]["images"] / runs["after"]["wall"]
            ceiling = CORES * runs["after"]["images"] / runs["after"]["cpu"]
            print(f"  accepted ~46 photos/s on 2 cores (JPEG decoding bound): {rate:.1f}/s, load {load:.2f} "
                  f"before the run; the client's CPU allows {ceiling:.1f}/s on idle cores")  # fmt: skip

            distinct = max(1, n // 4)
            repeated = [paths[k % distinct] for k in range(n)]
            print(f"\n{n} rows over {distinct} photos, 2 evaluators")
            runs = scenarios(base, proc.pid, folder, repeated, c, args.rounds, 2, ["after-nostore", "after"])
            line("before (every row decodes)", runs["after-nostore"], None)
            line("after (each photo prepared once)", runs["after"], runs["after-nostore"])
            print(f"  store: {compare_sent(runs['after'], runs['after-nostore'])}")
        finally:
            proc.terminate()
            proc.wait(10)
        if args.pools:
            pools([p.read_bytes() for p in paths[: args.pool_photos]], max(args.rounds, 5))


if __name__ == "__main__":
    main()
