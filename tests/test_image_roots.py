"""Which local files a dataset's rows may name: relative paths inside the dataset root, absolute paths and file://
URIs only under the dataset root or ``dataset.image_roots`` (after symlinks are resolved, before anything is opened);
refused files are never read, and no error quotes a file's contents."""

from __future__ import annotations

import json
import os
from pathlib import Path

import polars as pl
import pytest
from conftest import BLUE, RED, shape_png

import vision_eval as ve
from vision_eval.config import DatasetConfig
from vision_eval.data import RawDataset, canonicalize
from vision_eval.images.refs import image_ref, load_bytes
from vision_eval.images.roots import ImageRoots

DESC = {"desc": {"type": "llm_judge", "prompt": "image-description"}}


def _judge(fake, tmp_path: Path) -> dict:
    return {"model": "openai/gpt-4o-mini", "api_base": fake.openai_base, "api_key": "sk-test",
            "cache_dir": str(tmp_path / "cache"), "cache": False}  # fmt: skip


@pytest.fixture
def layout(tmp_path: Path) -> dict[str, Path]:
    """``data/`` (the dataset: red.png and a symlink to outside) next to ``outside/blue.png``."""
    data, outside = tmp_path / "data", tmp_path / "outside"
    data.mkdir()
    outside.mkdir()
    (data / "red.png").write_bytes(shape_png(RED, 1))
    (outside / "blue.png").write_bytes(shape_png(BLUE, 2))
    (data / "link.png").symlink_to(outside / "blue.png")
    return {"data": data, "outside": outside, "blue": outside / "blue.png", "red": data / "red.png"}


def _write(path: Path, rows: list[dict]) -> str:
    path.write_text("".join(json.dumps({"output": "red", **row}) + "\n" for row in rows))
    return str(path)


def _rows(layout: dict[str, Path]) -> list[dict]:
    return [
        {"id": "inside", "images": ["red.png"]},
        {"id": "file_uri_in", "images": [f"file://{layout['red']}"]},
        {"id": "absolute_out", "images": [str(layout["blue"])]},
        {"id": "file_uri_out", "images": [f"file://{layout['blue']}"]},
        {"id": "file_uri_host", "images": ["file://otherhost/etc/passwd"]},
        {"id": "traversal", "images": ["../outside/blue.png"]},
        {"id": "symlink_out", "images": ["link.png"]},
        {"id": "home", "images": ["~/.ssh/id_rsa"]},
    ]


def _by_id(result: ve.EvalResult) -> dict[str, dict]:
    rows = result.results.to_dicts()
    assert len(rows) == len({r["sample_id"] for r in rows})  # every row exactly once
    return {r["sample_id"]: r for r in rows}


def test_a_file_dataset_reads_only_inside_its_folder(fresh_fake, layout, tmp_path) -> None:
    path = _write(layout["data"] / "rows.jsonl", _rows(layout))
    result = ve.evaluate(path, evaluators=DESC, judge=_judge(fresh_fake, tmp_path))
    by = _by_id(result)
    assert {k for k, r in by.items() if r["status"] == "processed"} == {"inside", "file_uri_in"}
    for key in ("absolute_out", "file_uri_out", "home"):
        assert by[key]["status"] == "error" and "not allowed" in by[key]["error"], key
    assert "names another host" in by["file_uri_host"]["error"]
    assert "escapes the dataset root" in by["traversal"]["error"]
    assert "escapes the dataset root" in by["symlink_out"]["error"]  # checked after the symlink is resolved
    # Only the two allowed images reached the judge, and both are the red one.
    assert fresh_fake.calls == 2
    assert [i.colour for r in fresh_fake.requests for i in r.images] == ["red", "red"]
    refused = {r["id"]: r["images"][0] for r in result.samples.to_dicts()}
    assert refused["absolute_out"]["sha256"] is None and refused["symlink_out"]["sha256"] is None  # never read


