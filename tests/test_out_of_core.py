"""Datasets read batch by batch: every source gives the same rows whatever the batch size, selections (sample,
limit, shards) do not depend on how the rows were chunked, repeated ids are refused across batches, and a large run
keeps its parts on disk, not in memory."""

from __future__ import annotations

import gc
import json
import tempfile
import threading
from pathlib import Path
from typing import ClassVar

import polars as pl
import pytest

import vision_eval as ve
from vision_eval import api
from vision_eval.evaluator import EvalOutput, Evaluator

STACK = {
    "exact": {"type": "exact_match"},
    "count": {"type": "count_validator", "columns": {"output": "said", "expected_output": "counted"}},
}
VOLATILE = ["latency_s", "cached", "run_id"]


def rows(n: int) -> list[dict]:
    return [
        {
            "id": f"s{i}",
            "output": "yes" if i % 3 else "no",
            "expected_output": "yes",
            "said": f"I see {i % 4} cats",
            "counted": f"{i % 5} cats",
            "group": i % 2,
        }
        for i in range(n)
    ]


def sources(folder: Path, data: list[dict]) -> dict[str, object]:
    """The same rows as every kind of source."""
    frame = pl.DataFrame(data)
    frame.write_parquet(folder / "rows.parquet")
    frame.write_csv(folder / "rows.csv")
    (folder / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in data))
    import datasets

    hf = datasets.Dataset.from_list(data)
    hf.save_to_disk(str(folder / "hf"))
    return {
        "list": data,
        "frame": frame,
        "lazy": frame.lazy(),
        "parquet": str(folder / "rows.parquet"),
        "csv": str(folder / "rows.csv"),
        "jsonl": str(folder / "rows.jsonl"),
        "disk": str(folder / "hf"),
        "hf": hf,
        "hf_stream": hf.to_iterable_dataset(num_shards=3),
    }


def verdicts(result: ve.EvalResult) -> pl.DataFrame:
    return result.results.drop(VOLATILE)


@pytest.mark.parametrize(
    "selection",
    [{}, {"limit": 23}, {"sample": 17, "seed": 3}, {"shard": "1/3"}, {"sample": 30, "seed": 1, "shard": "0/2"}],
    ids=["all", "limit", "sample", "shard", "sample+shard"],
)
def test_every_source_gives_the_same_results_whatever_the_batch_size(tmp_path: Path, selection: dict) -> None:
    data = rows(50)
    reference = ve.evaluate(data, evaluators=STACK, dataset=selection, run={"batch_size": 1000})
    assert reference.results.height == 2 * reference.run_info["counts"]["samples"] > 0
    for name, source in sources(tmp_path, data).items():
        for batch_size in (7, 1000):
            got = ve.evaluate(source, evaluators=STACK, dataset=selection, run={"batch_size": batch_size})
            assert verdicts(got).equals(verdicts(reference)), (name, batch_size)
            kept = got.samples.select("id", "group")
            assert kept.equals(reference.samples.select("id", "group")), (name, batch_size)


def test_repeated_ids_in_different_batches_are_refused_before_anything_runs(tmp_path: Path) -> None:
    data = rows(30)
    data[25]["id"] = data[2]["id"]
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in data))
    with pytest.raises(ve.DatasetError, match="ids must be unique; repeated: s2"):
        ve.evaluate(str(path), evaluators=STACK, run={"batch_size": 4}, output_dir=tmp_path / "run")
    assert not (tmp_path / "run").exists() or not list((tmp_path / "run").glob("*.parquet"))
    # a shard that keeps only one of the two rows is fine
    kept = ve.evaluate(str(path), evaluators=STACK, dataset={"shard": "0/2"}, run={"batch_size": 4})
    assert kept.run_info["counts"]["samples"] == 15


