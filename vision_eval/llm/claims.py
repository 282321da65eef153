"""What the call cache's stores share: batched operations off the event loop, and claims on calls in flight.

Jobs of one sweep often send the same request at the same time. Before sending, a process *claims* the call's
key in the shared store (a row or a key with a lease); another process that finds the claim waits and reads
the answer from the store once the claimer wrote it. The claimer's event loop renews its leases every third
of ``lease_s``, so a claim lapses when its process dies or stalls; a claim whose holder ran on this host and
whose pid is gone is taken over at once. A claimer whose call fails releases the claim, and the next waiter
sends, and a waiter that has waited ``max_wait_s`` sends the call itself. Every way out of a wait ends in an
answer or in sending: nothing waits for ever.

A store (:class:`ClaimingStore`) runs its operations on one thread (:mod:`vision_eval.llm.batch_worker`):
many lookups in one query, many writes in one transaction.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import os
import socket
import time
import uuid
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vision_eval.llm.batch_worker import BatchWorker, Op

LEASE_S = 30.0
"""How long a claim holds without renewal: a claimer that died or stalled is replaced after this long."""
FIRST_POLL_S = 0.05
MAX_POLL_S = 1.0
"""A waiter looks again after 50 ms, then twice as long each time, at most every second."""

FIND, PEEK, PUT, RELEASE, RENEW = "find", "peek", "put", "release", "renew"


@dataclass(frozen=True)
class Found:
    """What a lookup of a key found: the stored answer, or else whether this process is to send the call."""

    value: dict[str, Any] | None = None
    """The stored answer (a cache hit)."""
    holder: str | None = None
    """Another live process that claimed the call and is sending it: wait, then look again."""


SEND = Found()
"""Not stored and not claimed by anyone else: send it (holding the claim where the store keeps claims)."""


def _pid_namespace() -> str:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""


HOST = f"{socket.gethostname()}:{_pid_namespace()}"
"""Processes with the same ``HOST`` see each other's pids."""


def new_owner() -> str:
    """A claim owner's name: its host, its pid and a token unique to one store object."""
    return f"{HOST}|{os.getpid()}|{uuid.uuid4().hex[:12]}"


def provably_dead(owner: str) -> bool:
    """True when ``owner`` ran on this host and its process is gone (a zombie counts as gone)."""
    host, _, rest = owner.partition("|")
    pid_text = rest.partition("|")[0]
    if host != HOST or not pid_text.isdigit() or int(pid_text) == os.getpid():
        return False
    pid = int(pid_text)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[:1] == ["Z"]


