"""The preprocessing policy: downscale and re-encode images before they are sent to a model.

A 12-megapixel photo sent as-is costs tens of thousands of prompt tokens at some providers;
under the default policy (longest side 1024, JPEG q85) it costs about a thousand.
"""

from __future__ import annotations

import hashlib
import io
import math
from dataclasses import dataclass, field
from typing import Any

from vision_eval.images.media import ImageError, decode, too_many_bytes, turn_upright
from vision_eval.images.resample import lanczos

try:  # the config model lives in config.py; keep a light fallback for standalone use
    from vision_eval.config import ImagePolicy
except ImportError:  # pragma: no cover
    ImagePolicy = Any  # type: ignore[misc,assignment]


@dataclass
class PreparedImage:
    """An image ready to send: encoded bytes, media type and the facts recorded in ``details``."""

    data: bytes
    media_type: str
    width: int
    height: int
    sha256: str
    """sha256 of the bytes actually sent (part of the cache key)."""
    source_sha256: str
    source_width: int
    source_height: int
    label: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        """What ``details.images`` records for this image."""
        return {
            "label": self.label,
            "sha256": self.sha256,
            "source_sha256": self.source_sha256,
            "source_size": [self.source_width, self.source_height],
            "size": [self.width, self.height],
            "bytes": len(self.data),
            "media_type": self.media_type,
            **self.meta,
        }


def target_size(width: int, height: int, max_side: int | None, max_pixels: int | None) -> tuple[int, int]:
    """The size after applying ``max_side`` and ``max_pixels`` (never upscales, keeps the aspect ratio)."""
    scale = 1.0
    if max_side and max(width, height) > max_side:
        scale = min(scale, max_side / max(width, height))
    if max_pixels and width * height > max_pixels:
        scale = min(scale, math.sqrt(max_pixels / (width * height)))
    if scale >= 1.0:
        return width, height
    return max(1, int(width * scale)), max(1, int(height * scale))


def policy_record(policy: ImagePolicy) -> dict[str, Any]:
    """The policy fields that shape the sent bytes (recorded per image)."""
    return {
        "max_side": policy.max_side,
        "max_pixels": policy.max_pixels,
        "format": policy.format,
        "quality": policy.quality,
        "detail": policy.detail,
        "fast_decode": bool(getattr(policy, "fast_decode", False)),
    }


def policy_key(policy: ImagePolicy) -> str:
    """The policy fields that decide one image's preparation (its bytes, record or refusal), as a string."""
    limits = {"max_source_pixels": policy.max_source_pixels, "max_source_bytes": policy.max_source_bytes}
    return repr(sorted({**policy_record(policy), **limits}.items()))


def prepare_image(
    data: bytes,
    policy: ImagePolicy,
    declared: str | None = None,
    label: str = "",
    *,
    source_sha256: str | None = None,
) -> PreparedImage:
    """Decode ``data`` safely and apply ``policy``. Raises ``ImageError`` for unusable images.
    ``source_sha256``: the sha256 of ``data`` when the caller has it already."""

    def sent_size(width: int, height: int) -> tuple[int, int]:
        return target_size(width, height, policy.max_side, policy.max_pixels)

    if len(data) > policy.max_source_bytes:
        raise too_many_bytes(len(data), policy.max_source_bytes)
    reduce_to = sent_size if getattr(policy, "fast_decode", False) else None
    decoded = decode(data, max_pixels=policy.max_source_pixels, declared=declared, reduce_to=reduce_to)
    image = decoded.image
    width, height = sent_size(decoded.width, decoded.height)
    resized = (width, height) != (decoded.width, decoded.height)
    fmt = policy.format
    # The source bytes go as they are only when nothing would change them (an EXIF rotation must be applied,
    # since providers differ on whether they honour the tag).
    if fmt == "keep" and not resized and decoded.media_type != "image/gif" and decoded.orientation == 1:
        out, media_type = data, decoded.media_type
    else:
        try:
            if decoded.scale > 1:  # a reduced decode, as stored: resized (by libvips), then turned upright
                stored = lanczos(image, decoded.stored_size((width, height)), decoded.box)
                image = turn_upright(stored, decoded.orientation)
            elif resized:
                from PIL import Image

                image = image.resize((width, height), Image.Resampling.LANCZOS)
            out, media_type = _encode(_eight_bit(image), fmt, decoded.media_type, policy)
        except (OSError, ValueError) as exc:  # a pixel format Pillow cannot convert or encode
            raise ImageError(f"cannot re-encode the image ({decoded.media_type}, mode {image.mode})") from exc
    if not out:
        raise ImageError("image encoded to 0 bytes")
    return PreparedImage(
        data=out,
        media_type=media_type,
        width=width,
        height=height,
        sha256=hashlib.sha256(out).hexdigest(),
        source_sha256=source_sha256 or hashlib.sha256(data).hexdigest(),
        source_width=decoded.width,
        source_height=decoded.height,
        label=label,
        meta={
            "policy": policy_record(policy),
            **({"exif_orientation": decoded.orientation} if decoded.orientation != 1 else {}),
            **({"decode_scale": decoded.scale} if decoded.scale > 1 else {}),
        },
    )


