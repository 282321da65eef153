"""The fault and bad-input matrix: every hostile or broken input, one case each, named for what it proves.

Each case puts its bad row(s) in one batch between good rows, runs ``vision_eval.evaluate`` (a few run the CLI as a
subprocess) and asserts: the bad row's exact status and reason; every input row id exactly once per evaluator (no
row lost, none attributed to another id); the good rows processed with their correct scores; and for judge cases
the number of requests the fake provider received (a refused or unusable image is never sent).

Each kind of fault is one table of cases and one parametrized test, so a new fault is one more entry:
``BAD_INPUTS`` (hostile data), ``PROVIDER_FAULTS`` (scripted replies of the fake provider: the faulty row's
request count, the good row beside it intact, no key in any file) and the process faults (a kill or Ctrl-C
mid-run then a resume, two runs sharing a cache, a full disk while writing, bad rows at 1%/10%/50% of a batch,
run-wide counters), each a test named for what it proves.
"""

from __future__ import annotations

import base64
import io
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from conftest import BLUE, RED, shape_png
from secret_scan import assert_no_secret

import vision_eval as ve
from vision_eval.errors import ConfigError, DatasetError
from vision_eval.evaluators.code.count import MAX_DIGITS
from vision_eval.evaluators.code.json_depth import MAX_DEPTH
from vision_eval.llm.cache import CallCache
from vision_eval.testing.fake_providers import Action, FakeProviders

# --- images, generated small -----------------------------------------------------------------------------------


def _pil(image: Any, fmt: str, **options: Any) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **options)
    return buffer.getvalue()


def _shape(colour: tuple[int, int, int], mode: str = "RGB", size: tuple[int, int] = (96, 64)) -> Any:
    from PIL import Image, ImageDraw

    image = Image.new("RGB", size, (255, 255, 255))
    ImageDraw.Draw(image).ellipse((8, 8, 40, 40), fill=colour)
    return image.convert(mode) if mode != "RGB" else image


def truncated(fmt: str) -> bytes:
    data = _pil(_shape(RED), fmt, **({"quality": 95} if fmt == "JPEG" else {}))
    return data[: len(data) // 2]


def png_bomb() -> bytes:
    from PIL import Image

    return _pil(Image.new("1", (12_000, 12_000)), "PNG")  # 144 Mpx in a few KB


def gif_bomb() -> bytes:
    """A 1x1 GIF whose header declares a 20,000 x 20,000 screen (what Pillow reports as its size)."""
    from PIL import Image

    data = bytearray(_pil(Image.new("P", (1, 1)), "GIF"))
    data[6:10] = (20_000).to_bytes(2, "little") * 2
    return bytes(data)


def gif_frames(count: int = 1000) -> bytes:
    """An animated GIF of ``count`` frames, red and blue in turn (the first, red, is the one sent)."""
    frames = [_shape(RED if i % 2 == 0 else BLUE, size=(16, 16)).convert("P") for i in range(count)]
    return _pil(frames[0], "GIF", save_all=True, append_images=frames[1:])


def cmyk_jpeg() -> bytes:
    return _pil(_shape(RED, "CMYK"), "JPEG", quality=95)


def png_16bit() -> bytes:
    """A 16-bit greyscale PNG: a mid-grey disc (32,768 of 65,535) on black."""
    import numpy as np
    from PIL import Image

    pixels = np.zeros((64, 96), dtype=np.uint16)
    yy, xx = np.mgrid[:64, :96]
    pixels[(yy - 24) ** 2 + (xx - 24) ** 2 < 256] = 32_768
    image = Image.fromarray(pixels)
    assert image.mode.startswith("I;16")
    return _pil(image, "PNG")


def palette_alpha() -> bytes:
    """A palette PNG whose background is fully transparent (flattened on white before sending)."""
    from PIL import Image, ImageDraw

    image = Image.new("RGBA", (96, 64), (0, 0, 0, 0))
    ImageDraw.Draw(image).ellipse((8, 8, 40, 40), fill=(*RED, 255))
    return _pil(image.convert("P", palette=Image.Palette.ADAPTIVE), "PNG", transparency=0)


def exif_rotated() -> bytes:
    from PIL import Image

    exif = Image.Exif()
    exif[0x0112] = 6  # the viewer turns it 90° clockwise: 96x64 stored, 64x96 seen
    return _pil(_shape(RED), "JPEG", exif=exif.tobytes(), quality=95)


def huge_8000() -> bytes:
    from PIL import Image, ImageDraw

    image = Image.new("L", (8000, 8000), 255)
    ImageDraw.Draw(image).rectangle((1000, 1000, 3000, 3000), fill=0)
    return _pil(image, "PNG", compress_level=1)


SVG = b'<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" width="9" height="9"><rect fill="red"/></svg>'
SECRET = "root:x:0:0:TOPSECRET-CONTENT"


# --- the cases -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BadInput:
    """One bad input, between good rows of the same batch."""

    id: str
    """What the case proves (the test id)."""
    evaluator: str
    """Key of ``EVALUATORS``: which evaluator scores the rows."""
    row: Callable[[Path], dict[str, Any]] | None = None
    """The bad row (given the dataset folder, where it may write files); its id is ``bad``."""
    status: str = "error"
    """The bad row's exact status (``raises`` cases: unused)."""
    reason: str | None = None
    """A substring of the bad row's ``error`` (status error) or of its ``details`` (processed)."""
    score: float | None = None
    """The bad row's score when processed."""
    line: Callable[[], bytes] | None = None
    """Instead of ``row``: the bad row as raw JSONL bytes (invalid UTF-8...)."""
    source: str = "jsonl"
    """How the rows are handed over: ``jsonl`` (a file in the dataset folder), ``python`` (a list of dicts), ``csv``."""
    dataset: dict[str, Any] = field(default_factory=dict)
    """Extra dataset settings (``image_roots``...)."""
    sent: bool = False
    """The bad row's request reaches the judge (a usable image)."""
    raises: type[Exception] | None = None
    """The whole input is refused before anything runs (a dataset-level problem)."""
    check: Callable[[dict[str, Any], Any], None] | None = None
    """Extra assertions on the bad result row (and the fake provider)."""
    judge: dict[str, Any] = field(default_factory=dict)
    """Extra judge settings (``image``...)."""


def _image(data: bytes | Callable[[], bytes], name: str = "bad.img") -> Callable[[Path], dict[str, Any]]:
    def row(folder: Path) -> dict[str, Any]:
        (folder / name).write_bytes(data() if callable(data) else data)
        return {"output": "a red circle", "images": [name]}

    return row


def _images(*values: Any) -> Callable[[Path], dict[str, Any]]:
    def row(folder: Path) -> dict[str, Any]:
        return {"output": "a red circle", "images": [v(folder) if callable(v) else v for v in values]}

    return row


def _outside(folder: Path) -> Path:
    outside = folder.parent / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "blue.png").write_bytes(shape_png(BLUE, 2))
    return outside / "blue.png"


