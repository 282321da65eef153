"""Media type detection from bytes, and safe decoding (empty, corrupt, truncated, bomb -> ``ImageError``)."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from vision_eval.reasons import plain_reason

MEDIA_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")


class ImageError(ValueError):
    """An image that cannot be used; the message is the row's error reason."""


def too_many_bytes(size: int, limit: int) -> ImageError:
    """The refusal of an image of ``size`` bytes, past the ``max_source_bytes`` limit."""
    return ImageError(f"image of {size:,} bytes refused: larger than max_source_bytes ({limit:,} bytes)")


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


# Formats a model is never sent, named in errors (an error names a file's type, never quotes its bytes).
_OTHER_TYPES = (
    (b"%PDF-", "PDF"),
    (b"BM", "BMP"),
    (b"II*\x00", "TIFF"),
    (b"MM\x00*", "TIFF"),
    (b"\x00\x00\x01\x00", "ICO"),
    (b"8BPS", "PSD"),
    (b"\xff\x0a", "JPEG XL"),
    (b"\x00\x00\x00\x0cJXL ", "JPEG XL"),
    (b"PK\x03\x04", "ZIP"),
    (b"\x1f\x8b", "gzip"),
)
_SVG = re.compile(rb"^\s*(?:<\?xml[^>]*>\s*)?(?:<!--.*?-->\s*)*(?:<!DOCTYPE svg[^>]*>\s*)?<svg[\s>]", re.I | re.S)


def sniff(data: bytes) -> str:
    """A name for the type of ``data`` (``image/png``..., ``SVG``, ``PDF``, ``HEIF/AVIF``...) or ``unknown``."""
    media_type = detect_media_type(data)
    if media_type:
        return media_type
    if data[4:8] == b"ftyp" and data[8:12] in (b"heic", b"heix", b"mif1", b"msf1", b"avif", b"avis", b"hevc"):
        return "HEIF/AVIF"
    for magic, name in _OTHER_TYPES:
        if data.startswith(magic):
            return name
    if _SVG.match(data[:4096]):
        return "SVG"
    return "unknown"


def resolve_media_type(data: bytes, declared: str | None = None) -> str:
    """The media type to send: detected from bytes; a declared (data URI) type wins when it agrees.

    A declared type that contradicts the bytes is ignored in favour of the bytes; bytes that are
    no known image format raise ``ImageError`` naming the detected type (never quoting the bytes).
    """
    if not data:
        raise ImageError("image is empty (0 bytes)")
    detected = detect_media_type(data)
    if detected is None:
        raise ImageError(f"not a PNG/JPEG/GIF/WEBP image (detected: {sniff(data)})")
    if declared:
        normal = declared.lower().replace("image/jpg", "image/jpeg")
        if normal == detected:
            return normal
    return detected


@dataclass
class Decoded:
    """A decoded image and what was learnt about it."""

    image: Any
    """The PIL image (fully loaded, turned upright by its EXIF orientation, except after a reduced decode: see
    ``scale``)."""
    media_type: str
    """Detected media type of the source bytes."""
    width: int
    """Width after the EXIF orientation is applied."""
    height: int
    """Height after the EXIF orientation is applied."""
    orientation: int = 1
    """The EXIF orientation tag (1: upright; 2-8: the image was flipped or rotated to apply it, or, after a reduced
    decode, is to be once resized)."""
    scale: int = 1
    """1: ``image`` has the source's pixels; 2, 4 or 8: a JPEG decoded at that reduction (DCT scaling), so
    ``image`` is about ``width / scale`` x ``height / scale`` and still as stored: resize it (within ``box``) to
    the stored orientation's size, then turn the smaller image upright with :func:`turn_upright`."""
    box: tuple[float, float, float, float] | None = None
    """With ``scale`` > 1: the region of ``image`` that covers the whole source, as stored (a reduced decode
    rounds its size up, so the last column or row may stand for a fraction of a source pixel); give it to
    ``resize(box=...)``."""

    def stored_size(self, size: tuple[int, int]) -> tuple[int, int]:
        """An upright ``size`` in the stored orientation (swapped when the EXIF orientation turns by 90 degrees)."""
        return (size[1], size[0]) if self.orientation >= 5 else size


