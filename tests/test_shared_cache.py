"""A call cache that jobs share: identical requests in flight in several processes (and in one run) are sent once,
a claimer that dies or stalls is replaced, and the cache never stalls the event loop. Each case runs on the
SQLite cache in WAL mode (a local disk), with the rollback journal a network filesystem forces, and on Redis."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from conftest import BLUE, RED, shape_png

from vision_eval.config import JudgeConfig
from vision_eval.llm.cache import CallCache, open_cache
from vision_eval.llm.claims import LEASE_S, SEND, ClaimingStore, find_or_wait
from vision_eval.llm.scheduler import Scheduler
from vision_eval.testing.fake_providers import Action, FakeProviders

BACKENDS = ["wal", "rollback", "redis"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A redis-server of our own on a free port (Debian's redis-server package; .ci/run installs it)."""
    server = shutil.which("redis-server")
    if server is None:
        pytest.skip("redis-server is not installed (apt-get install -y redis-server)")
    pytest.importorskip("redis", reason='needs pip install "vision-eval[redis]"')
    import redis

    port = _free_port()
    folder = tmp_path_factory.mktemp("redis")
    proc = subprocess.Popen([server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", str(folder)], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)  # fmt: skip
    url = f"redis://127.0.0.1:{port}/0"
    deadline = time.monotonic() + 20
    while True:
        try:
            redis.Redis.from_url(url).ping()
            break
        except redis.ConnectionError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.skip(f"redis-server did not start (exit {proc.poll()})")
            time.sleep(0.05)
    yield url
    proc.terminate()
    proc.wait(timeout=10)


def cache_settings(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> dict[str, Any]:
    """The judge's cache settings for one backend (Redis: a database of its own per test, emptied)."""
    if backend != "redis":
        return {"cache_dir": str(tmp_path / "cache"), "cache_mode": backend}
    import redis

    url: str = request.getfixturevalue("redis_url")
    redis.Redis.from_url(url).flushall()
    return {"cache_dir": url}


def store_for(settings: dict[str, Any], lease_s: float) -> ClaimingStore:
    if settings["cache_dir"].startswith("redis://"):
        from vision_eval.llm.redis_cache import RedisCallCache

        return RedisCallCache(settings["cache_dir"], lease_s=lease_s)
    return CallCache(settings["cache_dir"], settings["cache_mode"], lease_s=lease_s)


def rows_of(folder: Path, n: int, distinct: int) -> list[dict[str, Any]]:
    """``n`` rows asking ``distinct`` different requests (rows i and i + distinct ask the same)."""
    (folder / "red.png").write_bytes(shape_png(RED, 2))
    (folder / "blue.png").write_bytes(shape_png(BLUE, 3))
    return [{"id": f"s{i}", "output": f"{'red' if i % 2 else 'blue'} shapes, case {i % distinct}",
             "images": [str(folder / ("red.png" if i % 2 else "blue.png"))]} for i in range(n)]  # fmt: skip


JOB = """
import json, pathlib, sys, time
import vision_eval as ve
rows = json.loads(pathlib.Path(sys.argv[1]).read_text())
judge, out, go = json.loads(sys.argv[2]), sys.argv[3], pathlib.Path(sys.argv[4])
pathlib.Path(out + ".ready").touch()
while not go.exists():
    time.sleep(0.005)
result = ve.evaluate(rows, evaluators={"desc": {"type": "llm_judge", "prompt": "image-description"}}, judge=judge,
                     output_dir=out)
sys.exit(result.exit_code)
"""
"""One job: ready once imported, then waits for ``go`` so that every job sends at the same moment."""


def start_jobs(
    tmp_path: Path, env: dict[str, str], rows: list[dict[str, Any]], judge: dict[str, Any], n: int
) -> list[subprocess.Popen[bytes]]:
    (tmp_path / "rows.json").write_text(json.dumps(rows))
    go = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", JOB, str(tmp_path / "rows.json"), json.dumps(judge),
                               str(tmp_path / f"job{k}"), str(go)], env=env) for k in range(n)]  # fmt: skip
    deadline = time.monotonic() + 120
    while not all((tmp_path / f"job{k}.ready").exists() for k in range(n)):
        assert time.monotonic() < deadline and all(p.poll() is None for p in procs), "a job did not start"
        time.sleep(0.02)
    go.touch()
    return procs


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_jobs_sharing_a_cache_send_each_distinct_request_once(
    backend: str, tmp_path: Path, subprocess_env: dict[str, str], request: pytest.FixtureRequest
) -> None:
    """Four jobs start together, each with 12 rows asking 6 distinct requests: the provider receives each
    distinct request once, and every job's run.json says where its other answers came from."""
    rows = rows_of(tmp_path, 12, 6)
    with FakeProviders(latency=0.5) as fake:
        judge = {"model": "openai/gpt-4o-mini", "api_base": fake.openai_base, "api_key": "k",
                 **cache_settings(backend, tmp_path, request)}  # fmt: skip
        procs = start_jobs(tmp_path, subprocess_env, rows, judge, 4)
        assert [p.wait(timeout=180) for p in procs] == [0, 0, 0, 0]
        sent = [json.dumps(r.body["messages"], sort_keys=True) for r in fake.requests]
    assert len(sent) == len(set(sent)) == 6
    infos = [json.loads((tmp_path / f"job{k}" / "run.json").read_text())["scheduler"] for k in range(4)]
    assert sum(i["calls"] for i in infos) == 6
    assert sum(i["cache_hits"] + i["peer_hits"] + i["coalesced"] for i in infos) == 4 * 12 - 6
    assert sum(i["peer_hits"] + i["coalesced"] for i in infos) > 0  # answered while in flight, not only stored
    expected = {"wal": "sqlite-wal", "rollback": "sqlite-rollback", "redis": "redis"}[backend]
    assert {i["cache"][0]["mode"] for i in infos} == {expected}
    frames = [pl.read_parquet(tmp_path / f"job{k}" / "results.parquet").sort("sample_id") for k in range(4)]
    assert all(f.select("sample_id", "score").equals(frames[0].select("sample_id", "score")) for f in frames)
    assert frames[0]["status"].unique().to_list() == ["processed"]


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_killed_claimer_is_replaced_and_nothing_hangs(
    backend: str, tmp_path: Path, subprocess_env: dict[str, str], request: pytest.FixtureRequest
) -> None:
    """A job claims its calls and is killed while they are in flight: the next job takes its claims over at
    once (the claimer's pid is gone on this host) and sends them; nothing waits for the dead job."""
    rows = rows_of(tmp_path, 4, 4)
    with FakeProviders() as fake:
        fake.push(*[Action(delay=10.0) for _ in range(4)])  # the first job's calls are still in flight when killed
        judge = {"model": "openai/gpt-4o-mini", "api_base": fake.openai_base, "api_key": "k",
                 **cache_settings(backend, tmp_path, request)}  # fmt: skip
        (first,) = start_jobs(tmp_path, subprocess_env, rows, judge, 1)
        deadline = time.monotonic() + 60
        while fake.calls < 4:
            assert time.monotonic() < deadline and first.poll() is None
            time.sleep(0.02)
        os.kill(first.pid, signal.SIGKILL)
        first.wait()
        started = time.monotonic()
        second = subprocess.run([sys.executable, "-c", JOB, str(tmp_path / "rows.json"), json.dumps(judge),
                                 str(tmp_path / "again"), str(tmp_path / "go")], env=subprocess_env,
                                timeout=120)  # fmt: skip
        took = time.monotonic() - started
        assert second.returncode == 0 and fake.calls == 8
        fake.wait_idle(timeout_s=30)  # the dead job's requests end at the fake
    assert took < LEASE_S - 5  # it took the dead job's claims over instead of waiting for their leases to lapse
    info = json.loads((tmp_path / "again" / "run.json").read_text())["scheduler"]
    assert info["calls"] == 4 and info["peer_hits"] == 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_claim_whose_lease_lapses_is_taken_over_and_a_renewed_one_is_waited_for(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A claimer whose event loop stopped renewing (stalled, or on another machine that died) loses its claim
    after ``lease_s``; one that keeps renewing is waited for, and its answer is read."""
    settings = cache_settings(backend, tmp_path, request)
    stalled, waiter = store_for(settings, 0.5), store_for(settings, 0.5)
    assert asyncio.run(stalled.find("stalled")) == SEND  # its loop is gone: the lease is never renewed
    started = time.monotonic()
    found, waited = asyncio.run(find_or_wait(waiter, "stalled"))
    assert found == SEND and waited and 0.4 < time.monotonic() - started < 10

    alive = store_for(settings, 0.5)
    claimed = threading.Event()

    async def claim_then_answer() -> None:
        assert await alive.find("alive") == SEND
        claimed.set()
        await asyncio.sleep(2.0)  # four leases long: the heartbeat renews it meanwhile
        await alive.store("alive", "m", {"text": "the answer"})

    claimer = threading.Thread(target=asyncio.run, args=(claim_then_answer(),))
    claimer.start()
    assert claimed.wait(10)
    found, waited = asyncio.run(find_or_wait(waiter, "alive"))
    claimer.join()
    assert found.value == {"text": "the answer"} and waited
    for store in (stalled, waiter, alive):
        store.close()


LOCKER = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
conn.execute("COMMIT")
"""


@pytest.mark.parametrize("mode", ["wal", "rollback"])
def test_the_event_loop_serves_other_calls_while_another_process_holds_the_cache_lock(
    mode: str, tmp_path: Path, fake: Any
) -> None:
    """Another process holds the SQLite cache's lock for 3 s: the call that needs the cache waits for it, while
    the run's other calls (a judge with the cache off) go on and the event loop never stops for long."""
    fake.reset()
    open_cache(str(tmp_path), mode).close()  # the file exists, in its mode
    cached = JudgeConfig(model="openai/m", api_base=fake.openai_base, api_key="k", cache_dir=str(tmp_path),
                         cache_mode=mode)  # fmt: skip
    plain = cached.model_copy(update={"cache": False})
    scheduler = Scheduler(8)
    hold = 3.0

    async def main() -> tuple[float, float, float]:
        ticks: list[float] = []
        stop = asyncio.Event()

        async def tick() -> None:
            while not stop.is_set():
                ticks.append(time.monotonic())
                await asyncio.sleep(0.02)

        async with scheduler.session():
            ticker = asyncio.create_task(tick())
            waiting = asyncio.create_task(scheduler.complete(cached, [{"role": "user", "content": "cached"}]))
            for i in range(6):
                await scheduler.complete(plain, [{"role": "user", "content": f"plain {i}"}])
                await asyncio.sleep(0.1)
            plain_done = time.monotonic()
            result = await waiting
            stop.set()
            await ticker
        assert result.text
        gaps = [b - a for a, b in itertools.pairwise(ticks)]
        return plain_done, time.monotonic(), max(gaps)

    locker = subprocess.Popen([sys.executable, "-c", LOCKER, str(tmp_path / "calls.sqlite"), str(hold)],
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert locker.stdout is not None and locker.stdout.readline().strip() == "locked"
    locked_at = time.monotonic()
    plain_done, cached_done, longest_gap = asyncio.run(main())
    locker.wait(timeout=30)
    assert plain_done - locked_at < hold - 0.5  # the other calls did not wait for the lock
    assert cached_done - locked_at >= hold - 0.2  # the cached call did
    assert longest_gap < 1.0  # the loop kept turning (today's code froze it for the whole lock)


@pytest.mark.slow
def test_a_parallel_threshold_sweep_pays_what_one_job_pays(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    """Hydra multirun over a judge's threshold, four jobs at once sharing the default cache: the provider is paid
    for each distinct call once, and each job's console and run.json say where its other answers came from."""
    rows = rows_of(tmp_path, 8, 8)
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    conf = tmp_path / "conf" / "evaluators"
    conf.mkdir(parents=True)
    (conf / "judged.yaml").write_text("desc:\n  type: llm_judge\n  prompt: image-description\n")
    with FakeProviders(latency=2.0) as fake:
        proc = subprocess.run(
            [sys.executable, "-m", "vision_eval.cli", "--config-dir", str(tmp_path / "conf"), "-m",
             "hydra/launcher=local_parallel", "hydra.launcher.n_jobs=4", "evaluators=judged",
             "evaluators.desc.threshold=0.2,0.4,0.6,0.8", f"dataset.path={data}", "judge=openai",
             f"judge.api_base={fake.openai_base}", f"judge.cache_dir={tmp_path / 'cache'}", "run.preflight=false",
             "hydra.sweep.dir=sweep"],
            cwd=tmp_path, env={**subprocess_env, "OPENAI_API_KEY": "k"}, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert fake.calls == 8
    infos = [json.loads(p.read_text()) for p in sorted((tmp_path / "sweep").glob("*/run.json"))]
    assert [i["config"]["evaluators"]["desc"]["threshold"] for i in infos] == [0.2, 0.4, 0.6, 0.8]
    counters = [i["scheduler"] for i in infos]
    assert sum(c["calls"] for c in counters) == 8
    assert sum(c["cache_hits"] + c["peer_hits"] + c["coalesced"] for c in counters) == 3 * 8
    assert proc.stdout.count(f"call cache: sqlite-wal at {tmp_path / 'cache' / 'calls.sqlite'} (a local disk)") == 4
    assert proc.stdout.count("calls answered without sending:") >= 3


def test_a_redis_cache_that_does_not_answer_stops_the_run_before_any_call(tmp_path: Path, fake: Any) -> None:
    """A wrong Redis address is a preflight error (exit 2: nothing sent), naming the key, without the password."""
    pytest.importorskip("redis", reason='needs pip install "vision-eval[redis]"')
    import vision_eval as ve
    from vision_eval.errors import PreflightError

    fake.reset()
    url = f"redis://:hunter2secret@127.0.0.1:{_free_port()}/0"
    judge = {"model": "openai/gpt-4o-mini", "api_base": fake.openai_base, "api_key": "k", "cache_dir": url}
    with pytest.raises(PreflightError) as refused:
        ve.evaluate(rows_of(tmp_path, 2, 2), evaluators={"desc": {"type": "llm_judge", "prompt": "image-description"}},
                    judge=judge)  # fmt: skip
    message = str(refused.value)
    assert "judge.cache_dir=redis://:***@127.0.0.1" in message and "cannot reach the Redis server" in message
    assert "hunter2secret" not in message and fake.calls == 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_waiter_sends_the_call_itself_once_judge_cache_wait_s_has_passed(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Another job is sending the same call and keeps its claim alive, but the provider holds its request for
    6 s: a run with ``judge.cache_wait_s=1`` waits about a second, then sends the call itself and gets its
    answer (paid twice rather than waited for without end)."""
    settings = cache_settings(backend, tmp_path, request)
    messages = [{"role": "user", "content": "the same request"}]
    claimed = threading.Event()
    with FakeProviders() as fake:
        fake.push(Action(delay=6.0))  # the first job's request: still in flight when the second one gives up
        judge = JudgeConfig(model="openai/m", api_base=fake.openai_base, api_key="k", **settings)

        async def first_job() -> None:
            scheduler = Scheduler(4)
            async with scheduler.session():
                task = asyncio.create_task(scheduler.complete(judge, messages))
                while fake.calls < 1:
                    await asyncio.sleep(0.01)
                claimed.set()
                await task

        claimer = threading.Thread(target=asyncio.run, args=(first_job(),), daemon=True)
        claimer.start()
        assert claimed.wait(30)
        second = Scheduler(4)

        async def second_job() -> Any:
            async with second.session():
                return await second.complete(judge.model_copy(update={"cache_wait_s": 1.0}), messages)

        started = time.monotonic()
        result = asyncio.run(second_job())
        took = time.monotonic() - started
        assert result.text and not result.cached and fake.calls == 2
        assert 0.9 < took < 4  # it waited about cache_wait_s, not for the first job's 6 s
        assert second.stats.calls == 1 and second.stats.peer_hits == 0
        claimer.join(timeout=60)


def test_the_filesystem_holding_the_cache_is_read_from_the_mount_table() -> None:
    """The deepest mount holding the folder names its filesystem (``\\040`` is a space in /proc/mounts)."""
    from vision_eval.llm.cache import filesystem_type, journal_mode

    mounts = ("overlay / overlay rw 0 0\nserver:/export /shared nfs4 rw,relatime 0 0\n"
              "mds@tcp:/lfs /shared/my\\040lustre lustre rw 0 0\n/dev/sda1 /shared-local ext4 rw 0 0\n")  # fmt: skip
    folders = ("/home/u/.cache", "/shared/cache", "/shared/my lustre/cache", "/shared-local/cache", "/shared")
    kinds = {folder: filesystem_type(Path(folder), mounts) for folder in folders}
    assert kinds == {"/home/u/.cache": "overlay", "/shared/cache": "nfs4", "/shared/my lustre/cache": "lustre",
                     "/shared-local/cache": "ext4", "/shared": "nfs4"}  # fmt: skip
    assert [journal_mode("auto", kind) for kind in ("nfs4", "lustre", "ext4", None)] == ["rollback"] * 2 + ["wal"] * 2
    assert journal_mode("rollback", "ext4") == "rollback" and journal_mode("wal", "nfs4") == "wal"


def test_on_a_network_filesystem_the_cache_uses_the_rollback_journal_and_says_so(
    tmp_path: Path, fresh_fake: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A cache folder on NFS (the mount table says ``nfs4``; this machine's kernel has no NFS to mount): the SQLite
    file is in the rollback journal (no ``-wal`` file), the run's run.json and console name the mode and why, and
    a second run reads every call back (nothing sent twice)."""
    import sqlite3

    import vision_eval as ve
    from vision_eval.llm import cache as cache_module
    from vision_eval.summary import print_summary

    monkeypatch.setattr(cache_module, "filesystem_type", lambda path, mounts=None: "nfs4")
    folder = tmp_path / "cache"
    judge = {"model": "openai/gpt-4o-mini", "api_base": fresh_fake.openai_base, "api_key": "k",
             "cache_dir": str(folder)}  # fmt: skip
    evaluators = {"desc": {"type": "llm_judge", "prompt": "image-description"}}
    rows = rows_of(tmp_path, 8, 4)
    first = ve.evaluate(rows, evaluators=evaluators, judge=judge, output_dir=tmp_path / "first")
    assert first.exit_code == 0 and fresh_fake.calls == 4
    (described,) = first.run_info["scheduler"]["cache"]
    assert described == {"mode": "sqlite-rollback", "path": str(folder / "calls.sqlite"), "filesystem": "nfs4",
                         "why": "a network filesystem: WAL needs shared memory"}  # fmt: skip
    print_summary(first.summary, first.metrics, first.run_info)
    said = " ".join(capsys.readouterr().out.split())  # the console wraps long lines
    why = "a network filesystem: WAL needs shared memory"
    assert f"call cache: sqlite-rollback at {folder / 'calls.sqlite'} ({why})" in said
    with sqlite3.connect(folder / "calls.sqlite") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    assert not (folder / "calls.sqlite-wal").exists()
    second = ve.evaluate(rows, evaluators=evaluators, judge=judge, output_dir=tmp_path / "second")
    assert second.exit_code == 0 and fresh_fake.calls == 4 and second.run_info["scheduler"]["cache_hits"] == 8


@pytest.mark.parametrize("backend", BACKENDS)
def test_lookups_and_writes_in_flight_together_share_queries_and_transactions(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """400 calls of one event loop, each a lookup then a write, then 400 lookups of what was written: every answer
    is right, and the store ran them in a few batches, not one query or commit each."""
    store = store_for(cache_settings(backend, tmp_path, request), LEASE_S)

    async def main() -> list[Any]:
        async def one(i: int) -> None:
            assert await store.find(f"k{i}") == SEND
            await store.store(f"k{i}", "m", {"text": f"answer {i}"})

        await asyncio.gather(*(one(i) for i in range(400)))
        return await asyncio.gather(*(store.peek(f"k{i}") for i in range(400)))

    assert asyncio.run(main()) == [{"text": f"answer {i}"} for i in range(400)]
    ops, passes = store.batching
    store.close()
    assert ops == 1200 and passes <= ops / 10, (ops, passes)
