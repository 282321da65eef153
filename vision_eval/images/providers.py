"""Pure functions that put prepared images (and text) into each provider family's message shape.

Calls go through litellm in the OpenAI shape (:func:`openai_message`); the other shapes are what
litellm sends natively (and what the fake provider servers decode), kept here as tested functions
for callers that talk to a provider directly.
"""

from __future__ import annotations

import base64
from typing import Any

from vision_eval.images.policy import PreparedImage

Part = str | PreparedImage
"""A message part: text, or an image."""


def b64(image: PreparedImage) -> str:
    """The image bytes as base64 text."""
    return base64.b64encode(image.data).decode("ascii")


def data_uri(image: PreparedImage) -> str:
    """The image as a ``data:`` URI."""
    return f"data:{image.media_type};base64,{b64(image)}"


def openai_image(image: PreparedImage, detail: str | None = None) -> dict[str, Any]:
    """OpenAI chat-completions image part."""
    url: dict[str, Any] = {"url": data_uri(image)}
    if detail:
        url["detail"] = detail
    return {"type": "image_url", "image_url": url}


def anthropic_image(image: PreparedImage) -> dict[str, Any]:
    """Anthropic messages image block."""
    return {"type": "image", "source": {"type": "base64", "media_type": image.media_type, "data": b64(image)}}


def gemini_image(image: PreparedImage) -> dict[str, Any]:
    """Gemini ``generateContent`` inline-data part."""
    return {"inline_data": {"mime_type": image.media_type, "data": b64(image)}}


def nova_image(image: PreparedImage) -> dict[str, Any]:
    """Amazon Nova / Bedrock converse image block (``bytes`` base64-encoded in JSON)."""
    return {"image": {"format": image.media_type.split("/", 1)[1], "source": {"bytes": b64(image)}}}


def _merge_text(parts: list[Part]) -> list[Part]:
    merged: list[Part] = []
    for part in parts:
        if isinstance(part, str) and merged and isinstance(merged[-1], str):
            merged[-1] += part
        elif not (isinstance(part, str) and not part):
            merged.append(part)
    return merged


def openai_message(parts: list[Part], role: str = "user", detail: str | None = None) -> dict[str, Any]:
    """One OpenAI chat message whose content keeps text and images in the given order."""
    content = [
        {"type": "text", "text": p} if isinstance(p, str) else openai_image(p, detail) for p in _merge_text(parts)
    ]
    return {"role": role, "content": content}


def anthropic_message(parts: list[Part], role: str = "user") -> dict[str, Any]:
    """One Anthropic message."""
    content = [{"type": "text", "text": p} if isinstance(p, str) else anthropic_image(p) for p in _merge_text(parts)]
    return {"role": role, "content": content}


def gemini_content(parts: list[Part], role: str = "user") -> dict[str, Any]:
    """One Gemini ``contents`` entry."""
    return {"role": role, "parts": [{"text": p} if isinstance(p, str) else gemini_image(p) for p in _merge_text(parts)]}


def nova_message(parts: list[Part], role: str = "user") -> dict[str, Any]:
    """One Bedrock converse / Nova message."""
    return {"role": role, "content": [{"text": p} if isinstance(p, str) else nova_image(p) for p in _merge_text(parts)]}


FORMATTERS = {
    "openai": openai_message,
    "anthropic": anthropic_message,
    "gemini": gemini_content,
    "nova": nova_message,
}


def format_message(parts: list[Part], family: str, role: str = "user") -> dict[str, Any]:
    """The message in ``family``'s native shape (``openai``, ``anthropic``, ``gemini``, ``nova``)."""
    try:
        return FORMATTERS[family](parts, role=role)
    except KeyError:
        raise ValueError(f"unknown provider family {family!r}; known: {', '.join(FORMATTERS)}") from None
