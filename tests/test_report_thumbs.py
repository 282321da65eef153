"""The report's thumbnails: their exact size, upright photos, and a byte budget spent the same way every time."""

from __future__ import annotations

import base64
import io
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from conftest import RED

from vision_eval.report.thumbs import Thumb, budget_side, build_thumbnails, thumbnail, wanted_images


def _photo(size: tuple[int, int], orientation: int = 1, fmt: str = "JPEG") -> bytes:
    """A white image with a red square at the middle of its left edge and a blue disc right of centre, stored with
    an EXIF ``orientation``."""
    from PIL import Image, ImageDraw

    width, height = size
    image = Image.new("RGB", size, (255, 255, 255))
    draw = ImageDraw.Draw(image)
    side = height // 4
    draw.rectangle((width // 40, height // 2 - side // 2, width // 40 + side, height // 2 + side // 2), fill=RED)
    draw.ellipse((width // 2, height // 3, width // 2 + side, height // 3 + side), fill=(20, 40, 230))
    exif = Image.Exif()
    if orientation != 1:
        exif[0x0112] = orientation
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, exif=exif.tobytes(), **({"quality": 92} if fmt == "JPEG" else {}))
    return buffer.getvalue()


def _pixels(thumb: Thumb) -> np.ndarray:
    from PIL import Image

    assert thumb.uri is not None, thumb.error
    data = base64.b64decode(thumb.uri.split(",", 1)[1])
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB")).astype(int)


@pytest.mark.parametrize(
    ("size", "side", "expected"),
    [
        ((1024, 768), 256, (256, 192)),  # decoded at 1/4: exactly the thumbnail, nothing left to resize
        ((2048, 1536), 256, (256, 192)),
        ((800, 600), 256, (256, 192)),
        ((640, 480), 256, (256, 192)),
        ((768, 1024), 256, (192, 256)),
        ((1001, 667), 128, (128, 85)),
        ((4000, 3000), 64, (64, 48)),
        ((200, 150), 256, (200, 150)),  # never enlarged
    ],
)
def test_a_photo_gets_a_thumbnail_of_exactly_its_side_and_content(
    tmp_path: Path, size: tuple[int, int], side: int, expected: tuple[int, int]
) -> None:
    from PIL import Image

    path = tmp_path / "photo.jpg"
    path.write_bytes(_photo(size))
    thumb = thumbnail(str(path), max_side=side)
    assert (thumb.width, thumb.height) == expected and thumb.uri and thumb.uri.startswith("data:image/jpeg;base64,")
    pixels = _pixels(thumb)
    assert pixels.shape[:2] == (expected[1], expected[0])
    # The same picture as an area average of the full-size image (not decoded too small and blown up).
    fair = np.asarray(Image.open(path).convert("RGB").resize(expected, Image.Resampling.BOX)).astype(int)
    assert np.abs(pixels - fair).mean() < 4


# Orientation 6: the viewer turns the stored image 90° clockwise (left edge -> top); 8: counter-clockwise
# (left -> bottom); 3: half a turn (left -> right).
@pytest.mark.parametrize(("orientation", "side"), [(6, "top"), (8, "bottom"), (3, "right"), (1, "left")])
@pytest.mark.parametrize(("size", "fmt"), [((800, 600), "JPEG"), ((96, 64), "JPEG"), ((400, 300), "PNG")])
def test_an_exif_rotated_photo_gets_an_upright_thumbnail(
    tmp_path: Path, orientation: int, side: str, size: tuple[int, int], fmt: str
) -> None:
    path = tmp_path / f"photo.{fmt.lower()}"
    path.write_bytes(_photo(size, orientation, fmt))
    thumb = thumbnail(str(path), max_side=128)
    width, height = size
    if width > 128:
        width, height = 128, round(height * 128 / width)
    assert (thumb.width, thumb.height) == ((height, width) if orientation in (6, 8) else (width, height))
    pixels = _pixels(thumb)
    red = (pixels[..., 0] > 150) & (pixels[..., 1] < 100) & (pixels[..., 2] < 100)
    ys, xs = np.nonzero(red)
    cy, cx = ys.mean() / red.shape[0], xs.mean() / red.shape[1]
    nearest = {"left": cx, "right": 1 - cx, "top": cy, "bottom": 1 - cy}
    assert min(nearest, key=lambda k: nearest[k]) == side


def test_the_thumbnail_budget_is_spent_in_order_whatever_the_threads(tmp_path: Path) -> None:
    """The images past the byte budget are the same with any number of threads (the report is the same on every
    machine): the budget is spent in the images' order, and the images after it are not read at all (an unreadable
    one says so only when it comes before)."""
    refs = []
    for i in range(24):
        path = tmp_path / f"img{i}.jpg"
        path.write_bytes(_photo((320 + 8 * i, 240)))
        refs.append([{"path": str(path), "sha256": None, "source": "path", "error": None}])
    refs.insert(3, [{"path": str(tmp_path / "img0.jpg"), "sha256": None, "source": "path", "error": None}])  # again
    budget = 15_000
    side = budget_side(24, 128, budget)  # the side the budget calls for
    (tmp_path / "img5.jpg").write_bytes(b"\xff\xd8 not really a jpeg")  # before the budget is spent
    everything = list(build_thumbnails(refs, side).values())
    fitting = int(np.searchsorted(np.cumsum([len(t.uri or "") for t in everything]), budget, side="right"))
    assert 7 <= fitting <= 20
    (tmp_path / f"img{fitting + 1}.jpg").write_bytes(b"\xff\xd8 not really a jpeg")  # after it is spent
    runs = [build_thumbnails(refs, 128, workers=workers, budget=budget) for workers in (1, 2, 3, 8)]
    assert all(list(run.items()) == list(runs[0].items()) for run in runs[1:])
    made = list(runs[0].values())
    assert len(made) == 24 and made[:fitting] == everything[:fitting]
    assert made[5].error == "cannot read image img5.jpg: UnidentifiedImageError"
    assert all(t.uri is None and "thumbnail not embedded: this report holds at most" in (t.error or "")
               for t in made[fitting:])  # fmt: skip
    assert sum(len(t.uri or "") for t in made) <= budget
    nothing = build_thumbnails(refs, 128, budget=0)  # no room at all: no file is read, the broken ones included
    assert len(nothing) == 24 and all(t.uri is None and "at most 0.0 MB" in (t.error or "") for t in nothing.values())


def test_the_wanted_images_are_the_same_from_a_column_or_from_python_lists() -> None:
    ref = pl.Struct({"path": pl.Utf8, "sha256": pl.Utf8, "source": pl.Utf8, "error": pl.Utf8})

    def r(path: str | None, sha256: str | None = None, source: str | None = "path", error: str | None = None):
        return {"path": path, "sha256": sha256, "source": source, "error": error}

    cells = [
        [r("/a/1.jpg", "h1"), r("/a/2.jpg", "")],  # an empty hash: keyed by the path
        None,
        [],
        [r("/a/1-copy.jpg", "h1"), r("https://x.org/y.png", source="url")],  # same content: the first file
        [r("/a/3.jpg", source=None, error=""), r("/a/4.jpg", "h4", error="undecodable")],
        [r(None, "h5", source="bytes"), r("", "h6"), None],
        [r("/a/2.jpg")],
    ]
    expected = {"h1": "/a/1.jpg", "/a/2.jpg": "/a/2.jpg", "/a/3.jpg": "/a/3.jpg"}
    assert list(wanted_images(cells).items()) == list(expected.items())
    assert list(wanted_images(pl.Series("images", cells, dtype=pl.List(ref))).items()) == list(expected.items())
    paths_only = pl.Series("images", [[{"path": "/x.jpg"}], [{"path": "/y.jpg"}, {"path": "/x.jpg"}]])
    assert list(wanted_images(paths_only).items()) == [("/x.jpg", "/x.jpg"), ("/y.jpg", "/y.jpg")]
