"""Each distinct image is prepared once per policy in a run: the same photo in many rows, under several evaluators
or judges with one policy, is decoded once; the store holds a bounded number of bytes."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import sent_images

import vision_eval as ve
import vision_eval.images.prepared as prepared_module
from vision_eval.config import ImagePolicy
from vision_eval.images.media import ImageError
from vision_eval.images.policy import prepare_image
from vision_eval.images.prepared import PreparedImages
from vision_eval.testing.photos import photo


@pytest.fixture
def count_preparations(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The source sha256 of every real preparation the store runs (the real function, counted)."""
    seen: list[str] = []
    lock = threading.Lock()

    def counted(data: bytes, policy, declared=None, label="", *, source_sha256=None, **rule):
        with lock:
            seen.append(source_sha256)
        return prepare_image(data, policy, declared, label, source_sha256=source_sha256, **rule)

    monkeypatch.setattr(prepared_module, "prepare_image", counted)
    return seen


def test_the_same_image_is_prepared_once_per_policy_and_keeps_each_rows_label(count_preparations) -> None:
    store = PreparedImages()
    data = photo(1, 900, 600)
    first = store.prepare(data, ImagePolicy(max_side=256), label="Image 1")
    again = store.prepare(data, ImagePolicy(max_side=256), label="Image 2")
    other = store.prepare(data, ImagePolicy(max_side=128), label="Image 1")
    direct = prepare_image(data, ImagePolicy(max_side=256), label="Image 2")
    assert len(count_preparations) == 2 and (store.prepared, store.reused) == (2, 1)
    assert first.data == again.data == direct.data and other.width == 128
    assert (first.label, again.label) == ("Image 1", "Image 2")
    assert again.record() == direct.record()


def test_an_unusable_image_is_refused_once_with_the_same_reason(count_preparations) -> None:
    store = PreparedImages()
    broken = photo(2, 300, 200)[:2000]  # truncated JPEG
    reasons = []
    for _ in range(3):
        with pytest.raises(ImageError) as caught:
            store.prepare(broken, ImagePolicy())
        reasons.append(str(caught.value))
    assert len(count_preparations) == 1 and len(set(reasons)) == 1
    with pytest.raises(ImageError) as direct:
        prepare_image(broken, ImagePolicy())
    assert reasons[0] == str(direct.value)


def test_threads_asking_for_the_same_image_at_once_prepare_it_once(count_preparations) -> None:
    store = PreparedImages()
    data = photo(3, 1600, 1200)
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda k: store.prepare(data, ImagePolicy(), label=f"Image {k}"), range(16)))
    assert len(count_preparations) == 1 and (store.prepared, store.reused) == (1, 15)
    assert len({r.sha256 for r in results}) == 1
    assert [r.label for r in results] == [f"Image {k}" for k in range(16)]


def test_the_store_holds_at_most_its_budget_dropping_the_least_recently_used(count_preparations) -> None:
    photos = [photo(10 + k, 400, 300) for k in range(12)]
    largest = max(len(prepare_image(data, ImagePolicy()).data) for data in photos)
    store = PreparedImages(max_bytes=8 * largest)  # 8 photos fit; an image larger than an eighth is not kept
    for data in photos[:8]:
        store.prepare(data, ImagePolicy())
    store.prepare(photos[0], ImagePolicy())  # kept, and now the most recently used
    assert len(count_preparations) == 8
    for data in photos[8:]:
        store.prepare(data, ImagePolicy())
        assert store.bytes_held <= store.max_bytes
    store.prepare(photos[0], ImagePolicy())
    assert len(count_preparations) == 12
    store.prepare(photos[1], ImagePolicy())  # the least recently used: dropped first
    assert len(count_preparations) == 13
    small = PreparedImages(max_bytes=4 * largest)
    small.prepare(photos[0], ImagePolicy(format="png"))  # far larger than an eighth of 4 JPEGs
    assert small.bytes_held == 0


def test_a_run_prepares_each_photo_once_across_rows_evaluators_and_judges(
    fresh_fake, tmp_path: Path, count_preparations
) -> None:
    photos = {"a.jpg": photo(20, 1200, 900), "b.jpg": photo(21, 900, 1200, orientation=6)}
    for name, data in photos.items():
        (tmp_path / name).write_bytes(data)
    rows = [{"id": f"r{k}", "output": "a photo", "images": [str(tmp_path / ("a.jpg" if k % 3 else "b.jpg"))]}
            for k in range(9)]  # fmt: skip
    judge = {"model": "openai/gpt-4o-mini", "api_base": fresh_fake.openai_base, "api_key": "sk-test", "cache": False}
    evaluators = {
        "desc": {"type": "llm_judge", "prompt": "image-description"},
        "panel": {"type": "llm_judge", "prompt": "image-description", "panel": ["openai/gpt-4o-mini", "openai/gpt-4o"]},
        "small": {"type": "llm_judge", "prompt": "image-description", "judge": {"image": {"max_side": 200}}},
    }
    result = ve.evaluate(rows, evaluators=evaluators, judge=judge)
    assert result.results["status"].eq("processed").all(), result.results["error"].to_list()
    # 2 photos x 2 policies (the default, max_side 200), whatever the rows, evaluators and panel judges.
    assert len(count_preparations) == 4 and len(set(count_preparations)) == 2
    sent = sent_images(fresh_fake)
    assert len(sent) == 9 * 4  # desc, panel x 2, small
    expected = {prepare_image(d, ImagePolicy(**p)).data for d in photos.values() for p in ({}, {"max_side": 200})}
    assert set(sent) == expected
    for details in result.results["details"]:
        (record,) = json.loads(details)["images"]
        assert record["label"] == "Image 1"


def _png_header(width: int, height: int) -> bytes:
    """A PNG that declares ``width`` x ``height`` pixels (Pillow reads the size on opening; no pixels follow)."""
    import struct
    import zlib

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\x00" * 64))
        + chunk(b"IEND", b"")
    )


def test_images_decoded_in_threads_meet_pillows_bomb_limit_every_time_and_leave_warning_filters_alone() -> None:
    import warnings

    from PIL import Image

    from vision_eval.images.media import decode

    side = int(Image.MAX_IMAGE_PIXELS**0.5) + 10  # above Pillow's warning limit, below its error limit
    bomb, fine = _png_header(side, side), photo(5, 600, 400)
    filters = list(warnings.filters)

    def one(k: int) -> str:
        if k % 2 == 0:
            return f"{decode(fine).width}"
        try:
            decode(bomb, max_pixels=10 * side * side)
        except ImageError as exc:
            return "refused" if "decompression bomb" in str(exc) else str(exc)
        return "decoded a bomb"

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(one, range(400)))
    assert results == ["600", "refused"] * 200
    assert warnings.filters == filters
