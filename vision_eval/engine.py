"""The engine: canonical batches in, finished parts out, batch by batch, with a bounded amount of work in flight, so
memory holds about two batches whatever the size of the dataset.

For each data batch, in dataset order: the candidate writes ``output`` (when the run has one), the batch's rows
are kept for samples.parquet, then every evaluator runs on it. Vectorized evaluators run one after another on one
worker thread (Polars spreads each over the cores; a per-row rule spreads a large batch over the process pool of
:mod:`vision_eval.rowwise`); async ones (model calls) run on the event loop in small
batches, a window of them in flight per evaluator. Each finished part goes to the ledger at once
(:mod:`vision_eval.parts`: a checkpoint folder, a temporary folder, or memory) and the batch is dropped. At most
``WINDOW_BATCHES`` data batches are in flight: while batch k's model calls run, batch k+1 is read (on a thread of
its own, so reading overlaps evaluating) and its vectorized evaluators run; batch k+2 waits until batch k is done.

One async driver runs it all; the threads are the engine's, not the evaluators' (so is the one that runs their
one-off warm-ups while the dataset loads, :func:`start_warm_ups`). What a batch guarantees (one row
per sample, bad rows isolated...) is in :mod:`vision_eval.batch_part`. Rows whose calls the budget refused are
``skipped``, and their part is kept for the outputs but not for a resume, which finishes them.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import threading
import time
from collections.abc import Awaitable, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

import polars as pl

from vision_eval.asyncio_runner import run_coroutine
from vision_eval.batch_part import aevaluate_batch, evaluate_batch, refusals
from vision_eval.data.canonical import samples_frame
from vision_eval.data.stream import describe_batches
from vision_eval.evaluator import Evaluator
from vision_eval.parts import Ledger

WINDOW_BATCHES = 2
"""Data batches in flight at once (read, evaluated, not yet finished by every evaluator)."""
ASYNC_BATCH_ROWS = 64
"""Most rows per batch of a model-graded evaluator (its calls are what progress and a resume count)."""
ASYNC_STEPS = 50
"""Fewest batches a model-graded evaluator's run is split into (when it has the rows), so progress moves."""
ASYNC_WINDOW_CALLS = 4
"""Batches of a model-graded evaluator in flight: enough rows for this many times the run's concurrency."""
UNBOUNDED = 1 << 30
"""The window when an evaluator's calls join provider batch jobs: a job is sent once its rows are in, so every
batch may wait for its job at once (those rows stay in memory until their jobs end)."""


class Reporter(Protocol):
    """What the engine tells about progress (see :class:`vision_eval.progress.Progress`)."""

    def begin(self, name: str) -> None: ...
    def advance_batch(self, name: str, results: pl.DataFrame) -> None: ...
    def end(self, name: str) -> None: ...


class _Silent:
    def begin(self, name: str) -> None:
        return None

    def advance_batch(self, name: str, results: pl.DataFrame) -> None:
        return None

    def end(self, name: str) -> None:
        return None


def _identity(frame: pl.DataFrame) -> pl.DataFrame:
    return frame


@dataclass
class StackRun:
    """What the engine did: the parts (in the ledger), per evaluator its time and the parts a resume reused, and
    the evaluated rows' counts for run.json."""

    ledger: Ledger
    seconds: dict[str, float]
    """Per evaluator: time spent on its batches (vectorized: summed; async: first start to last end)."""
    resumed_batches: dict[str, int]
    dataset: dict[str, Any] = field(default_factory=dict)
    """``rows``, ``images`` and ``columns`` of the evaluated rows."""


@dataclass
class _Track:
    """One evaluator's batch size, window and counters."""

    evaluator: Evaluator
    size: int
    window: asyncio.Semaphore | None = None
    seconds: float = 0.0
    first: float | None = None
    last: float | None = None
    resumed: int = 0

    def elapsed(self) -> float:
        if not self.evaluator.is_async:
            return self.seconds
        return (self.last - self.first) if self.first is not None and self.last is not None else 0.0


