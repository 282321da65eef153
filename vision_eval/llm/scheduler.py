"""The engine-wide scheduler every model call goes through.

Global and per-model concurrency limits, an RPM/TPM limiter, retries with exponential backoff and
jitter that honour ``Retry-After`` (429, 5xx, timeouts, connection resets), the persistent cache,
and counters for run.json. Get the run's instance with :func:`get_scheduler` (an ``EvalContext``
service) and call :meth:`Scheduler.complete` inside ``async with scheduler.session():``.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from vision_eval.llm.cache import CallCache, cache_key
from vision_eval.llm.transport import CallError, CallResult, DirectOpenAI, LiteLLMTransport, uses_direct

SERVICE = "llm_scheduler"
BACKOFF_BASE_S = 0.5
BACKOFF_CAP_S = 30.0


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


@dataclass
class SchedulerStats:
    """Counters reported in run.json (per evaluator ``metrics``)."""

    calls: int = 0
    cache_hits: int = 0
    retries: int = 0
    failures: int = 0
    rate_limited_s: float = 0.0
    by_transport: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "rate_limited_s": round(self.rate_limited_s, 3)}


def backoff_delay(attempt: int, retry_after: float | None, rng: random.Random) -> float:
    """Seconds before retry ``attempt`` (1-based): ``Retry-After`` when given (plus up to 10% jitter),
    else exponential (0.5 s, 1 s, 2 s... capped at 30 s) with full jitter in [50%, 100%]."""
    if retry_after is not None:
        return retry_after * (1.0 + 0.1 * rng.random())
    return min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2 ** (attempt - 1)) * (0.5 + 0.5 * rng.random())


class Scheduler:
    """Runs model calls for the whole run (one instance per run, shared by all evaluators)."""

    def __init__(self, concurrency: int = 16, seed: int = 0) -> None:
        self.concurrency = max(1, concurrency)
        self.stats = SchedulerStats()
        self.rng = random.Random(seed)
        self.direct = DirectOpenAI()
        self.litellm = LiteLLMTransport()
        self._caches: dict[str, CallCache] = {}
        self._loop: Any = None
        self._global: asyncio.Semaphore | None = None
        self._models: dict[tuple[str, str | None], _ModelState] = {}
        self._sessions = 0

    def _bind_loop(self) -> None:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # asyncio primitives belong to one loop; a new run gets fresh ones
            self._loop = loop
            self._global = asyncio.Semaphore(self.concurrency)
            self._models = {}

    def _model_state(self, judge: Any) -> _ModelState:
        key = (str(judge.model), judge.api_base)
        if key not in self._models:
            self._models[key] = _ModelState(
                asyncio.Semaphore(max(1, judge.max_concurrency)), RateLimiter(judge.rpm, judge.tpm)
            )
        return self._models[key]

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
    ) -> CallResult:
        """One call with limits, retries and cache. Raises ``CallError`` when every attempt failed.

        ``params`` are extra completion parameters (e.g. ``{"logprobs": True, "top_logprobs": 5}``);
        ``key_extra`` goes into the cache key only (e.g. ``{"sample": k}`` so k samples of the same
        request at temperature > 0 are k distinct cache entries); ``cache=False`` bypasses the cache.
        """
        self._bind_loop()
        sent = self.params_of(judge, params)
        store = self.cache_for(judge) if cache is not False else None
        key = None
        if store is not None:
            hashed = {**sent, "_key_extra": key_extra} if key_extra else sent
            key = cache_key(str(judge.model), judge.api_base, hashed, messages)
        if store is not None and key is not None:
            hit = store.get(key)
            if hit is not None:
                self.stats.cache_hits += 1
                return CallResult(
                    text=hit["text"],
                    input_tokens=hit.get("input_tokens"),
                    output_tokens=hit.get("output_tokens"),
                    cost_usd=0.0 if hit.get("cost_usd") is not None else None,
                    latency_s=0.0,
                    cached=True,
                    attempts=0,
                    model=hit.get("model", str(judge.model)),
                    transport="cache",
                    logprobs=hit.get("logprobs"),
                )
        transport = self.direct if uses_direct(judge) else self.litellm
        state = self._model_state(judge)
        failures: list[str] = []
        attempt = 0
        while True:
            attempt += 1
            assert self._global is not None
            async with self._global, state.semaphore:
                self.stats.rate_limited_s += await state.limiter.acquire(estimated_tokens)
                self.stats.calls += 1
                self.stats.by_transport[transport.name] = self.stats.by_transport.get(transport.name, 0) + 1
                try:
                    result = await asyncio.wait_for(
                        transport.complete(judge, messages, sent), timeout=judge.timeout_s + 5
                    )
                    error = None
                except CallError as exc:
                    error = exc
                except TimeoutError:
                    error = CallError(f"timeout after {judge.timeout_s:g}s", 408)
            if error is None:
                result.attempts, result.failures = attempt, failures
                if store is not None and key is not None:
                    store.put(key, str(judge.model), result.to_cache())
                return result
            failures.append(str(error))
            if not error.retryable or attempt > judge.max_retries:
                self.stats.failures += 1
                error.attempts = attempt  # type: ignore[attr-defined]
                error.failures = failures  # type: ignore[attr-defined]
                raise error
            self.stats.retries += 1
            await asyncio.sleep(backoff_delay(attempt, error.retry_after, self.rng))


def get_scheduler(context: Any) -> Scheduler:
    """The run's shared scheduler (created on first use from ``run.concurrency`` and ``run.seed``)."""
    run = getattr(context, "run", None)
    concurrency = getattr(run, "concurrency", 16) if run is not None else 16
    seed = getattr(run, "seed", 0) if run is not None else 0
    return context.service(SERVICE, lambda: Scheduler(concurrency, seed))
