"""The call cache shared by several processes: lookups+writes per second in total.

Each of ``--procs`` processes (default 8, as a sweep's jobs on one machine) runs ``--concurrency`` tasks on its
event loop, as the scheduler does; a task looks a call up, misses, and stores its answer (2 operations), then
looks up a call another process stored (1 operation, a hit). The processes start together (a barrier file) and
the figure is all their operations over the wall time from the start to the last one done.

Measured in the same run:

- ``baseline``: the cache as it was: one ``get`` and one ``put`` at a time, each its own SQLite statement or
  commit, run in the event loop's thread (what ``CallCache.get``/``put`` still do);
- ``batched``: today's path: ``find``/``store`` queued to the store's thread, many lookups in one query, many
  writes (and the claims of calls in flight) in one transaction;
- each with WAL (a local disk) and with the rollback journal that a network filesystem forces (measured here on
  the local disk: it shows the cost of the journal mode, not of a network);
- Redis (``batched`` only), when Debian's ``redis-server`` is installed: a server of our own on a free port.

    PYTHONPATH=$PWD python benchmarks/bench_cache.py [--procs 8] [--calls 2000] [--concurrency 32]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

VALUE = {"text": '{"score": 0.8, "reasoning": "' + "x" * 300 + '"}', "input_tokens": 812, "output_tokens": 64,
         "cost_usd": 0.00016, "latency_s": 1.2, "model": "openai/gpt-4o-mini", "logprobs": None}  # fmt: skip


def open_store(location: str, mode: str) -> object:
    from vision_eval.llm.cache import open_cache

    return open_cache(location, mode)


async def batched(store: object, me: int, procs: int, calls: int, concurrency: int) -> int:
    """The scheduler's path: a miss claims, the answer is stored; then a hit on another process's call."""
    gate = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with gate:
            key = f"{me}-{i}"
            found = await store.find(key)  # type: ignore[attr-defined]
            assert found.value is None
            await store.store(key, "openai/gpt-4o-mini", VALUE)  # type: ignore[attr-defined]

    await asyncio.gather(*(one(i) for i in range(calls)))
    await asyncio.gather(*(hit(store, f"{(me + 1) % procs}-{i}", gate) for i in range(calls)))
    return 3 * calls


async def hit(store: object, key: str, gate: asyncio.Semaphore) -> None:
    async with gate:
        while (await store.peek(key)) is None:  # type: ignore[attr-defined]
            await asyncio.sleep(0.01)  # the other process has not stored it yet


async def baseline(store: object, me: int, procs: int, calls: int, concurrency: int) -> int:
    """The cache as it was: a statement (a commit for a write) per operation, in the event loop's thread."""
    gate = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with gate:
            key = f"{me}-{i}"
            assert store.get(key) is None  # type: ignore[attr-defined]
            await asyncio.sleep(0)
            store.put(key, "openai/gpt-4o-mini", VALUE)  # type: ignore[attr-defined]

    async def old_hit(key: str) -> None:
        async with gate:
            while store.get(key) is None:  # type: ignore[attr-defined]
                await asyncio.sleep(0.01)

    await asyncio.gather(*(one(i) for i in range(calls)))
    await asyncio.gather(*(old_hit(f"{(me + 1) % procs}-{i}") for i in range(calls)))
    return 3 * calls


def worker(args: argparse.Namespace) -> None:
    store = open_store(args.location, args.mode)
    Path(f"{args.go}.ready{args.me}").touch()
    while not Path(args.go).exists():
        time.sleep(0.002)
    started = time.time()
    path = batched if args.path == "batched" else baseline
    ops = asyncio.run(path(store, args.me, args.procs, args.calls, args.concurrency))
    ended = time.time()
    batching = store.batching  # type: ignore[attr-defined]
    print(json.dumps({"start": started, "end": ended, "ops": ops, "batching": batching}))
    store.close()  # type: ignore[attr-defined]


