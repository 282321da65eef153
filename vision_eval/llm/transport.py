"""How a call reaches a model: a lean direct path for OpenAI-compatible endpoints, litellm for the rest.

litellm's client costs several ms of CPU per call, which caps throughput at high concurrency on a
small machine; for ``openai/...`` and ``hosted_vllm/...`` models the direct path posts the same
OpenAI-shaped request with one reused aiohttp session, and prices it from litellm's price map read as data
(:mod:`vision_eval.llm.prices`), so a run on the direct path never imports litellm.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any

from vision_eval.llm.lazy_litellm import import_litellm
from vision_eval.llm.prices import token_prices
from vision_eval.llm.reply_limits import (
    ACCEPT_ENCODING,
    MAX_REDIRECTS,
    STEP,
    CappedDecoder,
    ReplyRefused,
    read_decoded,
    redirect_target,
)

if TYPE_CHECKING:
    from vision_eval.config import JudgeConfig

DIRECT_PREFIXES = ("openai/", "hosted_vllm/")
RETRYABLE_STATUS = {408, 409, 425, 429}


@dataclass
class CallResult:
    """One completed call (or cache hit)."""

    text: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    latency_s: float | None = None
    cached: bool = False
    attempts: int = 1
    model: str = ""
    transport: str = ""
    logprobs: Any = None
    """``choices[0].logprobs.content`` (OpenAI shape) when requested and returned."""
    failures: list[str] = field(default_factory=list)
    """Transient failures that were retried before success."""

    def to_cache(self) -> dict[str, Any]:
        """What the persistent cache keeps of a call."""
        return {
            "text": self.text,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": self.cost_usd,
            "latency_s": self.latency_s,
            "model": self.model,
            "logprobs": self.logprobs,
        }

    def to_record(self) -> dict[str, Any]:
        """What the run's journal keeps: the cache's fields plus the attempts it took."""
        return {**self.to_cache(), "attempts": self.attempts, "failures": self.failures}

    @staticmethod
    def from_record(record: dict[str, Any], model: str, *, cached: bool, transport: str) -> CallResult:
        """A call answered from the cache (free: cost 0 when the price was known) or from the run's journal
        (paid once, earlier in this run: its real cost, latency and attempts)."""
        cost = record.get("cost_usd")
        return CallResult(
            text=record["text"],
            input_tokens=record.get("input_tokens"),
            output_tokens=record.get("output_tokens"),
            cost_usd=(0.0 if cost is not None else None) if cached else cost,
            latency_s=0.0 if cached else record.get("latency_s"),
            cached=cached,
            attempts=0 if cached else int(record.get("attempts") or 1),
            model=record.get("model", model),
            transport=transport,
            logprobs=record.get("logprobs"),
            failures=[] if cached else list(record.get("failures") or []),
        )


class CallError(Exception):
    """A failed call attempt; ``retryable`` tells the scheduler whether to try again."""

    def __init__(self, message: str, status: int | None = None, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after
        self.retryable = status is None or status in RETRYABLE_STATUS or status >= 500
        self.attempts = 1
        """Attempts made before giving up (set by the scheduler when it stops retrying)."""
        self.failures: list[str] = [message]
        """What each attempt failed with (set by the scheduler when it stops retrying)."""
        self.hopeless = False
        """True when the model cannot be used as configured (e.g. it asks to wait longer than
        ``judge.max_retry_after_s``), whatever the status."""


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def price(model: str, input_tokens: int | None, output_tokens: int | None) -> float | None:
    """Cost of a call in USD; ``None`` when the price (or the usage) is unknown."""
    prices = token_prices(model)
    if prices is None or input_tokens is None or output_tokens is None:
        return None
    return input_tokens * prices[0] + output_tokens * prices[1]


def api_key_of(judge: JudgeConfig) -> str | None:
    """The key from ``api_key`` (Python) or the ``api_key_env`` variable."""
    if judge.api_key is not None:
        return judge.api_key.get_secret_value()
    if judge.api_key_env:
        return os.environ.get(judge.api_key_env)
    return None


def uses_direct(judge: Any) -> bool:
    """True when the lean direct path serves this judge (``transport: auto`` on OpenAI-compatible models)."""
    mode = getattr(judge, "transport", "auto")
    if mode == "direct":
        return True
    return mode == "auto" and str(judge.model).startswith(DIRECT_PREFIXES)


def refused_error(refused: ReplyRefused) -> CallError:
    """The failed attempt of a reply that was not read (never retried: the same endpoint answers the same)."""
    error = CallError(str(refused), refused.status)
    error.retryable = False
    error.hopeless = refused.hopeless
    return error


class DirectOpenAI:
    """POST ``{api_base}/chat/completions`` with one reused aiohttp session per event loop. Replies are decoded and
    capped, and redirects followed only within the origin, by :mod:`vision_eval.llm.reply_limits`."""

    name = "direct"

    def __init__(self) -> None:
        self._session: Any = None

    async def open(self, limit: int) -> None:
        import aiohttp

        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(limit=max(limit, 1), keepalive_timeout=30, ttl_dns_cache=300)
            self._session = aiohttp.ClientSession(connector=connector, json_serialize=json.dumps, auto_decompress=False)

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def complete(self, judge: Any, messages: list[dict[str, Any]], params: dict[str, Any]) -> CallResult:
        import aiohttp

        model = str(judge.model).split("/", 1)[1] if "/" in str(judge.model) else str(judge.model)
        base = (judge.api_base or "https://api.openai.com/v1").rstrip("/")
        headers = {"Content-Type": "application/json", "Accept-Encoding": ACCEPT_ENCODING}
        key = api_key_of(judge) or os.environ.get("OPENAI_API_KEY")
        if key:
            headers["Authorization"] = f"Bearer {key}"
        body = {"model": model, "messages": messages, **params}
        if self._session is None:
            await self.open(64)
        started = time.perf_counter()
        try:
            status, raw, retry_after = await self._post(f"{base}/chat/completions", json.dumps(body), headers, judge)
        except ReplyRefused as refused:
            raise refused_error(refused) from None
        except TimeoutError:
            raise CallError(f"timeout after {judge.timeout_s:g}s", 408) from None
        except aiohttp.ClientError as exc:
            raise CallError(f"connection error: {type(exc).__name__}: {exc}") from None
        latency = time.perf_counter() - started
        if status != 200:
            raise CallError(f"HTTP {status}: {raw[:300].decode('utf-8', 'replace')}", status, retry_after)
        try:
            data = json.loads(raw)
            choice = data["choices"][0]
            text = choice["message"].get("content") or ""
        except (ValueError, KeyError, IndexError, TypeError):
            raise CallError(f"malformed response body: {raw[:200].decode('utf-8', 'replace')}", 502) from None
        usage = data.get("usage") or {}
        tokens_in, tokens_out = usage.get("prompt_tokens"), usage.get("completion_tokens")
        logprobs = (choice.get("logprobs") or {}).get("content") if isinstance(choice.get("logprobs"), dict) else None
        return CallResult(
            text=text,
            input_tokens=tokens_in,
            output_tokens=tokens_out,
            cost_usd=price(str(judge.model), tokens_in, tokens_out),
            latency_s=latency,
            model=str(judge.model),
            transport=self.name,
            logprobs=logprobs,
        )

    async def _post(self, url: str, body: str, headers: dict[str, str], judge: Any) -> tuple[int, bytes, float | None]:
        """The reply's status, decoded body and ``Retry-After``, following redirects within the origin."""
        import aiohttp

        timeout = aiohttp.ClientTimeout(total=judge.timeout_s)
        for _ in range(MAX_REDIRECTS + 1):
            async with self._session.post(
                url, data=body, headers=headers, timeout=timeout, allow_redirects=False
            ) as response:
                status = response.status
                target = redirect_target(url, status, response.headers.get("Location"))
                if target is None:
                    decoder = CappedDecoder(response.headers.get("Content-Encoding"), judge.max_reply_bytes, status)
                    raw = await read_decoded(response.content.iter_chunked(STEP), decoder)
                    return status, raw, parse_retry_after(response.headers.get("Retry-After"))
            if status not in (307, 308):  # the others turn a POST into a GET: the request would be lost
                raise ReplyRefused(f"HTTP {status}: a redirect that drops the request (not followed)", status)
            url = target
        raise ReplyRefused(f"HTTP {status}: more than {MAX_REDIRECTS} redirects (not followed)", status)


