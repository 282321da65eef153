"""Decoding at reduced size, the default: a JPEG at least twice the sent size is decoded at 1/2, 1/4 or 1/8 size and
downscaled by libvips' Lanczos-3, sending the same size, mode, orientation and format as a full decode, about the
same number of bytes and pixels within a measured PSNR bound; everything else (other formats, smaller JPEGs) sends
the bytes of a full decode. With ``judge.image.fast_decode: false`` the sent bytes are those of a full decode
(checked against a full decode done here, over photos of several sizes, EXIF orientations, modes and policies)."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pytest

from vision_eval.config import ImagePolicy
from vision_eval.images.media import decode
from vision_eval.images.policy import prepare_image, target_size
from vision_eval.testing.photos import photo

# (stored width, height, mode, format, progressive): landscape and portrait, sizes not divisible by 8 (a reduced
# decode whose last column stands for part of a source pixel: resized by Pillow) and divisible by 8 (by libvips).
SOURCES = [
    (1000, 750, "RGB", "JPEG", False),
    (701, 1001, "RGB", "JPEG", True),
    (803, 605, "CMYK", "JPEG", False),
    (803, 605, "L", "JPEG", False),
    (1280, 960, "RGB", "JPEG", False),
    (960, 1280, "L", "JPEG", True),
    (1280, 960, "CMYK", "JPEG", False),
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
    plain = image.mode in ("RGB", "L", "1", "P") and "transparency" not in image.info  # else converted, on white
    if policy.format == "keep" and size == image.size and orientation == 1 and plain:
        return data, size
    if size != image.size:
        image = image.resize(size, Image.Resampling.LANCZOS)
    fmt = policy.format if policy.format != "keep" else ("png" if source.format == "PNG" else "jpeg")
    buffer = io.BytesIO()
    if image.mode not in (("RGB", "L") if fmt == "jpeg" else ("RGB", "L", "1", "P")) or "transparency" in image.info:
        rgba = image.convert("RGBA")
        image = Image.new("RGB", rgba.size, (255, 255, 255))
        image.paste(rgba, mask=rgba.getchannel("A"))
    if fmt == "jpeg":
        image.save(buffer, format="JPEG", quality=policy.quality, optimize=False)
    else:
        image.save(buffer, format="PNG", compress_level=6)
    return buffer.getvalue(), size


def _pixels(data: bytes) -> Any:
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB")).astype(int)


def _mode(data: bytes) -> str:
    from PIL import Image

    return str(Image.open(io.BytesIO(data)).mode)


def psnr(data: bytes, reference: bytes) -> float:
    """Peak signal-to-noise ratio of the decoded ``data`` against the decoded ``reference``, in dB (8-bit levels)."""
    error = np.mean((_pixels(data) - _pixels(reference)) ** 2)
    return float("inf") if error == 0 else float(10 * np.log10(255**2 / error))


PSNR_BOUND = 38.0
"""Lowest PSNR of a fast-path image against a full decode's: measured 38.8-52.6 dB over these photos and policies
(about 47 dB for a 4000x3000 photo sent at 1024; the JPEG q85 encoding alone costs such a photo about 38 dB)."""


def _source(index: int, orientation: int) -> bytes:
    width, height, mode, fmt, progressive = SOURCES[index]
    return photo(index * 10 + orientation, width, height, mode=mode, fmt=fmt, orientation=orientation,
                 progressive=progressive)  # fmt: skip


@pytest.mark.parametrize("orientation", ORIENTATIONS)
@pytest.mark.parametrize("index", range(len(SOURCES)), ids=[f"{s[0]}x{s[1]}-{s[2]}-{s[3]}" for s in SOURCES])
def test_without_fast_decode_the_sent_bytes_are_those_of_a_full_decode(index: int, orientation: int) -> None:
    data = _source(index, orientation)
    for settings in POLICIES:
        policy = ImagePolicy(**settings, fast_decode=False)
        expected, size = reference_sent(data, policy)
        prepared = prepare_image(data, policy)
        assert prepared.data == expected, settings
        assert (prepared.width, prepared.height) == size
        assert prepared.record()["policy"]["fast_decode"] is False
        assert "decode_scale" not in prepared.record()


@pytest.mark.parametrize("orientation", ORIENTATIONS)
@pytest.mark.parametrize("index", range(len(SOURCES)), ids=[f"{s[0]}x{s[1]}-{s[2]}-{s[3]}" for s in SOURCES])
def test_by_default_a_large_jpeg_sends_the_same_size_mode_and_format_within_the_psnr_bound(
    index: int, orientation: int
) -> None:
    data = _source(index, orientation)
    jpeg = SOURCES[index][3] == "JPEG"
    for settings in POLICIES:
        fast = ImagePolicy(**settings)
        assert fast.fast_decode is True
        expected, size = reference_sent(data, ImagePolicy(**settings, fast_decode=False))
        prepared = prepare_image(data, fast)
        assert (prepared.width, prepared.height) == size
        assert (prepared.source_width, prepared.source_height) == (decode(data).width, decode(data).height)
        assert prepared.record()["policy"]["fast_decode"] is True
        full_w, full_h = prepared.source_width, prepared.source_height
        reduced = jpeg and full_w >= 2 * size[0] and full_h >= 2 * size[1]
        if not reduced:  # no reduced decode: not a JPEG, or not downscaled by 2 or more
            assert prepared.data == expected, settings
            assert "decode_scale" not in prepared.record()
            continue
        assert prepared.record()["decode_scale"] in (2, 4, 8)
        assert prepared.data != expected
        assert prepared.media_type == ("image/png" if settings.get("format") == "png" else "image/jpeg")
        assert _mode(prepared.data) == _mode(expected)
        # A wrong orientation, a misplaced box or a blurrier filter fall far below the bound (a turned or
        # half-pixel-shifted image measures under 35 dB on these photos).
        assert psnr(prepared.data, expected) >= PSNR_BOUND, settings
        assert abs(len(prepared.data) / len(expected) - 1) < 0.03, settings


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


@pytest.mark.parametrize("mode", ["RGB", "L", "CMYK", "RGBA"])
@pytest.mark.parametrize(("stored", "box"), [((800, 600), None), ((401, 301), (0, 0, 400.5, 300.5))])
def test_lanczos_matches_pillows_size_mode_and_pixel_placement(mode: str, stored: tuple[int, int], box: Any) -> None:
    from PIL import Image

    from vision_eval.images.resample import lanczos
    from vision_eval.testing.photos import photo_pixels

    image = photo_pixels(7, *stored).convert(mode)
    pillow = image.resize((300, 225), Image.Resampling.LANCZOS, box=box)
    ours = lanczos(image, (300, 225), box)
    assert (ours.size, ours.mode) == (pillow.size, pillow.mode)
    ours_px, pillow_px = np.asarray(ours).astype(int), np.asarray(pillow).astype(int)
    if mode == "RGBA" or box is not None:  # alpha, or a box ending inside a pixel: Pillow's own resize
        assert np.array_equal(ours_px, pillow_px)
        return
    # libvips: the same filter and pixel centres, different rounding (a shift by half a pixel measures ~40 dB).
    error = np.mean((ours_px - pillow_px) ** 2)
    assert error > 0  # resized by libvips, not by Pillow
    assert 10 * np.log10(255**2 / error) > 50 and np.abs(ours_px - pillow_px).max() <= 12


def test_a_libvips_failure_is_a_plain_image_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import pyvips

    from vision_eval.images.media import ImageError

    def failing(*args: Any, **kwargs: Any) -> Any:
        raise pyvips.Error("out of memory")

    monkeypatch.setattr(pyvips.Image, "reduce", failing)
    with pytest.raises(ImageError, match=r"cannot re-encode the image \(image/jpeg, mode RGB\)"):
        prepare_image(photo(5, 1280, 960), ImagePolicy(max_side=320))