def test_image_roots_admit_another_folder(fresh_fake, layout, tmp_path) -> None:
    path = _write(layout["data"] / "rows.jsonl", _rows(layout))
    dataset = {"image_roots": [str(layout["outside"])]}
    by = _by_id(ve.evaluate(path, evaluators=DESC, judge=_judge(fresh_fake, tmp_path), dataset=dataset))
    processed = {k for k, r in by.items() if r["status"] == "processed"}
    assert processed == {"inside", "file_uri_in", "absolute_out", "file_uri_out", "symlink_out", "traversal"}
    assert "not allowed" in by["home"]["error"]
    assert fresh_fake.calls == 6


def test_a_refused_or_foreign_file_is_never_quoted(layout, tmp_path) -> None:
    secret = layout["outside"] / "secret.txt"
    secret.write_text("root:x:0:0:topsecret\n")
    path = _write(layout["data"] / "rows.jsonl", [{"id": "s", "images": [str(secret)]}, {"id": "t", "images": []}])
    refused = ve.evaluate(path, evaluators=DESC, output_dir=tmp_path / "refused")
    assert "not allowed" in refused.results["error"][0]
    allowed = ve.evaluate(
        path, evaluators=DESC, dataset={"image_roots": [str(layout["outside"])]}, output_dir=tmp_path / "read"
    )
    row = _by_id(allowed)["s"]
    assert row["status"] == "error" and row["error"] == "Image 1: not a PNG/JPEG/GIF/WEBP image (detected: unknown)"
    for run in ("refused", "read"):
        for file in (tmp_path / run).rglob("*"):
            if file.is_file():
                assert b"topsecret" not in file.read_bytes() and b"root:x" not in file.read_bytes(), file


def test_rows_from_python_read_their_paths_unless_image_roots_are_set(layout, tmp_path) -> None:
    rows = [{"id": "abs", "output": "red", "images": [str(layout["blue"])]}]
    given = ve.evaluate(rows, evaluators=DESC).samples["images"][0][0]
    assert given["error"] is None and given["path"] == str(layout["blue"])
    confined = ve.evaluate(rows, evaluators=DESC, dataset={"image_roots": [str(layout["data"])]})
    assert "not allowed" in confined.samples["images"][0][0]["error"]


def test_hub_datasets_resolve_nothing_locally_without_roots(layout) -> None:
    frame = pl.DataFrame({"images": [["red.png"], [str(layout["red"])]], "output": ["x", "y"]})
    hub = canonicalize(RawDataset(frame, None, "hf", local=False), DatasetConfig())
    errors = [cell[0]["error"] for cell in hub["images"].to_list()]
    assert "no dataset folder" in errors[0] and "not allowed" in errors[1]
    allowed = canonicalize(RawDataset(frame, None, "hf", local=False), DatasetConfig(image_roots=[str(layout["data"])]))
    assert allowed["images"][1][0]["error"] is None


def test_reference_images_and_chat_images_follow_the_same_rules(fresh_fake, layout, tmp_path) -> None:
    rows = [
        {"id": "ref_in", "images": ["red.png"], "reference_image": "red.png"},
        {"id": "ref_out", "images": ["red.png"], "reference_image": str(layout["blue"])},
    ]
    path = _write(layout["data"] / "refs.jsonl", rows)
    sim = {"sim": {"type": "image_similarity"}}
    by = _by_id(ve.evaluate(path, evaluators=sim))
    assert by["ref_in"]["status"] == "processed" and by["ref_in"]["score"] == pytest.approx(1.0)
    assert by["ref_out"]["status"] == "error" and "not allowed" in by["ref_out"]["error"]
    by = _by_id(ve.evaluate(path, evaluators=sim, dataset={"image_roots": [str(layout["outside"])]}))
    assert by["ref_out"]["status"] == "processed" and by["ref_out"]["score"] < 0.9

    part = {"type": "image_url", "image_url": {"url": f"file://{layout['blue']}"}}
    chat = [{"role": "user", "content": [{"type": "text", "text": "what?"}, part]}]
    path = _write(layout["data"] / "chat.jsonl", [{"id": "chat", "input": json.dumps(chat), "images": ["red.png"]}])
    row = _by_id(ve.evaluate(path, evaluators=DESC, judge=_judge(fresh_fake, tmp_path)))["chat"]
    assert row["status"] == "error" and "not allowed" in row["error"] and fresh_fake.calls == 0