class ClaimingStore:
    """The asynchronous face of a call store: :meth:`find`, :meth:`store`, :meth:`release`, batched on one
    thread, with leases kept alive for the claims this process holds. A subclass runs a pass of operations in
    :meth:`run_ops` (one outcome per op, in order)."""

    mode = ""
    """How the store shares its data (``sqlite-wal``, ``sqlite-rollback``, ``redis``), for run.json and the
    console."""
    claims = True
    """Whether lookups claim missing keys (a run's own journal does not)."""

    def __init__(self, lease_s: float = LEASE_S) -> None:
        self.lease_s = lease_s
        self.owner = new_owner()
        self.hits = 0
        self.misses = 0
        self.writes = 0
        self.refused = 0
        """Writes the store could not make (counted where they fail, whether or not anyone still awaits them)."""
        self._worker: BatchWorker | None = None
        self._held: set[str] = set()
        self._beating: asyncio.Task[None] | None = None

    def run_ops(self, ops: list[Op]) -> list[Any]:
        raise NotImplementedError

    def put(self, key: str, model: str, value: dict[str, Any]) -> None:
        """Store ``value`` at once, in the caller's thread (batch jobs' results)."""
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        """Where the store is and which mode it chose (run.json ``scheduler.cache``)."""
        return {"mode": self.mode}

    @property
    def worker(self) -> BatchWorker:
        if self._worker is None:
            self._worker = BatchWorker(self.run_ops, f"vision-eval {self.mode} cache")
            weakref.finalize(self, self._worker.stop)
            _OPEN.add(self)
        return self._worker

    @property
    def batching(self) -> tuple[int, int]:
        """(operations, passes) so far: how many operations each query or transaction carried."""
        return (self._worker.ops, self._worker.passes) if self._worker else (0, 0)

    async def find(self, key: str) -> Found:
        """The stored answer, or :data:`SEND` (this process now holds the claim), or the live holder to wait for."""
        found: Found = await self.worker.submit(FIND, key)
        if found.value is not None:
            self.hits += 1
        elif found.holder is None:
            self.misses += 1
            if self.claims:
                self._hold(key)
        return found

    async def peek(self, key: str) -> dict[str, Any] | None:
        """The stored answer, or ``None`` (claims nothing)."""
        found: Found = await self.worker.submit(PEEK, key)
        if found.value is not None:
            self.hits += 1
        return found.value

    async def store(self, key: str, model: str, value: dict[str, Any]) -> None:
        """Store ``value`` and give up the claim on ``key``. A write the disk refuses is
        :class:`~vision_eval.errors.OutputsNotWritten`."""
        text = json.dumps(value, ensure_ascii=False, default=str)
        try:
            await self.worker.submit(PUT, (key, model, text))
        finally:
            self._held.discard(key)
        self.writes += 1

    def release(self, key: str) -> None:
        """Give up the claim on ``key`` without an answer (the call failed or was not sent): a waiter sends it."""
        if key in self._held:
            self._held.discard(key)
            self.worker.post(RELEASE, key)

    def drain(self, timeout: float | None = None) -> bool:
        """Wait until the operations queued so far have run (False after ``timeout`` seconds)."""
        return self._worker.drain(timeout) if self._worker is not None else True

    def close(self, timeout: float | None = None) -> bool:
        """Finish queued operations and give up every claim still held; False when the store's thread is still
        busy (waiting on another process's lock) after ``timeout`` seconds."""
        if self._worker is None:
            return True
        for key in self._held:
            self._worker.post(RELEASE, key)
        self._held.clear()
        done = self._worker.close(timeout)
        self._worker = None
        _OPEN.discard(self)
        return done

    def _hold(self, key: str) -> None:
        self._held.add(key)
        if self._beating is None or self._beating.done():
            self._beating = asyncio.get_running_loop().create_task(self._beat())

    async def _beat(self) -> None:
        """Renew this process's leases while it holds claims (from the event loop: a stalled loop lets them lapse)."""
        while self._held:
            await asyncio.sleep(self.lease_s / 3)
            if self._held:
                await self.worker.submit(RENEW, sorted(self._held))


_OPEN: weakref.WeakSet[ClaimingStore] = weakref.WeakSet()
"""Stores whose thread runs: closed when the interpreter exits, so queued writes and releases are not lost."""


@atexit.register
def _close_open_stores() -> None:
    for store in list(_OPEN):
        store.close(timeout=5)


MAX_WAIT_S = 600.0
"""How long a waiter waits for a live claimer by default (``judge.cache_wait_s``) before sending itself."""


async def find_or_wait(store: ClaimingStore, key: str, max_wait_s: float = MAX_WAIT_S) -> tuple[Found, bool]:
    """Look ``key`` up; while another live process holds its claim, wait and look again, for at most
    ``max_wait_s`` seconds (then :data:`SEND` without the claim: the call is sent twice rather than never).
    Returns what was found (an answer, or :data:`SEND`) and whether it waited for another process."""
    delay, waited = FIRST_POLL_S, False
    deadline = time.monotonic() + max_wait_s
    while True:
        found = await store.find(key)
        if found.holder is None:
            return found, waited
        left = deadline - time.monotonic()
        if left <= 0:
            return SEND, waited
        waited = True
        await asyncio.sleep(min(delay, left))
        delay = min(delay * 2, MAX_POLL_S)