def _symlink_out(folder: Path) -> str:
    (folder / "link.png").symlink_to(_outside(folder))
    return "link.png"


def _secret(folder: Path) -> str:
    outside = folder.parent / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "passwd").write_text(SECRET + "\n")
    return str(outside / "passwd")


def _text(output: Any, expected: Any = "5 circles", **extra: Any) -> Callable[[Path], dict[str, Any]]:
    return lambda folder: {"output": output, "expected_output": expected, **extra}


def _sent_size(size: list[int]) -> Callable[[dict[str, Any], Any], None]:
    """The size recorded for the bad row's image, and the size the fake provider decoded, are ``size``."""

    def check(row: dict[str, Any], fake: Any) -> None:
        assert json.loads(row["details"])["images"][0]["size"] == size
        assert size in [[i.width, i.height] for r in fake.requests for i in r.images]

    return check


def _deep(depth: int) -> str:
    return '{"a": ' * depth + "1" + "}" * depth


def _jsonl_line(text: bytes) -> Callable[[], bytes]:
    return lambda: text


BAD_INPUTS: list[BadInput] = [
    # images that cannot be used: row errors naming the problem, never sent
    BadInput("empty_file_is_an_error_not_a_call", "judge", _image(b""), reason="image file is empty"),
    BadInput("truncated_png", "judge", _image(lambda: truncated("PNG")), reason="image (image/png)"),
    BadInput("truncated_jpeg", "judge", _image(lambda: truncated("JPEG")), reason="truncated image (image/jpeg)"),
    BadInput("truncated_webp", "judge", _image(lambda: truncated("WEBP")), reason="image (image/webp)"),
    BadInput("truncated_gif", "judge", _image(lambda: truncated("GIF")), reason="image (image/gif)"),
    BadInput(
        "random_bytes_name_no_type",
        "judge",
        _image(bytes(range(256)) * 8),
        reason="Image 1: not a PNG/JPEG/GIF/WEBP image (detected: unknown)",
    ),
    BadInput("svg_is_named_not_rendered", "judge", _image(SVG), reason="not a PNG/JPEG/GIF/WEBP image (detected: SVG)"),
    BadInput("png_bomb_refused_before_decoding", "judge", _image(png_bomb), reason="refused as a decompression bomb"),
    BadInput("gif_bomb_refused_before_decoding", "judge", _image(gif_bomb), reason="refused as a decompression bomb"),
    BadInput("missing_file", "judge", _images("nowhere.png"), reason="image file not found: nowhere.png"),
    BadInput("nul_in_path", "judge", _images("red\x00.png"), reason="contains a NUL character"),
    # files a row must not choose
    BadInput(
        "traversal_stays_inside_the_root", "judge", _images("../outside/blue.png"), reason="escapes the dataset root"
    ),
    BadInput("absolute_path_outside_refused", "judge", _images(lambda f: str(_outside(f))), reason="not allowed"),
    BadInput("symlink_out_checked_after_resolving", "judge", _images(_symlink_out), reason="escapes the dataset root"),
    BadInput("file_uri_outside_refused", "judge", _images(lambda f: _outside(f).as_uri()), reason="not allowed"),
    BadInput(
        "file_uri_of_another_host_refused",
        "judge",
        _images("file://evil.example/etc/passwd"),
        reason="names another host",
    ),
    BadInput("home_path_refused", "judge", _images("~/.ssh/id_rsa"), reason="not allowed"),
    BadInput("etc_passwd_refused_unread", "judge", _images("/etc/passwd"), reason="not allowed"),
    BadInput(
        "allowed_foreign_file_named_never_quoted",
        "judge",
        _images(_secret),
        reason="Image 1: not a PNG/JPEG/GIF/WEBP image (detected: unknown)",
        dataset={"image_roots": ["{outside}"]},
        check=lambda row, fake: None if SECRET not in json.dumps(row) else pytest.fail("secret quoted"),
    ),
    BadInput(
        "url_refused_when_urls_are_disabled",
        "judge",
        _images("https://example.com/cat.png"),
        reason="image URLs are disabled",
    ),
    BadInput(
        "malformed_data_uri",
        "judge",
        _images("data:image/png;base64,@@@not-base64@@@"),
        reason="data URI does not hold valid base64 data",
    ),
    BadInput(
        "data_uri_of_text_named_unknown",
        "judge",
        _images("data:image/png;base64," + base64.b64encode(SECRET.encode()).decode()),
        reason="not a PNG/JPEG/GIF/WEBP image (detected: unknown)",
    ),
    # unusual but valid images: sent, as the viewer sees them
    BadInput(
        "gif_of_1000_frames_sends_its_first", "judge", _image(gif_frames), status="processed", score=0.9, sent=True
    ),
    BadInput("cmyk_jpeg_sent_as_rgb", "judge", _image(cmyk_jpeg), status="processed", score=0.9, sent=True),
    BadInput(
        "png_16bit_scaled_not_clipped",
        "judge",
        lambda f: {**_image(png_16bit)(f), "output": "a gray circle"},
        status="processed",
        score=0.9,
        sent=True,
    ),
    BadInput(
        "palette_with_alpha_flattened_on_white",
        "judge",
        _image(palette_alpha),
        status="processed",
        score=0.9,
        sent=True,
    ),
    BadInput(
        "exif_rotated_sent_upright",
        "judge",
        _image(exif_rotated),
        status="processed",
        score=0.9,
        sent=True,
        check=_sent_size([64, 96]),
    ),
    BadInput(
        "image_8000x8000_downscaled",
        "judge",
        lambda f: {**_image(huge_8000)(f), "output": "a black square"},
        status="processed",
        score=0.9,
        sent=True,
        check=_sent_size([1024, 1024]),
        judge={"image": {"max_side": 1024}},  # a cost cap (a server of your own is sent the 8000x8000 source)
    ),
    # text that is not valid Unicode
    BadInput(
        "lone_surrogate_from_python",
        "exact",
        _text("x \ud800", "x"),
        source="python",
        reason="column 'output' is not valid text",
    ),
    BadInput(
        "lone_surrogate_escape_in_jsonl",
        "exact",
        line=_jsonl_line(b'{"id": "bad", "output": "x \\ud800", "expected_output": "x"}'),
        reason="line 2 of rows.jsonl: column 'output' is not valid text",
    ),
    BadInput(
        "invalid_utf8_in_jsonl",
        "exact",
        line=_jsonl_line(b'{"id": "bad", "output": "x", "expected_output": "\xff"}'),
        reason="line 2 of rows.jsonl: column 'expected_output' is not valid text",
    ),
    BadInput(
        "invalid_utf8_in_csv",
        "exact",
        _text("x \udcff y", "x"),
        source="csv",
        reason="row 2 of rows.csv: column 'output' is not valid text",
    ),
    BadInput(
        "malformed_jsonl_line_keeps_its_place",
        "exact",
        line=_jsonl_line(b'{"id": "bad", "output": '),
        reason="line 2 of rows.jsonl is not valid JSON",
    ),
    BadInput(
        "jsonl_line_not_an_object", "exact", line=_jsonl_line(b'["bad", "x"]'), reason="line is not a JSON object"
    ),
    # numbers
    BadInput(
        "count_of_25_digits_gets_a_verdict",
        "count",
        _text("1234567890123456789012345 circles"),
        status="processed",
        score=0.0,
        reason='"found": {"circle": 1234567890123456789012345}',
    ),
    BadInput(
        "count_of_25_digits_matches_itself",
        "count",
        _text("1234567890123456789012345 circles", "1234567890123456789012345 circles"),
        status="processed",
        score=1.0,
    ),
    BadInput("arabic_indic_digits_are_digits", "count", _text("٥ circles"), status="processed", score=1.0),
    BadInput("fullwidth_digits_are_digits", "count", _text("５ circles"), status="processed", score=1.0),
    BadInput(
        "number_of_5000_digits_is_a_plain_reason",
        "count",
        _text("9" * 5000 + " circles"),
        reason=f"output holds a number of more than {MAX_DIGITS} digits",
    ),
    BadInput("chart_digits_of_any_script", "chart", _text("$٥M", "$5M"), status="processed", score=1.0),
    BadInput(
        "nan_in_json_compares_as_a_value",
        "json",
        _text('{"a": NaN}', '{"a": 1}'),
        status="processed",
        score=0.0,
        reason='"value_mismatches"',
    ),
    BadInput("infinity_in_json", "json", _text('{"a": Infinity}', '{"a": Infinity}'), status="processed", score=1.0),
    BadInput(
        "json_integer_of_5000_digits",
        "json",
        _text('{"a": ' + "7" * 5000 + "}", '{"a": 1}'),
        reason="output holds a number of more than",
    ),
    BadInput(
        "json_nested_5000_deep_output",
        "json",
        _text(_deep(5000), '{"a": 1}'),
        reason=f"output: JSON nested deeper than {MAX_DEPTH} levels",
    ),
    BadInput(
        "json_nested_5000_deep_expected",
        "json",
        _text('{"a": 1}', "[" * 5000 + "]" * 5000),
        reason=f"expected_output: JSON nested deeper than {MAX_DEPTH} levels",
    ),
    BadInput(
        "json_arrays_nested_60_deep_in_linear_time",
        "json",
        _text("[" * 60 + "1" + "]" * 60, "[" * 60 + "1" + "]" * 60),
        status="processed",
        score=1.0,
    ),
    # sizes, nulls, types
    BadInput(
        "ten_mb_output_is_scored",
        "count",
        _text("5 circles. " + "lorem ipsum " * 900_000),
        status="processed",
        score=1.0,
    ),
    BadInput("null_expected_is_missing", "count", _text("5 circles", None), reason="expected_output is missing"),
    BadInput("missing_output_key", "count", lambda f: {"expected_output": "5 circles"}, reason="output is missing"),
    BadInput("number_typed_expected_read_as_text", "count", _text("5 circles", 5), status="processed", score=1.0),
    BadInput(
        "object_typed_expected_read_as_json_text",
        "count",
        _text("5 circles", {"circles": 5}),
        status="processed",
        score=1.0,
    ),
    # dataset-level problems: refused before anything runs, naming the culprit
    BadInput(
        "duplicate_ids_refused_naming_them",
        "exact",
        lambda f: {"id": "good_1", "output": "x"},
        raises=DatasetError,
        reason="repeated: good_1",
    ),
    BadInput(
        "missing_column_refused_naming_it",
        "output_only",
        lambda f: {"output": "5 circles"},
        source="python",
        raises=ConfigError,
        reason="needs dataset column 'expected_output'",
    ),
]