class LiteLLMTransport:
    """Any provider litellm supports (Anthropic, Gemini, Bedrock, Azure, ...)."""

    name = "litellm"

    async def open(self, limit: int) -> None:
        return None

    async def close(self) -> None:
        if "vision_eval.llm.litellm_http" in sys.modules:  # litellm was used (importing it here would cost seconds)
            from vision_eval.llm.litellm_http import release

            await release()

    async def complete(self, judge: Any, messages: list[dict[str, Any]], params: dict[str, Any]) -> CallResult:
        litellm = import_litellm()
        kwargs: dict[str, Any] = {"model": judge.model, "messages": messages, "timeout": judge.timeout_s, **params}
        if judge.api_base:
            kwargs["api_base"] = judge.api_base
        key = api_key_of(judge)
        if key:
            kwargs["api_key"] = key
        started = time.perf_counter()
        from vision_eval.llm.litellm_http import acompletion

        try:
            response = await acompletion(litellm, judge.max_reply_bytes, num_retries=0, max_retries=0, **kwargs)
        except Exception as exc:  # litellm maps provider errors onto many classes; classify by status
            raise _litellm_error(exc) from None
        latency = time.perf_counter() - started
        choice = response.choices[0]
        usage = getattr(response, "usage", None)
        tokens_in = getattr(usage, "prompt_tokens", None)
        tokens_out = getattr(usage, "completion_tokens", None)
        try:
            cost = litellm.completion_cost(completion_response=response)
        except Exception:  # unknown price: stays null, never 0
            cost = None
        if not cost:
            cost = price(str(judge.model), tokens_in, tokens_out)
        logprobs = getattr(choice, "logprobs", None)
        if logprobs is not None:
            content = getattr(logprobs, "content", None)
            logprobs = [c.model_dump() if hasattr(c, "model_dump") else c for c in content] if content else None
        return CallResult(
            text=choice.message.content or "",
            input_tokens=tokens_in,
            output_tokens=tokens_out,
            cost_usd=cost,
            latency_s=latency,
            model=str(judge.model),
            transport=self.name,
            logprobs=logprobs,
        )


def _litellm_error(exc: Exception) -> CallError:
    from vision_eval.llm.litellm_http import refusal_in

    refused = refusal_in(exc)
    if refused is not None:
        return refused_error(refused)
    status = getattr(exc, "status_code", None)
    name = type(exc).__name__
    if "Timeout" in name:
        status = 408
    elif "APIConnectionError" in name and status in (None, 500):
        status = None  # a connection problem: retryable
    headers = getattr(exc, "litellm_response_headers", None) or getattr(getattr(exc, "response", None), "headers", None)
    retry_after = None
    if headers is not None:
        try:
            retry_after = parse_retry_after(headers.get("retry-after") or headers.get("Retry-After"))
        except AttributeError:
            retry_after = None
    return CallError(f"{name}: {str(exc)[:300]}", status if isinstance(status, int) else None, retry_after)