def _joins_batch_jobs(evaluator: Evaluator) -> bool:
    if not evaluator.calls_models or not any(getattr(m, "batch", False) for m in evaluator.models()):
        return False
    from vision_eval.llm.batches import joins_batch_jobs

    return joins_batch_jobs(evaluator.models())


def _track(evaluator: Evaluator, total: int, batch_size: int) -> _Track:
    if not evaluator.is_async:
        return _Track(evaluator, batch_size)
    size = batch_size
    if evaluator.calls_models and evaluator.models():  # without a judge nothing is sent: one batch, no fixed costs
        size = max(1, min(batch_size, ASYNC_BATCH_ROWS, math.ceil(total / ASYNC_STEPS)))
    concurrency = getattr(evaluator.context.run, "concurrency", 16) if evaluator.context.run is not None else 16
    window = max(3, math.ceil(ASYNC_WINDOW_CALLS * concurrency / size) + 1)
    return _Track(evaluator, size, asyncio.Semaphore(UNBOUNDED if _joins_batch_jobs(evaluator) else window))


class _Driver:
    """Runs every evaluator over every batch (see the module docstring)."""

    def __init__(
        self,
        evaluators: list[Evaluator],
        ledger: Ledger,
        total: int,
        batch_size: int,
        progress: Reporter,
        scrub: Callable[[pl.DataFrame], pl.DataFrame],
        prepare: Callable[[pl.DataFrame], Awaitable[pl.DataFrame]] | None,
        fault: Callable[[], BaseException | None],
    ) -> None:
        self.evaluators, self.ledger = evaluators, ledger
        self.total, self.batch_size = total, batch_size
        self.progress, self.scrub, self.prepare, self.fault = progress, scrub, prepare, fault
        self.tracks: dict[str, _Track] = {}
        self.dataset: dict[str, Any] = {"rows": 0, "images": 0, "columns": []}
        self.stopping = False
        """Set when a batch failed or the run was interrupted: the worker starts no further batch."""

    async def run(self, batches: Iterable[pl.DataFrame], session: Any = None) -> None:
        self.tracks = {e.name: _track(e, max(self.total, 1), self.batch_size) for e in self.evaluators}
        waits_for_jobs = any(_joins_batch_jobs(e) for e in self.evaluators if e.is_async)
        slots = asyncio.Semaphore(UNBOUNDED if waits_for_jobs else WINDOW_BATCHES)
        compute = ThreadPoolExecutor(1, thread_name_prefix="vision-eval-evaluate")
        reader = ThreadPoolExecutor(1, thread_name_prefix="vision-eval-read")
        loop = asyncio.get_running_loop()
        rows = iter(batches)
        for evaluator in self.evaluators:
            self.progress.begin(evaluator.name)
        try:
            async with session if session is not None else contextlib.nullcontext(), asyncio.TaskGroup() as group:
                index = 0
                while True:
                    await slots.acquire()
                    batch = await loop.run_in_executor(reader, next, rows, None)
                    if batch is None:
                        break
                    group.create_task(self._batch(index, batch, slots, compute))
                    index += 1
        except* Exception as failure:  # a task failed: the group cancelled the others; raise what it raised
            raise failure.exceptions[0] from None
        finally:
            self.stopping = True
            compute.shutdown(wait=True, cancel_futures=True)  # a running batch finishes (and is saved) first
            reader.shutdown(wait=True, cancel_futures=True)
        for evaluator in self.evaluators:
            self.progress.end(evaluator.name)

    async def _batch(self, index: int, batch: pl.DataFrame, slots: asyncio.Semaphore, compute: Any) -> None:
        try:
            if self.prepare is not None:
                batch = await self.prepare(batch)
            describe_batches(self.dataset, batch)
            self.ledger.put_samples(index, samples_frame(batch))
            loop = asyncio.get_running_loop()
            work: list[Awaitable[Any]] = [loop.run_in_executor(compute, self._vectorized, index, batch)]
            work += [self._async(self.tracks[e.name], index, batch) for e in self.evaluators if e.is_async]
            await asyncio.gather(*work)
        finally:
            slots.release()

    def _vectorized(self, index: int, batch: pl.DataFrame) -> None:
        """Every vectorized evaluator on ``batch``, each part saved before the next starts (on the worker thread);
        after a failure (an interrupt raised by an evaluator...) no further batch starts."""
        if self.stopping:
            return
        try:
            self._vectorized_all(index, batch)
        except BaseException:
            self.stopping = True
            raise

    def _vectorized_all(self, index: int, batch: pl.DataFrame) -> None:
        for evaluator in self.evaluators:
            if evaluator.is_async:
                continue
            track = self.tracks[evaluator.name]
            start = time.perf_counter()
            results = self.ledger.reuse(evaluator, (index, 0), batch)
            if results is None:
                part = evaluate_batch(evaluator, batch)
                part.results = self.scrub(part.results)
                self.ledger.put(evaluator, (index, 0), batch, part)
                self._check()
                results = part.results
            else:
                track.resumed += 1
            track.seconds += time.perf_counter() - start
            self.progress.advance_batch(evaluator.name, results)

    def _check(self) -> None:
        """Stop the run when something outside the parts failed for good (the call journal's disk)."""
        failure = self.fault()
        if failure is not None:
            raise failure

    async def _async(self, track: _Track, index: int, batch: pl.DataFrame) -> None:
        pieces = [batch.slice(start, track.size) for start in range(0, batch.height, track.size)]
        await asyncio.gather(*(self._async_piece(track, (index, n), piece) for n, piece in enumerate(pieces)))

    async def _async_piece(self, track: _Track, order: tuple[int, int], piece: pl.DataFrame) -> None:
        evaluator = track.evaluator
        assert track.window is not None
        async with track.window:
            now = time.perf_counter()
            track.first = now if track.first is None else track.first
            results = self.ledger.reuse(evaluator, order, piece)
            if results is None:
                part = await aevaluate_batch(evaluator, piece)
                part.results, refused = refusals(self.scrub(part.results))
                self.ledger.put(evaluator, order, piece, part, final=not refused)
                self._check()
                results = part.results
            else:
                track.resumed += 1
            track.last = time.perf_counter()
        self.progress.advance_batch(evaluator.name, results)