GOOD: dict[str, list[tuple[dict[str, Any], float]]] = {
    "judge": [({"output": "a red circle", "images": ["red.png"]}, 0.9),
              ({"output": "a red circle", "images": ["blue.png"]}, 0.3)],
    "exact": [({"output": "x", "expected_output": "x"}, 1.0), ({"output": "x", "expected_output": "y"}, 0.0)],
    "count": [({"output": "5 circles", "expected_output": "5 circles"}, 1.0),
              ({"output": "3 dogs", "expected_output": "4 dogs"}, 0.0)],
    "chart": [({"output": "$5M", "expected_output": "$5M"}, 1.0), ({"output": "$1M", "expected_output": "$5M"}, 0.0)],
    "json": [({"output": '{"a": 1}', "expected_output": '{"a": 1}'}, 1.0),
             ({"output": '{"a": 2}', "expected_output": '{"a": 1}'}, 0.0)],
    "output_only": [({"output": "5 circles"}, 1.0)],
}  # fmt: skip
EVALUATORS = {
    "judge": {"type": "llm_judge", "prompt": "image-description"},
    "exact": {"type": "exact_match"},
    "count": {"type": "count_validator"},
    "chart": {"type": "chart_validator"},
    "json": {"type": "json_validator"},
    "output_only": {"type": "count_validator"},
}

