"""Fake OpenAI, Anthropic, Gemini and Bedrock-converse servers on 127.0.0.1 for tests and benchmarks.

Reach them through litellm with ``api_base`` exactly as a user would configure a proxy::

    with FakeProviders() as fake:
        litellm.completion(model="openai/gpt-4o-mini", api_base=fake.openai_base, api_key="x", messages=...)

The fake decodes every image it receives and grounds its default judge verdict in the pixels
(dominant colour and number of shapes per image, in the order received), so a test fails when
images are dropped, reordered or sent as text (base64 in a text part is answered with HTTP 400).
Script it with :meth:`FakeProviders.push` (429 + Retry-After, 500, delays, malformed or canned
replies, top logprobs) or a ``responder`` callable; ``calls`` and ``requests`` count what arrived. The providers'
batch APIs are served too (``fake.batches``, :mod:`vision_eval.testing.fake_batches`): a batched request is
answered as the live endpoint would answer it.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import math
import os
import re
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

COLOURS = {
    "red": (220, 40, 40),
    "green": (40, 170, 60),
    "blue": (40, 70, 220),
    "yellow": (235, 215, 40),
    "orange": (245, 140, 30),
    "purple": (140, 50, 180),
    "black": (0, 0, 0),
    "gray": (128, 128, 128),
    "white": (255, 255, 255),
}
_LONG_BASE64 = re.compile(r"[A-Za-z0-9+/]{400,}={0,2}")
_LABEL = re.compile(r"Image (\d+)")


@dataclass
class SeenImage:
    """What the fake saw in one received image."""

    label: str | None
    media_type: str
    width: int
    height: int
    colour: str
    shapes: int


@dataclass
class FakeRequest:
    """One request as the fake understood it."""

    provider: str
    model: str
    text: str
    images: list[SeenImage]
    body: dict[str, Any]
    headers: dict[str, str]


@dataclass
class Action:
    """A scripted answer for one call (consumed in order; the default verdict when the queue is empty)."""

    status: int = 200
    retry_after: float | None = None
    delay: float = 0.0
    reply: str | None = None
    malformed: bool = False
    top_logprobs: dict[str, float] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    echo_key: bool = False
    """An error body that quotes the key the request carried (as some providers' 401s do)."""
    reset: bool = False
    """Drop the connection without answering (a connection reset)."""
    body: Any = None
    """A raw JSON body sent as is with ``status`` (e.g. a 200 whose body is an error object)."""


def colour_name(rgb: tuple[int, int, int]) -> str:
    """Nearest named colour."""
    return min(COLOURS, key=lambda n: sum((a - b) ** 2 for a, b in zip(COLOURS[n], rgb)))


def inspect_image(data: bytes, label: str | None = None) -> SeenImage:
    """Decode ``data`` and find its dominant non-background colour and the number of shapes."""
    import numpy as np
    from PIL import Image
    from scipy import ndimage

    image = Image.open(io.BytesIO(data))
    media_type = Image.MIME.get(image.format or "", "unknown")
    rgb = image.convert("RGB")
    width, height = rgb.size
    small = np.asarray(rgb.resize((min(width, 128), min(height, 128)), Image.Resampling.NEAREST)).reshape(-1, 3)
    names = np.array(list(COLOURS))
    palette = np.array([COLOURS[n] for n in names], dtype=float)
    nearest = ((small[:, None, :].astype(float) - palette[None]) ** 2).sum(-1).argmin(1)
    counts = np.bincount(nearest, minlength=len(names))
    background = counts.argmax()
    counts[background] = 0
    colour = str(names[counts.argmax()]) if counts.sum() else str(names[background])
    mask = (nearest != background).reshape(min(height, 128), min(width, 128))
    labelled, n = ndimage.label(mask)
    sizes = np.bincount(labelled.ravel())[1:] if n else np.array([])
    shapes = int((sizes >= 4).sum())
    return SeenImage(label, media_type, width, height, colour, shapes)


def _decode_b64(text: str) -> bytes:
    if text.startswith("data:"):
        text = text.split(",", 1)[1]
    return base64.b64decode(text)


def _parts_openai(body: dict[str, Any]) -> list[tuple[str, Any]]:
    parts: list[tuple[str, Any]] = []
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, str):
            parts.append(("text", content))
            continue
        for part in content or []:
            if part.get("type") == "text":
                parts.append(("text", part["text"]))
            elif part.get("type") == "image_url":
                url = part["image_url"]["url"] if isinstance(part["image_url"], dict) else part["image_url"]
                parts.append(("image", _decode_b64(url)))
    return parts


