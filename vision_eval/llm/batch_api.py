"""The providers' batch APIs, one adapter each, all speaking the same small protocol to the batch runner.

- OpenAI Batch: a JSONL file uploaded to ``/v1/files``, a job at ``/v1/batches``, results in an output file and
  an error file — all through litellm (``acreate_file``, ``acreate_batch``, ``aretrieve_batch``,
  ``afile_content``, ``acancel_batch``).
- Anthropic Message Batches: litellm 1.x reads a job's status (``aretrieve_batch``) and its results file
  (``afile_content`` with the job id; the lines are Anthropic's own, read here) and converts OpenAI-shaped
  messages into Anthropic's request (``AnthropicConfig``); creating and cancelling a job
  (``POST /v1/messages/batches``, ``.../cancel``) is written here, as litellm lacks them.
- Gemini batch mode (``models/{model}:batchGenerateContent`` with inline requests, status and results on
  ``batches/{id}``): litellm has no support for it, so the whole adapter is here.

Every adapter turns a provider's answer for one request into a :class:`CallResult` priced at the batch price or
a :class:`CallError` carrying the provider's reason (retryable when it is transient or the request expired).
"""

from __future__ import annotations

import asyncio
import json
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Protocol

from vision_eval.llm.lazy_litellm import import_litellm
from vision_eval.llm.prices import batch_prices, token_prices
from vision_eval.llm.transport import CallError, CallResult, _litellm_error, api_key_of

# litellm's afile_content, and anyio's happy-eyeballs connect under its HTTP clients, leave spare coroutines
# behind (harmless, noisy when collected)
warnings.filterwarnings("ignore", message="coroutine 'OpenAIFilesAPI.afile_content' was never awaited")
warnings.filterwarnings("ignore", message="coroutine 'connect_tcp.<locals>.try_connect' was never awaited")

ANTHROPIC_VERSION = "2023-06-01"
GEMINI_PARAMS = {"temperature": "temperature", "max_tokens": "maxOutputTokens", "top_p": "topP", "top_k": "topK",
                 "stop": "stopSequences", "seed": "seed", "presence_penalty": "presencePenalty",
                 "frequency_penalty": "frequencyPenalty"}  # fmt: skip
"""OpenAI-style parameters and their Gemini ``generationConfig`` names."""
ANTHROPIC_ERROR_STATUS = {"invalid_request_error": 400, "authentication_error": 401, "permission_error": 403,
                          "not_found_error": 404, "request_too_large": 413, "rate_limit_error": 429,
                          "api_error": 500, "overloaded_error": 529}  # fmt: skip


@dataclass
class JobStatus:
    """A batch job as the provider reports it."""

    status: str
    """The provider's own word (``in_progress``, ``ended``, ``BATCH_STATE_RUNNING``...)."""
    ended: bool
    """No request of the job will change any more (completed, failed, expired or cancelled)."""
    expired: bool = False
    """The provider gave up on the job's unfinished requests (its 24 h window passed)."""
    problem: str | None = None
    """Why the whole job failed, when it did."""
    raw: Any = None
    extra: dict[str, Any] = field(default_factory=dict)


Outcome = CallResult | CallError


class BatchApi(Protocol):
    """What the batch runner needs of a provider's batch API (one adapter per provider below)."""

    provider: str
    """The provider's name (``openai``, ``anthropic``, ``gemini``)."""
    max_requests: int
    """Most requests one job may hold."""
    max_bytes: int
    """Largest job file (or body) the provider accepts, in bytes."""

    def entry(self, judge: Any, key: str, messages: list[dict[str, Any]], params: dict[str, Any]) -> bytes:
        """One request in the provider's batch format (``CallError`` when it cannot be batched)."""
        ...

    async def submit(self, judge: Any, entries: list[bytes]) -> str:
        """Send a job; its id."""
        ...

    async def poll(self, judge: Any, job_id: str) -> JobStatus:
        """The job's state now."""
        ...

    async def results(self, judge: Any, job_id: str, status: JobStatus) -> dict[str, Outcome]:
        """The outcome of each request of an ended job, by key."""
        ...

    async def cancel(self, judge: Any, job_id: str) -> None:
        """Cancel a job."""
        ...


