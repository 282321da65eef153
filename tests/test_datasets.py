"""Every dataset source, column mapping, selection (limit/sample/shard) and image references."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import polars as pl
import pytest
from conftest import png_bytes

import vision_eval as ve
from vision_eval.config import DatasetConfig
from vision_eval.data import load_dataset
from vision_eval.errors import ConfigError, DatasetError

EXACT = {"em": {"type": "exact_match"}}
ROWS = [
    {"id": "r1", "question": "q1", "answer": "yes", "gold": "yes", "img": "red.png"},
    {"id": "r2", "question": "q2", "answer": "no", "gold": "yes", "img": "blue.png"},
]
MAPPING = {"question": "input", "answer": "output", "gold": "expected_output", "img": "images"}


def scores(result: ve.EvalResult) -> dict[str, float | None]:
    return dict(zip(result.results["sample_id"], result.results["score"], strict=True))


def check_loaded(frame: pl.DataFrame, image_dir: Path) -> None:
    assert frame["id"].to_list() == ["r1", "r2"]
    assert frame["output"].to_list() == ["yes", "no"]
    refs = frame["images"].to_list()
    assert refs[0][0]["path"] == str(image_dir / "red.png")
    assert refs[0][0]["sha256"] == hashlib.sha256((image_dir / "red.png").read_bytes()).hexdigest()
    assert refs[1][0]["error"] is None


@pytest.mark.parametrize("kind", ["parquet", "jsonl", "csv", "json"])
def test_local_files(kind: str, image_dir: Path) -> None:
    path = image_dir / f"data.{kind}"
    frame = pl.DataFrame(ROWS)
    if kind == "parquet":
        frame.write_parquet(path)
    elif kind == "jsonl":
        frame.write_ndjson(path)
    elif kind == "csv":
        frame.write_csv(path)
    else:
        path.write_text(json.dumps(ROWS))
    loaded, root = load_dataset(DatasetConfig(path=str(path), columns=MAPPING))
    assert root == image_dir
    check_loaded(loaded, image_dir)
    result = ve.evaluate(str(path), evaluators=EXACT, dataset={"columns": MAPPING})
    assert scores(result) == {"r1": 1.0, "r2": 0.0}


def test_python_sources(image_dir: Path) -> None:
    for data in (ROWS, pl.DataFrame(ROWS)):
        frame, _ = load_dataset(DatasetConfig(columns=MAPPING, image_root=str(image_dir)), data)
        check_loaded(frame, image_dir)


def test_a_notebook_hf_dataset_with_relative_image_paths_needs_only_image_roots(
    image_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An HF Dataset built in Python with an Image() feature keeps the paths it was given (here relative): with
    dataset.image_roots naming their folder nothing else is needed; without it, the reason names the setting that
    would admit each file; a path that climbs out of the root stays refused."""
    import datasets

    monkeypatch.chdir(image_dir)
    features = datasets.Features(
        {"id": datasets.Value("string"), "image": datasets.Image(), "reply": datasets.Value("string")}
    )
    ds = datasets.Dataset.from_dict(
        {"id": ["r1", "r2", "r3"], "image": ["red.png", "blue.png", "../outside.png"], "reply": ["a", "b", "c"]},
        features=features,
    )
    (image_dir.parent / "outside.png").write_bytes((image_dir / "red.png").read_bytes())
    mapping = {"reply": "output", "image": "images"}
    spec = {"em": {"type": "exact_match", "columns": {"expected_output": "output"}}}

    admitted = ve.evaluate(ds, evaluators=spec, dataset={"columns": mapping, "image_roots": [str(image_dir)]})
    refs = {row["id"]: row["images"][0] for row in admitted.samples.iter_rows(named=True)}
    assert refs["r1"]["sha256"] == hashlib.sha256((image_dir / "red.png").read_bytes()).hexdigest()
    assert refs["r2"]["error"] is None
    assert refs["r3"]["sha256"] is None and "none of dataset.image_roots" in refs["r3"]["error"]

    refused = ve.evaluate(ds, evaluators=spec, dataset={"columns": mapping})
    reason = refused.samples["images"].to_list()[0][0]["error"]
    assert f"dataset.image_roots=['{image_dir.resolve()}'] would admit it" in reason


