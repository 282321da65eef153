"""Judge-call throughput against the fake OpenAI server (200 ms latency, concurrency 64).

Prints achieved calls/s next to the ideal (concurrency / latency) and the client's CPU seconds per
call for: a bare aiohttp client (the baseline, measured in the same run), plain litellm, the scheduler's
direct path, and the whole ``llm_judge`` evaluator (template, scheduler, parsing, result frames) in a warm
process. Then the fresh-process mode: a new Python process that imports vision_eval and runs the same
``llm_judge`` calls, timed from its start to its exit (what every sweep job and small run pays), next to a
fresh process running the bare client and a warm bare client run, in rounds (the median round's ratio is the
figure: other work on this shared machine shifts all three runs of a round alike). The
fresh judge process must not import litellm (the direct path prices calls from litellm's price map read as
data). Finally the prompt tokens of a 4000x3000 photo under the default image policy. The fake server runs
in its own process.

    PYTHONPATH=$PWD python benchmarks/bench_judge_throughput.py [--calls 2000] [--baseline-calls 1000] [--repeat 5]
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

from vision_eval.testing.fake_providers import serve_in_subprocess  # noqa: E402

PROMPT = 'Judge this answer. Respond with {"scores": {"accuracy": <0..1>}, "reasoning": "..."}. Answer #'


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


async def bare_aiohttp(base: str, calls: int, concurrency: int) -> None:
    """The least a client can do: one session, a semaphore, the same JSON request, the reply parsed."""
    import aiohttp

    gate = asyncio.Semaphore(concurrency)
    connector = aiohttp.TCPConnector(limit=concurrency)
    headers = {"Content-Type": "application/json", "Authorization": "Bearer k"}
    async with aiohttp.ClientSession(connector=connector) as session:

        async def one(i: int) -> None:
            body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": PROMPT + str(i)}],
                    "temperature": 0, "max_tokens": 256}  # fmt: skip
            async with gate, session.post(f"{base}/chat/completions", data=json.dumps(body), headers=headers) as r:
                json.loads(await r.read())["choices"][0]["message"]["content"]

        await asyncio.gather(*(one(i) for i in range(calls)))


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
        result = ve.evaluate(rows, evaluators=evaluators, judge=judge,
                             run={"concurrency": concurrency, "progress": False})  # fmt: skip
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    statuses = result.results["status"].value_counts().to_dicts()
    assert result.results["status"].eq("processed").all(), statuses
    return wall, cpu


def child(mode: str, base: str, calls: int, concurrency: int) -> None:
    """What a fresh process runs (``--child``): the bare client, or ``llm_judge`` with nothing imported before."""
    if mode == "bare":
        asyncio.run(bare_aiohttp(base, calls, concurrency))
        return
    evaluator_end_to_end(base, calls, concurrency)
    if "litellm" in sys.modules:
        raise SystemExit("litellm was imported on the direct path")


def fresh(mode: str, base: str, calls: int, concurrency: int) -> tuple[float, float]:
    """Wall seconds from starting a new interpreter to its exit, and its CPU seconds (user + system)."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    command = [sys.executable, __file__, "--child", mode, "--base", base, "--calls", str(calls),
               "--concurrency", str(concurrency)]  # fmt: skip
    before = os.times()
    started = time.perf_counter()
    proc = subprocess.run(command, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = os.times()
    if proc.returncode != 0:
        raise RuntimeError(f"fresh {mode} process failed: {proc.stderr[-2000:]}")
    return wall, (after.children_user - before.children_user) + (after.children_system - before.children_system)


def photo_tokens() -> None:
    import numpy as np
    from PIL import Image

    from vision_eval.config import ImagePolicy
    from vision_eval.images.policy import prepare_image
    from vision_eval.images.provider_rules import estimate_image_tokens, openai_image_tokens, provider_rule
    from vision_eval.images.providers import openai_message

    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:3000, 0:4000]
    pixels = np.stack([(x / 16) % 256, (y / 12) % 256, (x + y) / 28 % 256], -1) + rng.normal(0, 12, (3000, 4000, 3))
    buffer = io.BytesIO()
    Image.fromarray(pixels.clip(0, 255).astype("uint8")).save(buffer, format="JPEG", quality=90)
    source = buffer.getvalue()
    cap = ImagePolicy(max_side=1024, format="jpeg")  # a judge's cost cap
    prepared = prepare_image(source, cap, label="Image 1")
    claude, gemini = "anthropic/claude-sonnet-4-5", "gemini/gemini-2.5-flash"
    import litellm

    litellm.suppress_debug_info = True
    message = openai_message(["Describe ", prepared], detail="high")
    counted = litellm.token_counter(model="gpt-4o-mini", messages=[message])
    as_text = len(base64.b64encode(source)) // 4
    sent = f"{prepared.width}x{prepared.height}, {len(prepared.data) / 1e3:.0f} KB sent"
    print(f"\n4000x3000 photo ({len(source) / 1e6:.1f} MB JPEG), a cost cap (max_side 1024, jpeg q85) -> {sent}")
    print(f"  prompt tokens for the image   OpenAI {openai_image_tokens(prepared.width, prepared.height)}"
          f" (litellm.token_counter, whole message, detail=high: {counted})"
          f", Anthropic {estimate_image_tokens(prepared.width, prepared.height, claude)}"
          f", Gemini {estimate_image_tokens(prepared.width, prepared.height, gemini)}")  # fmt: skip
    sizes = {name: "x".join(map(str, provider_rule(name).fit(4000, 3000))) for name in ("gpt-4o-mini", claude, gemini)}
    print(f"  at the provider's size (the default): OpenAI {openai_image_tokens(4000, 3000)} at {sizes['gpt-4o-mini']}"
          f", Anthropic {estimate_image_tokens(4000, 3000, claude)} at {sizes[claude]}"
          f", Gemini {estimate_image_tokens(4000, 3000, gemini)} at {sizes[gemini]} (the source)")  # fmt: skip
    print(f"  base64 pasted into the text   ~{as_text:,} tokens (what the promptfoo grader first did)")