def bare_model(model: str) -> str:
    """The provider's own model name (``openai/gpt-4o-mini`` -> ``gpt-4o-mini``)."""
    return model.split("/", 1)[1] if "/" in model else model


def priced(model: str, text: str, tokens_in: int | None, tokens_out: int | None, logprobs: Any = None) -> CallResult:
    """A finished batch request, costed at the batch price (``None`` when the price or the usage is unknown)."""
    prices = batch_prices(model)
    cost = None
    if prices is not None and tokens_in is not None and tokens_out is not None:
        cost = tokens_in * prices[0] + tokens_out * prices[1]
    return CallResult(text=text, input_tokens=tokens_in, output_tokens=tokens_out, cost_usd=cost, model=model,
                      transport="batch", logprobs=logprobs)  # fmt: skip


def live_cost(result: CallResult) -> float | None:
    """What the same request would have cost as a live call."""
    prices = token_prices(result.model)
    if prices is None or result.input_tokens is None or result.output_tokens is None:
        return None
    return result.input_tokens * prices[0] + result.output_tokens * prices[1]


def _expired(message: str) -> CallError:
    text = f"expired: the provider did not run this request before its batch window closed ({message})"
    return CallError(text, 408)  # retryable, and not a sign the model is unusable (the circuit breaker ignores it)


def _cancelled(message: str) -> CallError:
    error = CallError(f"cancelled: {message}", 499)
    error.retryable = False
    return error


def openai_result_line(line: dict[str, Any], model: str) -> tuple[str, Outcome]:
    """One line of an OpenAI batch output or error file."""
    key = str(line.get("custom_id"))
    response = line.get("response") or {}
    body = response.get("body") or {}
    status = response.get("status_code")
    error = line.get("error") or {}
    if status == 200 and not error:
        try:
            choice = body["choices"][0]
            text = choice["message"].get("content") or ""
        except (KeyError, IndexError, TypeError):
            return key, CallError(f"malformed batch result: {json.dumps(body)[:200]}", 502)
        usage = body.get("usage") or {}
        logprobs = choice.get("logprobs")
        logprobs = logprobs.get("content") if isinstance(logprobs, dict) else None
        return key, priced(model, text, usage.get("prompt_tokens"), usage.get("completion_tokens"), logprobs)
    message = (body.get("error") or {}).get("message") or error.get("message") or f"HTTP {status}"
    code = str(error.get("code") or (body.get("error") or {}).get("type") or "")
    if "expired" in code:
        return key, _expired(message)
    if "cancel" in code:
        return key, _cancelled(message)
    return key, CallError(f"HTTP {status}: {message}" if status else message, status if isinstance(status, int) else 0)


def anthropic_result_line(line: dict[str, Any], model: str) -> tuple[str, Outcome]:
    """One line of an Anthropic Message Batches results file."""
    key = str(line.get("custom_id"))
    result = line.get("result") or {}
    kind = result.get("type")
    if kind == "succeeded":
        message = result.get("message") or {}
        text = "".join(b.get("text", "") for b in message.get("content") or [] if b.get("type") == "text")
        usage = message.get("usage") or {}
        return key, priced(model, text, usage.get("input_tokens"), usage.get("output_tokens"))
    if kind == "expired":
        return key, _expired("Anthropic: expired")
    if kind == "canceled":
        return key, _cancelled("the batch job was cancelled before this request ran")
    error = (result.get("error") or {}).get("error") or {}
    status = ANTHROPIC_ERROR_STATUS.get(str(error.get("type")), 500)
    return key, CallError(f"HTTP {status}: {error.get('type', 'error')}: {error.get('message', '')}", status)


def _lines(content: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in content.decode("utf-8").splitlines() if line.strip()]


