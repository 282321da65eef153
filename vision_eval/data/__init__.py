"""Datasets: load any source, then canonicalize it into the frame evaluators read."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from vision_eval.config import DatasetConfig
from vision_eval.data.canonical import canonicalize, check_columns, image_roots, samples_frame
from vision_eval.data.loading import ROW_ERROR, RawDataset, load_raw


def load_dataset(
    cfg: DatasetConfig,
    data: Any = None,
    limit: int | None = None,
    shard: str | None = None,
    image_columns: Sequence[str] = (),
    context: Any = None,
) -> tuple[pl.DataFrame, Path | None]:
    """The canonical frame for a dataset config (or Python ``data``) and its image root. ``image_columns``
    (columns other than ``images`` that evaluators read images from) become image references too; ``context``
    (an ``EvalContext``) gets the dataset's image roots, so evaluators resolve image columns under the same rules."""
    raw = load_raw(cfg, data, limit)
    frame = canonicalize(raw, cfg, limit, shard, image_columns)
    if context is not None:
        context.dataset_root = raw.root
        context.image_roots = image_roots(raw, cfg)
    return frame, raw.root


__all__ = [
    "ROW_ERROR",
    "RawDataset",
    "canonicalize",
    "check_columns",
    "image_roots",
    "load_dataset",
    "load_raw",
    "samples_frame",
]
