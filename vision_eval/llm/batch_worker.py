"""One thread that runs a store's operations in batches, off the event loop.

Callers on any event loop :meth:`BatchWorker.submit` an operation and await its future; the thread takes every
operation queued since its last pass and hands them to ``run`` at once (one query for many lookups, one
transaction for many writes), then settles each future on its own loop. While the store waits on a lock held
by another process, only this thread waits: the event loop goes on serving other calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MAX_BATCH = 2000
"""Most operations run in one pass (bounds one transaction's size)."""
DRAINED = "drained"
"""A marker op of :meth:`BatchWorker.drain`: set once the operations queued before it have run."""


@dataclass
class Op:
    """One queued operation: its kind, its argument and where its answer goes."""

    kind: str
    arg: Any
    future: asyncio.Future[Any] | None = None
    loop: asyncio.AbstractEventLoop | None = None


def _settle(future: asyncio.Future[Any], outcome: Any) -> None:
    if future.done():  # the caller was cancelled meanwhile
        return
    if isinstance(outcome, BaseException):
        future.set_exception(outcome)
    else:
        future.set_result(outcome)


def _settle_all(settled: list[tuple[asyncio.Future[Any], Any]]) -> None:
    for future, outcome in settled:
        _settle(future, outcome)


class BatchWorker:
    """Runs ``run(ops) -> outcomes`` (one outcome per op, in order: a value or the exception it raises) on one
    daemon thread, for every operation queued since the last pass. ``run`` is a method of the store, held
    weakly: the thread keeps no store (nor its database connection) alive, and a forgotten store's thread
    ends when the store is collected."""

    def __init__(self, run: Callable[[list[Op]], list[Any]], name: str) -> None:
        self._run = weakref.WeakMethod(run)
        self._queue: queue.SimpleQueue[Op | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()
        self.passes = 0
        """Passes made (each one query or transaction): with ``ops`` it shows how well operations batch."""
        self.ops = 0

    def submit(self, kind: str, arg: Any) -> asyncio.Future[Any]:
        """Queue an operation; its future is settled on the running loop."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._queue.put(Op(kind, arg, future, loop))
        return future

    def post(self, kind: str, arg: Any) -> None:
        """Queue an operation nobody waits for (it still runs before :meth:`close` returns)."""
        self._queue.put(Op(kind, arg))

    def drain(self, timeout: float | None = None) -> bool:
        """Wait until every operation queued before this call has run; False when that takes over ``timeout``."""
        if not self._thread.is_alive() or self._thread is threading.current_thread():
            return not self._thread.is_alive()
        done = threading.Event()
        self._queue.put(Op(DRAINED, done))
        return done.wait(timeout)

    def stop(self) -> None:
        """Let the thread end once it has run what is queued (without waiting for it)."""
        self._queue.put(None)

    def close(self, timeout: float | None = None) -> bool:
        """Run what is queued, then stop the thread; False when it is still busy after ``timeout`` seconds."""
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._queue.put(None)
            self._thread.join(timeout)
        return not self._thread.is_alive()

    def _serve(self) -> None:
        stopping = False
        while not stopping:
            first = self._queue.get()
            if first is None:
                return
            ops = [first]
            while len(ops) < MAX_BATCH:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    stopping = True
                    break
                ops.append(more)
            markers = [op.arg for op in ops if op.kind == DRAINED]
            ops = [op for op in ops if op.kind != DRAINED]
            if not ops:
                for marker in markers:
                    marker.set()
                continue
            run = self._run()
            try:
                if run is None:
                    raise RuntimeError("the call store was closed")
                outcomes = run(ops)
            except Exception as exc:  # a fault of the whole pass: every caller of it hears of it
                outcomes = [exc] * len(ops)
            self.passes += 1
            self.ops += len(ops)
            by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[Any], Any]]] = {}
            for op, outcome in zip(ops, outcomes, strict=True):
                if op.future is not None and op.loop is not None:
                    by_loop.setdefault(op.loop, []).append((op.future, outcome))
            for loop, settled in by_loop.items():  # one wake-up of each loop per pass, not one per operation
                with contextlib.suppress(RuntimeError):  # that loop has closed: nobody is waiting any more
                    loop.call_soon_threadsafe(_settle_all, settled)
            for marker in markers:
                marker.set()
