"""Building a model request from one dataset row: images prepared under the policy, template rendered,
OpenAI-shaped messages, and the plan (what would be sent, and its estimated tokens).

Shared by every model-graded evaluator and the candidate::

    rule = rule_for(judge)                                                        # the provider's image sizing
    images = row_images(row, ["images"], roots_of(context), judge.image,          # ImageError -> row error
                        store=prepared_images_of(context), rule=rule)
    call = build_call(template, row_variables(row), images, judge.model, rule=rule)  # TemplateError -> row error
    result = await get_scheduler(context).complete(judge, call.messages, estimated_tokens=call.estimated_tokens)
"""

from __future__ import annotations

import math
import urllib.request
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from vision_eval.images.chat import extract_chat, looks_like_chat
from vision_eval.images.media import ImageError
from vision_eval.images.policy import PreparedImage, check_call_caps, prepare_image, target_size
from vision_eval.images.prepared import PreparedImages
from vision_eval.images.provider_rules import SERVER, ProviderRule, provider_rule
from vision_eval.images.providers import openai_message
from vision_eval.images.refs import image_refs, load_bytes
from vision_eval.images.roots import ImageRoots
from vision_eval.llm.templates import ImageLabel, parts_text, render_parts

RESERVED = ("id", "images", "_row_error")
COST_CAP_EXAMPLE = 1024
"""The cost cap the dry run prices as the alternative to the provider's size (``image.max_side``; every image's
size before images went at the size the provider uses)."""
URL_TIMEOUT_S = 20.0
URL_MAX_BYTES = 50_000_000


def fetch_url(url: str) -> bytes:
    """Download an image URL (only reached when the dataset allows URLs)."""
    try:
        with urllib.request.urlopen(url, timeout=URL_TIMEOUT_S) as response:
            data: bytes = response.read(URL_MAX_BYTES + 1)
    except OSError as exc:
        raise ImageError(f"cannot fetch image {url}: {exc}") from None
    if len(data) > URL_MAX_BYTES:
        raise ImageError(f"image at {url} exceeds {URL_MAX_BYTES} bytes")
    return data


def ref_bytes(ref: dict[str, Any]) -> bytes:
    """Bytes of an image reference (fetching URLs). Raises ``ImageError``."""
    if ref.get("error"):
        raise ImageError(ref["error"])
    if ref.get("source") == "url" and ref.get("bytes") is None:
        return fetch_url(str(ref["path"]))
    try:
        return load_bytes(ref)
    except ValueError as exc:
        raise ImageError(str(exc)) from None


def row_variables(row: dict[str, Any]) -> dict[str, Any]:
    """Template variables of a row: ``input``, ``output``, ``expected_output`` (None when absent) and
    every metadata column."""
    variables = {k: v for k, v in row.items() if k not in RESERVED and not k.startswith("_")}
    for name in ("input", "output", "expected_output"):
        variables.setdefault(name, None)
    return variables


def row_images(
    row: dict[str, Any],
    columns: list[str],
    root: ImageRoots | Path | None,
    policy: Any,
    *,
    chat_input: bool = True,
    variables: dict[str, Any] | None = None,
    store: PreparedImages | None = None,
    rule: ProviderRule = SERVER,
) -> list[PreparedImage]:
    """The row's images, in column order, prepared under ``policy`` for a provider following ``rule``; chat-format
    ``input`` images follow (and ``variables['input']`` becomes the chat text with their labels). Raises
    ``ImageError``. ``store``: the run's prepared images (each distinct image prepared once per policy and rule)."""
    refs: list[tuple[dict[str, Any], str | None, str]] = []
    for column in columns:
        if column not in row:
            raise ImageError(f"image column {column!r} is not in the dataset")
        refs += [(r, None, column) for r in image_refs(row[column], root)]
    if chat_input and variables is not None and looks_like_chat(row.get("input")):
        found = extract_chat(row["input"], root, start=len(refs) + 1)
        text = found.text
        for index in range(len(refs) + 1, len(refs) + len(found.images) + 1):
            text = text.replace(f"[Image {index}]", str(ImageLabel(index)))
        variables["input"] = text
        refs += [(image, declared, "input") for image, declared in zip(found.images, found.media_types, strict=True)]
    prepared = []
    for index, (ref, declared, column) in enumerate(refs, start=1):
        label = f"Image {index}"
        try:
            prepare = store.prepare if store is not None else prepare_image
            prepared.append(replace(prepare(ref_bytes(ref), policy, declared, label, rule=rule), column=column))
        except ImageError as exc:
            raise ImageError(f"{label}: {exc}") from None
    check_call_caps(prepared, policy, rule)
    return prepared


def estimate_text_tokens(text: str) -> int:
    """A rough token count (4 characters per token) used for plans and the TPM limiter."""
    return math.ceil(len(text) / 4)


@dataclass
class PreparedCall:
    """One request ready for the scheduler."""

    messages: list[dict[str, Any]]
    parts: list[Any]
    images: list[PreparedImage]
    text: str
    estimated_tokens: int
    image_tokens: int = 0
    """The images' share of ``estimated_tokens``."""
    other_sizing: str = ""
    """The images sized the other way: ``the provider's size`` when a cap is set, else the example cap."""
    other_image_tokens: int = 0
    """What the images would cost sized as ``other_sizing`` says."""

    def plan(self, model: str | None) -> dict[str, Any]:
        """What would be sent: text, image count and sizes, estimated prompt tokens."""
        return {
            "model": model,
            "text": self.text,
            "image_count": len(self.images),
            "images": [i.record() for i in self.images],
            "estimated_input_tokens": self.estimated_tokens,
            "image_tokens": self.image_tokens,
            "image_tokens_sized_otherwise": {"sizing": self.other_sizing, "tokens": self.other_image_tokens},
        }


def build_call(
    template: str,
    variables: dict[str, Any],
    images: list[PreparedImage],
    model: str | None = None,
    detail: str | None = None,
    system: str | None = None,
    rule: ProviderRule | None = None,
) -> PreparedCall:
    """Render ``template`` (``TemplateError`` on failure) into OpenAI-shaped messages with the images
    placed after their labels; image tokens are estimated by ``rule`` (default: the model's provider's)."""
    parts = render_parts(template, variables, images)
    text = parts_text(parts)
    messages = [openai_message(parts, detail=detail)]
    if system:
        messages.insert(0, {"role": "system", "content": system})
    rule = rule or provider_rule(model or "gpt-4o", None, detail)
    image_tokens = sum(rule.sent_tokens(i.width, i.height) for i in images)
    tokens = estimate_text_tokens((system or "") + text) + image_tokens
    return PreparedCall(messages, parts, images, text, tokens, image_tokens, *sized_otherwise(images, rule))


def sized_otherwise(images: list[PreparedImage], rule: ProviderRule) -> tuple[str, int]:
    """What ``images`` would cost the other way (the dry run's comparison): at the provider's own size when the
    policy caps them, with ``max_side`` = :data:`COST_CAP_EXAMPLE` when it does not."""
    capped = any(i.meta.get("policy", {}).get(k) is not None for i in images for k in ("max_side", "max_pixels"))
    if capped:
        return "the provider's size", sum(rule.sent_tokens(i.source_width, i.source_height) for i in images)
    sizes = [target_size(*rule.fit(i.source_width, i.source_height), COST_CAP_EXAMPLE, None) for i in images]
    return f"max_side={COST_CAP_EXAMPLE}", sum(rule.sent_tokens(*size) for size in sizes)
