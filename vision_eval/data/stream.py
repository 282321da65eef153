"""A dataset as a stream of canonical batches: the one way every run reads its rows, whatever the source.

:class:`DatasetStream` counts the source's rows (cheaply: Parquet metadata, a line count, ``len()``), knows how
many the selection keeps (:class:`~vision_eval.data.canonical.Selection`), refuses repeated ids before anything
is evaluated (:mod:`vision_eval.data.ids`), then reads the source chunk by chunk and yields canonical batches of
exactly ``size`` rows (the last one shorter), so memory holds a batch or two, never the dataset.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import polars as pl

from vision_eval.config import DatasetConfig
from vision_eval.data.canonical import Canonicalizer, Selection, check_mapping, draw_sample, id_source, image_roots
from vision_eval.data.ids import check_unique_ids
from vision_eval.data.sources import RawDataset, Source, exact_chunks

READ_ROWS = 50_000
"""Most source rows read at a time when the batch size does not say (``collect``)."""


class DatasetStream:
    """The canonical batches of one source under one dataset config (and the run's ``limit`` and ``shard``)."""

    def __init__(
        self,
        source: Source,
        cfg: DatasetConfig,
        limit: int | None = None,
        shard: str | None = None,
        image_columns: Sequence[str] = (),
    ) -> None:
        self.source, self.cfg = source, cfg
        self.limit, self.shard = limit, shard
        self.image_columns = list(image_columns)
        self.roots = image_roots(source, cfg)
        self.rows = source.count()
        """Rows in the source (before the selection)."""
        self._sample = draw_sample(cfg, self.rows)  # once: every selection below reads these positions
        selection = self.selection()
        self.total = selection.total
        """Rows the run evaluates."""
        self.first = selection.first
        """The rank of its first row among the rows selected before any shard (where a shard's rows go back)."""
        self.unsharded = self.selection(whole=True).total
        """Rows the whole run (every ``run.shard`` together) evaluates: what a merge of its shards must hold."""
        known = source.columns()
        if known is not None:
            check_mapping(known, cfg.columns)
        self._columns = list(known or [])
        self._head: pl.DataFrame | None = None
        self._empty = pl.DataFrame()
        self._batches: Iterator[pl.DataFrame] | None = None

    def selection(self, whole: bool = False) -> Selection:
        """A fresh selection of the rows this stream keeps (``whole``: of the whole run's, every ``run.shard``)."""
        return Selection(self.cfg, self.rows, self.limit, None if whole else self.shard, self._sample)

    def check_ids(self, size: int) -> None:
        """Refuse repeated ids (``DatasetError``), reading only the id column: those of every shard of the run when
        the source reads one column cheaply (a shard refuses what the whole run would), else this shard's."""
        whole = self.source.reads_one_column and self.shard is not None
        selection = (lambda: self.selection(whole=True)) if whole else self.selection
        check_unique_ids(self.source, id_source(self.cfg), max(size, 1), selection)

    def _canonical(self, size: int) -> Iterator[pl.DataFrame]:
        selection = self.selection()
        canonical = Canonicalizer(self.cfg, self.roots, self.image_columns, self._columns)
        checked = bool(self._columns)
        for raw in self.source.chunks(size, selection.start):
            if not checked:  # columns known only from the rows: the first chunk's are checked
                check_mapping(raw.columns, self.cfg.columns)
                checked = True
            keep = selection.take(raw.height)
            if keep.len():
                yield canonical(raw, keep, selection.rank - keep.len())
            if selection.done:
                return
        if selection.kept == 0:  # nothing kept: an empty frame carries the columns
            empty = pl.DataFrame(schema=dict.fromkeys(canonical.columns or self._columns, pl.Utf8))
            self._empty = canonical(empty, selection.take(0), 0)

    def open(self, size: int) -> None:
        """Start reading batches of ``size`` rows; :meth:`head` is then the first (read now)."""
        batches = exact_chunks(self._canonical(max(size, 1)), max(size, 1))
        self._head = next(batches, None)
        if self._head is None:
            self._head = self._empty
        self._batches = batches

    def head(self) -> pl.DataFrame:
        """The first batch (empty, with the dataset's columns, when no row is kept): what checks look at."""
        if self._head is None:
            self.open(READ_ROWS)
        assert self._head is not None
        return self._head

    def batches(self) -> Iterator[pl.DataFrame]:
        """Every canonical batch in dataset order (once); an empty dataset has none."""
        if self._batches is None:
            self.open(READ_ROWS)
        assert self._head is not None and self._batches is not None
        head, rest = self._head, self._batches
        self._batches = iter(())
        if head.height:
            yield head
            yield from rest

    def collect(self) -> pl.DataFrame:
        """Every kept row in one frame (for rows that fit in memory: ``load_dataset``, ``canonicalize``)."""
        self.check_ids(READ_ROWS)
        batches = list(self.batches())
        return pl.concat(batches, how="diagonal_relaxed") if batches else self.head()


def canonicalize(
    raw: RawDataset | Source,
    cfg: DatasetConfig,
    limit: int | None = None,
    shard: str | None = None,
    image_columns: Sequence[str] = (),
) -> pl.DataFrame:
    """The canonical frame of a whole source (in memory): mapped, selected, ids checked, images referenced."""
    stream = DatasetStream(raw, cfg, limit, shard, image_columns)
    return stream.collect()


def describe_batches(stats: dict[str, Any], batch: pl.DataFrame) -> None:
    """Add a batch to the dataset counts run.json reports (rows, images, columns in order of appearance)."""
    stats["rows"] = stats.get("rows", 0) + batch.height
    if "images" in batch.columns:
        stats["images"] = stats.get("images", 0) + int(batch["images"].list.len().sum() or 0)
    else:
        stats.setdefault("images", 0)
    columns = stats.setdefault("columns", [])
    columns.extend(c for c in batch.columns if not c.startswith("_") and c not in columns)
