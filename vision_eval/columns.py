"""Per-evaluator columns: ``columns: {output: answer, images: [photo]}`` on any evaluator.

An evaluator reads the canonical columns (``input``, ``output``, ``expected_output``, ``images``). Its
``columns`` mapping names other dataset columns to read as them, so one dataset can feed a JSON field check from
``answer_json`` and a count metric from ``answer_count``. It is done once, here, for every evaluator: the batch
handed to an evaluator has each mapped canonical column replaced by the dataset column it names (text as the
canonical text columns are, image columns as image references, several image columns concatenated in order).
The ``where`` filter is applied before, on the dataset's own columns.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

import polars as pl

from vision_eval.errors import ConfigError
from vision_eval.evaluator import ColumnMap, Evaluator
from vision_eval.images.refs import IMAGES_DTYPE, images_series


def column_map(evaluator: Evaluator) -> dict[str, list[str]]:
    """Canonical column -> the dataset columns the evaluator reads as it (only the mapped ones)."""
    columns = getattr(evaluator.settings, "columns", None)
    return columns.mapped() if isinstance(columns, ColumnMap) else {}


def needed(evaluator: Evaluator) -> tuple[str, ...]:
    """The dataset columns an evaluator reads: its canonical needs, the mapped ones read from their sources."""
    mapping = column_map(evaluator)
    out: list[str] = []
    for column in evaluator.columns_needed():
        out += mapping.get(column, [column])
    return tuple(dict.fromkeys(out))


def image_columns(evaluators: Iterable[Evaluator], extra: Iterable[str] = ()) -> list[str]:
    """Dataset columns other than ``images`` that hold images for some evaluator (a ``columns.images``
    mapping, or an ``images:`` setting listing columns) or in ``extra``; the loader turns them into image
    references exactly as it does ``images``."""
    found: list[str] = list(extra)
    for evaluator in evaluators:
        found += column_map(evaluator).get("images", [])
        listed = getattr(evaluator.settings, "images", None)
        if isinstance(listed, list) and all(isinstance(c, str) for c in listed):
            found += listed
    return [c for c in dict.fromkeys(found) if c != "images"]


def check_mapped(frame: pl.DataFrame, evaluators: Iterable[Evaluator], sources: Any = None) -> None:
    """Raise ``ConfigError`` naming ``evaluators.<name>.columns.<canonical>`` (and its file) when a mapped
    column is not in the dataset."""
    available = [c for c in frame.columns if not c.startswith("_")]
    for evaluator in evaluators:
        for canonical, columns in column_map(evaluator).items():
            for column in columns:
                if column in frame.columns:
                    continue
                key = f"evaluators.{evaluator.name}.columns.{canonical}"
                close = difflib.get_close_matches(column, available, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise ConfigError(
                    key,
                    f"dataset column {column!r} is not in the dataset{hint} (columns: {', '.join(available)})",
                    sources.file_for(key) if sources is not None else None,
                )


def _text(batch: pl.DataFrame, column: str) -> pl.Expr:
    from vision_eval.data.canonical import _as_text

    return _as_text(column, batch)


def _images(evaluator: Evaluator, batch: pl.DataFrame, columns: list[str]) -> pl.Expr:
    parts = []
    for column in columns:
        if batch.schema[column] == IMAGES_DTYPE:
            parts.append(pl.col(column))
        else:  # a frame that did not go through the loader: read the values as the loader would
            refs = images_series(batch[column], evaluator.context.dataset_root, allow_urls=False)
            parts.append(pl.lit(refs))
    if len(parts) == 1:
        return parts[0]
    return pl.concat_list([p.fill_null(pl.lit([], dtype=IMAGES_DTYPE)) for p in parts])


def view(evaluator: Evaluator, batch: pl.DataFrame) -> pl.DataFrame:
    """``batch`` as ``evaluator`` reads it: each mapped canonical column replaced by its dataset column(s)."""
    mapping = column_map(evaluator)
    if not mapping:
        return batch
    exprs = []
    for canonical, columns in mapping.items():
        if canonical == "images":
            exprs.append(_images(evaluator, batch, columns).alias("images"))
        else:
            exprs.append(_text(batch, columns[0]).alias(canonical))
    return batch.with_columns(exprs)