def test_a_row_without_an_id_whose_position_another_row_has_as_id_is_refused_saying_why(tmp_path: Path) -> None:
    """A missing id becomes the row's position: when another row has that id, the refusal says where the repeat comes
    from (a plain repeat does not get that explanation)."""
    data = rows(12)
    data[3]["id"] = None  # given "3"
    data[9]["id"] = "3"
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in data))
    with pytest.raises(ve.DatasetError) as raised:
        ve.evaluate(str(path), evaluators=STACK, run={"batch_size": 4})
    assert str(raised.value) == (
        "dataset ids must be unique; repeated: 3; a row with no id gets its position as its id, which another row "
        "has as its own (3): give every row an id, or none"
    )
    data[3]["id"] = "s4"  # a plain repeat
    path.write_text("".join(json.dumps(r) + "\n" for r in data))
    with pytest.raises(ve.DatasetError) as plain:
        ve.evaluate(str(path), evaluators=STACK, run={"batch_size": 4})
    assert str(plain.value) == "dataset ids must be unique; repeated: s4"


def test_a_bad_jsonl_line_is_a_row_error_in_whatever_batch_it_falls(tmp_path: Path) -> None:
    data = rows(12)
    lines = [json.dumps(r) for r in data]
    lines.insert(9, '{"id": "broken", "output": ')
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(lines) + "\n")
    result = ve.evaluate(str(path), evaluators={"exact": {"type": "exact_match"}}, run={"batch_size": 4})
    errors = result.results.filter(pl.col("status") == "error")
    assert errors["sample_id"].to_list() == ["rows.jsonl:10"]
    assert "line 10 of rows.jsonl is not valid JSON" in errors["error"][0]
    assert result.results.height == 13


def test_a_large_run_without_an_output_directory_keeps_its_parts_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(api, "IN_MEMORY_RESULT_ROWS", 20)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    data = rows(40)
    small = ve.evaluate(data[:10], evaluators=STACK, run={"batch_size": 4})  # 20 result rows: in memory
    assert not list(tmp_path.glob("vision-eval-parts-*"))
    large = ve.evaluate(data, evaluators=STACK, run={"batch_size": 4})
    (folder,) = tmp_path.glob("vision-eval-parts-*")
    assert len(list((folder / "exact").iterdir())) == 10  # one saved part per batch
    reference = ve.evaluate(data, evaluators=STACK, run={"batch_size": 1000})
    monkeypatch.setattr(api, "IN_MEMORY_RESULT_ROWS", 10**9)
    assert verdicts(large).equals(verdicts(reference)) and large.summary.equals(reference.summary)
    assert verdicts(small).equals(verdicts(reference).filter(pl.col("sample_id").is_in([f"s{i}" for i in range(10)])))
    written = large.write(tmp_path / "out")
    assert pl.read_parquet(written / "results.parquet").drop(VOLATILE).equals(verdicts(reference))
    del large
    gc.collect()
    assert not folder.exists()  # removed with its result


class Recorder(Evaluator):
    """Scores every row 1 and records the thread and size of each call."""

    type_name: ClassVar[str] = "recorder"
    required_columns = ("output",)
    calls: ClassVar[list[tuple[str, int, int]]] = []

    def evaluate(self, batch: pl.DataFrame) -> EvalOutput:
        Recorder.calls.append((self.name, threading.get_ident(), batch.height))
        return EvalOutput(batch.select(pl.col("id").alias("sample_id"), pl.lit(1.0).alias("score")))


@pytest.mark.parametrize("in_place_from", [0, 10**6], ids=["numpy", "polars"])
def test_equal_id_hashes_are_confirmed_on_the_ids(monkeypatch: pytest.MonkeyPatch, in_place_from: int) -> None:
    """The duplicate-id pre-pass keeps a hash per id; ids whose hashes are equal are read again and compared, so a
    collision is not a repeat and a real repeat is named (hashes sorted by Polars, or in place in numpy)."""
    from vision_eval.config import DatasetConfig
    from vision_eval.data import ids, open_dataset

    monkeypatch.setattr(ids, "IN_PLACE_ROWS", in_place_from)

    real_hash = pl.Series.hash
    monkeypatch.setattr(pl.Series, "hash", lambda self, *a, **k: real_hash(self.str.len_bytes(), *a, **k))
    data = rows(12)  # ids s0..s11: ten of them two characters long, so their hashes collide
    open_dataset(DatasetConfig(), data).check_ids(5)
    data[11]["id"] = "s3"
    with pytest.raises(ve.DatasetError, match=r"repeated: s3$"):
        open_dataset(DatasetConfig(), data).check_ids(5)