def measure(
    location: str, mode: str, path: str, args: argparse.Namespace, folder: Path, calls: int
) -> tuple[float, str]:
    """All processes' operations per second of wall time, and how many operations each pass carried."""
    go = folder / f"go-{path}-{mode}-{time.monotonic_ns()}"
    command = [sys.executable, __file__, "--worker", "--location", location, "--mode", mode, "--path", path,
               "--go", str(go), "--procs", str(args.procs), "--calls", str(calls),
               "--concurrency", str(args.concurrency)]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([*command, "--me", str(k)], stdout=subprocess.PIPE, text=True, env=env)
             for k in range(args.procs)]  # fmt: skip
    while not all(Path(f"{go}.ready{k}").exists() for k in range(args.procs)):
        if any(p.poll() not in (None, 0) for p in procs):
            raise SystemExit(f"a {path} worker failed")
        time.sleep(0.01)
    go.touch()
    done = [json.loads(p.communicate()[0]) for p in procs]
    if any(p.returncode for p in procs):
        raise SystemExit(f"a {path} worker failed")
    wall = max(d["end"] for d in done) - min(d["start"] for d in done)
    ops, passes = sum(d["batching"][0] for d in done), sum(d["batching"][1] for d in done)
    per_pass = f"{ops / passes:5.1f} operations per query or transaction" if passes else "one statement per operation"
    return sum(d["ops"] for d in done) / wall, per_pass


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def start_redis(folder: Path) -> tuple[subprocess.Popen[bytes] | None, str]:
    server = shutil.which("redis-server")
    try:
        import redis
    except ImportError:
        return None, 'the redis client is not installed (pip install "vision-eval[redis]")'
    if server is None:
        return None, "redis-server is not installed (apt-get install -y redis-server)"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", str(folder)], stdout=subprocess.DEVNULL)  # fmt: skip
    url = f"redis://127.0.0.1:{port}/0"
    for _ in range(200):
        try:
            redis.Redis.from_url(url).ping()
            return proc, url
        except redis.ConnectionError:
            time.sleep(0.05)
    proc.kill()
    return None, "redis-server did not start"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--procs", type=int, default=8)
    parser.add_argument("--calls", type=int, default=2000, help="calls per process (3 operations each)")
    parser.add_argument("--rollback-calls", type=int, default=250, help="calls per process, rollback journal")
    parser.add_argument(
        "--concurrency", type=int, default=32, help="tasks per process (the scheduler's rows in flight)"
    )
    parser.add_argument("--repeat", type=int, default=2, help="measurements of each case (the best is shown)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--location", default="", help=argparse.SUPPRESS)
    parser.add_argument("--go", default="", help=argparse.SUPPRESS)
    parser.add_argument("--path", default="", help=argparse.SUPPRESS)
    parser.add_argument("--mode", default="auto", help=argparse.SUPPRESS)
    parser.add_argument("--me", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)

    print(f"{args.procs} processes, {args.concurrency} tasks each; per process {args.calls} calls "
          f"({args.rollback_calls} with the rollback journal), each a miss (lookup + write) then a hit (lookup); "
          f"best of {args.repeat}")  # fmt: skip
    print(f"load average before: {load()}")
    rates: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)

        def case(name: str, location: str, mode: str, path: str, calls: int) -> None:
            runs = []
            for k in range(args.repeat):
                if location.startswith("redis://"):
                    import redis

                    redis.Redis.from_url(location).flushall()
                    runs.append(measure(location, mode, path, args, folder, calls))
                else:
                    runs.append(measure(f"{location}-{k}", mode, path, args, folder, calls))
            rates[name], per_pass = max(runs)
            print(f"{name:<17} {rates[name]:8.0f} ops/s   {per_pass}   (load {load()})", flush=True)

        for mode in ("wal", "rollback"):
            calls = args.calls if mode == "wal" else args.rollback_calls
            for path in ("baseline", "batched"):
                case(f"{path} {mode}", str(folder / f"{mode}-{path}"), mode, path, calls)
            print(f"  batched / baseline ({mode}): {rates[f'batched {mode}'] / rates[f'baseline {mode}']:.2f}x")
        redis_proc, url = start_redis(folder)
        if redis_proc is None:
            print(f"redis: not measured: {url}")
        else:
            try:
                case("batched redis", url, "auto", "batched", args.calls)
                redis = rates["batched redis"]
                print(f"  redis / baseline wal: {redis / rates['baseline wal']:.2f}x, "
                      f"redis / baseline rollback: {redis / rates['baseline rollback']:.1f}x")  # fmt: skip
            finally:
                redis_proc.terminate()
                redis_proc.wait()
    print(f"load average after: {load()}")
    target = 2000
    verdict = "meets" if rates["batched wal"] >= target else "misses"
    print(f"target: {args.procs} processes on one local disk >= {target} ops/s in total: batched WAL {verdict} it "
          f"({rates['batched wal']:.0f} ops/s)")  # fmt: skip


if __name__ == "__main__":
    main()
