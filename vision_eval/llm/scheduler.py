"""The engine-wide scheduler every model call goes through.

Global and per-model concurrency limits, an RPM/TPM limiter, retries with exponential backoff and
jitter that honour ``Retry-After`` up to ``judge.max_retry_after_s`` (429, 5xx, timeouts, connection
resets), the run's budget (:mod:`vision_eval.llm.budget`), a circuit breaker per model, the run's call
journal (every finished call of this run, so a resumed run never sends it again, cache or not), the
persistent cache, and counters for run.json (run-wide and per caller). A judge with ``batch: true`` has its
calls sent in provider batch jobs instead (:mod:`vision_eval.llm.batches`); callers see no difference.
Get the run's instance with
:func:`get_scheduler` (an ``EvalContext`` service) and call :meth:`Scheduler.complete` inside
``async with scheduler.session():``.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vision_eval.errors import OutputsNotWritten
from vision_eval.llm.budget import CIRCUIT_BREAKER, STOPPED, Budget, NotAttempted, estimate_cost
from vision_eval.llm.cache import CallCache, CallJournal, cache_key
from vision_eval.llm.retry import backoff_delay
from vision_eval.llm.transport import CallError, CallResult, DirectOpenAI, LiteLLMTransport, uses_direct

if TYPE_CHECKING:
    from vision_eval.evaluator import EvalContext
    from vision_eval.llm.batches import BatchRunner

SERVICE = "llm_scheduler"
HOPELESS_STATUS = {400, 401, 403, 404, 422}
"""Final failures that say the model cannot be used as configured (they trip the circuit breaker)."""


class RateLimiter:
    """Sliding 60-second window over requests and tokens."""

    def __init__(self, rpm: int | None, tpm: int | None, clock: Any = time.monotonic) -> None:
        self.rpm, self.tpm = rpm, tpm
        self.clock = clock
        self.events: deque[tuple[float, int]] = deque()
        self.lock = asyncio.Lock()

    def _wait_needed(self, tokens: int) -> float:
        now = self.clock()
        while self.events and now - self.events[0][0] >= 60.0:
            self.events.popleft()
        waits = [0.0]
        if self.rpm and len(self.events) >= self.rpm:
            waits.append(60.0 - (now - self.events[len(self.events) - self.rpm][0]))
        if self.tpm and self.events:
            used = sum(t for _, t in self.events)
            if used + tokens > self.tpm:
                running = used
                for stamp, spent in self.events:  # wait until enough old tokens leave the window
                    running -= spent
                    if running + tokens <= self.tpm:
                        waits.append(60.0 - (now - stamp))
                        break
        return max(waits)

    async def acquire(self, tokens: int = 0) -> float:
        """Wait until a call of ``tokens`` fits; returns the seconds waited."""
        if not self.rpm and not self.tpm:
            return 0.0
        waited = 0.0
        async with self.lock:
            while (delay := self._wait_needed(tokens)) > 0:
                await asyncio.sleep(delay)
                waited += delay
            self.events.append((self.clock(), tokens))
        return waited


@dataclass
class _ModelState:
    semaphore: asyncio.Semaphore
    limiter: RateLimiter
    consecutive_failures: int = 0
    tripped: str | None = None
    """Why the circuit breaker stopped calling this model (``None`` while it is closed)."""


@dataclass
class SchedulerStats:
    """Counters reported in run.json (run-wide once, and per caller: an evaluator or the candidate)."""

    calls: int = 0
    """HTTP requests sent (every attempt)."""
    cache_hits: int = 0
    journal_hits: int = 0
    """Calls answered by this run's journal (finished before a resume)."""
    retries: int = 0
    failures: int = 0
    """Calls that failed after their retries (or at once, when not retryable)."""
    not_attempted: int = 0
    """Calls refused by the budget or a circuit breaker."""
    rate_limited_s: float = 0.0
    resent: int = 0
    """Calls sent (and paid) again although an earlier attempt of this run had finished them: their records
    were lost with a damaged journal (a resume with ``run.resume_damaged``)."""
    cache_write_failures: int = 0
    """Finished calls the persistent cache could not store (its disk refused the write)."""
    by_transport: dict[str, int] = field(default_factory=dict)
    batched: int = 0
    """Requests sent inside provider batch jobs (every attempt; not counted in ``calls``)."""
    batch_cost_usd: float = 0.0
    """What the batched requests cost, at the batch price (requests with a known price)."""
    batch_live_cost_usd: float = 0.0
    """What the same requests would have cost as live calls."""
    batch: dict[str, Any] = field(default_factory=dict)
    """Run-wide only: batch jobs (submitted, resumed, done, running), where each model's batch price comes from,
    and the models that fell back to live calls."""

    def as_dict(self) -> dict[str, Any]:
        out = {**self.__dict__, "rate_limited_s": round(self.rate_limited_s, 3)}
        if not (self.batched or self.batch or self.batch_cost_usd):
            for name in ("batched", "batch_cost_usd", "batch_live_cost_usd", "batch"):
                out.pop(name)
            return out
        out["batch_saving_usd"] = self.batch_live_cost_usd - self.batch_cost_usd
        return out