def _encode(image: Any, fmt: str, source_type: str, policy: ImagePolicy) -> tuple[bytes, str]:
    if fmt == "keep":
        fmt = "png" if source_type in ("image/png", "image/gif") else "jpeg"
    buffer = io.BytesIO()
    if fmt == "jpeg":
        if image.mode not in ("RGB", "L"):
            image = _flatten(image)
        image.save(buffer, format="JPEG", quality=policy.quality, optimize=False)
        return buffer.getvalue(), "image/jpeg"
    if image.mode not in ("RGB", "RGBA", "L", "LA", "P"):
        image = image.convert("RGBA")
    image.save(buffer, format="PNG", compress_level=6)
    return buffer.getvalue(), "image/png"


def _eight_bit(image: Any) -> Any:
    """``image`` with 8 bits per channel: 16-bit and 32-bit greyscale are scaled down (not clipped to white)."""
    if image.mode in ("I;16", "I;16B", "I;16L", "I;16N", "I", "F"):
        import numpy as np
        from PIL import Image

        pixels = np.asarray(image, dtype=np.float64)
        top = (
            255.0 if image.mode == "F" else (65535.0 if image.mode.startswith("I;16") or pixels.max() > 255 else 255.0)
        )
        return Image.fromarray(np.clip(pixels * (255.0 / top), 0, 255).astype(np.uint8), "L")
    return image


def _flatten(image: Any) -> Any:
    """An RGB copy of ``image`` with transparency composited on white."""
    from PIL import Image

    rgba = image.convert("RGBA")
    background = Image.new("RGB", rgba.size, (255, 255, 255))
    background.paste(rgba, mask=rgba.getchannel("A"))
    return background


def check_call_caps(images: list[PreparedImage], policy: ImagePolicy) -> None:
    """Refuse a call carrying too many images or too many bytes, before it is sent."""
    if len(images) > policy.max_images_per_call:
        raise ImageError(f"{len(images)} images in one call exceeds max_images_per_call={policy.max_images_per_call}")
    total = sum(len(i.data) for i in images)
    if total > policy.max_bytes_per_call:
        raise ImageError(f"{total} image bytes in one call exceeds max_bytes_per_call={policy.max_bytes_per_call}")


def openai_image_tokens(width: int, height: int, detail: str | None = "auto") -> int:
    """OpenAI's published image token formula (GPT-4o family): 85 base + 170 per 512-px tile."""
    if detail == "low":
        return 85
    scale = min(1.0, 2048 / max(width, height))
    w, h = width * scale, height * scale
    scale = min(1.0, 768 / min(w, h))
    w, h = w * scale, h * scale
    return 85 + 170 * math.ceil(w / 512) * math.ceil(h / 512)


def anthropic_image_tokens(width: int, height: int) -> int:
    """Anthropic's published estimate: width x height / 750 (after its own 1568-px downscale)."""
    scale = min(1.0, 1568 / max(width, height), math.sqrt(1_150_000 / (width * height)))
    return math.ceil(width * scale * height * scale / 750)


def gemini_image_tokens(width: int, height: int) -> int:
    """Gemini: 258 tokens for images up to 384 px, else 258 per 768-px tile."""
    if width <= 384 and height <= 384:
        return 258
    return 258 * math.ceil(width / 768) * math.ceil(height / 768)


def estimate_image_tokens(width: int, height: int, model: str | None = None, detail: str | None = None) -> int:
    """Prompt tokens an image of this size costs at the model's provider family (OpenAI formula by default)."""
    family = provider_family(model)
    if family == "anthropic":
        return anthropic_image_tokens(width, height)
    if family == "gemini":
        return gemini_image_tokens(width, height)
    return openai_image_tokens(width, height, detail or "auto")


def provider_family(model: str | None) -> str:
    """``openai``, ``anthropic``, ``gemini`` or ``nova`` from a litellm model id."""
    name = (model or "").lower()
    if "claude" in name or name.startswith("anthropic/"):
        return "anthropic"
    if name.startswith(("gemini/", "vertex_ai/")) or "gemini" in name:
        return "gemini"
    if "nova" in name or name.startswith("bedrock/"):
        return "nova"
    return "openai"
