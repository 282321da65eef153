"""Judge-call throughput against the fake OpenAI server (200 ms latency, concurrency 64).

Prints achieved calls/s next to the ideal (concurrency / latency) and the client's CPU seconds per
call for: plain litellm (baseline, measured in the same run), the scheduler's direct path, and the
whole ``llm_judge`` evaluator (template, scheduler, parsing, result frames). Then the prompt tokens of
a 4000x3000 photo under the default image policy. The fake server runs in its own process.

    PYTHONPATH=$PWD python benchmarks/bench_judge_throughput.py [--calls 2000] [--baseline-calls 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

PROMPT = 'Judge this answer. Respond with {"scores": {"accuracy": <0..1>}, "reasoning": "..."}. Answer #'


def spawn_fake(latency: float) -> tuple[subprocess.Popen, str]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "vision_eval.testing.fake_providers", "--latency", str(latency), "--no-inspect"],
        stdout=subprocess.PIPE,
        env=env,
    )
    line = proc.stdout.readline().decode().strip() if proc.stdout else ""
    if not line.startswith("PORT "):
        proc.kill()
        raise RuntimeError(f"fake server did not start: {line!r}")
    return proc, f"http://127.0.0.1:{line.split()[1]}/v1"


def report(name: str, calls: int, wall: float, cpu: float, concurrency: int, latency: float) -> dict:
    ideal = concurrency / latency
    rate = calls / wall
    print(f"{name:<34} {calls:>6} calls  {wall:6.2f} s  {rate:7.1f} calls/s  "
          f"{rate / ideal:6.1%} of ideal {ideal:.0f}/s  CPU {1000 * cpu / calls:5.2f} ms/call")  # fmt: skip
    return {
        "name": name,
        "calls": calls,
        "calls_per_s": rate,
        "ratio": rate / ideal,
        "cpu_ms_per_call": 1000 * cpu / calls,
    }


async def plain_litellm(base: str, calls: int, concurrency: int) -> None:
    import litellm

    litellm.suppress_debug_info = True
    gate = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with gate:
            await litellm.acompletion(
                model="openai/gpt-4o-mini",
                api_base=base,
                api_key="k",
                messages=[{"role": "user", "content": PROMPT + str(i)}],
                temperature=0,
                max_tokens=256,
                num_retries=0,
            )

    await asyncio.gather(*(one(i) for i in range(calls)))


async def scheduler_direct(base: str, calls: int, concurrency: int, transport: str = "auto") -> None:
    from vision_eval.config import JudgeConfig
    from vision_eval.llm.scheduler import Scheduler

    judge = JudgeConfig(model="openai/gpt-4o-mini", api_base=base, api_key="k", cache=False,
                        max_concurrency=concurrency, max_tokens=256, transport=transport)  # fmt: skip
    scheduler = Scheduler(concurrency)
    async with scheduler.session():
        results = await asyncio.gather(
            *(scheduler.complete(judge, [{"role": "user", "content": PROMPT + str(i)}]) for i in range(calls))
        )
    assert all(r.cost_usd is not None for r in results)


def timed(factory, *args) -> tuple[float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    asyncio.run(factory(*args))
    return time.perf_counter() - wall, time.process_time() - cpu


def evaluator_end_to_end(base: str, calls: int, concurrency: int) -> tuple[float, float]:
    import vision_eval as ve

    rows = [{"id": f"r{i}", "input": "Judge the answer.", "output": f"answer {i}"} for i in range(calls)]
    with tempfile.TemporaryDirectory() as folder:
        prompt = Path(folder) / "bench-judge.md"
        prompt.write_text("---\ndimensions: {accuracy: 1}\n---\nQuestion: {{ input }}\nAnswer: {{ output }}\n")
        judge = {"model": "openai/gpt-4o-mini", "api_base": base, "api_key": "k", "cache": False,
                 "max_concurrency": concurrency, "max_tokens": 256}  # fmt: skip
        evaluators = {"j": {"type": "llm_judge", "prompt": str(prompt), "images": []}}
        cpu, wall = time.process_time(), time.perf_counter()
        result = ve.evaluate(rows, evaluators=evaluators, judge=judge, run={"concurrency": concurrency})
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    statuses = result.results["status"].value_counts().to_dicts()
    assert result.results["status"].eq("processed").all(), statuses
    return wall, cpu


def photo_tokens() -> None:
    import numpy as np
    from PIL import Image

    from vision_eval.config import ImagePolicy
    from vision_eval.images.policy import (
        anthropic_image_tokens,
        gemini_image_tokens,
        openai_image_tokens,
        prepare_image,
    )
    from vision_eval.images.providers import openai_message

    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:3000, 0:4000]
    pixels = np.stack([(x / 16) % 256, (y / 12) % 256, (x + y) / 28 % 256], -1) + rng.normal(0, 12, (3000, 4000, 3))
    buffer = io.BytesIO()
    Image.fromarray(pixels.clip(0, 255).astype("uint8")).save(buffer, format="JPEG", quality=90)
    source = buffer.getvalue()
    prepared = prepare_image(source, ImagePolicy(), label="Image 1")
    import litellm

    litellm.suppress_debug_info = True
    message = openai_message(["Describe ", prepared], detail="high")
    counted = litellm.token_counter(model="gpt-4o-mini", messages=[message])
    as_text = len(base64.b64encode(source)) // 4
    sent = f"{prepared.width}x{prepared.height}, {len(prepared.data) / 1e3:.0f} KB sent"
    print(f"\n4000x3000 photo ({len(source) / 1e6:.1f} MB JPEG), default policy (max_side 1024, jpeg q85) -> {sent}")
    print(f"  prompt tokens for the image   OpenAI {openai_image_tokens(prepared.width, prepared.height)}"
          f" (litellm.token_counter, whole message, detail=high: {counted})"
          f", Anthropic {anthropic_image_tokens(prepared.width, prepared.height)}"
          f", Gemini {gemini_image_tokens(prepared.width, prepared.height)}")  # fmt: skip
    print(f"  unscaled original             OpenAI {openai_image_tokens(4000, 3000)} (server-side downscale, but "
          f"{len(source) / 1e6:.1f} MB uploaded), Anthropic {anthropic_image_tokens(4000, 3000)}"
          f", Gemini {gemini_image_tokens(4000, 3000)}")  # fmt: skip
    print(f"  base64 pasted into the text   ~{as_text:,} tokens (what the promptfoo grader first did)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--baseline-calls", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--json", type=str, default=None, help="also write the figures to this file")
    args = parser.parse_args()
    import litellm  # noqa: F401 - import cost kept out of the timings

    proc, base = spawn_fake(args.latency)
    figures = []
    try:
        c, lat = args.concurrency, args.latency
        asyncio.run(scheduler_direct(base, 64, c))  # warm-up: imports, connection pool, price lookup
        wall, cpu = timed(plain_litellm, base, args.baseline_calls, c)
        figures.append(report("baseline: plain litellm.acompletion", args.baseline_calls, wall, cpu, c, lat))
        wall, cpu = timed(scheduler_direct, base, args.calls, c)
        figures.append(report("scheduler, direct OpenAI path", args.calls, wall, cpu, c, lat))
        wall, cpu = evaluator_end_to_end(base, args.calls, c)
        figures.append(report("llm_judge evaluator end to end", args.calls, wall, cpu, c, lat))
    finally:
        proc.terminate()
        proc.wait(10)
    photo_tokens()
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
