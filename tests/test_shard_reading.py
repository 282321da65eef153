"""Shards read their share (issue #27 item 2): ``run.shard=i/n`` keeps the i-th of n consecutive parts of the selected
rows, whatever the source and the batch size; the shards together are the whole run, generated ids included; a
shard starts reading at its first row and stops after its last; and it refuses an id another shard repeats before
anything is evaluated, where the source reads the id column alone."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from vision_eval.config import DatasetConfig, shard_range
from vision_eval.data import DatasetStream, open_source
from vision_eval.data.sources import Source
from vision_eval.errors import DatasetError

ROWS = 53
SHARDS = 4


def _rows(with_ids: bool = True) -> list[dict[str, Any]]:
    rows = [
        {"input": f"question {i}", "output": f"answer {i % 7}", "expected_output": f"answer {i % 5}", "task": i % 3}
        for i in range(ROWS)
    ]
    return [{"id": f"r{i:03d}", **row} for i, row in enumerate(rows)] if with_ids else rows


def _write(kind: str, folder: Path, rows: list[dict[str, Any]]) -> Any:
    """``rows`` as the dataset a run of ``kind`` reads: a path, or the object handed to ``evaluate``."""
    frame = pl.DataFrame(rows)
    if kind == "python":
        return rows
    if kind in ("hf", "hf-stream"):
        import datasets

        dataset = datasets.Dataset.from_list(rows)
        return dataset.to_iterable_dataset(num_shards=3) if kind == "hf-stream" else dataset
    path = folder / f"rows.{kind}"
    if kind == "parquet":
        frame.write_parquet(path, row_group_size=6)  # a shard starts inside a row group and skips the ones before
    elif kind == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    else:
        frame.write_csv(path)
    return path


def _stream(data: Any, cfg: DatasetConfig, shard: str | None = None, source: Source | None = None) -> DatasetStream:
    return DatasetStream(source or open_source(cfg, data), cfg, shard=shard)


def _read(stream: DatasetStream, size: int) -> pl.DataFrame:
    stream.check_ids(size)
    stream.open(size)
    batches = list(stream.batches())
    return pl.concat(batches) if batches else stream.head()


KINDS = ["python", "parquet", "jsonl", "csv", "hf", "hf-stream"]
SELECTIONS: dict[str, dict[str, Any]] = {
    "all rows": {},
    "a sample": {"sample": 29, "seed": 3},
    "a limit": {"limit": 41},
    "a dataset shard": {"shard": "1/2"},
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("selection", list(SELECTIONS))
@pytest.mark.parametrize("with_ids", [True, False], ids=["ids", "generated ids"])
def test_the_shards_together_are_the_whole_run_in_order(
    kind: str, selection: str, with_ids: bool, tmp_path: Path
) -> None:
    data = _write(kind, tmp_path, _rows(with_ids))
    cfg = DatasetConfig(**SELECTIONS[selection])
    whole = _read(_stream(data, cfg), 10)
    parts = [_read(_stream(data, cfg, f"{i}/{SHARDS}"), size) for i, size in zip(range(SHARDS), (1, 7, 10, 64))]
    assert_frame_equal(pl.concat(parts), whole)
    sizes = [p.height for p in parts]
    assert sum(sizes) == whole.height and max(sizes) - min(sizes) <= 1, sizes
    # consecutive: shard i holds the rows from its range's first to its last
    starts = [shard_range(whole.height, i, SHARDS)[0] for i in range(SHARDS)]
    assert [p["id"][0] for p in parts] == [whole["id"][s] for s in starts]


@pytest.mark.parametrize("kind", ["python", "parquet", "jsonl", "hf"])
def test_a_shard_is_the_same_whatever_the_batch_size(kind: str, tmp_path: Path) -> None:
    data = _write(kind, tmp_path, _rows(with_ids=False))
    cfg = DatasetConfig(sample=40, seed=1)
    reads = [_read(_stream(data, cfg, "2/3"), size) for size in (1, 3, 16, 1000)]
    for other in reads[1:]:
        assert_frame_equal(other, reads[0])


class _Recording:
    """A real source whose reads are recorded (the rows each ``chunks`` call handed out, from where)."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.starts: list[int] = []
        self.rows_read = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.source, name)

    def chunks(self, size: int, start: int = 0) -> Iterator[pl.DataFrame]:
        self.starts.append(start)
        for chunk in self.source.chunks(size, start):
            self.rows_read += chunk.height
            yield chunk