# --- running a case ------------------------------------------------------------------------------------------------


def _rows(case: BadInput, folder: Path) -> tuple[list[dict[str, Any]], list[float]]:
    good = GOOD[case.evaluator]
    rows = [{"id": f"good_{i}", **row} for i, (row, _) in enumerate(good)]
    scores = [score for _, score in good]
    if case.row is not None:
        rows.insert(1, {"id": "bad", **case.row(folder)})
    return rows, scores


def _line_id(line: bytes) -> str:
    """The id a raw JSONL line (the second of its file) gets: its own, or the file and line when it does not parse."""
    try:
        row = json.loads(line.decode("utf-8", "surrogateescape"))
    except ValueError:
        return "rows.jsonl:2"
    return row["id"] if isinstance(row, dict) else "rows.jsonl:2"


def _write_jsonl(path: Path, rows: list[dict[str, Any]], bad_line: bytes | None) -> None:
    lines = [json.dumps(row).encode() for row in rows]
    if bad_line is not None:
        lines.insert(1, bad_line)
    path.write_bytes(b"\n".join(lines) + b"\n")


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    columns = list(dict.fromkeys(k for row in rows for k in row))
    text = "\n".join(",".join(str(row.get(c, "")) for c in columns) for row in rows)
    path.write_bytes(",".join(columns).encode() + b"\n" + text.encode("utf-8", "surrogateescape") + b"\n")


def _data(case: BadInput, folder: Path) -> tuple[Any, list[str], list[float]]:
    """What ``evaluate`` reads, the input ids in order, and the good rows' scores."""
    rows, scores = _rows(case, folder)
    ids = [row["id"] for row in rows]
    if case.line is not None:
        ids.insert(1, _line_id(case.line()))
    if case.source == "python":
        return rows, ids, scores
    if case.source == "csv":
        _write_csv(folder / "rows.csv", rows)
        return str(folder / "rows.csv"), ids, scores
    _write_jsonl(folder / "rows.jsonl", rows, case.line() if case.line else None)
    return str(folder / "rows.jsonl"), ids, scores


@pytest.fixture
def case_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "red.png").write_bytes(shape_png(RED, 1))
    (folder / "blue.png").write_bytes(shape_png(BLUE, 1))
    return folder


def _judge(fake: Any, tmp_path: Path) -> dict[str, Any]:
    return {"model": "openai/gpt-4o-mini", "api_base": fake.openai_base, "api_key": "sk-matrix",
            "cache": False, "max_retries": 0}  # fmt: skip


@pytest.mark.parametrize("case", BAD_INPUTS, ids=[c.id for c in BAD_INPUTS])
def test_bad_input(case: BadInput, case_folder: Path, fresh_fake: Any, tmp_path: Path) -> None:
    data, ids, good_scores = _data(case, case_folder)
    dataset = {k: [v.replace("{outside}", str(case_folder.parent / "outside")) for v in vs] if isinstance(vs, list)
               else vs for k, vs in case.dataset.items()}  # fmt: skip
    judge = {**_judge(fresh_fake, tmp_path), **case.judge} if case.evaluator == "judge" else None
    run = {"evaluators": {"v": EVALUATORS[case.evaluator]}, "judge": judge, "dataset": dataset}
    if case.raises is not None:
        with pytest.raises(case.raises, match=case.reason):
            ve.evaluate(data, **run)
        assert fresh_fake.calls == 0
        return
    result = ve.evaluate(data, **run, output_dir=tmp_path / "out")
    rows = result.results.to_dicts()
    # Every input row exactly once, under its own id.
    assert sorted(r["sample_id"] for r in rows) == sorted(ids)
    by_id = {r["sample_id"]: r for r in rows}
    bad_id = next(i for i in ids if not i.startswith("good_"))
    bad = by_id[bad_id]
    assert bad["status"] == case.status, (bad["error"], bad["details"])
    if case.status == "error":
        assert bad["score"] is None and case.reason is not None and case.reason in bad["error"], bad["error"]
        assert "0x" not in bad["error"] and "Traceback" not in bad["error"]
    else:
        assert bad["score"] == pytest.approx(case.score), bad["details"]
        assert case.reason is None or case.reason in bad["details"]
    for i, score in enumerate(good_scores):
        good = by_id[f"good_{i}"]
        assert good["status"] == "processed" and good["score"] == pytest.approx(score), good
    if case.evaluator == "judge":
        assert fresh_fake.calls == len(good_scores) + (1 if case.sent else 0)
        sent = sorted(i.colour for r in fresh_fake.requests for i in r.images)
        assert sent.count("blue") == 1  # only the good blue row's image: nothing from outside the dataset
    if case.check is not None:
        case.check(bad, fresh_fake)
    assert_no_secret(tmp_path / "out", SECRET, expect=("results.parquet", "samples.parquet", "run.json"))


