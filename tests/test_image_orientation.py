"""EXIF orientation: a judge sees a photo upright, as a viewer (and the report's thumbnails) show it; the sizes
recorded are the sizes after the rotation."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import pytest
from conftest import RED

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


def _received_images(fake) -> list[bytes]:
    found = []
    for request in fake.requests:
        for message in request.body["messages"]:
            for part in message["content"] if isinstance(message["content"], list) else []:
                if part.get("type") == "image_url":
                    found.append(base64.b64decode(part["image_url"]["url"].split(",", 1)[1]))
    return found


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
    (sent,) = _received_images(fresh_fake)
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
    assert _received_images(fresh_fake) == [data]
