"""EXIF orientation: a judge sees a photo upright, as a viewer (and the report's thumbnails) show it; the sizes
recorded are the sizes after the rotation."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from conftest import RED, sent_images

import vision_eval as ve

DESC = {"desc": {"type": "llm_judge", "prompt": "image-description"}}


def _rotated_photo(orientation: int, fmt: str = "JPEG") -> bytes:
    """A 96x64 white image with a red square at the left edge, stored with an EXIF orientation tag."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (96, 64), (255, 255, 255))
    ImageDraw.Draw(image).rectangle((2, 22, 21, 41), fill=RED)
    exif = Image.Exif()
    exif[0x0112] = orientation
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, exif=exif.tobytes(), **({"quality": 95} if fmt == "JPEG" else {}))
    return buffer.getvalue()


def _shape_side(data: bytes) -> tuple[int, int, str]:
    """Width, height and the side (left/right/top/bottom) the red shape is nearest to, in the received pixels."""
    import numpy as np
    from PIL import Image

    pixels = np.asarray(Image.open(io.BytesIO(data)).convert("RGB")).astype(int)
    red = (pixels[..., 0] > 150) & (pixels[..., 1] < 100) & (pixels[..., 2] < 100)
    ys, xs = np.nonzero(red)
    height, width = red.shape
    cy, cx = ys.mean() / height, xs.mean() / width
    distances = {"left": cx, "right": 1 - cx, "top": cy, "bottom": 1 - cy}
    return width, height, min(distances, key=distances.get)


# Orientation 6: the viewer turns the stored image 90° clockwise (left edge -> top); 8: counter-clockwise
# (left -> bottom); 3: half a turn (left -> right).
@pytest.mark.parametrize(
    ("orientation", "side", "size"), [(6, "top", (64, 96)), (8, "bottom", (64, 96)), (3, "right", (96, 64))]
)
@pytest.mark.parametrize("image_format", ["jpeg", "keep"])
def test_the_judge_receives_the_photo_upright(
    fresh_fake, tmp_path: Path, orientation: int, side: str, size: tuple[int, int], image_format: str
) -> None:
    rows = [{"id": "photo", "output": "a red square", "images": [_rotated_photo(orientation)]}]
    judge = {"model": "openai/gpt-4o-mini", "api_base": fresh_fake.openai_base, "api_key": "sk-test",
             "cache": False, "image": {"format": image_format}}  # fmt: skip
    result = ve.evaluate(rows, evaluators=DESC, judge=judge)
    row = result.results.row(0, named=True)
    assert row["status"] == "processed", row["error"]
    (sent,) = sent_images(fresh_fake)
    assert _shape_side(sent) == (*size, side)
    assert (fresh_fake.requests[0].images[0].width, fresh_fake.requests[0].images[0].height) == size
    record = json.loads(row["details"])["images"][0]
    assert record["size"] == list(size) and record["source_size"] == list(size)
    assert record["exif_orientation"] == orientation


def test_the_request_plan_records_the_size_after_rotation() -> None:
    rows = [{"id": "photo", "output": "x", "images": [_rotated_photo(6, "PNG")]}]
    details = json.loads(ve.evaluate(rows, evaluators=DESC).results["details"][0])
    image = details["request"]["images"][0]
    assert image["size"] == [64, 96] and image["exif_orientation"] == 6


def test_an_upright_photo_is_sent_unchanged_under_keep(fresh_fake) -> None:
    data = _rotated_photo(1)
    judge = {"model": "openai/gpt-4o-mini", "api_base": fresh_fake.openai_base, "api_key": "sk-test",
             "cache": False, "image": {"format": "keep"}}  # fmt: skip
    ve.evaluate([{"id": "p", "output": "x", "images": [data]}], evaluators=DESC, judge=judge)
    assert sent_images(fresh_fake) == [data]


def _large_rotated_photo(orientation: int) -> bytes:
    """A 2400x1600 photo-like JPEG with a red square at the left edge, stored with an EXIF orientation tag."""
    from PIL import Image, ImageDraw

    from vision_eval.testing.photos import photo_pixels

    image = photo_pixels(orientation, 2400, 1600)
    ImageDraw.Draw(image).rectangle((40, 600, 440, 1000), fill=RED)
    exif = Image.Exif()
    exif[0x0112] = orientation
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=90, exif=exif.tobytes())
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("orientation", "side", "size"), [(6, "top", (341, 512)), (8, "bottom", (341, 512)), (3, "right", (512, 341))]
)
def test_a_photo_decoded_at_reduced_size_reaches_the_judge_upright_and_close_to_a_full_decode(
    fresh_fake, orientation: int, side: str, size: tuple[int, int]
) -> None:
    """The default path for large JPEGs (decoded at 1/4 size, resized by libvips, then turned) through a judge."""
    from test_images_fast_decode import PSNR_BOUND, psnr

    from vision_eval.config import ImagePolicy
    from vision_eval.images.policy import prepare_image

    data = _large_rotated_photo(orientation)
    judge = {"model": "openai/gpt-4o-mini", "api_base": fresh_fake.openai_base, "api_key": "sk-test",
             "cache": False, "image": {"max_side": 512}}  # fmt: skip
    row = ve.evaluate([{"id": "p", "output": "x", "images": [data]}], evaluators=DESC, judge=judge).results.row(
        0, named=True
    )
    assert row["status"] == "processed", row["error"]
    (sent,) = sent_images(fresh_fake)
    assert _shape_side(sent) == (*size, side)
    record = json.loads(row["details"])["images"][0]
    assert record["decode_scale"] == 4 and record["size"] == list(size) and record["exif_orientation"] == orientation
    exact = prepare_image(data, ImagePolicy(max_side=512, fast_decode=False)).data
    assert psnr(sent, exact) >= PSNR_BOUND and abs(len(sent) / len(exact) - 1) < 0.03