@pytest.mark.parametrize("kind", ["parquet", "jsonl", "hf"])
def test_a_shard_reads_from_its_first_row_and_stops_after_its_last(kind: str, tmp_path: Path) -> None:
    data = _write(kind, tmp_path, _rows())
    cfg = DatasetConfig()
    recording = _Recording(open_source(cfg, data))
    stream = _stream(data, cfg, "2/4", source=recording)  # type: ignore[arg-type]
    rows = _read(stream, 5)
    first, stop = shard_range(ROWS, 2, SHARDS)
    assert rows["id"].to_list() == [f"r{i:03d}" for i in range(first, stop)]
    assert recording.starts == [first]
    assert recording.rows_read < (stop - first) + 5  # at most the last chunk's rows past the shard's end


@pytest.mark.parametrize("kind", ["python", "parquet", "jsonl", "csv", "hf"])
def test_an_id_another_shard_repeats_is_refused_before_anything_runs(kind: str, tmp_path: Path) -> None:
    rows = _rows()
    rows[50]["id"] = rows[2]["id"]  # shard 0 and shard 3: neither repeats an id of its own
    data = _write(kind, tmp_path, rows)
    cfg = DatasetConfig()
    for i in range(SHARDS):
        stream = _stream(data, cfg, f"{i}/{SHARDS}")
        with pytest.raises(DatasetError, match="repeated: r002"):
            stream.check_ids(10)


def test_a_streamed_source_checks_its_own_ids_and_leaves_the_others_to_the_merge(tmp_path: Path) -> None:
    """A stream reads whole rows: a shard does not read the others' (the merge refuses an id in two shards)."""
    rows = _rows()
    rows[50]["id"] = rows[2]["id"]
    data = _write("hf-stream", tmp_path, rows)
    cfg = DatasetConfig()
    _stream(data, cfg, f"1/{SHARDS}").check_ids(10)  # neither row is in shard 1
    with pytest.raises(DatasetError, match="repeated: r002"):
        _stream(data, cfg).check_ids(10)  # the whole run refuses it


def test_a_bad_line_is_a_row_error_in_its_own_shard_naming_its_line(tmp_path: Path) -> None:
    lines = [json.dumps(r) + "\n" for r in _rows()]
    lines[3] = lines[40] = "{not json\n"  # in shards 0 and 3
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(lines))
    parts = [_read(_stream(path, DatasetConfig(), f"{i}/{SHARDS}"), 10) for i in range(SHARDS)]
    flagged = [[e for e in p["_row_error"].to_list() if e] for p in parts]
    assert [len(f) for f in flagged] == [1, 0, 0, 1]
    assert "line 4 of rows.jsonl" in flagged[0][0] and "line 41 of rows.jsonl" in flagged[3][0]


@pytest.mark.parametrize("kind", ["jsonl", "hf-stream"])
@pytest.mark.parametrize("repeated", [False, True], ids=["unique ids", "a repeated id"])
def test_a_sample_is_drawn_once_per_stream_however_often_its_rows_are_read(
    kind: str, repeated: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run's size, the whole run's size, the id check (every shard's ids, or the shard's own for a stream;
    read a second time when two hashes meet) and the rows read all use the one sample the stream drew: a shard's
    rows are its part of that sample."""
    drawn = pl.int_range(0, ROWS, eager=True).sample(29, seed=3).sort().to_list()
    first, stop = shard_range(29, 1, SHARDS)
    rows = _rows()
    if repeated:
        rows[drawn[first + 1]]["id"] = rows[drawn[first]]["id"]
    data = _write(kind, tmp_path, rows)
    draws: list[int] = []
    sample = pl.Series.sample

    def counted_sample(self: pl.Series, *args: Any, **kwargs: Any) -> pl.Series:
        draws.append(self.len())
        return sample(self, *args, **kwargs)

    monkeypatch.setattr(pl.Series, "sample", counted_sample)
    stream = _stream(data, DatasetConfig(sample=29, seed=3), f"1/{SHARDS}")
    assert (stream.total, stream.unsharded) == (stop - first, 29)
    if repeated:
        with pytest.raises(DatasetError, match=f"repeated: {rows[drawn[first]]['id']}"):
            _read(stream, 4)
    else:
        assert _read(stream, 4)["id"].to_list() == [rows[p]["id"] for p in drawn[first:stop]]
    assert draws == [ROWS]