def ratios(figures: list[dict], baseline: str) -> None:
    base = next(f for f in figures if f["name"] == baseline)["calls_per_s"]
    print(f"\nagainst the {baseline} ({base:.1f} calls/s, same run):")
    for figure in figures:
        if figure["name"] != baseline:
            print(f"  {figure['name']:<34} {figure['calls_per_s'] / base:6.1%}")


def fresh_rounds(base: str, calls: int, concurrency: int, latency: float, repeat: int) -> list[dict]:
    """Rounds of (fresh bare client, fresh ``llm_judge``, bare client in this warm process): the ratio of each
    round compares runs made within seconds of each other (other work on the machine shifts all three)."""
    print(f"fresh processes (interpreter start to exit), {repeat} rounds, each against a warm bare client run:")
    rounds = []
    for n in range(repeat):
        bare_wall, bare_cpu = fresh("bare", base, calls, concurrency)
        judge_wall, judge_cpu = fresh("judge", base, calls, concurrency)
        warm_wall, warm_cpu = timed(bare_aiohttp, base, calls, concurrency)
        rounds.append({"bare_fresh_s": bare_wall, "judge_fresh_s": judge_wall, "bare_warm_s": warm_wall,
                       "bare_fresh_cpu_s": bare_cpu, "judge_cpu_s": judge_cpu, "bare_warm_cpu_s": warm_cpu,
                       "ratio": warm_wall / judge_wall})  # fmt: skip
        print(f"  round {n + 1}: bare warm {calls / warm_wall:6.1f} calls/s, bare fresh {calls / bare_wall:6.1f}, "
              f"llm_judge fresh {calls / judge_wall:6.1f} -> {warm_wall / judge_wall:6.1%} of bare")  # fmt: skip
    return rounds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--baseline-calls", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--repeat", type=int, default=5, help="rounds of fresh-process runs (median reported)")
    parser.add_argument("--json", type=str, default=None, help="also write the figures to this file")
    parser.add_argument("--child", choices=["bare", "judge"], help=argparse.SUPPRESS)
    parser.add_argument("--base", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.base, args.calls, args.concurrency)
        return

    proc, base = serve_in_subprocess(args.latency)
    figures = []
    try:
        c, lat = args.concurrency, args.latency
        asyncio.run(bare_aiohttp(base, 64, c))  # warm-up of this process's bare client
        rounds = fresh_rounds(base, args.calls, c, lat, args.repeat)
        middle = sorted(rounds, key=lambda r: r["ratio"])[(len(rounds) - 1) // 2]
        print("\nthe median round:")
        figures.append(report("baseline: bare aiohttp client", args.calls, middle["bare_warm_s"],
                              middle["bare_warm_cpu_s"], c, lat))  # fmt: skip
        figures.append(report("fresh process: bare aiohttp", args.calls, middle["bare_fresh_s"],
                              middle["bare_fresh_cpu_s"], c, lat))  # fmt: skip
        figures.append(report("fresh process: llm_judge", args.calls, middle["judge_fresh_s"],
                              middle["judge_cpu_s"], c, lat))  # fmt: skip
        print("\nwarm process (imports done, connection pool warm):")
        import litellm  # noqa: F401 - import cost kept out of the warm timings

        asyncio.run(scheduler_direct(base, 64, c))  # warm-up: imports, connection pool, price lookup
        wall, cpu = timed(bare_aiohttp, base, args.calls, c)
        figures.append(report("warm: bare aiohttp client", args.calls, wall, cpu, c, lat))
        wall, cpu = timed(plain_litellm, base, args.baseline_calls, c)
        figures.append(report("warm: plain litellm.acompletion", args.baseline_calls, wall, cpu, c, lat))
        wall, cpu = timed(scheduler_direct, base, args.calls, c)
        figures.append(report("warm: scheduler, direct OpenAI path", args.calls, wall, cpu, c, lat))
        wall, cpu = evaluator_end_to_end(base, args.calls, c)
        figures.append(report("warm: llm_judge evaluator", args.calls, wall, cpu, c, lat))
    finally:
        proc.terminate()
        proc.wait(10)
    print(f"\nfresh llm_judge / bare client, median of {len(rounds)} rounds: {middle['ratio']:.1%} (goal: >= 85%)")
    warm_bare = next(f for f in figures if f["name"] == "warm: bare aiohttp client")["calls_per_s"]
    for figure in figures[4:]:
        print(f"  {figure['name']:<36} {figure['calls_per_s'] / warm_bare:6.1%} of the warm bare client")
    photo_tokens()
    if args.json:
        Path(args.json).write_text(json.dumps({"figures": figures, "rounds": rounds}, indent=2))


if __name__ == "__main__":
    main()