def _parts_anthropic(body: dict[str, Any]) -> list[tuple[str, Any]]:
    system = body.get("system")
    parts: list[tuple[str, Any]] = []
    if isinstance(system, str):
        parts.append(("text", system))
    elif isinstance(system, list):
        parts += [("text", s.get("text", "")) for s in system]
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, str):
            parts.append(("text", content))
            continue
        for part in content:
            if part.get("type") == "text":
                parts.append(("text", part["text"]))
            elif part.get("type") == "image":
                parts.append(("image", _decode_b64(part["source"]["data"])))
    return parts


def _parts_gemini(body: dict[str, Any]) -> list[tuple[str, Any]]:
    parts: list[tuple[str, Any]] = []
    system = body.get("systemInstruction") or body.get("system_instruction")
    if system:
        parts += [("text", p.get("text", "")) for p in system.get("parts", [])]
    for content in body.get("contents", []):
        for part in content.get("parts", []):
            if "text" in part:
                parts.append(("text", part["text"]))
            inline = part.get("inline_data") or part.get("inlineData")
            if inline:
                parts.append(("image", _decode_b64(inline["data"])))
    return parts


def _parts_bedrock(body: dict[str, Any]) -> list[tuple[str, Any]]:
    parts: list[tuple[str, Any]] = [("text", s.get("text", "")) for s in body.get("system", [])]
    for message in body.get("messages", []):
        for part in message.get("content", []):
            if "text" in part:
                parts.append(("text", part["text"]))
            if "image" in part:
                parts.append(("image", _decode_b64(part["image"]["source"]["bytes"])))
    return parts


PARSERS = {"openai": _parts_openai, "anthropic": _parts_anthropic, "gemini": _parts_gemini, "bedrock": _parts_bedrock}


def understand(
    provider: str, model: str, body: dict[str, Any], headers: dict[str, str], inspect: bool = True
) -> FakeRequest:
    """Decode a request body: all text joined, every image inspected with the label that precedes it."""
    texts: list[str] = []
    images: list[SeenImage] = []
    for kind, value in PARSERS[provider](body):
        if kind == "text":
            texts.append(value)
        elif inspect:
            labels = _LABEL.findall("\n".join(texts)[-200:])
            images.append(inspect_image(value, f"Image {labels[-1]}" if labels else None))
    return FakeRequest(provider, model, "\n".join(texts), images, body, headers)


def default_verdict(request: FakeRequest) -> str:
    """A judge reply grounded in the pixels: every dimension scores 0.9 when the prompt text names the
    dominant colour of every image received, 0.3 when it does not, 0.0 when no image arrived.

    Dimensions are the keys of the ``"scores"`` example in the prompt's response format.
    """
    text = request.text
    block = re.search(r'"scores"\s*:\s*\{([^}]*)\}', text)
    dims = re.findall(r'"(\w+)"\s*:', block.group(1)) if block else ["score"]
    lowered = text.lower()
    if not request.images:
        value, why = 0.0, "no image received"
    elif all(re.search(rf"\b{i.colour}\b", lowered) for i in request.images):
        value, why = 0.9, "the text names the colour of every image"
    else:
        value, why = 0.3, "the text misses the colour of at least one image"
    seen = [
        {"label": i.label, "colour": i.colour, "shapes": i.shapes, "size": [i.width, i.height]} for i in request.images
    ]
    reply = {"scores": dict.fromkeys(dims, value), "reasoning": why, "details": {"seen": seen}, "overall": 0.99}
    return "Here is my assessment:\n```json\n" + json.dumps(reply) + "\n```"