def decode(
    data: bytes,
    max_pixels: int = 100_000_000,
    declared: str | None = None,
    *,
    any_format: bool = False,
    reduce_to: Callable[[int, int], tuple[int, int]] | None = None,
) -> Decoded:
    """Decode ``data`` fully with Pillow, refusing empty, unknown, corrupt, truncated and oversized images; the
    EXIF orientation is applied, so the image is upright as a viewer shows it. ``any_format``: any format Pillow
    reads (BMP, TIFF...), not only the four a model is sent.

    ``reduce_to``: given the upright source size, the smallest size the caller needs; a JPEG is then decoded at
    the largest DCT reduction (1/2, 1/4, 1/8) that keeps at least that size (Pillow's draft mode; other formats
    have no reduced decoding). Much faster for large photos, but the pixels are not those of a full decode
    resized, and the image is left as stored (turning the smaller image after resizing it costs less): see
    ``Decoded.scale`` and ``Decoded.box``."""
    import io

    from PIL import Image, ImageOps, UnidentifiedImageError

    if any_format and data and detect_media_type(data) is None:
        media_type = sniff(data)
    else:
        media_type = resolve_media_type(data, declared)
    try:
        with pillow_limit(max_pixels):
            image: Image.Image = Image.open(io.BytesIO(data))
            width, height = image.size
            if width * height > max_pixels:
                raise ImageError(_bomb_reason(max_pixels, (width, height)))
            if image.format == "GIF":  # Pillow checks the size of a GIF's frames while loading them
                image.load()
        scale, box = _draft(image, width, height, reduce_to) if reduce_to else (1, None)
        image.load()
        orientation = _orientation(image)
        if orientation >= 5:
            width, height = height, width
        if orientation != 1 and scale == 1:
            image = ImageOps.exif_transpose(image)
    except ImageError:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):  # our limit, met by Pillow on opening
        raise ImageError(_bomb(data, max_pixels)) from None
    except UnidentifiedImageError:
        if media_type in MEDIA_TYPES:
            raise ImageError(f"corrupt image ({media_type}): Pillow cannot identify it") from None
        raise ImageError(f"not an image Pillow can read (detected: {media_type})") from None
    except Exception as exc:  # Pillow raises many kinds on malformed files; every one is this row's reason
        text = plain_reason(exc)
        kind = "truncated" if "truncated" in text.lower() else "corrupt"
        raise ImageError(f"{kind} image ({media_type}): {text}" if text else f"{kind} image ({media_type})") from None
    if width <= 0 or height <= 0:
        raise ImageError("image has no pixels")
    return Decoded(image, media_type, width, height, orientation, scale, box)


_WARNING_FILTERS = threading.Lock()


@contextmanager
def pillow_limit(max_pixels: int | None) -> Iterator[None]:
    """Pillow's decompression-bomb limit made ours: ``PIL.Image.MAX_IMAGE_PIXELS`` is ``max_pixels`` and its
    ``DecompressionBombWarning`` (past that limit) an error, so an image is refused at our limit, never at Pillow's
    default (89.5 Mpx) instead (``None``: no limit). Both are process-wide state, so images decoded in worker
    threads take turns here (for opening, which reads only the header)."""
    import warnings

    from PIL import Image

    with _WARNING_FILTERS, warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        default, Image.MAX_IMAGE_PIXELS = Image.MAX_IMAGE_PIXELS, max_pixels
        try:
            yield
        finally:
            Image.MAX_IMAGE_PIXELS = default


def _bomb(data: bytes, max_pixels: int) -> str:
    """Why an image Pillow refused on opening is refused, with the size its header declares when it can be read."""
    import io

    from PIL import Image

    try:
        with pillow_limit(None), Image.open(io.BytesIO(data)) as image:  # the header only
            width, height = image.size
    except Exception:  # the size cannot be read: the reason without it
        return _bomb_reason(max_pixels)
    return _bomb_reason(max_pixels, (width, height))


def _bomb_reason(max_pixels: int, size: tuple[int, int] | None = None) -> str:
    image = f"image of {size[0]:,} x {size[1]:,} pixels" if size else "image"
    return f"{image} refused as a decompression bomb (more than {max_pixels:,} pixels)"


def _draft(
    image: Any, width: int, height: int, reduce_to: Callable[[int, int], tuple[int, int]]
) -> tuple[int, tuple[float, float, float, float] | None]:
    """Ask a JPEG to decode at a reduced size (before ``load``): the scale and the box covering the source, in the
    stored orientation; ``(1, None)`` when the format or the sizes allow no reduction (then nothing is changed)."""
    if image.format not in ("JPEG", "MPO"):
        return 1, None
    turned = _orientation(image) >= 5  # the caller's sizes are upright; the decoder's are as stored
    need_w, need_h = reduce_to(*((height, width) if turned else (width, height)))
    need = (need_h, need_w) if turned else (need_w, need_h)
    if width < 2 * need[0] or height < 2 * need[1]:
        return 1, None
    drafted = image.draft(None, need)
    if drafted is None or image.size == (width, height):
        return 1, None
    return round(width / drafted[1][2]), tuple(drafted[1])


_TURNS = {2: "FLIP_LEFT_RIGHT", 3: "ROTATE_180", 4: "FLIP_TOP_BOTTOM", 5: "TRANSPOSE", 6: "ROTATE_270",
          7: "TRANSVERSE", 8: "ROTATE_90"}  # fmt: skip
"""The transposition that shows an image of each EXIF orientation upright (as ``ImageOps.exif_transpose``)."""


def turn_upright(image: Any, orientation: int) -> Any:
    """``image`` (pixels as stored) flipped or rotated as its EXIF ``orientation`` says a viewer shows it."""
    from PIL import Image

    name = _TURNS.get(orientation)
    return image.transpose(Image.Transpose[name]) if name else image


def _orientation(image: Any) -> int:
    """The EXIF orientation tag of a loaded image (1 when absent or unreadable)."""
    try:
        value = image.getexif().get(0x0112, 1)
    except Exception:  # a broken EXIF block does not make the pixels unusable
        return 1
    return value if isinstance(value, int) and 1 <= value <= 8 else 1