def test_hf_dataset_object_save_to_disk_and_builder(image_dir: Path) -> None:
    import datasets

    features = datasets.Features(
        {
            "id": datasets.Value("string"),
            "question": datasets.Value("string"),
            "answer": datasets.Value("string"),
            "gold": datasets.Value("string"),
            "image": datasets.Image(),
        }
    )
    rows = {k: [r[k] for r in ROWS] for k in ("id", "question", "answer", "gold")}
    rows["image"] = [str(image_dir / r["img"]) for r in ROWS]
    ds = datasets.Dataset.from_dict(rows, features=features)
    mapping = {"question": "input", "answer": "output", "gold": "expected_output"}

    # An HF Dataset object is treated like a hub dataset: its absolute paths need dataset.image_roots.
    in_memory = ve.evaluate(ds, evaluators=EXACT, dataset={"columns": mapping, "image_roots": [str(image_dir)]})
    assert scores(in_memory) == {"r1": 1.0, "r2": 0.0}
    refs = in_memory.samples["images"].to_list()
    assert len(refs[0]) == 1
    assert refs[0][0]["sha256"] == hashlib.sha256((image_dir / "red.png").read_bytes()).hexdigest()
    refused = ve.evaluate(ds, evaluators=EXACT, dataset={"columns": mapping}).samples["images"].to_list()
    assert "not allowed" in refused[0][0]["error"] and refused[0][0]["sha256"] is None

    saved = image_dir / "saved"
    ds.save_to_disk(str(saved))
    frame, _ = load_dataset(DatasetConfig(path=str(saved), columns=mapping))
    assert frame["id"].to_list() == ["r1", "r2"] and frame["images"].list.len().to_list() == [1, 1]

    parquet = image_dir / "hub.parquet"
    pl.DataFrame(ROWS).write_parquet(parquet)
    builder = DatasetConfig(path="parquet", data_files=str(parquet), columns=MAPPING, image_root=str(image_dir))
    frame, _ = load_dataset(builder)  # goes through datasets.load_dataset, offline
    assert frame["expected_output"].to_list() == ["yes", "yes"]
    streamed, _ = load_dataset(builder.model_copy(update={"streaming": True, "limit": 1}))
    assert streamed["id"].to_list() == ["r1"] and streamed["images"][0][0]["error"] is None


def test_imagefolder_with_metadata(image_dir: Path) -> None:
    folder = image_dir / "folder"
    folder.mkdir()
    for name in ("red.png", "blue.png"):
        (folder / name).write_bytes((image_dir / name).read_bytes())
    with (folder / "metadata.jsonl").open("w") as handle:
        handle.write(json.dumps({"file_name": "red.png", "output": "red", "expected_output": "red"}) + "\n")
        handle.write(json.dumps({"file_name": "blue.png", "output": "red", "expected_output": "blue"}) + "\n")
    result = ve.evaluate(str(folder), evaluators=EXACT)
    assert sorted(result.results["score"].to_list()) == [0.0, 1.0]
    assert all(len(x) == 1 for x in result.samples["images"].to_list())


def test_column_mapping_errors_name_the_key(image_dir: Path) -> None:
    with pytest.raises(ConfigError) as info:
        ve.evaluate(ROWS, evaluators=EXACT, dataset={"columns": {"nope": "output"}})
    assert info.value.key == "dataset.columns.nope"


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found locally"):
        ve.evaluate(str(tmp_path / "missing.jsonl"), evaluators=EXACT)


def test_duplicate_ids_fail_clearly() -> None:
    with pytest.raises(DatasetError, match="unique"):
        ve.evaluate([{"id": 1, "output": "a", "expected_output": "a"}] * 2, evaluators=EXACT)


def test_limit_sample_and_shards() -> None:
    rows = [{"id": f"s{i}", "output": "x", "expected_output": "x"} for i in range(20)]
    assert ve.evaluate(rows, evaluators=EXACT, run={"limit": 5}).samples["id"].to_list() == [f"s{i}" for i in range(5)]
    first = ve.evaluate(rows, evaluators=EXACT, dataset={"sample": 6, "seed": 3}).samples["id"].to_list()
    again = ve.evaluate(rows, evaluators=EXACT, dataset={"sample": 6, "seed": 3}).samples["id"].to_list()
    other = ve.evaluate(rows, evaluators=EXACT, dataset={"sample": 6, "seed": 4}).samples["id"].to_list()
    assert first == again and len(set(first)) == 6 and first != other
    shards = [ve.evaluate(rows, evaluators=EXACT, run={"shard": f"{i}/3"}).samples["id"].to_list() for i in range(3)]
    assert sorted(i for shard in shards for i in shard) == sorted(r["id"] for r in rows)
    assert not set(shards[0]) & set(shards[1])


