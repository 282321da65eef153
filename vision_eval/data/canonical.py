"""Turn raw rows into the canonical rows every evaluator reads, one chunk at a time.

Canonical columns: ``id`` (text, unique), ``input``, ``output``, ``expected_output`` (text;
objects become JSON text), ``images`` (list of image references) and any metadata columns.
``_row_error`` (null or a reason) marks rows that could not be read.

Which rows are kept depends only on their positions (:class:`Selection`), so a chunk is canonicalized
without seeing the others and the result is the same whatever the chunk size: ``sample`` (a seeded random
subset, kept in dataset order), then ``limit``, then ``dataset.shard`` and ``run.shard`` (``i/n``: the i-th of n
consecutive parts of what is left). A generated id is the row's rank among the rows selected before any shard, so
the shards of a run together have the ids the whole run has.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from vision_eval.config import DatasetConfig, parse_shard, shard_range
from vision_eval.data.rows import ROW_ERROR
from vision_eval.errors import ConfigError
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


def id_source(cfg: DatasetConfig) -> str:
    """The source column that becomes ``id``: the one ``dataset.columns`` maps to it, else ``id``."""
    return next((src for src, dst in cfg.columns.items() if dst == "id"), "id")


def check_mapping(columns: Sequence[str], mapping: dict[str, str]) -> None:
    """Raise ``ConfigError`` when ``dataset.columns`` names a source column the dataset does not have."""
    missing = [src for src in mapping if src not in columns]
    if missing:
        raise ConfigError(
            f"dataset.columns.{missing[0]}",
            f"source column {missing[0]!r} not in the dataset; it has: {', '.join(columns)}",
        )


def _apply_mapping(frame: pl.DataFrame, mapping: dict[str, str]) -> pl.DataFrame:
    """Rename the source columns; one a chunk lacks (a JSON key its rows never have) is a column of nulls."""
    absent = [src for src in mapping if src not in frame.columns]
    if absent:
        frame = frame.with_columns(pl.lit(None).alias(src) for src in absent)
    renamed = {src: dst for src, dst in mapping.items() if src != dst}
    clashes = [dst for src, dst in renamed.items() if dst in frame.columns and dst not in renamed]
    frame = frame.drop(clashes)
    frame = frame.rename(renamed)
    if "images" not in frame.columns and "image" in frame.columns and "image" not in mapping.values():
        frame = frame.rename({"image": "images"})
    return frame


def gather_images(frame: pl.DataFrame, columns: Sequence[str]) -> pl.DataFrame:
    """``images`` as the list of the cells of ``columns`` that hold an image, in order; the columns are dropped
    (a column the source lacks holds no image)."""
    present = [c for c in columns if c in frame.columns and frame.schema[c] != pl.Null]
    if not present:
        return frame.drop([c for c in columns if c in frame.columns]).with_columns(
            pl.lit([], pl.List(pl.Utf8)).alias("images")
        )
    gathered = pl.concat_list([pl.col(c) for c in present]).list.drop_nulls().alias("images")
    return frame.with_columns(gathered).drop([c for c in columns if c in frame.columns])


def draw_sample(cfg: DatasetConfig, rows: int) -> pl.Series | None:
    """The source positions ``sample`` keeps of ``rows``: a seeded random subset, in dataset order (``None``
    without a sample, or with one as large as the dataset). Drawn once per dataset (a second of 20M rows): every
    :class:`Selection` of it is handed these."""
    if cfg.sample is None or cfg.sample >= rows:
        return None
    return pl.int_range(0, rows, dtype=pl.Int64, eager=True).sample(n=cfg.sample, seed=cfg.seed).sort()


class Selection:
    """Which source rows are kept, decided from their positions alone (``sample``, ``limit``, shards).

    ``sample`` (the positions :func:`draw_sample` drew for ``cfg`` and ``rows``) and ``limit`` choose the selected
    rows; each shard (``dataset.shard``, then ``run.shard``) keeps a consecutive part of them
    (:func:`~vision_eval.config.shard_range`), so reading can start at the shard's first row (:attr:`start`) and
    stop after its last."""

    def __init__(
        self, cfg: DatasetConfig, rows: int, limit: int | None, shard: str | None, sample: pl.Series | None
    ) -> None:
        limits = [x for x in (cfg.limit, limit) if x is not None]
        selected = sample.len() if sample is not None else rows
        self.selected = min([selected, *limits])
        """Rows the selection keeps before any shard takes its part."""
        first, stop = 0, self.selected
        for text in (cfg.shard, shard):
            if text is not None:
                begin, end = shard_range(stop - first, *parse_shard(text))
                first, stop = first + begin, first + end
        self.first = first
        """The rank, among the :attr:`selected` rows, of the first row kept (a generated id is a row's rank)."""
        self.total = stop - first
        """Rows kept."""
        self.positions = sample.slice(first, self.total) if sample is not None else None
        """The source positions of the rows kept, when a sample chose them (else they are consecutive)."""
        if self.positions is None:
            self.start, self.stop = first, stop
        elif self.total:
            self.start, self.stop = int(self.positions[0]), int(self.positions[-1]) + 1
        else:
            self.start = self.stop = 0
        self._position = self.start
        self.kept = 0
        """Rows kept so far."""

    @property
    def rank(self) -> int:
        """The rank (among the selected rows) of the next row kept: the next generated id."""
        return self.first + self.kept

    @property
    def done(self) -> bool:
        """True when no later row can be kept (reading can stop)."""
        return self._position >= self.stop

    def take(self, height: int) -> pl.Series:
        """The positions, within the next ``height`` source rows, of the rows kept (advancing past them); the
        first call is for the rows from :attr:`start` on."""
        start, self._position = self._position, self._position + height
        if self.positions is not None:
            lo = self.positions.search_sorted(start, side="left")
            hi = self.positions.search_sorted(start + height, side="left")
            keep = self.positions.slice(lo, hi - lo) - start
        else:
            lo, hi = max(start, self.start) - start, min(start + height, self.stop) - start
            keep = pl.int_range(lo, max(lo, hi), dtype=pl.Int64, eager=True)
        self.kept += keep.len()
        return keep


def canonical_ids(values: pl.Series, first: int) -> pl.Series:
    """The ``id`` column of kept rows: the source's values as text, a missing one the row's position among the
    kept rows (``first`` is the position of the first)."""
    frame = pl.DataFrame({"id": values})
    generated = pl.int_range(first, first + values.len(), dtype=pl.Int64).cast(pl.Utf8)
    return frame.select(pl.coalesce(_as_text("id", frame), generated).alias("id"))["id"]


class Canonicalizer:
    """Raw chunks in, canonical rows out; ``columns`` (the source's, when known) gives every chunk the same
    columns in the same order (a JSON key missing from a chunk's rows is a column of nulls)."""

    def __init__(
        self, cfg: DatasetConfig, roots: ImageRoots, image_columns: Sequence[str] = (), columns: Sequence[str] = ()
    ) -> None:
        self.cfg = cfg
        self.roots = roots
        self.image_columns = list(image_columns)
        self.columns: dict[str, None] = dict.fromkeys(columns)

    def __call__(self, raw: pl.DataFrame, keep: pl.Series, first: int) -> pl.DataFrame:
        """The canonical rows of ``raw`` at positions ``keep``; ``first``: the kept position of the first."""
        self.columns.update(dict.fromkeys(raw.columns))
        missing = [c for c in self.columns if c not in raw.columns]
        if missing:
            raw = raw.with_columns(pl.lit(None).alias(c) for c in missing)
        frame = raw.select(list(self.columns))
        if keep.len() != frame.height:
            frame = frame.select(pl.all().gather(keep))
        frame = _apply_mapping(frame, self.cfg.columns)
        if self.cfg.images_from:
            frame = gather_images(frame, self.cfg.images_from)
        ids = canonical_ids(frame["id"] if "id" in frame.columns else pl.repeat(None, frame.height, eager=True), first)
        frame = frame.with_columns(ids) if "id" in frame.columns else frame.insert_column(0, ids)
        frame = frame.with_columns([_as_text(c, frame) for c in TEXT_COLUMNS if c in frame.columns])
        allow = self.cfg.allow_urls
        for column in ("images", *self.image_columns):  # every image column holds references the same way
            if column in frame.columns and frame.schema[column] != IMAGES_DTYPE:
                refs = images_series(frame[column], self.roots, allow_urls=allow)
                frame = frame.with_columns(refs.alias(column))
        if ROW_ERROR not in frame.columns:
            frame = frame.with_columns(pl.lit(None, dtype=pl.Utf8).alias(ROW_ERROR))
        elif frame.schema[ROW_ERROR] != pl.Utf8:
            frame = frame.with_columns(pl.col(ROW_ERROR).cast(pl.Utf8))
        ordered = [c for c in CANONICAL if c in frame.columns]
        return frame.select([*ordered, *[c for c in frame.columns if c not in ordered]])


def image_roots(source: Any, cfg: DatasetConfig) -> ImageRoots:
    """Where the dataset's image paths may point (see :mod:`vision_eval.images.roots`)."""
    return ImageRoots.for_dataset(source.root, cfg.image_roots, local=source.local, confined=source.confined)


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
