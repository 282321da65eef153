"""Media type detection from bytes, and safe decoding (empty, corrupt, truncated, bomb -> ``ImageError``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MEDIA_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")


class ImageError(ValueError):
    """An image that cannot be used; the message is the row's error reason."""


def detect_media_type(data: bytes) -> str | None:
    """The media type of ``data`` from its magic bytes (PNG, JPEG, GIF, WEBP), or ``None``."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    # RIFF is a container for WAV/AVI too: only the WEBP fourcc at offset 8 makes it an image.
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def resolve_media_type(data: bytes, declared: str | None = None) -> str:
    """The media type to send: detected from bytes; a declared (data URI) type wins when it agrees.

    A declared type that contradicts the bytes is ignored in favour of the bytes; bytes that are
    no known image format raise ``ImageError``.
    """
    if not data:
        raise ImageError("image is empty (0 bytes)")
    detected = detect_media_type(data)
    if detected is None:
        raise ImageError(f"not a PNG/JPEG/GIF/WEBP image (starts with {data[:8]!r})")
    if declared:
        normal = declared.lower().replace("image/jpg", "image/jpeg")
        if normal == detected:
            return normal
    return detected


@dataclass
class Decoded:
    """A decoded image and what was learnt about it."""

    image: Any
    """The PIL image (fully loaded)."""
    media_type: str
    """Detected media type of the source bytes."""
    width: int
    height: int


def decode(data: bytes, max_pixels: int = 100_000_000, declared: str | None = None) -> Decoded:
    """Decode ``data`` fully with Pillow, refusing empty, unknown, corrupt, truncated and oversized images."""
    import io
    import warnings

    from PIL import Image

    media_type = resolve_media_type(data, declared)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data))
            width, height = image.size
            if width * height > max_pixels:
                raise ImageError(f"image of {width}x{height} pixels exceeds the limit of {max_pixels} (bomb?)")
            image.load()
    except ImageError:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise ImageError(f"image refused as a decompression bomb: {exc}") from None
    except (OSError, SyntaxError, ValueError) as exc:
        text = str(exc)
        kind = "truncated" if "truncated" in text.lower() else "corrupt"
        raise ImageError(f"{kind} image ({media_type}): {text}") from None
    if width <= 0 or height <= 0:
        raise ImageError("image has no pixels")
    return Decoded(image, media_type, width, height)