async def _http(method: str, url: str, headers: dict[str, str], timeout_s: float, body: Any = None) -> Any:
    """One JSON request; ``CallError`` (with ``Retry-After``) on anything but 200."""
    import aiohttp

    from vision_eval.llm.transport import parse_retry_after

    data = json.dumps(body) if body is not None else None
    try:
        headers = {"Content-Type": "application/json", **headers}
        timeout = aiohttp.ClientTimeout(total=timeout_s)
        async with (
            aiohttp.ClientSession() as session,
            session.request(method, url, data=data, headers=headers, timeout=timeout) as response,
        ):
            raw = await response.read()
            if response.status != 200:
                retry_after = parse_retry_after(response.headers.get("Retry-After"))
                text = raw[:300].decode("utf-8", "replace")
                raise CallError(f"HTTP {response.status}: {text}", response.status, retry_after)
    except TimeoutError:
        raise CallError(f"timeout after {timeout_s:g}s", 408) from None
    except aiohttp.ClientError as exc:
        raise CallError(f"connection error: {type(exc).__name__}: {exc}") from None
    return json.loads(raw) if raw else {}


class OpenAIBatches:
    """OpenAI Batch through litellm's files and batches functions."""

    provider = "openai"
    max_requests = 50_000
    max_bytes = 190_000_000

    def _auth(self, judge: Any) -> dict[str, Any]:
        import os

        return {"custom_llm_provider": "openai", "api_base": judge.api_base or "https://api.openai.com/v1",
                "api_key": api_key_of(judge) or os.environ.get("OPENAI_API_KEY")}  # fmt: skip

    def entry(self, judge: Any, key: str, messages: list[dict[str, Any]], params: dict[str, Any]) -> bytes:
        body = {"model": bare_model(str(judge.model)), "messages": messages, **params}
        line = {"custom_id": key, "method": "POST", "url": "/v1/chat/completions", "body": body}
        return json.dumps(line, ensure_ascii=False).encode("utf-8")

    async def _litellm(self, judge: Any, function: str, **arguments: Any) -> Any:
        """One litellm files / batches call within ``judge.timeout_s`` (its own default is 600 s: a request
        that is never answered must not stall the run): a timeout is a retryable ``CallError``."""
        call = getattr(import_litellm(), function)(**arguments, **self._auth(judge))
        try:
            return await asyncio.wait_for(call, judge.timeout_s)
        except TimeoutError:
            raise CallError(f"{function}: timeout after {judge.timeout_s:g}s", 408) from None
        except CallError:
            raise
        except Exception as exc:
            raise _litellm_error(exc) from None

    async def submit(self, judge: Any, entries: list[bytes]) -> str:
        upload = await self._litellm(judge, "acreate_file", purpose="batch",
                                     file=("vision-eval-batch.jsonl", b"\n".join(entries) + b"\n"))  # fmt: skip
        job = await self._litellm(judge, "acreate_batch", completion_window="24h", endpoint="/v1/chat/completions",
                                  input_file_id=upload.id, metadata={"created_by": "vision-eval"})  # fmt: skip
        return str(job.id)

    async def poll(self, judge: Any, job_id: str) -> JobStatus:
        job = await self._litellm(judge, "aretrieve_batch", batch_id=job_id)
        status = str(job.status)
        problem = None
        if status == "failed":
            errors = getattr(getattr(job, "errors", None), "data", None) or []
            problem = "; ".join(str(getattr(e, "message", e)) for e in errors) or "the provider failed the job"
        ended = status in ("completed", "failed", "expired", "cancelled")
        return JobStatus(status, ended, expired=status == "expired", problem=problem, raw=job)

    async def _file(self, judge: Any, file_id: str | None) -> list[dict[str, Any]]:
        if not file_id:
            return []
        content = await self._litellm(judge, "afile_content", file_id=file_id)
        return _lines(content.content)

    async def results(self, judge: Any, job_id: str, status: JobStatus) -> dict[str, Outcome]:
        lines = await self._file(judge, getattr(status.raw, "output_file_id", None))
        lines += await self._file(judge, getattr(status.raw, "error_file_id", None))
        return dict(openai_result_line(line, str(judge.model)) for line in lines)

    async def cancel(self, judge: Any, job_id: str) -> None:
        await self._litellm(judge, "acancel_batch", batch_id=job_id)


