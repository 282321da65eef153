"""Decoding at reduced size: off by default the sent bytes are those of a full decode (checked against a full decode
done here, over photos of several sizes, EXIF orientations, modes and policies); with ``judge.image.fast_decode``
a JPEG is decoded at 1/2, 1/4 or 1/8 size and then resized as usual: the same sent size, pixels a few levels
apart, and only where a reduced decode happened."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pytest

from vision_eval.config import ImagePolicy
from vision_eval.images.media import decode
from vision_eval.images.policy import prepare_image, target_size
from vision_eval.testing.photos import photo

# (stored width, height, mode, format, progressive): landscape and portrait, sizes not divisible by 8.
SOURCES = [
    (1000, 750, "RGB", "JPEG", False),
    (701, 1001, "RGB", "JPEG", True),
    (803, 605, "CMYK", "JPEG", False),
    (803, 605, "L", "JPEG", False),
    (600, 400, "RGBA", "PNG", False),
    (600, 400, "RGB", "WEBP", False),
]
POLICIES = [
    {},
    {"max_side": 240},
    {"max_side": None, "max_pixels": 60_000},
    {"format": "keep", "max_side": 350},
    {"format": "png", "max_side": 180},
    {"quality": 60, "max_side": 450},
    {"max_side": None},
]
ORIENTATIONS = [1, 2, 3, 5, 6, 8]


def reference_sent(data: bytes, policy: ImagePolicy) -> tuple[bytes, tuple[int, int]]:
    """What a full-size decode sends: every pixel decoded, turned upright, LANCZOS-downscaled, re-encoded."""
    from PIL import Image, ImageOps

    source = Image.open(io.BytesIO(data))
    source.load()
    orientation = source.getexif().get(0x0112, 1)
    image = ImageOps.exif_transpose(source)
    size = target_size(*image.size, policy.max_side, policy.max_pixels)
    if policy.format == "keep" and size == image.size and orientation == 1:
        return data, size
    if size != image.size:
        image = image.resize(size, Image.Resampling.LANCZOS)
    fmt = policy.format if policy.format != "keep" else ("png" if source.format == "PNG" else "jpeg")
    buffer = io.BytesIO()
    if fmt == "jpeg":
        if image.mode not in ("RGB", "L"):
            rgba = image.convert("RGBA")
            image = Image.new("RGB", rgba.size, (255, 255, 255))
            image.paste(rgba, mask=rgba.getchannel("A"))
        image.save(buffer, format="JPEG", quality=policy.quality, optimize=False)
    else:
        image = image if image.mode in ("RGB", "RGBA", "L") else image.convert("RGBA")
        image.save(buffer, format="PNG", compress_level=6)
    return buffer.getvalue(), size


def _pixels(data: bytes) -> Any:
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB")).astype(int)


def _source(index: int, orientation: int) -> bytes:
    width, height, mode, fmt, progressive = SOURCES[index]
    return photo(index * 10 + orientation, width, height, mode=mode, fmt=fmt, orientation=orientation,
                 progressive=progressive)  # fmt: skip


@pytest.mark.parametrize("orientation", ORIENTATIONS)
@pytest.mark.parametrize("index", range(len(SOURCES)), ids=[f"{s[0]}x{s[1]}-{s[2]}-{s[3]}" for s in SOURCES])
def test_by_default_the_sent_bytes_are_those_of_a_full_decode(index: int, orientation: int) -> None:
    data = _source(index, orientation)
    for settings in POLICIES:
        policy = ImagePolicy(**settings)
        assert policy.fast_decode is False
        expected, size = reference_sent(data, policy)
        prepared = prepare_image(data, policy)
        assert prepared.data == expected, settings
        assert (prepared.width, prepared.height) == size
        assert "fast_decode" not in prepared.record()["policy"]


@pytest.mark.parametrize("orientation", ORIENTATIONS)
@pytest.mark.parametrize("index", range(len(SOURCES)), ids=[f"{s[0]}x{s[1]}-{s[2]}-{s[3]}" for s in SOURCES])
def test_fast_decode_sends_the_same_size_and_nearly_the_same_pixels(index: int, orientation: int) -> None:
    data = _source(index, orientation)
    jpeg = SOURCES[index][3] == "JPEG"
    for settings in POLICIES:
        exact = ImagePolicy(**settings)
        fast = ImagePolicy(**settings, fast_decode=True)
        expected, size = reference_sent(data, exact)
        prepared = prepare_image(data, fast)
        assert (prepared.width, prepared.height) == size
        assert (prepared.source_width, prepared.source_height) == (decode(data).width, decode(data).height)
        assert prepared.record()["policy"]["fast_decode"] is True
        full_w, full_h = prepared.source_width, prepared.source_height
        reduced = jpeg and full_w >= 2 * size[0] and full_h >= 2 * size[1]
        if not reduced:  # no reduced decode: not a JPEG, or not downscaled by 2 or more
            assert prepared.data == expected, settings
            continue
        assert prepared.data != expected
        difference = np.abs(_pixels(prepared.data) - _pixels(expected))
        measured = (settings, difference.max(), difference.mean(), np.percentile(difference, 99.9))
        # Measured over these photos: lossless output mean 0.4-1.0 levels, 99.9% within 17, max 30 (an edge pixel);
        # JPEG output adds its own rounding: mean up to 1.6, 99.9% within 22. A box misplaced by a fraction of a
        # pixel after a rotation doubles these.
        if settings.get("format") == "png":
            assert measured[1] <= 48 and measured[2] < 1.3 and measured[3] <= 22, measured
        else:
            assert measured[1] <= 96 and measured[2] < 2.0 and measured[3] <= 28, measured


def test_fast_decode_reduces_a_jpeg_only_as_far_as_the_sent_size_allows() -> None:
    data = photo(3, 4000, 3000, orientation=6)  # shown as 3000x4000
    for max_side, scale in [(2001, 1), (2000, 2), (1000, 4), (500, 8), (100, 8)]:
        decoded = decode(data, reduce_to=lambda w, h, m=max_side: target_size(w, h, m, None))
        assert (decoded.width, decoded.height) == (3000, 4000)
        assert decoded.scale == scale
        if scale == 1:  # turned upright at once
            assert decoded.image.size == (3000, 4000) and decoded.box is None
            continue
        assert decoded.image.size == (-(-4000 // scale), -(-3000 // scale))  # as stored, turned after resizing
        assert decoded.box == (0, 0, 4000 / scale, 3000 / scale)
        sent = decoded.stored_size(target_size(3000, 4000, max_side, None))
        assert decoded.image.size[0] >= sent[0] and decoded.image.size[1] >= sent[1]


def test_fast_decode_keeps_the_decompression_bomb_check() -> None:
    from vision_eval.images.media import ImageError

    data = photo(4, 1600, 1200)
    with pytest.raises(ImageError, match="decompression bomb"):
        prepare_image(data, ImagePolicy(max_source_pixels=1_000_000, fast_decode=True))
