"""litellm's HTTP client, bounded as the direct transport is (:mod:`vision_eval.llm.reply_limits`): every call
litellm sends for us goes through :class:`BoundedTransport`, an httpx transport around litellm's own, which
decodes the reply under ``judge.max_reply_bytes`` and refuses a redirect to another origin before anything is
sent there.

litellm sends a call either through its own HTTP handler (Anthropic, Gemini, Bedrock, vLLM and most others), which
takes a ``client`` argument, or through the OpenAI SDK (OpenAI and the OpenAI-compatible providers it serves that
way), whose HTTP client is ``litellm.aclient_session``; both are given ours. Which one a model takes is litellm's
dispatch: a model whose call refuses our handler (the SDK asks it for an ``api_key`` before anything is sent) is
remembered as served through the SDK. Imported with litellm only.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextvars import ContextVar
from typing import Any

import httpx

from vision_eval.llm.reply_limits import ACCEPT_ENCODING, CappedDecoder, ReplyRefused, decoded, redirect_target

REPLY_LIMIT: ContextVar[int] = ContextVar("vision_eval_reply_limit", default=8_000_000)
"""The decoded-size cap of the call being sent (set around each call: ``judge.max_reply_bytes``)."""
_HOP_HEADERS = (b"content-encoding", b"content-length")
_clients: dict[str, Any] = {}
_through_sdk: set[str] = set()
"""Models litellm sends through the OpenAI SDK (learnt on their first call)."""


class _DecodedStream(httpx.AsyncByteStream):
    def __init__(self, raw: httpx.AsyncByteStream, decoder: CappedDecoder) -> None:
        self.raw, self.decoder = raw, decoder

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for piece in decoded(aiter(self.raw), self.decoder):
            yield piece

    async def aclose(self) -> None:
        await self.raw.aclose()


class BoundedTransport(httpx.AsyncBaseTransport):
    """``inner`` with replies decoded here under :data:`REPLY_LIMIT` (httpx sees them already decoded) and
    redirects to another origin refused (:class:`ReplyRefused`)."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        request.headers["Accept-Encoding"] = ACCEPT_ENCODING
        response = await self.inner.handle_async_request(request)
        status = response.status_code
        try:
            redirect_target(str(request.url), status, response.headers.get("location"))
            decoder = CappedDecoder(response.headers.get("content-encoding"), REPLY_LIMIT.get(), status)
        except ReplyRefused:
            await response.aclose()
            raise
        assert isinstance(response.stream, httpx.AsyncByteStream)
        headers = [(k, v) for k, v in response.headers.raw if k.lower() not in _HOP_HEADERS]
        stream = _DecodedStream(response.stream, decoder)
        return httpx.Response(status, headers=headers, stream=stream, extensions=response.extensions)

    async def aclose(self) -> None:
        await self.inner.aclose()


def _handler() -> Any:
    """Our litellm ``AsyncHTTPHandler`` (made once per process, as litellm's own clients are; its transport follows
    the running event loop). The first call also makes ``litellm.aclient_session`` ours, unless the caller set one."""
    if "handler" not in _clients:
        import litellm
        from litellm.llms.custom_httpx.http_handler import AsyncHTTPHandler

        inner = AsyncHTTPHandler.create_async_transport() or httpx.AsyncHTTPTransport()
        transport = BoundedTransport(inner)
        _clients["inner"] = inner
        _clients["handler"] = AsyncHTTPHandler(transport=transport, follow_redirects=True)
        if litellm.aclient_session is None:
            litellm.aclient_session = httpx.AsyncClient(transport=transport, follow_redirects=True, timeout=None)
    return _clients["handler"]


async def release() -> None:
    """Close the connections of the running event loop (at the end of a run: an aiohttp session left open warns
    when the process exits). The clients stay usable: litellm's transport opens a new session on the next loop."""
    inner = _clients.get("inner")
    if inner is not None and hasattr(inner, "get_valid_client_session"):  # litellm's aiohttp transport
        await inner.aclose()


def _refused_our_handler(exc: BaseException, handler: Any) -> bool:
    """True when ``exc`` comes from the OpenAI SDK's path asking our handler for what only its client has."""
    seen: BaseException | None = exc
    for _ in range(10):
        if seen is None:
            return False
        if isinstance(seen, AttributeError) and getattr(seen, "obj", None) is handler:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


async def acompletion(litellm: Any, max_reply_bytes: int, **kwargs: Any) -> Any:
    """``litellm.acompletion(**kwargs)`` through the bounded client, replies capped at ``max_reply_bytes``."""
    handler = _handler()
    token = REPLY_LIMIT.set(max_reply_bytes)
    try:
        model = str(kwargs["model"])
        if model not in _through_sdk:
            try:
                return await litellm.acompletion(client=handler, **kwargs)
            except Exception as exc:
                if not _refused_our_handler(exc, handler):
                    raise
                _through_sdk.add(model)
        return await litellm.acompletion(**kwargs)
    finally:
        REPLY_LIMIT.reset(token)


def refusal_in(exc: BaseException) -> ReplyRefused | None:
    """The :class:`ReplyRefused` behind an exception litellm raised, if any (litellm and the SDK wrap it)."""
    seen: BaseException | None = exc
    for _ in range(10):
        if seen is None or isinstance(seen, ReplyRefused):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None
