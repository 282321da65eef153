"""Turn a raw frame into the canonical dataset frame every evaluator reads.

Canonical columns: ``id`` (text, unique), ``input``, ``output``, ``expected_output`` (text;
objects become JSON text), ``images`` (list of image references) and any metadata columns.
``_row_error`` (null or a reason) marks rows that could not be read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from vision_eval.config import DatasetConfig, parse_shard
from vision_eval.data.loading import ROW_ERROR, RawDataset
from vision_eval.errors import ConfigError, DatasetError
from vision_eval.images.refs import IMAGES_DTYPE, images_series
from vision_eval.images.roots import ImageRoots

TEXT_COLUMNS = ("input", "output", "expected_output")
CANONICAL = ("id", *TEXT_COLUMNS, "images")


def _as_text(column: str, frame: pl.DataFrame) -> pl.Expr:
    dtype = frame.schema[column]
    expr = pl.col(column)
    if isinstance(dtype, pl.Struct):
        return expr.struct.json_encode().alias(column)
    if isinstance(dtype, pl.List | pl.Array):
        # {"v":[...]} -> [...]: JSON text of the list without a per-row Python call.
        return pl.struct(expr.alias("v")).struct.json_encode().str.slice(5).str.head(-1).alias(column)
    if dtype == pl.Object:
        return expr.map_elements(lambda v: None if v is None else str(v), return_dtype=pl.Utf8).alias(column)
    return expr.cast(pl.Utf8).alias(column)


def _apply_mapping(frame: pl.DataFrame, mapping: dict[str, str]) -> pl.DataFrame:
    missing = [src for src in mapping if src not in frame.columns]
    if missing:
        raise ConfigError(
            f"dataset.columns.{missing[0]}",
            f"source column {missing[0]!r} not in the dataset; it has: {', '.join(frame.columns)}",
        )
    renamed = {src: dst for src, dst in mapping.items() if src != dst}
    clashes = [dst for src, dst in renamed.items() if dst in frame.columns and dst not in renamed]
    frame = frame.drop(clashes)
    return frame.rename(renamed)


def select_rows(frame: pl.DataFrame, cfg: DatasetConfig, limit: int | None, shard: str | None) -> pl.DataFrame:
    """Apply ``sample`` (seeded), then ``limit``, then ``shard`` (``i/n``, by row position)."""
    if cfg.sample is not None and cfg.sample < frame.height:
        frame = frame.sample(n=cfg.sample, seed=cfg.seed, shuffle=True)
    limits = [x for x in (cfg.limit, limit) if x is not None]
    if limits:
        frame = frame.head(min(limits))
    for text in (cfg.shard, shard):
        if text is not None:
            index, count = parse_shard(text)
            frame = frame.with_row_index("_pos").filter(pl.col("_pos") % count == index).drop("_pos")
    return frame


def image_roots(raw: RawDataset, cfg: DatasetConfig) -> ImageRoots:
    """Where the dataset's image paths may point (see :mod:`vision_eval.images.roots`)."""
    return ImageRoots.for_dataset(raw.root, cfg.image_roots, local=raw.local, confined=raw.confined)


def canonicalize(
    raw: RawDataset,
    cfg: DatasetConfig,
    limit: int | None = None,
    shard: str | None = None,
    image_columns: Sequence[str] = (),
) -> pl.DataFrame:
    """The canonical frame for ``raw``: mapped, selected, ids checked, images (and ``image_columns``) referenced."""
    frame = _apply_mapping(raw.frame, cfg.columns)
    if "images" not in frame.columns and "image" in frame.columns and "image" not in cfg.columns.values():
        frame = frame.rename({"image": "images"})
    frame = select_rows(frame, cfg, limit, shard)

    if "id" not in frame.columns:
        frame = frame.with_row_index("id").with_columns(pl.col("id").cast(pl.Utf8))
    else:
        frame = frame.with_columns(_as_text("id", frame))
        frame = frame.with_columns(
            pl.when(pl.col("id").is_null())
            .then(pl.int_range(pl.len()).cast(pl.Utf8))
            .otherwise(pl.col("id"))
            .alias("id")
        )
    if frame["id"].n_unique() != frame.height:  # cheap check first; find the culprits only when needed
        duplicated = frame.filter(pl.col("id").is_duplicated())["id"].unique().head(5).to_list()
        raise DatasetError(f"dataset ids must be unique; repeated: {', '.join(map(str, duplicated))}")

    frame = frame.with_columns([_as_text(c, frame) for c in TEXT_COLUMNS if c in frame.columns])
    if "images" in frame.columns and frame.schema["images"] != IMAGES_DTYPE:
        frame = frame.with_columns(images_series(frame["images"], image_roots(raw, cfg), allow_urls=cfg.allow_urls))
    for column in image_columns:  # other image columns an evaluator reads hold references the same way
        if column in frame.columns and frame.schema[column] != IMAGES_DTYPE:
            refs = images_series(frame[column], image_roots(raw, cfg), allow_urls=cfg.allow_urls)
            frame = frame.with_columns(refs.alias(column))
    if ROW_ERROR not in frame.columns:
        frame = frame.with_columns(pl.lit(None, dtype=pl.Utf8).alias(ROW_ERROR))
    ordered = [c for c in CANONICAL if c in frame.columns]
    return frame.select([*ordered, *[c for c in frame.columns if c not in ordered]])


def check_columns(frame: pl.DataFrame, needed: dict[str, tuple[str, ...]], cfg: DatasetConfig) -> None:
    """Raise ``ConfigError`` when a column an evaluator (or the dataset config) requires is absent."""
    for column in cfg.required_columns:
        if column not in frame.columns:
            raise ConfigError("dataset.required_columns", f"column {column!r} is not in the dataset")
    for evaluator, columns in needed.items():
        for column in columns:
            if column not in frame.columns:
                raise ConfigError(
                    f"evaluators.{evaluator}",
                    f"needs dataset column {column!r}, which the dataset does not have "
                    f"(columns: {', '.join(c for c in frame.columns if not c.startswith('_'))}); "
                    "map one with dataset.columns",
                )


def samples_frame(frame: pl.DataFrame) -> pl.DataFrame:
    """The evaluated rows as written to samples.parquet: image paths and hashes, never bytes."""
    out = frame
    for column in [c for c, dtype in frame.schema.items() if dtype == IMAGES_DTYPE]:
        out = out.with_columns(
            pl.col(column).list.eval(
                pl.struct(
                    pl.element().struct.field("path"),
                    pl.element().struct.field("sha256"),
                    pl.element().struct.field("source"),
                    pl.element().struct.field("error"),
                )
            )
        )
    drop = [c for c, dtype in out.schema.items() if dtype == pl.Object]
    return out.drop(drop).rename({ROW_ERROR: "row_error"}, strict=False)


def describe(frame: pl.DataFrame) -> dict[str, Any]:
    """Counts for run.json."""
    images = int(frame["images"].list.len().sum()) if "images" in frame.columns else 0
    return {"rows": frame.height, "images": images, "columns": [c for c in frame.columns if not c.startswith("_")]}