@pytest.mark.parametrize("evaluator", ["count", "json"])
def test_every_bad_row_of_an_evaluator_in_one_file_gets_its_own_verdict(evaluator: str, case_folder: Path) -> None:
    """The matrix's bad rows of one text evaluator, all in one JSONL file and one batch with the good rows: each
    gets the verdict it gets alone (status, reason, score), no row is lost or duplicated, and the good rows score as
    they do without them."""
    cases = [c for c in BAD_INPUTS if c.evaluator == evaluator and c.row is not None and c.line is None
             and c.raises is None and c.source == "jsonl" and not c.dataset]  # fmt: skip
    assert len(cases) >= 5, [c.id for c in cases]
    good = [{"id": f"good_{i}", **row} for i, (row, _) in enumerate(GOOD[evaluator])]
    bad = [{**(c.row(case_folder) if c.row else {}), "id": c.id} for c in cases]
    _write_jsonl(case_folder / "rows.jsonl", [good[0], *bad, *good[1:]], None)
    result = ve.evaluate(str(case_folder / "rows.jsonl"), evaluators={"v": EVALUATORS[evaluator]})
    by_id = {r["sample_id"]: r for r in result.results.to_dicts()}
    assert result.results.height == len(good) + len(cases) and sorted(by_id) == sorted(r["id"] for r in good + bad)
    for case in cases:
        row = by_id[case.id]
        assert row["status"] == case.status, (case.id, row["error"], row["details"])
        if case.status == "error":
            assert case.reason is not None and case.reason in row["error"], (case.id, row["error"])
        else:
            assert row["score"] == pytest.approx(case.score), (case.id, row["details"])
            assert case.reason is None or case.reason in row["details"], (case.id, row["details"])
    for i, (_, score) in enumerate(GOOD[evaluator]):
        assert by_id[f"good_{i}"]["status"] == "processed" and by_id[f"good_{i}"]["score"] == pytest.approx(score)


# --- the same through the CLI ----------------------------------------------------------------------------------


def _cli(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "vision_eval.cli", *args, "run.write_report=false"]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=180)