def _hopeless(error: CallError) -> bool:
    """A final failure that says the model cannot be used as configured (not a passing fault)."""
    return error.hopeless or error.status in HOPELESS_STATUS or error.status is None


class Scheduler:
    """Runs model calls for the whole run (one instance per run, shared by all evaluators)."""

    def __init__(self, concurrency: int = 16, seed: int = 0) -> None:
        self.concurrency = max(1, concurrency)
        self.stats = SchedulerStats()
        self.by_owner: dict[str, SchedulerStats] = {}
        self.rng = random.Random(seed)
        self.direct = DirectOpenAI()
        self.litellm = LiteLLMTransport()
        self.budget = Budget(None)
        self.journal: CallCache | None = None
        self._caches: dict[str, CallCache] = {}
        self._loop: Any = None
        self._global: asyncio.Semaphore | None = None
        self._models: dict[tuple[str, str | None], _ModelState] = {}
        self._tripped: dict[str, str] = {}
        self._sessions = 0
        self._batches: BatchRunner | None = None
        self._journal_dir: str | Path | None = None
        self._lost: set[str] = set()
        self.unjournaled = 0
        """Finished calls the journal could not record (a resume sends those outside a saved batch again)."""
        self.fault: OutputsNotWritten | None = None
        """Set when the run's journal could not record a finished call: the run must stop (see :meth:`record`)."""

    @property
    def batches(self) -> BatchRunner:
        """The batch side of the scheduler (imported and created when a judge first asks for batch mode)."""
        if self._batches is None:
            from vision_eval.llm.batches import BatchRunner

            self._batches = BatchRunner(self)
            if self._journal_dir is not None:
                self._batches.use_store(self._journal_dir)
        return self._batches

    def use_journal(self, path: str | Path, budget: float | None = None, lost: set[str] | None = None) -> None:
        """Record every finished call in ``path`` (answered from there on a resume) and cap spending at
        ``budget`` dollars, counting what earlier attempts of this run already spent; submitted batch jobs are
        kept there too (a resume polls them instead of sending their requests again). ``lost``: keys of calls an
        earlier attempt finished whose records a damaged journal lost; each one sent again is counted
        (``resent``)."""
        self.journal = CallJournal(path)
        self._lost = set(lost or ())
        self.budget = Budget(budget, spent=self.journal.total_cost())
        self._journal_dir = path
        if self._batches is not None:
            self._batches.use_store(path)

    def rows_in_flight(self, judges: list[Any]) -> int:
        """How many rows a caller prepares and keeps waiting at once: twice the concurrency for live calls
        (bounds the prepared images held in memory); no bound when a judge batches (a job is only sent once
        its requests are in, so every row must be able to join one)."""
        if any(getattr(judge, "batch", False) and self.batches.serves(judge) for judge in judges):
            return 1 << 30
        return self.concurrency * 2

    def batch_jobs(self) -> Any:
        """Counts of this run's batch jobs (``None`` before the first one), for the progress line."""
        if self._batches is None:
            return None
        counts = self._batches.counts
        return counts if counts.submitted or counts.resumed else None

    @property
    def tripped(self) -> dict[str, str]:
        """Models the circuit breaker stopped calling, with the failure that tripped it."""
        return dict(self._tripped)

    def _bind_loop(self) -> None:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # asyncio primitives belong to one loop; a new run gets fresh ones
            self._loop = loop
            self._global = asyncio.Semaphore(self.concurrency)
            self._models = {}
            self.budget.bind()
            if self._batches is not None:
                self._batches.bind()

    def _model_state(self, judge: Any) -> _ModelState:
        key = (str(judge.model), judge.api_base)
        if key not in self._models:
            self._models[key] = _ModelState(
                asyncio.Semaphore(max(1, judge.max_concurrency)), RateLimiter(judge.rpm, judge.tpm)
            )
            tripped = self._tripped.get(str(judge.model))
            self._models[key].tripped = tripped
        return self._models[key]

    def _counters(self, owner: str | None) -> tuple[SchedulerStats, ...]:
        if owner is None:
            return (self.stats,)
        return (self.stats, self.by_owner.setdefault(owner, SchedulerStats()))

    def stats_for(self, owner: str) -> dict[str, Any]:
        """The counters of one caller (an evaluator's name, or ``candidate``)."""
        return self.by_owner.get(owner, SchedulerStats()).as_dict()

    def cache_for(self, judge: Any) -> CallCache | None:
        """The persistent cache for a judge (``None`` when ``cache: false``)."""
        if not judge.cache:
            return None
        key = judge.cache_dir or ""
        if key not in self._caches:
            self._caches[key] = CallCache(judge.cache_dir)
        return self._caches[key]

    @asynccontextmanager
    async def session(self) -> AsyncIterator[Scheduler]:
        """Keep transports open while calls run (reference-counted; the last one out closes them)."""
        self._bind_loop()
        self._sessions += 1
        if self._sessions == 1:
            await self.direct.open(self.concurrency)
        try:
            yield self
        finally:
            self._sessions -= 1
            if self._sessions == 0:
                await self.direct.close()

    def params_of(self, judge: Any, extra: dict[str, Any] | None = None) -> dict[str, Any]:
        """Completion parameters sent (and hashed into the cache key)."""
        params: dict[str, Any] = {"temperature": judge.temperature}
        if judge.max_tokens is not None:
            params["max_tokens"] = judge.max_tokens
        params.update(judge.params or {})
        params.update(extra or {})
        return params

    async def complete(
        self,
        judge: Any,
        messages: list[dict[str, Any]],
        *,
        params: dict[str, Any] | None = None,
        estimated_tokens: int = 0,
        cache: bool | None = None,
        key_extra: dict[str, Any] | None = None,
        owner: str | None = None,
        batch: bool = True,
    ) -> CallResult:
        """One call with limits, retries, budget, journal and cache. Raises ``CallError`` when every attempt
        failed, ``NotAttempted`` (a ``CallError``) when the budget or the model's circuit breaker refused it.
        A judge with ``batch: true`` sends it in a provider batch job unless ``batch=False`` (a live call).

        ``params`` are extra completion parameters (e.g. ``{"logprobs": True, "top_logprobs": 5}``);
        ``key_extra`` goes into the cache key only (e.g. ``{"sample": k}`` so k samples of the same
        request at temperature > 0 are k distinct entries); ``cache=False`` bypasses the persistent cache
        (never the run's journal); ``owner`` names the caller in the per-caller counters.
        """
        self._bind_loop()
        counters = self._counters(owner)
        sent = self.params_of(judge, params)
        store = self.cache_for(judge) if cache is not False else None
        batched = batch and getattr(judge, "batch", False) and self.batches.serves(judge)
        key = None
        if store is not None or self.journal is not None or batched:
            hashed = {**sent, "_key_extra": key_extra} if key_extra else sent
            key = cache_key(str(judge.model), judge.api_base, hashed, messages)
        if self.journal is not None and key is not None:
            done = self.journal.get(key)
            if done is not None:
                for c in counters:
                    c.journal_hits += 1
                return CallResult.from_record(done, str(judge.model), cached=False, transport="journal")
        if store is not None and key is not None:
            hit = store.get(key)
            if hit is not None:
                for c in counters:
                    c.cache_hits += 1
                return CallResult.from_record(hit, str(judge.model), cached=True, transport="cache")
        state = self._model_state(judge)
        estimate = estimate_cost(judge, estimated_tokens, sent, batched) if self.budget.limit is not None else None
        try:
            if batched:
                assert key is not None
                return await self._batched(judge, messages, sent, key, state, counters, estimate or 0.0, cache)
            result = await self._attempts(judge, messages, sent, state, counters, estimated_tokens, estimate or 0.0)
        except NotAttempted:
            for c in counters:
                c.not_attempted += 1
            raise
        except CallError as error:
            for c in counters:
                c.failures += 1
            self._record_failure(judge, state, error)
            raise
        state.consecutive_failures = 0
        if key is not None:
            self._count_resent(key, counters)
            self.record(key, str(judge.model), result, store)
        return result

    def _count_resent(self, key: str, counters: tuple[SchedulerStats, ...]) -> None:
        """Count a call that an earlier attempt of this run had finished (its journal record was lost)."""
        if key in self._lost:
            self._lost.discard(key)
            for c in counters:
                c.resent += 1

    def record(self, key: str, model: str, result: CallResult, store: CallCache | None) -> None:
        """Keep a finished call in the run's journal and in the persistent cache ``store``. Neither failure
        costs the call's answer, which the caller still gets: a journal the disk refuses is the run's
        :attr:`fault` (the engine stops the run at its next part, exit 3); a cache write that fails is
        counted (``cache_write_failures``) and the run goes on."""
        if self.journal is not None:
            try:
                self.journal.put(key, model, result.to_record())
            except OutputsNotWritten as exc:
                self.fault = self.fault or exc
                self.unjournaled += 1
        if store is not None:
            try:
                store.put(key, model, result.to_cache())
            except OutputsNotWritten:
                self.stats.cache_write_failures += 1

    async def _batched(
        self,
        judge: Any,
        messages: list[dict[str, Any]],
        sent: dict[str, Any],
        key: str,
        state: _ModelState,
        counters: tuple[SchedulerStats, ...],
        estimate: float,
        cache: bool | None,
    ) -> CallResult:
        """A call sent in a batch job: the breaker and the budget (at the batch price) are checked when it joins
        a job, and its reservation lasts until the job's result arrives (the journal and cache are filled by
        the batch runner, for every result of the job)."""
        self._refuse_if_stopping()
        if state.tripped is not None:
            raise NotAttempted(f"not attempted: {judge.model} is failing: {state.tripped}", CIRCUIT_BREAKER)
        reserved = await self.budget.reserve(estimate)
        cost: float | None = 0.0
        try:
            result = await self.batches.request(judge, key, messages, sent, counters, cache is not False)
            cost = result.cost_usd if result.transport == "batch" else 0.0
        finally:
            await self.budget.settle(reserved, cost)
        state.consecutive_failures = 0
        if result.transport == "batch":
            self._count_resent(key, counters)
        for c in counters:
            c.by_transport[result.transport] = c.by_transport.get(result.transport, 0) + 1
        return result

    def _refuse_if_stopping(self) -> None:
        """Send nothing once the journal cannot record calls: a resume would pay for them again."""
        if self.fault is not None:
            raise NotAttempted(f"not attempted: the run is stopping ({self.fault})", STOPPED)

    def _record_failure(self, judge: Any, state: _ModelState, error: CallError) -> None:
        if not _hopeless(error):
            return
        state.consecutive_failures += 1
        limit = getattr(judge, "circuit_breaker", None)
        if limit is not None and state.consecutive_failures >= limit and state.tripped is None:
            state.tripped = f"{limit} consecutive calls failed; last: {error}"
            self._tripped[str(judge.model)] = state.tripped

    async def _attempts(
        self,
        judge: Any,
        messages: list[dict[str, Any]],
        sent: dict[str, Any],
        state: _ModelState,
        counters: tuple[SchedulerStats, ...],
        estimated_tokens: int,
        estimate: float,
    ) -> CallResult:
        """Send with retries. The breaker and the budget are checked once the call holds its concurrency slot,
        right before it is sent (not while it queues), and its budget reservation lasts until it ends."""
        transport = self.direct if uses_direct(judge) else self.litellm
        failures: list[str] = []
        attempt = 0
        reserved: float | None = None
        cost: float | None = 0.0
        cap = getattr(judge, "max_retry_after_s", None)
        try:
            while True:
                attempt += 1
                assert self._global is not None
                async with self._global, state.semaphore:
                    self._refuse_if_stopping()
                    if state.tripped is not None:
                        raise NotAttempted(f"not attempted: {judge.model} is failing: {state.tripped}", CIRCUIT_BREAKER)
                    if reserved is None:
                        reserved = await self.budget.reserve(estimate)
                    waited = await state.limiter.acquire(estimated_tokens)
                    for c in counters:
                        c.rate_limited_s += waited
                        c.calls += 1
                        c.by_transport[transport.name] = c.by_transport.get(transport.name, 0) + 1
                    try:
                        async with asyncio.timeout(judge.timeout_s + 5):  # no extra task, unlike wait_for
                            result = await transport.complete(judge, messages, sent)
                        error = None
                    except CallError as exc:
                        error = exc
                    except TimeoutError:
                        error = CallError(f"timeout after {judge.timeout_s:g}s", 408)
                if error is None:
                    result.attempts, result.failures = attempt, failures
                    cost = result.cost_usd
                    return result
                failures.append(str(error))
                if error.retryable and cap is not None and error.retry_after is not None and error.retry_after > cap:
                    error = CallError(
                        f"{error} (the provider asked to retry after {error.retry_after:g}s, longer than "
                        f"judge.max_retry_after_s={cap:g})",
                        error.status,
                    )
                    error.retryable = False
                    error.hopeless = True
                if not error.retryable or attempt > judge.max_retries:
                    error.attempts = attempt
                    error.failures = failures
                    raise error
                for c in counters:
                    c.retries += 1
                await asyncio.sleep(backoff_delay(attempt, error.retry_after, self.rng))
        finally:
            if reserved is not None:
                await self.budget.settle(reserved, cost)


def get_scheduler(context: EvalContext) -> Scheduler:
    """The run's shared scheduler (created on first use from ``run.concurrency`` and ``run.seed``)."""
    run = context.run
    concurrency = run.concurrency if run is not None else 16
    seed = run.seed if run is not None else 0
    return context.service(SERVICE, lambda: Scheduler(concurrency, seed))