class AnthropicBatches(OpenAIBatches):
    """Anthropic Message Batches: created and cancelled here, read through litellm."""

    provider = "anthropic"
    max_requests = 100_000
    max_bytes = 250_000_000

    def _base(self, judge: Any) -> str:
        return (judge.api_base or "https://api.anthropic.com").rstrip("/")

    def _key(self, judge: Any) -> str | None:
        import os

        return api_key_of(judge) or os.environ.get("ANTHROPIC_API_KEY")

    def _auth(self, judge: Any) -> dict[str, Any]:
        return {"custom_llm_provider": "anthropic", "api_base": self._base(judge), "api_key": self._key(judge)}

    def _headers(self, judge: Any) -> dict[str, str]:
        return {"x-api-key": self._key(judge) or "", "anthropic-version": ANTHROPIC_VERSION}

    def entry(self, judge: Any, key: str, messages: list[dict[str, Any]], params: dict[str, Any]) -> bytes:
        config = import_litellm().AnthropicConfig()
        model = bare_model(str(judge.model))
        try:
            optional = config.map_openai_params(non_default_params=dict(params), optional_params={}, model=model,
                                                drop_params=False)  # fmt: skip
            body = config.transform_request(model=model, messages=messages, optional_params=optional,
                                            litellm_params={}, headers={})  # fmt: skip
        except Exception as exc:  # litellm refuses a message or a parameter Anthropic cannot take
            error = CallError(f"cannot build the Anthropic batch request: {type(exc).__name__}: {exc}", 400)
            raise error from None
        body.pop("stream", None)
        return json.dumps({"custom_id": key, "params": body}, ensure_ascii=False).encode("utf-8")

    async def submit(self, judge: Any, entries: list[bytes]) -> str:
        payload = b'{"requests": [' + b", ".join(entries) + b"]}"
        job = await _http("POST", f"{self._base(judge)}/v1/messages/batches", self._headers(judge), judge.timeout_s,
                          json.loads(payload))  # fmt: skip
        return str(job["id"])

    async def results(self, judge: Any, job_id: str, status: JobStatus) -> dict[str, Outcome]:
        return dict(anthropic_result_line(line, str(judge.model)) for line in await self._file(judge, job_id))

    async def cancel(self, judge: Any, job_id: str) -> None:
        url = f"{self._base(judge)}/v1/messages/batches/{job_id}/cancel"
        await _http("POST", url, self._headers(judge), judge.timeout_s, {})


