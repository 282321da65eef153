"""The preprocessing policy: what an image becomes before it is sent to a model.

By default an image goes as the dataset holds it (its source bytes) at the largest size the model's provider uses
(:mod:`vision_eval.images.provider_rules`): a server of your own gets the source, a hosted provider the size its
model works at, re-encoded only when that size or a limit of the provider's (formats, bytes per image) requires it.
A user's ``max_side`` / ``max_pixels`` is a cost cap on top; an EXIF rotation is always applied, and a GIF sends its
first frame as PNG.
"""

from __future__ import annotations

import hashlib
import io
import math
from dataclasses import dataclass, field
from typing import Any

from vision_eval.images.media import ImageError, decode, turn_upright
from vision_eval.images.provider_rules import SERVER, ProviderRule
from vision_eval.images.resample import lanczos

try:  # the config model lives in config.py; keep a light fallback for standalone use
    from vision_eval.config import ImagePolicy
except ImportError:  # pragma: no cover
    ImagePolicy = Any  # type: ignore[misc,assignment]

PLAIN_MODES = ("RGB", "L", "1", "P")
"""Pixel formats sent as they are; others (16-bit, CMYK, alpha) are converted as a viewer shows them on white."""
SHRINK_STEPS = 6
"""Re-encodings tried, each smaller, to bring an image within a provider's bytes-per-image limit."""


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
    column: str = ""
    """The dataset column the image came from (``input`` for an image inside a chat-format input)."""
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
            **({"column": self.column} if self.column else {}),
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


def policy_key(policy: ImagePolicy, rule: ProviderRule = SERVER) -> str:
    """The policy fields and provider rule that decide one image's preparation (its bytes, record or refusal)."""
    fields = {**policy_record(policy), "max_source_pixels": policy.max_source_pixels, "rule": rule.key()}
    return repr(sorted(fields.items()))


def prepare_image(
    data: bytes,
    policy: ImagePolicy,
    declared: str | None = None,
    label: str = "",
    *,
    source_sha256: str | None = None,
    rule: ProviderRule = SERVER,
) -> PreparedImage:
    """Decode ``data`` safely and prepare it for a model whose provider follows ``rule`` (default: a server of your
    own, which gets the source), under ``policy``'s caps. Raises ``ImageError`` for unusable images.
    ``source_sha256``: the sha256 of ``data`` when the caller has it already."""

    def sent_size(width: int, height: int) -> tuple[int, int]:
        return target_size(*rule.fit(width, height), policy.max_side, policy.max_pixels)

    reduce_to = sent_size if getattr(policy, "fast_decode", False) else None
    decoded = decode(data, max_pixels=policy.max_source_pixels, declared=declared, reduce_to=reduce_to)
    image = decoded.image
    width, height = sent_size(decoded.width, decoded.height)
    resized = (width, height) != (decoded.width, decoded.height)
    why = _why_encode(policy, rule, decoded, resized, len(data))
    if why is None:  # the source bytes go as they are
        out, media_type = data, decoded.media_type
    else:
        try:
            if decoded.scale > 1:  # a reduced decode, as stored: resized (by libvips), then turned upright
                stored = lanczos(image, decoded.stored_size((width, height)), decoded.box)
                image = turn_upright(stored, decoded.orientation)
            elif resized:
                from PIL import Image

                image = image.resize((width, height), Image.Resampling.LANCZOS)
            image = _eight_bit(image)
            out, media_type = _encode(image, policy.format, decoded.media_type, policy)
            if rule.max_image_bytes is not None and len(out) > rule.max_image_bytes:
                out, media_type, (width, height) = _within_bytes(image, out, media_type, policy, rule)
                why += f", then made smaller for the provider's {rule.max_image_bytes:,}-byte limit per image"
        except ImageError:
            raise
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
            "sizing": rule.name,
            "encoding": "source bytes" if why is None else f"re-encoded: {why}",
            **({"exif_orientation": decoded.orientation} if decoded.orientation != 1 else {}),
            **({"decode_scale": decoded.scale} if decoded.scale > 1 else {}),
        },
    )


