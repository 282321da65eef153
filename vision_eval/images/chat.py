"""Images inside chat-format inputs: OpenAI, Anthropic, Gemini and Nova/Bedrock message shapes.

:func:`extract_chat` returns the messages' text with each image replaced by a label
(``[Image k]``) and the image references in order, so a judge prompt can show the
conversation as text while the pixels travel as image parts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vision_eval.images.refs import image_ref
from vision_eval.images.roots import ImageRoots


@dataclass
class ChatImages:
    """What :func:`extract_chat` found."""

    text: str
    images: list[dict[str, Any]] = field(default_factory=list)
    """``IMAGE_REF`` dicts in message order."""
    media_types: list[str | None] = field(default_factory=list)
    """Declared media type per image (``None`` when the format gives none)."""


def looks_like_chat(value: Any) -> bool:
    """True when ``value`` (or its JSON text) is a message list or a single message."""
    if isinstance(value, str):
        stripped = value.lstrip()
        if not stripped.startswith(("[", "{")):
            return False
        try:
            value = json.loads(stripped)
        except ValueError:
            return False
    if isinstance(value, dict):
        value = [value]
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(m, dict) and ("content" in m or "parts" in m) for m in value)
    )


def _image_of(part: dict[str, Any]) -> tuple[Any, str | None] | None:
    """(image value, declared media type) when ``part`` is an image part of any known format."""
    kind = part.get("type")
    if kind == "image_url" or "image_url" in part:
        url = part.get("image_url")
        return (url.get("url") if isinstance(url, dict) else url), None
    if kind == "input_image":
        url = part.get("image_url") or part.get("url")
        return (url.get("url") if isinstance(url, dict) else url), None
    if kind == "image" and isinstance(part.get("source"), dict):
        source = part["source"]
        if source.get("type") == "url":
            return source.get("url"), None
        return source.get("data"), source.get("media_type")
    for key in ("inline_data", "inlineData"):
        if isinstance(part.get(key), dict):
            inline = part[key]
            return inline.get("data"), inline.get("mime_type") or inline.get("mimeType")
    if isinstance(part.get("image"), dict):
        image = part["image"]
        source = image.get("source") or {}
        fmt = image.get("format")
        return source.get("bytes"), f"image/{fmt}" if fmt else None
    return None


def extract_chat(
    value: Any, root: ImageRoots | Path | None = None, *, allow_urls: bool = False, start: int = 1
) -> ChatImages:
    """Text and images of a chat-format value; image labels are numbered from ``start``."""
    if isinstance(value, str):
        value = json.loads(value)
    messages = [value] if isinstance(value, dict) else list(value)
    lines: list[str] = []
    found = ChatImages(text="")
    for message in messages:
        role = message.get("role", "user")
        content = message.get("content", message.get("parts", ""))
        if isinstance(content, str):
            lines.append(f"{role}: {content}")
            continue
        pieces: list[str] = []
        for part in content if isinstance(content, list) else [content]:
            if isinstance(part, str):
                pieces.append(part)
                continue
            if not isinstance(part, dict):
                continue
            image = _image_of(part)
            if image is not None:
                raw, declared = image
                if isinstance(raw, str) and declared and not raw.startswith(("data:", "http", "file:")):
                    raw = f"data:{declared};base64,{raw}"
                ref = image_ref(raw, root, allow_urls=allow_urls) or image_ref(b"")
                assert ref is not None  # only a null value has no reference
                found.images.append(ref)
                found.media_types.append(declared)
                pieces.append(f"[Image {start + len(found.images) - 1}]")
            elif "text" in part:
                pieces.append(str(part["text"]))
        lines.append(f"{role}: " + " ".join(pieces))
    found.text = "\n".join(lines)
    return found
