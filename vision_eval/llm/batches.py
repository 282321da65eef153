"""Batch mode (``judge.batch: true``): a model's calls collected into provider batch jobs, behind the scheduler.

:meth:`Scheduler.complete` hands a batch judge's request to :meth:`BatchRunner.request`, which returns when the
job carrying it has ended, so callers are the same as for live calls. A request joins its model's collector
(or the job that already carries it: an identical request of this run, or a job a killed run submitted); the
collector sends a job once it holds ``batch_size`` requests (or the provider's byte limit), or once no request
arrived for :data:`IDLE_S` seconds. The job id and the keys of its requests are saved (:class:`JobStore`, in the
run's checkpoint folder) before anything waits on it. A watcher polls the job every ``batch_poll_s``; when it
ends, every result goes to the run's journal and the persistent cache (a resume or a re-run gets it free),
waiting callers get theirs, and a failed request goes into the next job (``judge.max_retries``) or fails with
the provider's reason. A job running longer than ``batch_max_wait_h`` is cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
import warnings
from collections.abc import Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vision_eval.llm.batch_api import BatchApi, Outcome, _cancelled, _expired, batch_api_for, live_cost
from vision_eval.llm.batch_store import JobStore
from vision_eval.llm.prices import batch_prices
from vision_eval.llm.retry import backoff_delay
from vision_eval.llm.transport import CallError, CallResult, uses_direct

IDLE_S = 2.0
"""A collector holding fewer than ``batch_size`` requests sends them once none arrived for this long."""
CANCEL_GRACE_POLLS = 10
"""Status checks a cancelled job gets to end before its unfinished requests are given up."""


@dataclass
class JobCounts:
    """Batch jobs of this process: sent now, found running from an earlier attempt of the run, ended."""

    submitted: int = 0
    resumed: int = 0
    done: int = 0

    @property
    def running(self) -> int:
        return self.submitted + self.resumed - self.done


@dataclass
class Waiting:
    """One distinct request (by cache key) and every caller waiting for it."""

    key: str
    judge: Any
    messages: list[dict[str, Any]]
    params: dict[str, Any]
    counters: tuple[Any, ...]
    futures: list[asyncio.Future[CallResult]] = field(default_factory=list)
    entry: bytes | None = None
    """The request in the provider's batch format, until its job is sent."""
    job: str | None = None
    attempts: int = 0
    failures: list[str] = field(default_factory=list)
    cache: bool = True
    """Whether the result also goes to the persistent cache (the caller did not bypass it)."""


class Collector:
    """The requests of one model waiting to go out in the next job."""

    def __init__(self, runner: BatchRunner, judge: Any, api: BatchApi) -> None:
        self.runner, self.judge, self.api = runner, judge, api
        self.limit = max(1, min(judge.batch_size, api.max_requests))
        self.items: list[Waiting] = []
        self.bytes = 0
        self.last = 0.0
        self.idle_task: asyncio.Task[Any] | None = None

    def add(self, waiting: Waiting) -> None:
        size = len(waiting.entry or b"")
        if size > self.api.max_bytes:
            error = CallError(f"request of {size:,} bytes exceeds the {self.api.provider} batch limit", 413)
            self.runner.retry_or_fail(waiting, error)
            return
        if self.items and self.bytes + size > self.api.max_bytes:
            self.flush()
        self.items.append(waiting)
        self.bytes += size
        self.last = time.monotonic()
        if len(self.items) >= self.limit:
            self.flush()
        elif self.idle_task is None:
            self.idle_task = self.runner.spawn(self._idle())

    async def _idle(self) -> None:
        try:
            while self.items:
                wait = self.last + IDLE_S - time.monotonic()
                if wait <= 0:
                    self.flush()
                    break
                await asyncio.sleep(wait)
        finally:
            self.idle_task = None

    def flush(self) -> None:
        items, self.items, self.bytes = self.items, [], 0
        if items:
            self.runner.spawn(self.runner.submit(self.judge, self.api, items))