def test_image_forms_and_row_errors(image_dir: Path) -> None:
    raw = png_bytes((1, 2, 3))
    b64 = base64.b64encode(png_bytes((4, 5, 6), size=(40, 30))).decode()
    (image_dir / "sub").mkdir()
    rows = [
        {"id": "path", "images": ["red.png"]},
        {"id": "file_uri", "images": [f"file://{image_dir / 'blue.png'}"]},
        {"id": "data_uri", "images": ["data:image/png;base64," + base64.b64encode(raw).decode()]},
        {"id": "base64", "images": [b64]},
        {"id": "bytes", "images": [raw]},
        {"id": "hf_struct", "images": [{"bytes": raw, "path": "x.png"}]},
        {"id": "escape", "images": ["../outside.png"]},
        {"id": "missing", "images": ["sub/none.png"]},
        {"id": "url", "images": ["https://example.com/a.png"]},
        {"id": "two", "images": ["red.png", "blue.png"]},
    ]
    for row in rows:
        row["output"] = "ok"
    frame, _ = load_dataset(DatasetConfig(image_root=str(image_dir)), rows)
    refs = dict(zip(frame["id"], frame["images"].to_list(), strict=True))
    assert refs["data_uri"][0]["sha256"] == hashlib.sha256(raw).hexdigest()
    assert refs["bytes"][0]["sha256"] == refs["hf_struct"][0]["sha256"] == refs["data_uri"][0]["sha256"]
    assert refs["base64"][0]["source"] == "base64" and refs["base64"][0]["error"] is None
    assert refs["file_uri"][0]["path"] == str(image_dir / "blue.png")
    assert "escapes the dataset root" in refs["escape"][0]["error"]
    assert "not found" in refs["missing"][0]["error"]
    assert "allow_urls" in refs["url"][0]["error"]
    assert [r["path"] for r in refs["two"]] == [str(image_dir / "red.png"), str(image_dir / "blue.png")]


def needs_images(frame: pl.DataFrame) -> pl.DataFrame:
    """A frame evaluator that requires images: scores the image count."""
    return frame.select(pl.col("id"), (pl.col("images").list.len() / 2).alias("score"))


def test_image_errors_are_row_errors_for_evaluators_that_need_images(image_dir: Path) -> None:
    rows = [
        {"id": "good", "images": ["red.png", "blue.png"], "output": "x"},
        {"id": "escape", "images": ["../../etc/passwd"], "output": "x"},
        {"id": "none", "images": [], "output": "x"},
    ]
    result = ve.evaluate(
        rows,
        evaluators={"img": {"type": "python", "function": f"{__name__}:needs_images", "columns": ["images"]}},
        dataset={"image_root": str(image_dir)},
    )
    by = {r["sample_id"]: r for r in result.results.iter_rows(named=True)}
    assert by["good"]["status"] == "processed" and by["good"]["score"] == 1.0
    assert by["escape"]["status"] == "error" and "escapes" in by["escape"]["error"]
    assert by["none"]["status"] == "error" and by["none"]["error"] == "row has no images"


def test_absolute_paths_refused_for_hub_datasets(image_dir: Path) -> None:
    from vision_eval.data import RawDataset, canonicalize

    frame = pl.DataFrame({"images": [[str(image_dir / "red.png")]], "output": ["x"]})
    hub = canonicalize(RawDataset(frame, image_dir, "hf", local=False), DatasetConfig())
    local = canonicalize(RawDataset(frame, image_dir, "jsonl"), DatasetConfig())
    assert "not allowed" in hub["images"][0][0]["error"]
    assert local["images"][0][0]["error"] is None