def test_a_file_swapped_for_a_symlink_after_the_check_is_not_read(layout) -> None:
    target = layout["data"] / "swap.png"
    target.write_bytes(shape_png(RED, 1))
    ref = image_ref("swap.png", ImageRoots.for_dataset(layout["data"]))
    assert ref is not None and ref["error"] is None
    target.unlink()
    target.symlink_to(layout["blue"])
    with pytest.raises(ValueError, match="changed since it was checked"):
        load_bytes(ref)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_is_refused_without_blocking(layout) -> None:
    os.mkfifo(layout["data"] / "pipe.png")
    ref = image_ref("pipe.png", ImageRoots.for_dataset(layout["data"]))
    assert ref is not None and "is not a file" in ref["error"]


def test_text_image_columns_resolve_each_value_as_image_ref_does(tmp_path) -> None:
    """A text column (or a column of text lists) is resolved per distinct value and gathered by Polars: every row
    gets exactly what ``image_ref`` gives its values, nulls dropped, null cells empty."""
    import base64

    from vision_eval.images.refs import images_series

    png = shape_png(RED)
    (tmp_path / "a.png").write_bytes(png)
    (tmp_path / "empty.png").write_bytes(b"")
    (tmp_path / "sub").mkdir()
    values = [
        "a.png", " a.png ", "missing.png", "empty.png", "sub", "../outside.png", "", "   ",
        "data:image/png;base64," + base64.b64encode(png).decode(), "data:image/png;base64,@@",
        base64.b64encode(png).decode(),
        "https://example.com/x.png", f"file://{tmp_path / 'a.png'}", "file://otherhost/a.png", None,
    ]  # fmt: skip
    roots = ImageRoots.for_dataset(tmp_path)

    def expected(cell: object, allow_urls: bool) -> list[dict[str, object]]:
        items = [] if cell is None else cell if isinstance(cell, list) else [cell]
        refs = (image_ref(item, roots, allow_urls=allow_urls) for item in items)
        return [r for r in refs if r is not None]

    lists = [values[k : k + 3] for k in range(len(values))] + [None, [], [None, "a.png", None]]
    for column in (pl.Series("x", values * 3, dtype=pl.Utf8), pl.Series("x", lists, dtype=pl.List(pl.Utf8))):
        for allow_urls in (False, True):
            got = images_series(column, roots, allow_urls=allow_urls)
            assert got.name == "images" and got.len() == column.len()
            assert got.to_list() == [expected(cell, allow_urls) for cell in column.to_list()]
    assert images_series(pl.Series("x", [None, None], dtype=pl.Utf8), roots).to_list() == [[], []]


def test_a_text_cell_holding_a_json_list_is_that_list_of_images(tmp_path) -> None:
    """A text image cell that is a JSON list (a JSON column mixing lists and paths reads its lists so; a CSV cell)
    is its items; text that only starts with ``[`` is a path; a list item that is no image is that item's error."""
    from vision_eval.images.refs import image_refs, images_series

    (tmp_path / "a.png").write_bytes(shape_png(RED))
    (tmp_path / "[b].png").write_bytes(shape_png(BLUE))
    roots = ImageRoots.for_dataset(tmp_path)
    cells = ['["a.png", "[b].png"]', " [] ", "[b].png", '["a.png", 3]', '{"path": "a.png"}', "a.png", None]
    got = images_series(pl.Series("x", cells, dtype=pl.Utf8), roots).to_list()
    assert got == [image_refs(cell, roots) for cell in cells]
    a, b = (str(tmp_path / name) for name in ("a.png", "[b].png"))
    assert [[(r["path"], r["error"]) for r in refs] for refs in got[:3]] == [[(a, None), (b, None)], [], [(b, None)]]
    assert got[3][0]["error"] is None and got[3][1]["error"] == "unsupported image value of type int"
    assert "image file not found" in got[4][0]["error"]  # a JSON object is not a list: a path, as before
    assert [r["path"] for r in got[5]] == [a] and got[6] == []