def _why_encode(policy: ImagePolicy, rule: ProviderRule, decoded: Any, resized: bool, size: int) -> str | None:
    """Why the source bytes cannot go as they are (``None``: they can)."""
    media_type, image = decoded.media_type, decoded.image
    if policy.format != "keep":
        return f"format: {policy.format}"
    if resized:
        capped = policy.max_side is not None or policy.max_pixels is not None
        return "downscaled to the cap set (max_side / max_pixels)" if capped else "downscaled to the provider's size"
    if decoded.orientation != 1:  # applied, since providers differ on whether they honour the tag
        return "EXIF orientation applied"
    if media_type == "image/gif":
        return "a GIF sends its first frame"
    if image.mode not in PLAIN_MODES or "transparency" in image.info:  # a model's processor may clip or drop them
        return f"pixels converted to 8-bit without transparency (mode {image.mode})"
    if rule.media_types is not None and media_type not in rule.media_types:
        return f"the provider does not accept {media_type}"
    if rule.max_image_bytes is not None and size > rule.max_image_bytes:
        return f"over the provider's {rule.max_image_bytes:,}-byte limit per image"
    return None


def _within_bytes(
    image: Any, out: bytes, media_type: str, policy: ImagePolicy, rule: ProviderRule
) -> tuple[bytes, str, tuple[int, int]]:
    """``image`` encoded within ``rule.max_image_bytes``: as JPEG first (when it was PNG), then smaller."""
    from PIL import Image

    limit = rule.max_image_bytes
    assert limit is not None
    current = image
    for _ in range(SHRINK_STEPS):
        if len(out) <= limit:
            return out, media_type, current.size
        if media_type == "image/png":
            out, media_type = _encode(current, "jpeg", media_type, policy)
            continue
        factor = min(0.9, math.sqrt(limit / len(out)) * 0.95)
        size = (max(1, int(current.width * factor)), max(1, int(current.height * factor)))
        current = image.resize(size, Image.Resampling.LANCZOS)
        out, media_type = _encode(current, "jpeg", media_type, policy)
    if len(out) <= limit:
        return out, media_type, current.size
    raise ImageError(f"cannot bring the image within the provider's {limit:,}-byte limit ({rule.name})")


def _encode(image: Any, fmt: str, source_type: str, policy: ImagePolicy) -> tuple[bytes, str]:
    if fmt == "keep":
        fmt = "png" if source_type in ("image/png", "image/gif") else "jpeg"
    buffer = io.BytesIO()
    if fmt == "jpeg":
        if image.mode not in ("RGB", "L"):
            image = _flatten(image)
        image.save(buffer, format="JPEG", quality=policy.quality, optimize=False)
        return buffer.getvalue(), "image/jpeg"
    if image.mode not in PLAIN_MODES or "transparency" in image.info:
        image = _flatten(image)
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


def check_call_caps(images: list[PreparedImage], policy: ImagePolicy, rule: ProviderRule = SERVER) -> None:
    """Refuse a call carrying too many images or too many bytes (the policy's caps, the provider's request limit),
    before it is sent."""
    if len(images) > policy.max_images_per_call:
        raise ImageError(f"{len(images)} images in one call exceeds max_images_per_call={policy.max_images_per_call}")
    total = sum(len(i.data) for i in images)
    if total > policy.max_bytes_per_call:
        raise ImageError(f"{total} image bytes in one call exceeds max_bytes_per_call={policy.max_bytes_per_call}")
    if rule.max_request_bytes is not None and total > rule.max_request_bytes:
        raise ImageError(
            f"{total} image bytes in one call exceed the provider's limit of {rule.max_request_bytes:,} per request "
            f"({rule.name}); set a smaller image.max_side"
        )
