"""Dataset sources read in chunks, so a dataset never has to fit in memory.

Every source offers the same four things: how many rows it has (``count``), its column names when they are
known without reading every row (``columns``), its rows from a position on as consecutive raw frames of at most
``size`` rows (``chunks``: a shard reads from its first row, skipping the rows before as cheaply as the format
allows), and one column's values in the same chunks (``column_chunks``, for the duplicate-id check, which reads
nothing else when the format allows it: ``reads_one_column``). Rows keep the source's own column names and types;
:mod:`vision_eval.data.canonical` turns each chunk into canonical rows.

* :class:`RawDataset` — rows already in memory (a Polars or pandas frame, a list of dicts, a JSON list file):
  slices of one frame.
* :class:`LazySource` — a Polars lazy scan (Parquet and CSV files, a ``pl.LazyFrame`` from Python), read with
  ``collect_batches``. A CSV whose bytes are not all UTF-8 is read with U+FFFD in their place, and its rows that
  hold one become row errors (as the whole-file read did).
* :class:`JsonlSource` — JSON Lines read a chunk of lines at a time through Python's ``json`` (a line that does
  not parse, or whose text is not valid Unicode, is a row error naming the line); the ids alone are read by a
  Polars scan of that one field when it can; its rows are counted by a scan of its bytes (:func:`count_lines`).
* :class:`HfSource` / :class:`HfStreamSource` — a Hugging Face ``Dataset`` (Arrow slices) or ``IterableDataset``
  (``streaming: true``: chunks taken from the stream; counting its rows reads the stream once more, unless its
  split info says how many there are).
"""

from __future__ import annotations

import codecs
import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import polars as pl

from vision_eval.data.rows import ROW_ERROR, from_dicts
from vision_eval.data.text import mark_replaced

READ_BLOCK = 1 << 24
"""Bytes read at a time when a file is scanned as bytes (line counts, the UTF-8 check)."""
WHITESPACE = b" \t\n\r\x0b\x0c"
"""What ``bytes.strip`` strips: a JSON Lines line of these alone is blank, not a row."""


class Source(Protocol):
    """What the dataset stream reads rows from."""

    root: Path | None
    """Folder that relative image paths resolve against."""
    kind: str
    """What it was loaded from (``python``, ``parquet``, ``jsonl``, ``json``, ``csv``, ``hf``, ``disk``...)."""
    local: bool
    """False for hub datasets: absolute image paths need ``dataset.image_roots``."""
    confined: bool
    """False for rows built in Python: their absolute image paths are read as given unless ``image_roots`` is set."""
    reads_one_column: bool
    """True when ``column_chunks`` reads that column alone (a shard then checks every shard's ids before it runs)."""

    def count(self) -> int: ...
    def columns(self) -> list[str] | None: ...
    def chunks(self, size: int, start: int = 0) -> Iterator[pl.DataFrame]: ...
    def column_chunks(self, column: str, size: int, start: int = 0) -> Iterator[pl.Series]: ...


def exact_chunks(frames: Iterator[pl.DataFrame], size: int) -> Iterator[pl.DataFrame]:
    """``frames`` regrouped into chunks of exactly ``size`` rows (the last one shorter): the chunks, and so the
    batches and their checkpoint keys, do not depend on how a reader happened to split its output."""
    pending: list[pl.DataFrame] = []
    held = 0
    for frame in frames:
        while frame.height:
            take = min(size - held, frame.height)
            pending.append(frame.slice(0, take))
            held += take
            frame = frame.slice(take)
            if held == size:
                yield pending[0] if len(pending) == 1 else pl.concat(pending, how="diagonal_relaxed")
                pending, held = [], 0
    if held:
        yield pending[0] if len(pending) == 1 else pl.concat(pending, how="diagonal_relaxed")


def _column_of(chunk: pl.DataFrame, column: str) -> pl.Series:
    if column in chunk.columns:
        return chunk[column]
    return pl.repeat(None, chunk.height, dtype=pl.Utf8, eager=True).alias(column)


@dataclass
class RawDataset:
    """Rows already in memory, read as slices of one frame."""

    frame: pl.DataFrame
    """The rows, with the source's own column names."""
    root: Path | None
    """Folder that relative image paths resolve against."""
    kind: str
    """What it was loaded from (``python``, ``json``...)."""
    local: bool = True
    """False for hub datasets (a hub id or an HF ``Dataset`` object): absolute image paths need
    ``dataset.image_roots``."""
    confined: bool = True
    """False for rows built in Python: their absolute image paths are read as given unless
    ``dataset.image_roots`` is set (see :mod:`vision_eval.images.roots`)."""
    reads_one_column: bool = True

    def count(self) -> int:
        return self.frame.height

    def columns(self) -> list[str] | None:
        return self.frame.columns

    def chunks(self, size: int, start: int = 0) -> Iterator[pl.DataFrame]:
        for first in range(start, self.frame.height, size):
            yield self.frame.slice(first, size)

    def column_chunks(self, column: str, size: int, start: int = 0) -> Iterator[pl.Series]:
        for chunk in self.chunks(size, start):
            yield _column_of(chunk, column)


