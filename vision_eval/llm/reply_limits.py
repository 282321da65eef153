"""What a provider's reply may cost us, on both transports: its size once decoded, and where it may send us.

A hostile or broken endpoint can answer with a small gzip body that inflates to gigabytes (memory, and an event
loop busy inflating it while every other call times out), or redirect the call, prompt and key included, to a
server of its choosing whose verdict would be taken for the judge's. So a reply is decoded here, in bounded steps,
and read no further than ``judge.max_reply_bytes`` of decoded bytes (that row's error says so); only the encodings
we ask for are accepted; and a redirect is followed only within the origin the call was sent to (scheme, host and
port), as HTTP says (307/308 keep the request). The direct transport (aiohttp) and litellm's HTTP client
(:mod:`vision_eval.llm.litellm_http`) read replies through the same :class:`CappedDecoder`.
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator, Iterator
from urllib.parse import urljoin, urlsplit

ACCEPT_ENCODING = "gzip, deflate"
"""The encodings a reply may use (sent as ``Accept-Encoding``; a reply in any other is refused)."""
STEP = 64 * 1024
"""Most decoded bytes produced from a compressed chunk at a time."""
REDIRECTS = frozenset({301, 302, 303, 307, 308})
MAX_REDIRECTS = 5
"""Same-origin redirects followed for one call before it fails."""
_DEFAULT_PORTS = {"http": 80, "https": 443}


class ReplyRefused(Exception):
    """A reply not read: too large once decoded, in an encoding not asked for, or redirecting to another origin.
    The message is the row's reason; ``status`` the reply's HTTP status."""

    def __init__(self, message: str, status: int, *, hopeless: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.hopeless = hopeless
        """True when every call to this endpoint will meet it (a redirect away: the ``api_base`` is not the
        provider's), so the circuit breaker counts it."""


def origin(url: str) -> tuple[str, str, int | None]:
    """The origin of ``url``: scheme, host and port (the scheme's default port when none is written)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    return scheme, (parts.hostname or "").lower(), port if port is not None else _DEFAULT_PORTS.get(scheme)


def _shown(url: str) -> str:
    scheme, host, port = origin(url)
    return f"{scheme}://{host}" + (f":{port}" if port is not None and port != _DEFAULT_PORTS.get(scheme) else "")


def redirect_target(url: str, status: int, location: str | None) -> str | None:
    """Where a reply sends the call: ``None`` when it is no redirect, the absolute URL when it stays within the
    origin of ``url``. Raises :class:`ReplyRefused` for a redirect to another origin, or one without a target."""
    if status not in REDIRECTS:
        return None
    if not location:
        raise ReplyRefused(f"HTTP {status}: a redirect without a Location (not followed)", status)
    target = urljoin(url, location)
    if origin(target) != origin(url):
        raise ReplyRefused(
            f"HTTP {status}: the provider redirected the call to another origin ({_shown(target)}): not followed",
            status,
            hopeless=True,
        )
    return target


def too_large(limit: int, status: int) -> ReplyRefused:
    """The refusal of a reply past ``limit`` decoded bytes."""
    return ReplyRefused(
        f"reply larger than judge.max_reply_bytes ({limit:,} bytes once decoded): not read further", status
    )


class CappedDecoder:
    """Decodes a reply body (``Content-Encoding`` gzip, deflate or none) chunk by chunk, in steps of at most
    :data:`STEP` bytes, and raises :class:`ReplyRefused` once more than ``limit`` decoded bytes came out."""

    def __init__(self, encoding: str | None, limit: int, status: int) -> None:
        self.encoding = (encoding or "identity").strip().lower()
        self.limit, self.status = limit, status
        self.size = 0
        if self.encoding in ("gzip", "x-gzip"):
            self._inflater: zlib._Decompress | None = zlib.decompressobj(zlib.MAX_WBITS | 16)
        elif self.encoding == "deflate":  # zlib-wrapped as HTTP says; raw deflate (as some servers send) on failure
            self._inflater = zlib.decompressobj(zlib.MAX_WBITS)
        elif self.encoding == "identity":
            self._inflater = None
        else:
            raise ReplyRefused(f"reply in an encoding that was not asked for ({self.encoding}): not read", status)
        self._started = False

    def feed(self, chunk: bytes) -> Iterator[bytes]:
        """The decoded bytes of the next raw ``chunk``."""
        if self._inflater is None:
            yield self._counted(chunk)
            return
        data = chunk
        while data:
            try:
                out = self._inflater.decompress(data, STEP)
            except zlib.error:
                if self.encoding != "deflate" or self._started:
                    raise ReplyRefused(f"reply body is not valid {self.encoding} data", self.status) from None
                self._inflater = zlib.decompressobj(-zlib.MAX_WBITS)
                self._started = True
                continue
            self._started = True
            data = self._inflater.unconsumed_tail  # left over only when STEP bytes came out
            if out:
                yield self._counted(out)

    def flush(self) -> bytes:
        """What is left once the raw body has ended."""
        return self._counted(self._inflater.flush()) if self._inflater is not None else b""

    def _counted(self, piece: bytes) -> bytes:
        self.size += len(piece)
        if self.size > self.limit:
            raise too_large(self.limit, self.status)
        return piece


async def decoded(chunks: AsyncIterator[bytes], decoder: CappedDecoder) -> AsyncIterator[bytes]:
    """The decoded body of a reply read as ``chunks`` of raw bytes (see :class:`CappedDecoder`)."""
    async for chunk in chunks:
        for piece in decoder.feed(chunk):
            yield piece
    tail = decoder.flush()
    if tail:
        yield tail


async def read_decoded(chunks: AsyncIterator[bytes], decoder: CappedDecoder) -> bytes:
    """The whole decoded body (at most the decoder's limit; :class:`ReplyRefused` past it)."""
    return b"".join([piece async for piece in decoded(chunks, decoder)])
