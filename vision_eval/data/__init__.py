"""Datasets: open any source, then read it as canonical batches (the frame evaluators read, a batch at a time)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from vision_eval.config import DatasetConfig
from vision_eval.data.canonical import check_columns, image_roots, samples_frame
from vision_eval.data.loading import load_raw, open_source
from vision_eval.data.rows import ROW_ERROR
from vision_eval.data.sources import RawDataset, Source
from vision_eval.data.stream import DatasetStream, canonicalize


def open_dataset(
    cfg: DatasetConfig,
    data: Any = None,
    limit: int | None = None,
    shard: str | None = None,
    image_columns: Sequence[str] = (),
    context: Any = None,
) -> DatasetStream:
    """The dataset config's (or Python ``data``'s) rows as a stream of canonical batches. ``image_columns``
    (columns other than ``images`` that evaluators read images from) become image references too; ``context``
    (an ``EvalContext``) gets the dataset's root and image roots, so evaluators resolve image columns under the
    same rules."""
    stream = DatasetStream(open_source(cfg, data), cfg, limit, shard, image_columns)
    if context is not None:
        context.dataset_root = stream.source.root
        context.image_roots = stream.roots
    return stream


def load_dataset(
    cfg: DatasetConfig,
    data: Any = None,
    limit: int | None = None,
    shard: str | None = None,
    image_columns: Sequence[str] = (),
    context: Any = None,
) -> tuple[pl.DataFrame, Path | None]:
    """The whole canonical frame (for data that fits in memory) and its image root."""
    stream = open_dataset(cfg, data, limit, shard, image_columns, context)
    return stream.collect(), stream.source.root


__all__ = [
    "ROW_ERROR",
    "DatasetStream",
    "RawDataset",
    "Source",
    "canonicalize",
    "check_columns",
    "image_roots",
    "load_dataset",
    "load_raw",
    "open_dataset",
    "open_source",
    "samples_frame",
]