def gemini_request(messages: list[dict[str, Any]], params: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI-shaped chat request as a Gemini ``GenerateContentRequest``."""
    system: list[dict[str, Any]] = []
    contents: list[dict[str, Any]] = []
    for message in messages:
        content = message.get("content")
        parts: list[dict[str, Any]] = []
        for part in [{"type": "text", "text": content}] if isinstance(content, str) else content or []:
            if part.get("type") == "text":
                parts.append({"text": part["text"]})
            elif part.get("type") == "image_url":
                url = part["image_url"]["url"] if isinstance(part["image_url"], dict) else part["image_url"]
                if not str(url).startswith("data:"):
                    raise CallError("a Gemini batch request carries images inline only (data: URIs)", 400)
                head, data = str(url).split(",", 1)
                parts.append({"inline_data": {"mime_type": head[5:].split(";")[0], "data": data}})
        if message.get("role") == "system":
            system += parts
        else:
            contents.append({"role": "model" if message.get("role") == "assistant" else "user", "parts": parts})
    unknown = sorted(set(params) - set(GEMINI_PARAMS))
    if unknown:
        raise CallError(f"parameter(s) {', '.join(unknown)} cannot be sent in a Gemini batch request", 400)
    request: dict[str, Any] = {"contents": contents}
    config = {GEMINI_PARAMS[k]: v for k, v in params.items() if v is not None}
    if isinstance(config.get("stopSequences"), str):
        config["stopSequences"] = [config["stopSequences"]]
    if config:
        request["generationConfig"] = config
    if system:
        request["systemInstruction"] = {"parts": system}
    return request


def gemini_outcome(item: dict[str, Any], model: str) -> Outcome:
    """One inlined response (``response`` or ``error``) of a Gemini batch."""
    if item.get("error"):
        error = item["error"]
        code = int(error.get("code") or 0)
        status = {4: 408, 8: 429, 13: 500, 14: 503}.get(code, 400 if 0 < code < 17 else code)
        return CallError(f"{error.get('status', 'error')} ({code}): {error.get('message', '')}", status)
    response = item.get("response") or {}
    candidates = response.get("candidates") or []
    if not candidates:
        feedback = json.dumps(response.get("promptFeedback") or {})[:200]
        return CallError(f"the model returned no candidate (prompt feedback: {feedback})", 400)
    parts = (candidates[0].get("content") or {}).get("parts") or []
    text = "".join(p.get("text", "") for p in parts if not p.get("thought"))
    usage = response.get("usageMetadata") or {}
    return priced(model, text, usage.get("promptTokenCount"), usage.get("candidatesTokenCount"))


class GeminiBatches:
    """Gemini batch mode over REST (inline requests, each tagged with its key in ``metadata``)."""

    provider = "gemini"
    max_requests = 50_000
    max_bytes = 19_000_000
    """Gemini takes at most 20 MB of inline requests per job."""

    def _base(self, judge: Any) -> str:
        return (judge.api_base or "https://generativelanguage.googleapis.com").rstrip("/") + "/v1beta"

    def _headers(self, judge: Any) -> dict[str, str]:
        import os

        return {"x-goog-api-key": api_key_of(judge) or os.environ.get("GEMINI_API_KEY") or ""}

    def entry(self, judge: Any, key: str, messages: list[dict[str, Any]], params: dict[str, Any]) -> bytes:
        item = {"request": gemini_request(messages, params), "metadata": {"key": key}}
        return json.dumps(item, ensure_ascii=False).encode("utf-8")

    async def submit(self, judge: Any, entries: list[bytes]) -> str:
        requests = json.loads(b"[" + b", ".join(entries) + b"]")
        body = {"batch": {"display_name": f"vision-eval-{int(time.time())}",
                          "input_config": {"requests": {"requests": requests}}}}  # fmt: skip
        url = f"{self._base(judge)}/models/{bare_model(str(judge.model))}:batchGenerateContent"
        operation = await _http("POST", url, self._headers(judge), judge.timeout_s, body)
        return str(operation["name"])

    async def poll(self, judge: Any, job_id: str) -> JobStatus:
        operation = await _http("GET", f"{self._base(judge)}/{job_id}", self._headers(judge), judge.timeout_s)
        state = str((operation.get("metadata") or {}).get("state") or "")
        final = state.endswith(("SUCCEEDED", "FAILED", "CANCELLED", "EXPIRED"))
        problem = None
        if state.endswith("FAILED") or operation.get("error"):
            problem = str((operation.get("error") or {}).get("message") or "the provider failed the job")
        ended = final or bool(operation.get("done"))
        return JobStatus(state, ended, expired=state.endswith("EXPIRED"), problem=problem, raw=operation)

    async def results(self, judge: Any, job_id: str, status: JobStatus) -> dict[str, Outcome]:
        response = (status.raw or {}).get("response") or {}
        inlined = response.get("inlinedResponses") or {}
        items = inlined.get("inlinedResponses", []) if isinstance(inlined, dict) else inlined
        return {str((i.get("metadata") or {}).get("key")): gemini_outcome(i, str(judge.model)) for i in items}

    async def cancel(self, judge: Any, job_id: str) -> None:
        await _http("POST", f"{self._base(judge)}/{job_id}:cancel", self._headers(judge), judge.timeout_s, {})


ADAPTERS: dict[str, type[BatchApi]] = {"openai": OpenAIBatches, "anthropic": AnthropicBatches, "gemini": GeminiBatches}


def batch_api_for(model: str) -> BatchApi | None:
    """The batch adapter for a model id, or ``None`` when its provider has no batch API here."""
    adapter = ADAPTERS.get(model.split("/", 1)[0]) if "/" in model else None
    return adapter() if adapter is not None else None