def test_malformed_jsonl_line_is_an_error_row(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text(
        '{"id": "a", "output": "x", "expected_output": "x"}\n{"id": "b", "output": \n'
        '{"id": "c", "output": "y", "expected_output": "x"}\n'
    )
    result = ve.evaluate(str(path), evaluators=EXACT)
    assert result.results.height == 3
    by = {r["sample_id"]: r for r in result.results.iter_rows(named=True)}
    assert by["a"]["score"] == 1.0 and by["c"]["score"] == 0.0
    assert by["rows.jsonl:2"]["status"] == "error" and "not valid JSON" in by["rows.jsonl:2"]["error"]


def test_object_outputs_become_json_text() -> None:
    rows = [
        {"id": "1", "output": {"total": 1, "note": None}, "expected_output": '{"total": 1}'},
        {"id": "2", "output": "plain text", "expected_output": {"total": 2}},
    ]
    frame, _ = load_dataset(DatasetConfig(), rows)
    assert json.loads(frame["output"][0]) == {"total": 1, "note": None}
    assert frame["output"][1] == "plain text"
    assert json.loads(frame["expected_output"][1]) == {"total": 2}


def test_a_column_mixing_bytes_and_paths_keeps_each_value_as_it_is(image_dir: Path) -> None:
    raw = png_bytes((9, 9, 9))
    rows = [
        {"id": "bytes", "output": "x", "images": [raw]},
        {"id": "path", "output": "x", "images": [str(image_dir / "red.png")]},
        {"id": "scalar_bytes", "output": "x", "images": raw},
        {"id": "scalar_path", "output": "x", "images": "red.png"},
    ]
    frame, _ = load_dataset(DatasetConfig(image_root=str(image_dir)), rows)
    refs = {i: cell[0] for i, cell in zip(frame["id"], frame["images"].to_list(), strict=True)}
    assert refs["bytes"]["source"] == refs["scalar_bytes"]["source"] == "bytes"
    assert refs["bytes"]["sha256"] == hashlib.sha256(raw).hexdigest()
    assert refs["path"]["path"] == refs["scalar_path"]["path"] == str(image_dir / "red.png")
    assert refs["path"]["error"] is None and refs["scalar_path"]["error"] is None


def test_a_jsonl_image_column_mixing_lists_and_strings_reads_each_row_as_written(image_dir: Path) -> None:
    """A row's list of images stays a list and a lone path is a one-image list, in a chunk that mixes the two
    (JSON Lines, a JSON list, rows from Python), in an evaluator's own image column too; a text column mixing the
    two still reads a list as its JSON text."""
    rows = [
        {"id": "two", "image": ["red.png", "blue.png"], "ref": ["blue.png"], "output": "x", "expected_output": ["x"]},
        {"id": "one", "image": "green.jpg", "ref": "red.png", "output": "x", "expected_output": "x"},
        {"id": "none", "image": [], "ref": None, "output": "x", "expected_output": "x"},
    ]
    path = image_dir / "mixed.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    (image_dir / "mixed.json").write_text(json.dumps(rows))
    cfg = DatasetConfig(image_root=str(image_dir))
    for data in (str(path), str(image_dir / "mixed.json"), rows):
        frame, _ = load_dataset(cfg, data, image_columns=["ref"])
        paths = {
            i: ([r["path"] for r in images], [r["path"] for r in refs], [r["error"] for r in images + refs])
            for i, images, refs in zip(frame["id"], frame["images"].to_list(), frame["ref"].to_list(), strict=True)
        }
        assert paths["two"] == (
            [str(image_dir / "red.png"), str(image_dir / "blue.png")],
            [str(image_dir / "blue.png")],
            [None] * 3,
        )
        assert paths["one"] == ([str(image_dir / "green.jpg")], [str(image_dir / "red.png")], [None] * 2)
        assert paths["none"] == ([], [], [])
        assert frame["expected_output"].to_list() == ['["x"]', "x", "x"]
    needs = {"img": {"type": "python", "function": f"{__name__}:needs_images", "columns": ["images"]}}
    result = ve.evaluate(str(path), evaluators=needs, dataset={"image_root": str(image_dir)})
    by = {r["sample_id"]: r for r in result.results.iter_rows(named=True)}
    assert (by["two"]["score"], by["one"]["score"]) == (1.0, 0.5)  # the image count / 2
    assert by["none"]["error"] == "row has no images"
