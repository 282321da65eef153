"""image_similarity: hand-checked metrics, weighted score, dimensions, row errors."""

from __future__ import annotations

import io
import json
from pathlib import Path

import polars as pl
import pytest

import vision_eval
from vision_eval.evaluators.images.image_similarity import common_size, histogram_distance

RED, WHITE, BLUE = (220, 20, 20), (255, 255, 255), (20, 20, 220)


def save(path: Path, image) -> str:  # type: ignore[no-untyped-def]
    image.save(path)
    return str(path)


def solid(colour: tuple[int, int, int], size: tuple[int, int] = (64, 48)):  # type: ignore[no-untyped-def]
    from PIL import Image

    return Image.new("RGB", size, colour)


def half(colour: tuple[int, int, int], other: tuple[int, int, int], size: tuple[int, int] = (64, 48)):  # type: ignore[no-untyped-def]
    from PIL import Image, ImageDraw

    image = Image.new("RGB", size, other)
    ImageDraw.Draw(image).rectangle((0, 0, size[0] // 2 - 1, size[1]), fill=colour)
    return image


@pytest.fixture
def images(tmp_path: Path) -> dict[str, str]:
    from PIL import Image, ImageDraw

    pattern = Image.new("RGB", (64, 48), WHITE)
    draw = ImageDraw.Draw(pattern)
    draw.ellipse((8, 8, 30, 30), fill=RED)
    draw.rectangle((36, 10, 58, 40), fill=BLUE)
    shifted = Image.new("RGB", (64, 48), WHITE)
    draw = ImageDraw.Draw(shifted)
    draw.ellipse((12, 14, 34, 36), fill=RED)
    draw.rectangle((30, 6, 52, 36), fill=BLUE)
    (tmp_path / "corrupt.png").write_bytes(b"\x89PNG\r\n\x1a\nnot really a png")
    return {
        "red": save(tmp_path / "red.png", solid(RED)),
        "red_big": save(tmp_path / "red_big.png", solid(RED, (128, 96))),
        "blue": save(tmp_path / "blue.png", solid(BLUE)),
        "half": save(tmp_path / "half.png", half(RED, WHITE)),
        "pattern": save(tmp_path / "pattern.png", pattern),
        "shifted": save(tmp_path / "shifted.png", shifted),
        "corrupt": str(tmp_path / "corrupt.png"),
    }


def run(rows: list[dict], **settings):  # type: ignore[no-untyped-def]
    spec = {"type": "image_similarity", **settings}
    return vision_eval.evaluate(rows, evaluators={"sim": spec})


def by_id(frame: pl.DataFrame) -> dict[str, dict]:
    return {r["sample_id"]: r for r in frame.to_dicts()}


def test_histogram_distance_by_hand() -> None:
    import numpy as np

    red = np.asarray(solid(RED))
    assert histogram_distance(red, red, 8) == 0.0
    assert histogram_distance(red, np.asarray(solid(BLUE)), 8) == 1.0  # disjoint colours
    assert histogram_distance(np.asarray(half(RED, WHITE)), red, 8) == pytest.approx(0.5)  # half the mass moved


def test_common_size() -> None:
    assert common_size((1024, 512), 256) == (256, 128)
    assert common_size((100, 50), 256) == (100, 50)


def test_metrics_and_weighted_score(images: dict[str, str]) -> None:
    rows = [
        {"id": "same", "images": [images["pattern"]], "reference_image": images["pattern"]},
        {"id": "resized", "images": [images["red_big"]], "reference_image": images["red"]},
        {"id": "colour", "images": [images["blue"]], "reference_image": images["red"]},
        {"id": "half", "images": [images["half"]], "reference_image": images["red"]},
        {"id": "shifted", "images": [images["shifted"]], "reference_image": images["pattern"]},
    ]
    result = run(rows, weights={"ssim": 2, "phash": 1, "histogram": 1})
    res = by_id(result.results)
    assert all(r["status"] == "processed" for r in res.values())
    assert res["same"]["score"] == pytest.approx(1.0)
    assert res["resized"]["score"] == pytest.approx(1.0)  # the same solid colour at another size
    dims = {(r["sample_id"], r["dimension"]): r for r in result.dimensions.to_dicts()}
    assert dims[("colour", "histogram")]["score"] == 0.0
    # solid images have no structure: their perceptual hashes (DC bit only) are identical
    assert dims[("colour", "phash")]["score"] == 1.0
    assert dims[("half", "histogram")]["score"] == pytest.approx(0.5)
    assert dims[("same", "ssim")]["weight"] == 2.0
    for sample in ("colour", "half", "shifted"):
        d = {m: dims[(sample, m)]["score"] for m in ("ssim", "phash", "histogram")}
        expected = (2 * d["ssim"] + d["phash"] + d["histogram"]) / 4
        assert res[sample]["score"] == pytest.approx(expected)
    shifted = json.loads(res["shifted"]["details"])
    assert 0 < shifted["ssim"] < 0.9 and shifted["phash_distance"] > 0 and shifted["phash_bits"] == 64
    assert shifted["histogram_distance"] == pytest.approx(0.0, abs=0.05)  # same colours, moved
    assert res["same"]["passed"] is True and res["colour"]["passed"] is False  # default threshold 0.75


def test_single_metric_weights(images: dict[str, str]) -> None:
    rows = [{"id": "half", "images": [images["half"]], "reference_image": images["red"]}]
    result = run(rows, weights={"histogram": 1})
    assert result.results["score"][0] == pytest.approx(0.5)
    assert result.dimensions["dimension"].to_list() == ["histogram"]


def test_bad_rows_are_errors_with_reasons(images: dict[str, str], tmp_path: Path) -> None:
    rows = [
        {"id": "ok", "images": [images["red"]], "reference_image": images["red"]},
        {"id": "corrupt", "images": [images["corrupt"]], "reference_image": images["red"]},
        {"id": "bad_ref", "images": [images["red"]], "reference_image": images["corrupt"]},
        {"id": "missing_ref", "images": [images["red"]], "reference_image": str(tmp_path / "nope.png")},
        {"id": "null_ref", "images": [images["red"]], "reference_image": None},
    ]
    res = by_id(run(rows).results)
    assert res["ok"]["status"] == "processed"
    assert res["corrupt"]["status"] == "error" and "cannot decode image 1" in res["corrupt"]["error"]
    assert "cannot decode reference image" in res["bad_ref"]["error"]
    assert "image file not found" in res["missing_ref"]["error"]
    assert res["null_ref"]["error"] == "reference_image is missing"
    assert all(res[k]["score"] is None for k in ("corrupt", "bad_ref", "missing_ref", "null_ref"))


def test_reasons_name_the_type_and_are_the_same_in_every_run(images: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "noise.png").write_bytes(bytes(range(256)) * 4)
    (tmp_path / "drawing.png").write_bytes(b'<svg xmlns="http://www.w3.org/2000/svg"/>')
    (tmp_path / "passwd.png").write_bytes(b"root:x:0:0:secret")
    rows = [
        {"id": "noise", "images": [str(tmp_path / "noise.png")], "reference_image": images["red"]},
        {"id": "svg", "images": [str(tmp_path / "drawing.png")], "reference_image": images["red"]},
        {"id": "text", "images": [images["red"]], "reference_image": str(tmp_path / "passwd.png")},
    ]
    first, second = by_id(run(rows).results), by_id(run(rows).results)
    assert first["noise"]["error"] == "cannot decode image 1: not an image Pillow can read (detected: unknown)"
    assert first["svg"]["error"] == "cannot decode image 1: not an image Pillow can read (detected: SVG)"
    assert first["text"]["error"] == (
        "cannot decode reference image (reference_image): not an image Pillow can read (detected: unknown)"
    )
    assert {k: r["error"] for k, r in first.items()} == {k: r["error"] for k, r in second.items()}
    assert not any("0x" in r["error"] or "root:" in r["error"] for r in first.values())


def test_relative_reference_resolves_against_the_dataset_root(tmp_path: Path, images: dict[str, str]) -> None:
    rows = [
        {"id": "a", "images": ["red.png"], "ref": "half.png"},
        {"id": "b", "images": ["red.png", "blue.png"], "ref": "../escape.png"},
        {"id": "c", "images": ["red.png", "half.png"], "ref": "red.png"},
    ]
    path = tmp_path / "data.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    result = vision_eval.evaluate(
        str(path), evaluators={"sim": {"type": "image_similarity", "reference_column": "ref", "image_index": 1}}
    )
    res = by_id(result.results)
    assert "row has 1 image(s); image_index is 1" in res["a"]["error"]
    assert "escapes the dataset root" in res["b"]["error"]
    # the second image (half red, half white) against red: the histogram moved half its mass
    assert json.loads(res["c"]["details"])["histogram_distance"] == pytest.approx(0.5)
    second = vision_eval.evaluate(
        str(path),
        evaluators={"sim": {"type": "image_similarity", "reference_column": "ref", "weights": {"histogram": 1}}},
    )
    assert by_id(second.results)["a"]["score"] == pytest.approx(0.5)


def test_pixels_from_bytes(images: dict[str, str]) -> None:
    buffer = io.BytesIO()
    solid(RED).save(buffer, format="PNG")
    rows = [{"id": "m", "images": [buffer.getvalue()], "reference_image": buffer.getvalue()}]
    assert run(rows).results["score"][0] == pytest.approx(1.0)


@pytest.mark.parametrize("weights", [{"sharpness": 1}, {"ssim": 0}, {"ssim": -1, "phash": 2}])
def test_bad_weights_are_config_errors(weights: dict) -> None:
    with pytest.raises(Exception, match="weights"):
        run([{"id": "x", "images": [], "reference_image": None}], weights=weights)