@dataclass
class LazySource:
    """A Polars lazy scan read in batches (Parquet, CSV, a ``LazyFrame``)."""

    lazy: pl.LazyFrame
    root: Path | None
    kind: str
    local: bool = True
    confined: bool = True
    lossy: str | None = None
    """For a CSV read with U+FFFD in place of bytes that are not UTF-8: its file name, which the row errors name."""
    reads_one_column: bool = True
    _count: int | None = field(default=None, repr=False)

    def count(self) -> int:
        if self._count is None:
            self._count = int(self.lazy.select(pl.len()).collect().item())
        return self._count

    def columns(self) -> list[str] | None:
        return self.lazy.collect_schema().names()

    def _from(self, start: int) -> pl.LazyFrame:
        """The scan from row ``start`` on (a Parquet reader skips the row groups before it)."""
        return self.lazy.slice(start) if start else self.lazy

    def chunks(self, size: int, start: int = 0) -> Iterator[pl.DataFrame]:
        for chunk in exact_chunks(iter(self._from(start).collect_batches(chunk_size=size)), size):
            if self.lossy is not None:
                chunk = mark_replaced(chunk, _row_of(start, self.lossy), ROW_ERROR)
            start += chunk.height
            yield chunk

    def column_chunks(self, column: str, size: int, start: int = 0) -> Iterator[pl.Series]:
        if column not in self.lazy.collect_schema().names():
            for chunk in self.chunks(size, start):
                yield _column_of(chunk, column)
            return
        for chunk in exact_chunks(iter(self._from(start).select(column).collect_batches(chunk_size=size)), size):
            yield chunk[column]


def _row_of(offset: int, name: str) -> Any:
    """How a lossily read CSV's row error names the row: ``row <n> of <file>`` (``n`` from 1 in the chunk)."""
    return lambda n: pl.format("row {} of {}", n + offset, pl.lit(name))