class FakeProviders:
    """The four fake providers on one ephemeral port; use as a context manager (or start/stop)."""

    def __init__(self, latency: float = 0.0, responder: Any = None, inspect_images: bool = True) -> None:
        self.latency = latency
        self.responder = responder
        self.inspect_images = inspect_images
        self.actions: deque[Action] = deque()
        self.requests: list[FakeRequest] = []
        self.calls = 0
        self.calls_by_provider: dict[str, int] = {}
        self.in_flight = 0
        self.peak_in_flight = 0
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: Any = None
        self.port = 0
        from vision_eval.testing.fake_batches import FakeBatches

        self.batches = FakeBatches(self)
        """The batch endpoints (jobs, files, their counts): :mod:`vision_eval.testing.fake_batches`."""

    # scripting -------------------------------------------------------------
    def push(self, *actions: Action | dict[str, Any]) -> None:
        """Queue scripted answers for the next calls, in order."""
        with self._lock:
            self.actions.extend(a if isinstance(a, Action) else Action(**a) for a in actions)

    def reset(self) -> None:
        """Forget counts, recorded requests and queued actions."""
        with self._lock:
            self.actions.clear()
            self.requests.clear()
            self.calls = 0
            self.calls_by_provider.clear()
            self.peak_in_flight = 0
        self.batches.reset()

    def wait_idle(self, quiet_s: float = 0.3, timeout_s: float = 10.0) -> int:
        """Wait until no request is in flight and none arrived for ``quiet_s`` (requests a killed client had
        already sent can still arrive); returns the call count then."""
        deadline = time.monotonic() + timeout_s
        seen, since = self.calls, time.monotonic()
        while time.monotonic() < deadline:
            time.sleep(0.02)
            if self.calls != seen or self.in_flight:
                seen, since = self.calls, time.monotonic()
            elif time.monotonic() - since >= quiet_s:
                break
        return self.calls

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_base(self) -> str:
        """``api_base`` for ``openai/...`` (and any OpenAI-compatible) models."""
        return f"{self.base}/v1"

    anthropic_base = base
    gemini_base = base
    bedrock_base = base

    # server ------------------------------------------------------------------
    def start(self) -> FakeProviders:
        ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, args=(ready,), daemon=True, name="fake-providers")
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("fake provider server did not start")
        return self

    def stop(self) -> None:
        if self._loop is not None and self._runner is not None:
            # cleanup waits for the replies in flight, each held back up to `latency`
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10 + self.latency)
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(5)

    def __enter__(self) -> FakeProviders:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _serve(self, ready: threading.Event) -> None:
        from aiohttp import web

        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        self._loop = loop
        app = web.Application(client_max_size=200 * 1024 * 1024)
        self.batches.add_routes(app)
        app.router.add_post("/v1/chat/completions", self._handler("openai"))
        app.router.add_post("/chat/completions", self._handler("openai"))
        app.router.add_post("/v1/messages", self._handler("anthropic"))
        app.router.add_post("/v1beta/models/{model}", self._handler("gemini"))
        app.router.add_post("/v1/models/{model}", self._handler("gemini"))
        app.router.add_post("/models/{model}", self._handler("gemini"))
        app.router.add_post("/model/{model}/converse", self._handler("bedrock"))
        runner = web.AppRunner(app, access_log=None)
        loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", self.port, backlog=1024)
        loop.run_until_complete(site.start())
        self._runner = runner
        self.port = runner.addresses[0][1]
        ready.set()
        loop.run_forever()
        loop.close()

    def _handler(self, provider: str) -> Any:
        async def handle(request: Any) -> Any:
            return await self._handle(provider, request)

        return handle

    async def _handle(self, provider: str, request: Any) -> Any:
        with self._lock:
            self.calls += 1
            self.calls_by_provider[provider] = self.calls_by_provider.get(provider, 0) + 1
            action = self.actions.popleft() if self.actions else Action()
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            return await self._answer(provider, request, action)
        finally:
            with self._lock:
                self.in_flight -= 1

    async def _answer(self, provider: str, request: Any, action: Action) -> Any:
        from aiohttp import web

        body = await request.json()
        model = request.match_info.get("model", "").split(":")[0] or body.get("model", "")
        if action.reset or action.body is not None:
            if action.delay or self.latency:
                await asyncio.sleep(action.delay or self.latency)
            if action.reset:
                request.transport.abort() if request.transport else None
                raise ConnectionResetError("fake reset")
            return web.json_response(action.body, status=action.status)
        # decoded and recorded on arrival: a delayed request never lands in a later test's record
        status, payload, headers = self.respond(provider, model, body, dict(request.headers), action)
        if action.delay or self.latency:
            await asyncio.sleep(action.delay or self.latency)
        if payload is None:
            return web.Response(text="this is not json {", content_type="application/json")
        return web.json_response(payload, status=status, headers=headers)

    def respond(
        self, provider: str, model: str, body: dict[str, Any], headers: dict[str, str], action: Action
    ) -> tuple[int, dict[str, Any] | None, dict[str, str]]:
        """The answer to one request body (HTTP status, JSON payload or ``None`` for a malformed body, headers):
        what the live endpoints send, and what a batch job records for each of its requests."""
        if action.status != 200:
            extra = {"Retry-After": f"{action.retry_after:g}"} if action.retry_after is not None else {}
            message = f"fake error {action.status}"
            if action.echo_key:
                sent = headers.get("Authorization") or headers.get("x-api-key") or ""
                message = f"Incorrect API key provided: {sent.removeprefix('Bearer ')}"
            return action.status, {"error": {"message": message, "type": "fake", "code": action.status}}, extra
        if action.malformed:
            return 200, None, {}
        try:
            seen = understand(provider, model, body, headers, self.inspect_images)
        except Exception as exc:  # an undecodable image is the client's fault: answer 400 like a provider
            return 400, {"error": {"message": f"bad image: {exc}"}}, {}
        if _LONG_BASE64.search(seen.text):
            return 400, {"error": {"message": "base64 data found in a text part"}}, {}
        with self._lock:
            self.requests.append(seen)
        if action.reply is not None:
            reply = action.reply
        elif self.responder is not None:
            reply = self.responder(seen)
        else:
            reply = default_verdict(seen)
        prompt_tokens = math.ceil(len(seen.text) / 4) + sum(_image_tokens(i) for i in seen.images)
        completion_tokens = max(1, math.ceil(len(reply) / 4))
        return 200, _shape(provider, model, reply, prompt_tokens, completion_tokens, action), {}

    def next_action(self) -> Action:
        """The next scripted answer (the default one when none is queued)."""
        with self._lock:
            return self.actions.popleft() if self.actions else Action()