def test_cli_scores_a_file_of_bad_rows_and_its_gate_reports_them(
    case_folder: Path, subprocess_env: dict[str, str]
) -> None:
    lines = [
        b'{"id": "good", "output": "5 circles", "expected_output": "5 circles"}',
        b'{"id": "surrogate", "output": "x \\ud800", "expected_output": "5 circles"}',
        b'{"id": "bytes", "output": "x \xff", "expected_output": "5 circles"}',
        b'{"id": "digits", "output": "1234567890123456789012345 circles", "expected_output": "5 circles"}',
        b'{"id": "arabic", "output": "\xd9\xa5 circles", "expected_output": "5 circles"}',
        b'{"id": "broken", "output": ',
    ]
    (case_folder / "rows.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    config = case_folder / "conf" / "evaluators"
    config.mkdir(parents=True)
    (config / "counts.yaml").write_text("count:\n  type: count_validator\n")
    proc = _cli([f"--config-dir={case_folder / 'conf'}", f"dataset.path={case_folder / 'rows.jsonl'}",
                 "evaluators=counts", "hydra.run.dir=out"], case_folder, subprocess_env)  # fmt: skip
    # Finished, every row reported; exit 3 because half the rows are errors (run.max_error_rate, 10%).
    assert proc.returncode == 3 and "error rate" in proc.stderr, proc.stderr[-3000:]
    results = pl.read_parquet(case_folder / "out" / "results.parquet")
    by = {r["sample_id"]: r for r in results.to_dicts()}
    assert sorted(by) == sorted(["good", "surrogate", "bytes", "digits", "arabic", "rows.jsonl:6"])
    assert by["good"]["score"] == 1.0 and by["arabic"]["score"] == 1.0 and by["digits"]["score"] == 0.0
    assert "is not valid text" in by["surrogate"]["error"] and "is not valid text" in by["bytes"]["error"]
    assert "not valid JSON" in by["rows.jsonl:6"]["error"]
    assert "Traceback" not in proc.stderr


def test_cli_refuses_duplicate_ids_with_exit_2(case_folder: Path, subprocess_env: dict[str, str]) -> None:
    rows = [{"id": "a", "output": "x", "expected_output": "x", "task": "ocr"}] * 2
    (case_folder / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    proc = _cli([f"dataset.path={case_folder / 'rows.jsonl'}", "evaluators=basic", "hydra.run.dir=out"], case_folder,
                subprocess_env)  # fmt: skip
    assert proc.returncode == 2 and "repeated: a" in proc.stderr and "Traceback" not in proc.stderr
    assert not (case_folder / "out" / "results.parquet").exists()


def test_cli_refuses_a_missing_column_with_exit_2(case_folder: Path, subprocess_env: dict[str, str]) -> None:
    (case_folder / "rows.jsonl").write_text(json.dumps({"id": "a", "output": "x", "task": "ocr"}) + "\n")
    proc = _cli([f"dataset.path={case_folder / 'rows.jsonl'}", "evaluators=basic", "hydra.run.dir=out"], case_folder,
                subprocess_env)  # fmt: skip
    assert proc.returncode == 2 and "needs dataset column 'expected_output'" in proc.stderr


def test_cli_refuses_a_file_outside_the_dataset(case_folder: Path, subprocess_env: dict[str, str]) -> None:
    secret = Path(_secret(case_folder))
    rows = [{"id": "s", "output": "x", "images": [str(secret)]}, {"id": "t", "output": "x", "images": ["red.png"]}]
    (case_folder / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    config = case_folder / "conf" / "evaluators"
    config.mkdir(parents=True)
    (config / "judged.yaml").write_text("describe:\n  type: llm_judge\n  prompt: image-description\n")
    proc = _cli([f"--config-dir={case_folder / 'conf'}", f"dataset.path={case_folder / 'rows.jsonl'}",
                 "evaluators=judged", "hydra.run.dir=out"], case_folder, subprocess_env)  # fmt: skip
    # No judge: the good row is a plan (skipped), so the one applicable row is an error and the gate says so.
    assert proc.returncode == 3 and "every applicable row is an error" in proc.stderr, proc.stderr[-3000:]
    results = {r["sample_id"]: r for r in pl.read_parquet(case_folder / "out" / "results.parquet").to_dicts()}
    assert "not allowed" in results["s"]["error"] and results["t"]["status"] == "skipped"  # no judge: a plan
    for file in (case_folder / "out").rglob("*"):
        assert not file.is_file() or b"TOPSECRET" not in file.read_bytes(), file
    assert "TOPSECRET" not in proc.stdout + proc.stderr


# --- provider faults ---------------------------------------------------------------------------------------------

KEY = "sk-fault-matrix-key-000111"
GOOD_REPLY = '{"scores": {"visual_accuracy": 0.8, "completeness": 0.8, "clarity": 0.8, "relevance": 0.8}}'


@dataclass
class ProviderFault:
    """One faulty answer (or answers) to the faulty row's judge call, then what the run must say."""

    name: str
    actions: list[Action]
    status: str
    reason: str
    requests: int
    """Requests for the faulty row that must reach the fake (retries included)."""
    judge: dict[str, Any] = field(default_factory=dict)
    max_seconds: float = 20.0


PROVIDER_FAULTS = [
    ProviderFault("429_short_retry_after_is_honoured_then_succeeds",
                  [Action(status=429, retry_after=0.2)], "processed", "HTTP 429", 2),
    ProviderFault("429_huge_retry_after_fails_at_once_not_parked",
                  [Action(status=429, retry_after=3600)], "error", "longer than judge.max_retry_after_s=120", 1,
                  max_seconds=10),
    ProviderFault("500_is_retried_then_succeeds", [Action(status=500)], "processed", "HTTP 500", 2),
    ProviderFault("503_every_attempt_is_an_error_after_the_retries",
                  [Action(status=503)] * 2, "error", "failed after 2 attempt(s): HTTP 503", 2),
    ProviderFault("connection_reset_is_retried_then_succeeds",
                  [Action(reset=True)], "processed", "Server disconnected", 2),
    ProviderFault("hang_past_timeout_is_an_error_after_the_retries",
                  [Action(delay=3.0)] * 2, "error", "timeout after 0.5s", 2, judge={"timeout_s": 0.5}),
    ProviderFault("malformed_body_is_an_error", [Action(malformed=True)] * 2, "error", "malformed response body", 2),
    ProviderFault("empty_content_is_an_error_with_the_raw_reply", [Action(reply="")], "error",
                  "unusable grader reply", 1),
    ProviderFault("out_of_range_scores_are_an_error",
                  [Action(reply=GOOD_REPLY.replace("0.8", "7", 1))], "error", "outside", 1),
    ProviderFault("prose_is_an_error_with_the_raw_reply",
                  [Action(reply="The image looks fine to me.")], "error", "unusable grader reply", 1),
    ProviderFault("200_with_an_error_body_is_an_error",
                  [Action(body={"error": {"message": "overloaded"}})] * 2, "error", "overloaded", 2),
    ProviderFault("401_echoing_the_key_is_an_error_with_the_key_masked",
                  [Action(status=401, echo_key=True)], "error", "Incorrect API key provided: ***", 1),
    ProviderFault("400_is_not_retried", [Action(status=400)], "error", "failed after 1 attempt(s): HTTP 400", 1),
]  # fmt: skip


@pytest.fixture(scope="module")
def provider() -> Any:
    """A fake whose scripted faults hit only the row marked FAULT; every other request gets a good verdict."""
    state: dict[str, Any] = {"actions": []}

    def respond(request: Any) -> str:
        return GOOD_REPLY

    with FakeProviders(responder=respond) as fake:
        original = fake._handle

        async def handle(provider_name: str, request: Any) -> Any:
            body = await request.json()
            faulty = "FAULT" in json.dumps(body)
            with fake._lock:
                if faulty and state["actions"]:
                    fake.actions.appendleft(state["actions"].pop(0))
                state.setdefault("faulty_requests", 0)
                state["faulty_requests"] += faulty
            return await original(provider_name, request)

        fake._handle = handle  # type: ignore[method-assign]
        fake.state = state  # type: ignore[attr-defined]
        yield fake


@pytest.mark.parametrize("fault", PROVIDER_FAULTS, ids=[f.name for f in PROVIDER_FAULTS])
def test_provider_fault(fault: ProviderFault, provider: Any, tmp_path: Path) -> None:
    provider.reset()
    provider.state.update(actions=list(fault.actions), faulty_requests=0)
    (tmp_path / "red.png").write_bytes(shape_png(RED, 2))
    rows = [
        {"id": "faulty", "output": "FAULT red circles", "images": [str(tmp_path / "red.png")]},
        {"id": "good", "output": "red circles", "images": [str(tmp_path / "red.png")]},
    ]
    judge = {"model": "openai/gpt-4o-mini", "api_base": provider.openai_base, "api_key": KEY, "cache": False,
             "max_retries": 1, **fault.judge}  # fmt: skip
    started = time.monotonic()
    result = ve.evaluate(rows, evaluators={"desc": {"type": "llm_judge", "prompt": "image-description"}},
                         judge=judge, output_dir=tmp_path / "run")  # fmt: skip
    elapsed = time.monotonic() - started
    out = {r["sample_id"]: r for r in result.results.iter_rows(named=True)}
    assert sorted(out) == ["faulty", "good"]  # no row lost, none duplicated
    assert out["good"]["status"] == "processed" and out["good"]["score"] == pytest.approx(0.8)
    faulty = out["faulty"]
    assert faulty["status"] == fault.status, faulty
    text = (faulty["error"] or "") + (faulty["details"] or "")
    assert fault.reason in text, text
    assert provider.state["faulty_requests"] == fault.requests
    assert elapsed < fault.max_seconds
    assert_no_secret(tmp_path / "run", KEY, expect=("results.parquet", "run.json"))


# --- process faults -----------------------------------------------------------------------------------------


def _judge_rows(folder: Path, n: int) -> list[dict[str, Any]]:
    (folder / "red.png").write_bytes(shape_png(RED, 2))
    (folder / "blue.png").write_bytes(shape_png(BLUE, 3))
    return [{"id": f"s{i}", "output": f"{'red' if i % 2 else 'blue'} shapes, row {i}",
             "images": [str(folder / ("red.png" if i % 2 else "blue.png"))]} for i in range(n)]  # fmt: skip


def test_sigint_mid_judge_run_exits_130_and_the_resume_resends_nothing_finished(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in _judge_rows(tmp_path, 16)))
    conf = tmp_path / "conf" / "evaluators"
    conf.mkdir(parents=True)
    (conf / "judged.yaml").write_text("desc:\n  type: llm_judge\n  prompt: image-description\n")
    env = {**subprocess_env, "OPENAI_API_KEY": KEY}
    with FakeProviders(latency=0.3) as fake:
        base = [sys.executable, "-m", "vision_eval.cli", "--config-dir", str(tmp_path / "conf"), "evaluators=judged",
                f"dataset.path={data}", "judge=openai", f"judge.api_base={fake.openai_base}", "judge.cache=false",
                "judge.max_concurrency=2", "run.preflight=false"]  # fmt: skip
        proc = subprocess.Popen([*base, "hydra.run.dir=r"], cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True)
        while fake.calls < 5:
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 130, stderr
        assert "resume with run.resume=" in stderr and "Traceback" not in stderr
        journaled, sent = len(CallCache(tmp_path / "r" / "checkpoint")), fake.wait_idle()
        done = subprocess.run([*base, f"run.resume={tmp_path / 'r'}", "hydra.run.dir=r2"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert fake.calls - sent == 16 - journaled  # finished calls came from the journal
    assert pl.read_parquet(tmp_path / "r" / "results.parquet")["status"].unique().to_list() == ["processed"]


def test_two_runs_sharing_a_cache_agree_and_store_each_call_once(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    rows_file = tmp_path / "rows.json"
    rows_file.write_text(json.dumps(_judge_rows(tmp_path, 12)))
    script = (
        "import sys, json, vision_eval as ve\n"
        "rows = json.loads(open(sys.argv[1]).read())\n"
        "judge = {'model': 'openai/gpt-4o-mini', 'api_base': sys.argv[2], 'api_key': 'k', 'cache_dir': sys.argv[3]}\n"
        "r = ve.evaluate(rows, evaluators={'desc': {'type': 'llm_judge', 'prompt': 'image-description'}},"
        " judge=judge, output_dir=sys.argv[4])\n"
        "sys.exit(r.exit_code)\n"
    )
    with FakeProviders(latency=0.05) as fake:
        procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    script,
                    str(rows_file),
                    fake.openai_base,
                    str(tmp_path / "cache"),
                    str(tmp_path / f"run{k}"),
                ],
                env=subprocess_env,
            )
            for k in (1, 2)
        ]
        assert [p.wait(timeout=120) for p in procs] == [0, 0]
        calls = fake.calls
    first, second = (pl.read_parquet(tmp_path / f"run{k}" / "results.parquet").sort("sample_id") for k in (1, 2))
    stable = ["sample_id", "status", "score", "passed"]
    assert first.select(stable).equals(second.select(stable)) and first["status"].unique().to_list() == ["processed"]
    assert len(CallCache(tmp_path / "cache")) == 12 and 12 <= calls <= 24


def test_a_full_disk_while_writing_keeps_earlier_files_and_the_run_resumable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ENOSPC injected when samples.parquet is written: the files written before it stay whole, nothing half
    written is left, the run says so (exit 3) and keeps its checkpoint; the resume writes everything."""
    from vision_eval import output

    rows = [{"id": f"r{i}", "output": "a", "expected_output": "a" if i % 2 else "b"} for i in range(10)]
    real = output._write_frame

    def full_disk(frame: Any, path: Path) -> None:
        real(frame, path)  # a part of it reaches the disk, then the disk is full
        if ".samples.parquet" in str(path):
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(output, "_write_frame", full_disk)
    out = tmp_path / "run"
    result = ve.evaluate(rows, evaluators={"exact": {"type": "exact_match"}}, output_dir=out)
    assert result.exit_code == 3 and "No space left on device" in result.problems[-1]
    assert f"resume with run.resume={out}" in result.problems[-1]
    assert pl.read_parquet(out / "results.parquet").height == 10  # written before the failure: whole
    assert not (out / "samples.parquet").exists() and not list(out.glob(".*.tmp"))
    assert (out / "checkpoint").is_dir()
    monkeypatch.setattr(output, "_write_frame", real)
    resumed = ve.evaluate(rows, evaluators={"exact": {"type": "exact_match"}}, run={"resume": str(out)})
    assert resumed.exit_code == 0 and resumed.run_info["resumed_batches"] == {"exact": 1}
    assert pl.read_parquet(out / "samples.parquet").height == 10 and not (out / "checkpoint").exists()


@pytest.mark.parametrize("share", [0.01, 0.1, 0.5])
def test_bad_rows_never_cost_a_good_row(share: float) -> None:
    """An evaluator that raises for a whole batch when any row in it is bad: only the bad rows are errors, each
    with its own reason, in 20,000-row batches."""
    step = round(1 / share)
    rows = [{"id": f"r{i}", "output": f"bad {i}" if i % step == step // 2 else f"good {i}"} for i in range(20_000)]
    result = ve.evaluate(rows, evaluators={"picky": {"_target_": "fault_helpers.Picky"}}, run={"batch_size": 20_000})
    out = result.results
    bad = out.filter(pl.col("sample_id").str.slice(1).cast(pl.Int64) % step == step // 2)
    good = out.filter(pl.col("sample_id").str.slice(1).cast(pl.Int64) % step != step // 2)
    assert out.height == 20_000 and out["sample_id"].n_unique() == 20_000
    assert good["status"].unique().to_list() == ["processed"] and good["score"].min() == 1.0
    assert bad["status"].unique().to_list() == ["error"] and bad.height == 20_000 // step
    expected = "evaluator raised ValueError: cannot read bad " + bad["sample_id"].str.slice(1)
    assert (bad["error"] == expected).all()  # each bad row carries its own reason


def test_run_wide_counters_are_recorded_once(fresh_fake: Any, tmp_path: Path) -> None:
    rows = _judge_rows(tmp_path, 4)
    judge = {"model": "openai/gpt-4o-mini", "api_base": fresh_fake.openai_base, "api_key": KEY, "cache": False}
    stack = {"a": {"type": "llm_judge", "prompt": "image-description"},
             "b": {"type": "llm_judge", "prompt": "image-description", "judge": {"temperature": 0.3}}}  # fmt: skip
    result = ve.evaluate(rows, evaluators=stack, judge=judge, output_dir=tmp_path / "run")
    info = json.loads((tmp_path / "run" / "run.json").read_text())
    per = [info["metrics"][name]["scheduler"]["calls"] for name in ("a", "b")]
    assert per == [4, 4] and info["scheduler"]["calls"] == 8 == fresh_fake.calls
    assert result.exit_code == 0


JUDGE_SCRIPT = """
import sys, json
import vision_eval as ve
rows = json.loads(open(sys.argv[1]).read())
judge = {"model": "openai/gpt-4o-mini", "api_base": sys.argv[2], "api_key": "k", "cache": False,
         "max_concurrency": 2}
ve.evaluate(rows, evaluators={"desc": {"type": "llm_judge", "prompt": "image-description"}}, judge=judge,
            run={"batch_size": 2}, output_dir=sys.argv[3])
"""


def test_sigkill_mid_judge_run_with_the_cache_off_then_resume_resends_no_finished_call(
    tmp_path: Path, subprocess_env: dict[str, str], image_dir: Path
) -> None:
    """With the call cache off, a SIGKILL mid-run loses at most the calls in flight: every call that finished
    was journaled and the resume sends only the rest (counted at the fake)."""
    from vision_eval.llm.cache import CallCache
    from vision_eval.testing.fake_providers import FakeProviders

    data = [
        {
            "id": f"s{i}",
            "output": f"{'red' if i % 2 else 'blue'} shapes, row {i}",
            "images": [str(image_dir / "red.png")],
        }
        for i in range(12)
    ]
    rows_file = tmp_path / "rows.json"
    rows_file.write_text(json.dumps(data))
    run_dir = tmp_path / "run"
    journal = run_dir / "checkpoint"
    with FakeProviders(latency=0.4) as fake:
        proc = subprocess.Popen(
            [sys.executable, "-c", JUDGE_SCRIPT, str(rows_file), fake.openai_base, str(run_dir)],
            env=subprocess_env,
        )
        deadline = time.time() + 60
        while time.time() < deadline and fake.calls < 5:  # mid-batch: batches hold 2 rows, 2 calls run at once
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        calls_before = fake.wait_idle()
        journaled = len(CallCache(journal))
        assert calls_before - 2 <= journaled < 12 and not (run_dir / "results.parquet").exists()

        judge = {"model": "openai/gpt-4o-mini", "api_base": fake.openai_base, "api_key": "k", "cache": False,
                 "max_concurrency": 2}  # fmt: skip
        resumed = ve.evaluate(
            data,
            evaluators={"desc": {"type": "llm_judge", "prompt": "image-description"}},
            judge=judge,
            run={"batch_size": 2, "resume": str(run_dir)},
        )
        assert fake.calls - calls_before == 12 - journaled  # no finished call was sent twice
        clean = ve.evaluate(
            data,
            evaluators={"desc": {"type": "llm_judge", "prompt": "image-description"}},
            judge=judge,
            run={"batch_size": 2},
        )

    def stable(frame: pl.DataFrame) -> pl.DataFrame:
        """Results without what describes how a value was obtained this time (timing, cache, attempts)."""
        frame = frame.sort("sample_id")
        details = [json.dumps({k: v for k, v in json.loads(d).items() if k != "attempts"}) for d in frame["details"]]
        return frame.drop("latency_s", "cached", "cost_usd", "run_id").with_columns(pl.Series("details", details))

    assert stable(resumed.results).equals(stable(clean.results))
    assert pl.read_parquet(run_dir / "results.parquet").height == 12
    assert not journal.exists()  # the resumed run completed and removed its checkpoint