def is_utf8(path: Path) -> bool:
    """True when every byte of the file is valid UTF-8 (read in blocks; nothing is kept)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    with path.open("rb") as handle:
        try:
            while block := handle.read(READ_BLOCK):
                decoder.decode(block)
            decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            return False
    return True


def nonblank_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """``(line number, line)`` of every line of ``path`` that is not blank (bytes, newline included)."""
    with path.open("rb") as handle:
        for number, line in enumerate(handle, start=1):
            if line.strip():
                yield number, line


def count_lines(path: Path, small: int = READ_BLOCK) -> int:
    """How many lines :func:`nonblank_lines` yields: lines end at ``\\n``, a last line without one counts, a line
    of :data:`WHITESPACE` alone does not. A file of ``small`` bytes or more is scanned as bytes, by numpy over a
    memory map (2M lines: ~2.5x faster than the Python pass); a smaller one by that pass (no numpy import)."""
    size = path.stat().st_size
    if size < max(small, 1):
        return sum(1 for _ in nonblank_lines(path))
    import mmap

    with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as view:
        return _count_mapped(view, size)


def _count_mapped(view: Any, size: int) -> int:
    """:func:`count_lines` of a mapped file: every line start (the file's, each newline's but a last one) is a
    row unless its line is blank. A line that starts with a newline is empty; one that starts with other whitespace
    (rare) is looked at whole; any other is a row. (The arrays on the map are gone when this returns.)"""
    import numpy as np

    data = np.frombuffer(view, dtype=np.uint8)
    spaces = np.frombuffer(WHITESPACE.replace(b"\n", b""), dtype=np.uint8)
    rows = 0
    for first in range(0, size, READ_BLOCK):
        starts = np.flatnonzero(data[first : first + READ_BLOCK] == ord("\n")) + (first + 1)
        if first == 0:
            starts = np.concatenate([np.zeros(1, dtype=starts.dtype), starts])
        starts = starts[starts < size]
        leading = data[starts]
        rows += starts.size - int(np.count_nonzero(leading == ord("\n")))
        for start in starts[np.isin(leading, spaces)].tolist():
            end = view.find(b"\n", start)
            if not view[start : end if end >= 0 else size].strip():
                rows -= 1
    return rows


def csv_source(path: Path, root: Path | None) -> LazySource:
    """A CSV file; bytes that are not UTF-8 are read as U+FFFD, and the rows holding them become row errors."""
    lossy = not is_utf8(path)
    scan = pl.scan_csv(path, infer_schema_length=10_000, encoding="utf8-lossy" if lossy else "utf8")
    return LazySource(scan, root, "csv", lossy=path.name if lossy else None)


@dataclass
class JsonlSource:
    """JSON Lines, read a chunk of lines at a time through Python's ``json``.

    A line that is not a JSON object becomes a row (id ``<file>:<line>``) with a row error; bytes that are not
    UTF-8 and lone surrogates become row errors naming the line and the column (:mod:`vision_eval.data.text`).
    Blank lines are not rows."""

    path: Path
    root: Path | None
    kind: str = "jsonl"
    local: bool = True
    confined: bool = True
    reads_one_column: bool = True
    _count: int | None = field(default=None, repr=False)

    def count(self) -> int:
        if self._count is None:
            self._count = count_lines(self.path)
        return self._count

    def columns(self) -> list[str] | None:
        return None  # known only once every line is read: the stream adds a column when it first appears

    def chunks(self, size: int, start: int = 0) -> Iterator[pl.DataFrame]:
        lines = itertools.islice(nonblank_lines(self.path), start, None)  # the lines before are counted, not parsed
        while batch := list(itertools.islice(lines, size)):
            yield self._parse(batch)

    def _parse(self, batch: list[tuple[int, bytes]]) -> pl.DataFrame:
        rows: list[dict[str, Any]] = []
        name = self.path.name
        for number, line in batch:
            try:
                # Bytes that are not UTF-8 are read as lone surrogates, which from_dicts reports with their column.
                row = json.loads(line.decode("utf-8", "surrogateescape"))
                if not isinstance(row, dict):
                    raise ValueError("line is not a JSON object")
            except ValueError as exc:
                row = {"id": f"{name}:{number}", ROW_ERROR: f"line {number} of {name} is not valid JSON: {exc}"}
            rows.append(row)
        numbers = [number for number, _ in batch]
        return from_dicts(rows, lambda i: f"line {numbers[i]} of {name}")

    def column_chunks(self, column: str, size: int, start: int = 0) -> Iterator[pl.Series]:
        """The column's values, read by a Polars scan of that one field (as text); when Polars cannot read the
        file (a line that is not JSON...) or counts its rows differently, by the Python reader."""
        try:
            scan = pl.scan_ndjson(self.path, schema={column: pl.Utf8}).select(column)
            values = scan.collect(engine="streaming")[column]
        except Exception:  # any error of Polars' reader: the Python reader decides, as for the rows themselves
            values = None
        if values is not None and values.len() == self.count():
            for first in range(start, values.len(), size):
                yield values.slice(first, size)
            return
        for chunk in self.chunks(size, start):
            yield _column_of(chunk, column)


@dataclass
class HfSource:
    """A Hugging Face ``Dataset`` (Arrow, memory-mapped), read in slices."""

    dataset: Any
    root: Path | None
    kind: str = "hf"
    local: bool = False
    confined: bool = True
    reads_one_column: bool = True

    def count(self) -> int:
        return len(self.dataset)

    def columns(self) -> list[str] | None:
        return list(self.dataset.column_names)

    def _slices(self, dataset: Any, size: int, start: int) -> Iterator[pl.DataFrame]:
        arrow = dataset.with_format("arrow")
        for first in range(start, len(dataset), size):
            yield pl.from_arrow(arrow[first : first + size])  # type: ignore[misc]

    def chunks(self, size: int, start: int = 0) -> Iterator[pl.DataFrame]:
        yield from self._slices(self.dataset, size, start)

    def column_chunks(self, column: str, size: int, start: int = 0) -> Iterator[pl.Series]:
        if column not in self.dataset.column_names:
            yield from (_column_of(c, column) for c in self._slices(self.dataset, size, start))
            return
        for chunk in self._slices(self.dataset.select_columns([column]), size, start):
            yield chunk[column]


@dataclass
class HfStreamSource:
    """A Hugging Face ``IterableDataset`` (``streaming: true``): Arrow batches taken from the stream as they come
    (the same values an Arrow ``Dataset`` gives; images stay undecoded structs)."""

    dataset: Any
    root: Path | None
    kind: str = "hf"
    local: bool = False
    confined: bool = True
    reads_one_column: bool = False
    """A stream reads whole rows (its shards check their own ids before they run, and the merge checks them all)."""
    _count: int | None = field(default=None, repr=False)

    def count(self) -> int:
        """From the split's info when it says, else by reading the stream once (one column, Arrow batches)."""
        if self._count is None:
            self._count = self._info_count()
        if self._count is None:
            names = self.columns()
            stream = self.dataset.select_columns(names[:1]) if names else self.dataset
            self._count = sum(t.num_rows for t in stream.with_format("arrow").iter(batch_size=10_000))
        return self._count

    def _info_count(self) -> int | None:
        splits = getattr(getattr(self.dataset, "info", None), "splits", None) or {}
        split = splits.get(str(getattr(self.dataset, "split", None) or "")) if splits else None
        return int(split.num_examples) if split is not None and split.num_examples else None

    def columns(self) -> list[str] | None:
        names = getattr(self.dataset, "column_names", None)
        return list(names) if names else None

    def _batches(self, dataset: Any, size: int, start: int) -> Iterator[pl.DataFrame]:
        dataset = dataset.skip(start) if start else dataset
        tables = (pl.from_arrow(t) for t in dataset.with_format("arrow").iter(batch_size=size))
        return exact_chunks(tables, size)  # type: ignore[arg-type]

    def chunks(self, size: int, start: int = 0) -> Iterator[pl.DataFrame]:
        yield from self._batches(self.dataset, size, start)

    def column_chunks(self, column: str, size: int, start: int = 0) -> Iterator[pl.Series]:
        names = self.columns()
        stream = self.dataset.select_columns([column]) if names is not None and column in names else self.dataset
        for chunk in self._batches(stream, size, start):
            yield _column_of(chunk, column)