class BatchRunner:
    """The batch side of the run's scheduler (one per scheduler)."""

    def __init__(self, scheduler: Any) -> None:
        self.scheduler = scheduler
        self.store = JobStore()
        self.counts = JobCounts()
        self.price_source: dict[str, str] = {}
        self.live_fallback: dict[str, str] = {}
        self.bind()

    def use_store(self, directory: str | Path) -> None:
        """Keep submitted jobs in ``directory`` (the run's checkpoint folder), so a resumed run polls them."""
        self.store = JobStore(directory)

    def bind(self) -> None:
        """Fresh per-loop state (futures and tasks belong to one event loop)."""
        self._collectors: dict[tuple[str, str | None], Collector] = {}
        self._inflight: dict[str, Waiting] = {}
        self._watched: set[tuple[str, str | None]] = set()
        self._tasks: set[asyncio.Task[Any]] = set()

    def serves(self, judge: Any) -> bool:
        """True when the judge asks for batch mode and its provider has a batch API here (else: live, warned)."""
        if not getattr(judge, "batch", False):
            return False
        if batched(judge):
            return True
        model = str(judge.model)
        if model not in self.live_fallback:
            reason = "its provider has no batch API supported here (openai/, anthropic/ and gemini/ models do)"
            self.live_fallback[model] = reason
            warnings.warn(f"judge.batch: {model}: {reason}; its calls go live, at the live price", stacklevel=2)
            self._publish()
        return False

    def _publish(self) -> None:
        self.scheduler.stats.batch = self.summary()

    def summary(self) -> dict[str, Any]:
        """Jobs and prices for run.json (empty when batch mode was not used)."""
        if not (self.counts.submitted or self.counts.resumed or self.live_fallback):
            return {}
        counts = dataclasses.asdict(self.counts)
        return {"jobs": {**counts, "running": self.counts.running}, "price": dict(self.price_source),
                "live_fallback": dict(self.live_fallback)}  # fmt: skip

    def spawn(self, coroutine: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # --- requests -------------------------------------------------------------------------------------------
    async def request(
        self,
        judge: Any,
        key: str,
        messages: list[dict[str, Any]],
        params: dict[str, Any],
        counters: tuple[Any, ...],
        cache: bool = True,
    ) -> CallResult:
        """The result of one request sent in a batch job (``CallError`` with the provider's reason on failure);
        ``cache=False`` keeps its result out of the persistent cache (the run's journal always has it)."""
        api = _batch_api(str(judge.model))
        self._resume_jobs(judge, api)
        future: asyncio.Future[CallResult] = asyncio.get_running_loop().create_future()
        waiting = self._inflight.get(key)
        if waiting is None:
            journal = self.scheduler.journal
            done = journal.get(key) if journal is not None else None
            if done is not None:  # a job ended between the caller's journal check and now
                return CallResult.from_record(done, str(judge.model), cached=False, transport="journal")
            waiting = Waiting(key, judge, messages, params, counters, cache=cache)
            waiting.job = self.store.open_job_for(key)
            if waiting.job is None:
                waiting.entry = api.entry(judge, key, messages, params)  # CallError: the request cannot be batched
                self._inflight[key] = waiting
                self._collector(judge, api).add(waiting)
            else:  # sent by an earlier attempt of this run: wait for that job, never send it again
                waiting.attempts = 1
                self._inflight[key] = waiting
        waiting.futures.append(future)
        if str(judge.model) not in self.price_source:
            self.price_source[str(judge.model)] = _price_source(str(judge.model))
            self._publish()
        return await future

    def _collector(self, judge: Any, api: BatchApi) -> Collector:
        slot = (str(judge.model), judge.api_base)
        if slot not in self._collectors:
            self._collectors[slot] = Collector(self, judge, api)
        return self._collectors[slot]

    def _resume_jobs(self, judge: Any, api: BatchApi) -> None:
        """Watch the jobs an earlier attempt of this run submitted for this model (once per event loop)."""
        slot = (str(judge.model), judge.api_base)
        if slot in self._watched:
            return
        self._watched.add(slot)
        for job in self.store.open_jobs(str(judge.model), judge.api_base):
            self.counts.resumed += 1
            self.spawn(self._watch(judge, api, job.job_id, job.submitted))
        self._publish()

    async def submit(self, judge: Any, api: BatchApi, items: list[Waiting]) -> None:
        """Send one job; its id and keys are saved before anyone waits on it."""
        for waiting in items:
            waiting.attempts += 1
        try:
            job_id = await api.submit(judge, [w.entry or b"" for w in items])
        except CallError as error:
            for waiting in items:
                self.retry_or_fail(waiting, CallError(f"batch job not accepted: {error}", error.status,
                                                      error.retry_after))  # fmt: skip
            return
        except Exception as error:  # a bug here must fail the requests, never leave their callers waiting
            for waiting in items:
                self.retry_or_fail(waiting, _unexpected(error))
            return
        self.store.record(job_id, api.provider, str(judge.model), judge.api_base, [w.key for w in items])
        self.counts.submitted += 1
        self._publish()
        for waiting in items:
            waiting.entry, waiting.job = None, job_id
            for counter in waiting.counters:
                counter.batched += 1
        self.spawn(self._watch(judge, api, job_id, time.time()))

    # --- waiting for a job ----------------------------------------------------------------------------------
    async def _watch(self, judge: Any, api: BatchApi, job_id: str, submitted: float) -> None:
        try:
            outcomes, missing = await self._wait(judge, api, job_id, submitted)
        except Exception as error:  # a bug here must fail the requests, never leave their callers waiting
            outcomes, missing = {}, _unexpected(error)
        self._settle(judge, job_id, submitted, outcomes, missing)

    async def _call(self, judge: Any, action: Any) -> Any:
        """A status or results request, retried on transient errors like any call."""
        attempt = 0
        while True:
            attempt += 1
            try:
                return await action()
            except CallError as error:
                if not error.retryable or attempt > judge.max_retries:
                    raise
                await asyncio.sleep(backoff_delay(attempt, error.retry_after, self.scheduler.rng))

    async def _wait(
        self, judge: Any, api: BatchApi, job_id: str, submitted: float
    ) -> tuple[dict[str, Outcome], CallError]:
        """Poll until the job ends (cancelling it past ``batch_max_wait_h``); its outcomes, and the error of a
        request it has no outcome for."""
        deadline = submitted + judge.batch_max_wait_h * 3600
        cancelled: str | None = None
        grace = 0
        while True:
            try:
                status = await self._call(judge, lambda: api.poll(judge, job_id))
            except CallError as error:
                return {}, CallError(f"cannot read batch job {job_id}: {error}", error.status)
            if status.ended:
                break
            if cancelled is None and time.time() >= deadline:
                limit = f"judge.batch_max_wait_h={judge.batch_max_wait_h:g}h"
                cancelled = f"batch job {job_id} did not finish within {limit}"
                with contextlib.suppress(CallError):  # the job may have just ended; the next status check says
                    await self._call(judge, lambda: api.cancel(judge, job_id))
            elif cancelled is not None:
                grace += 1
                if grace > CANCEL_GRACE_POLLS:
                    return {}, _cancelled(f"{cancelled} and did not stop after being cancelled")
            left = deadline - time.time()
            await asyncio.sleep(min(judge.batch_poll_s, left) if left > 0 else judge.batch_poll_s)
        try:
            outcomes = await self._call(judge, lambda: api.results(judge, job_id, status))
        except CallError as error:
            return {}, CallError(f"cannot read the results of batch job {job_id}: {error}", error.status)
        if cancelled is not None:
            reason = _cancelled(f"{cancelled} (cancelled)")
            outcomes = {k: reason if isinstance(v, CallError) and v.status == 499 else v for k, v in outcomes.items()}
            return outcomes, reason
        if status.problem:
            failed = CallError(f"batch job {job_id} failed: {status.problem}", 400)
            failed.retryable = False
            return outcomes, failed
        if status.expired:
            return outcomes, _expired(f"batch job {job_id} {status.status}")
        return outcomes, CallError(f"batch job {job_id} ended ({status.status}) without a result for this request", 502)

    def _settle(
        self, judge: Any, job_id: str, submitted: float, outcomes: dict[str, Outcome], missing: CallError
    ) -> None:
        """Record a finished job's results (journal, cache, waiting callers) and retry or fail the rest."""
        model = str(judge.model)
        store = self.scheduler.cache_for(judge)
        elapsed = time.time() - submitted
        for key in self.store.keys_of(job_id):
            outcome = outcomes.get(key, missing)
            waiting = self._inflight.get(key)
            if waiting is not None and waiting.job != job_id:
                waiting = None  # this key is waiting for another job
            if isinstance(outcome, CallResult):
                result = dataclasses.replace(outcome, latency_s=elapsed)
                if waiting is not None:
                    result.attempts, result.failures = waiting.attempts, list(waiting.failures)
                self.scheduler.record(key, model, result, store if waiting is None or waiting.cache else None)
                self._count_cost(result, waiting)
                if waiting is not None:
                    self._resolve(waiting, result)
            elif waiting is not None:
                self.retry_or_fail(waiting, outcome)
        self.store.close(job_id)
        self.counts.done += 1
        self._publish()

    def _count_cost(self, result: CallResult, waiting: Waiting | None) -> None:
        live = live_cost(result)
        if result.cost_usd is None or live is None:
            return
        counters = waiting.counters if waiting is not None else (self.scheduler.stats,)
        for counter in counters:
            counter.batch_cost_usd += result.cost_usd
            counter.batch_live_cost_usd += live
        if waiting is None:  # paid by a killed attempt of this run: the budget learns of it now
            self.scheduler.budget.spent += result.cost_usd

    def _resolve(self, waiting: Waiting, result: CallResult) -> None:
        self._inflight.pop(waiting.key, None)
        first = True
        for future in waiting.futures:
            if future.done():
                continue
            # identical requests were sent once: the first caller pays, the others are answered as from a cache
            future.set_result(result if first else dataclasses.replace(result, cached=True, cost_usd=0.0))
            first = False

    def retry_or_fail(self, waiting: Waiting, error: CallError) -> None:
        """Send a failed request again in a later job (within ``max_retries``), else fail its callers."""
        waiting.failures.append(str(error))
        waiting.job = None
        judge = waiting.judge
        alive = any(not f.done() for f in waiting.futures)
        if error.retryable and waiting.attempts <= judge.max_retries and alive:
            for counter in waiting.counters:
                counter.retries += 1
            self.spawn(self._requeue(waiting, error))
            return
        self._inflight.pop(waiting.key, None)
        error.attempts = waiting.attempts
        error.failures = list(waiting.failures)
        for future in waiting.futures:
            if not future.done():
                future.set_exception(error)

    async def _requeue(self, waiting: Waiting, error: CallError) -> None:
        await asyncio.sleep(backoff_delay(waiting.attempts, error.retry_after, self.scheduler.rng))
        try:
            api = _batch_api(str(waiting.judge.model))
            waiting.entry = api.entry(waiting.judge, waiting.key, waiting.messages, waiting.params)
        except CallError as failed:
            failed.retryable = False
            self.retry_or_fail(waiting, failed)
            return
        self._collector(waiting.judge, api).add(waiting)


def batched(judge: Any) -> bool:
    """True when a judge's calls go to its provider's batch API (``batch: true`` and a provider that has one)."""
    if not getattr(judge, "batch", False) or getattr(judge, "model", None) is None:
        return False
    model = str(judge.model)
    return batch_api_for(model) is not None and not (uses_direct(judge) and not model.startswith("openai/"))


def _batch_api(model: str) -> BatchApi:
    api = batch_api_for(model)
    if api is None:  # the runner only serves judges whose provider has a batch API (``serves``)
        raise CallError(f"{model}: its provider has no batch API supported here", 400)
    return api


def joins_batch_jobs(judges: list[Any]) -> bool:
    """True when some of these judges batch (their rows must all be able to wait for a job at once)."""
    return any(batched(judge) for judge in judges)


def _unexpected(error: Exception) -> CallError:
    failed = CallError(f"batch mode failed unexpectedly: {type(error).__name__}: {error}", 500)
    failed.retryable = False
    return failed


def _price_source(model: str) -> str:
    prices = batch_prices(model)
    return prices[2] if prices is not None else "unknown (no price in litellm's map)"