def start_warm_ups(evaluators: Iterable[Evaluator]) -> threading.Thread:
    """Every evaluator's :meth:`~vision_eval.evaluator.Evaluator.warm_up`, one after another on a thread of the run's
    own, started now (while the dataset loads). Not a daemon: a process that exits at once (a config error right
    after the stack is built) waits for it, since a daemon thread inside DuckDB at interpreter shutdown aborts the
    process (exit -6)."""

    def warm() -> None:
        for evaluator in evaluators:
            try:
                evaluator.warm_up()
            except Exception:  # only a head start: the batch that needs the work reports the error
                continue

    thread = threading.Thread(target=warm, name="vision-eval-warm-up", daemon=False)
    thread.start()
    return thread


def run_stack(
    evaluators: list[Evaluator],
    batches: Iterable[pl.DataFrame],
    ledger: Ledger,
    *,
    total: int,
    batch_size: int,
    progress: Reporter | None = None,
    scrub: Callable[[pl.DataFrame], pl.DataFrame] = _identity,
    prepare: Callable[[pl.DataFrame], Awaitable[pl.DataFrame]] | None = None,
    session: Callable[[], contextlib.AbstractAsyncContextManager[Any]] | None = None,
    fault: Callable[[], BaseException | None] = lambda: None,
) -> StackRun:
    """Every evaluator over every batch (``total`` rows in all), each finished part handed to ``ledger``.

    ``prepare``: what a batch goes through first (the candidate writing ``output``); ``session``: a context held
    open while the batches run (the scheduler's transports); ``fault``: checked after each part is saved, what
    must stop the run (raised) when there is one."""
    driver = _Driver(evaluators, ledger, total, batch_size, progress or _Silent(), scrub, prepare, fault)

    async def drive() -> None:
        await driver.run(batches, session() if session is not None else None)

    run_coroutine(drive)
    seconds = {name: round(track.elapsed(), 4) for name, track in driver.tracks.items()}
    resumed = {name: track.resumed for name, track in driver.tracks.items()}
    return StackRun(ledger, seconds, resumed, driver.dataset)