def _image_tokens(image: SeenImage) -> int:
    from vision_eval.images.provider_rules import openai_image_tokens

    return openai_image_tokens(image.width, image.height)


def _logprob_content(reply: str, top_logprobs: dict[str, float]) -> list[dict[str, Any]]:
    """The reply as tokens (digit runs, words, spaces, single characters), each certain except the first token
    equal to the most likely of ``top_logprobs``, which carries them all as its alternatives."""
    first = max(top_logprobs, key=lambda k: top_logprobs[k])
    top = [{"token": t, "logprob": lp, "bytes": list(t.encode())} for t, lp in top_logprobs.items()]
    content, placed = [], False
    for token in re.findall(r"\d+|\w+|\s+|.", reply, re.S) or [first]:
        if not placed and token == first:
            content.append({"token": token, "logprob": top_logprobs[first], "bytes": list(token.encode()),
                            "top_logprobs": top})  # fmt: skip
            placed = True
        else:
            entry = {"token": token, "logprob": 0.0, "bytes": list(token.encode())}
            content.append({**entry, "top_logprobs": [entry]})
    return content


def _shape(provider: str, model: str, reply: str, prompt: int, completion: int, action: Action) -> dict[str, Any]:
    if provider == "anthropic":
        return {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": reply}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": prompt, "output_tokens": completion},
        }
    if provider == "gemini":
        return {
            "candidates": [
                {"content": {"parts": [{"text": reply}], "role": "model"}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": {
                "promptTokenCount": prompt,
                "candidatesTokenCount": completion,
                "totalTokenCount": prompt + completion,
            },
            "modelVersion": model,
        }
    if provider == "bedrock":
        return {
            "output": {"message": {"role": "assistant", "content": [{"text": reply}]}},
            "stopReason": "end_turn",
            "usage": {"inputTokens": prompt, "outputTokens": completion, "totalTokens": prompt + completion},
            "metrics": {"latencyMs": 1},
        }
    choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}
    if action.top_logprobs:
        choice["logprobs"] = {"content": _logprob_content(reply, action.top_logprobs)}
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [choice],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
        **action.extra,
    }


def serve_in_subprocess(latency: float = 0.0, inspect_images: bool = False) -> tuple[subprocess.Popen[bytes], str]:
    """The fake servers in a process of their own (a benchmark's client then has this process to itself): the
    process and its OpenAI base URL. The child imports this package from the same place as the caller."""
    package_root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p)}
    command = [sys.executable, "-m", "vision_eval.testing.fake_providers", "--latency", str(latency)]
    proc = subprocess.Popen(command + ([] if inspect_images else ["--no-inspect"]), stdout=subprocess.PIPE, env=env)
    line = proc.stdout.readline().decode().strip() if proc.stdout else ""
    if not line.startswith("PORT "):
        proc.kill()
        raise RuntimeError(f"fake server did not start: {line!r}")
    return proc, f"http://127.0.0.1:{line.split()[1]}/v1"


def main() -> None:
    """``python -m vision_eval.testing.fake_providers --latency 0.2``: serve until killed (prints ``PORT n``)."""
    import argparse

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--no-inspect", action="store_true", help="do not decode images (pure transport benchmark)")
    args = parser.parse_args()
    fake = FakeProviders(latency=args.latency, inspect_images=not args.no_inspect)
    fake.port = args.port
    fake.start()
    print(f"PORT {fake.port}", flush=True)
    print(f"openai/ and hosted_vllm/ models: judge.api_base={fake.openai_base}", flush=True)
    print(f"anthropic/, gemini/ and bedrock/ models: judge.api_base={fake.base}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        fake.stop()


if __name__ == "__main__":
    main()
