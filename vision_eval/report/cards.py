"""The sample cards' JSON, built only for the chosen samples and encoded by Polars, not per card in Python: each
result row, and the sample's own fields (shared by every variant, or per variant where they differ). Python sees
only the distinct image references and cells that are neither text nor integers.

A card: ``{"id", "key"?, input, output, expected, row_error, images, meta (the fields equal in every variant),
"variants"?: {variant: {differing fields}}, "changed"?: [evaluators], "results": [...]}``.
"""

from __future__ import annotations

import json
import math
from typing import Any

import polars as pl

from vision_eval.report.selection import KEY, ORDER, RANK
from vision_eval.report.sources import RUN_COLUMN
from vision_eval.report.thumbs import PathDisplay, Thumb, image_entries

TEXT_LIMIT = 100_000
"""Longest text kept per cell (longer ones are cut, saying how much was cut)."""
RESULT_COLUMNS = (
    "evaluator",
    "type",
    "status",
    "score",
    "passed",
    "threshold",
    "error",
    "details",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "latency_s",
    "cached",
    "score_std",
)
DIMENSION_COLUMNS = ("dimension", "score", "weight")
FIELD_COLUMNS = ("path", "match", "expected", "actual", "score", "hit", "reason")
SAMPLE_TEXT = ("id", "sample_id", "input", "output", "expected_output", "images", "row_error", "_row_error", RUN_COLUMN)
_RESULT_KEY = [RUN_COLUMN, "sample_id", "evaluator"]
# Bytes a result, dimension or field row adds to the JSON besides its texts (keys, numbers, punctuation).
_RESULT_OVERHEAD, _DIMENSION_OVERHEAD, _FIELD_OVERHEAD, _SAMPLE_OVERHEAD = 260, 50, 100, 120


def clean(value: Any) -> Any:
    """JSON-safe values: non-finite floats become null, long texts are cut, anything else becomes text."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        if len(value) > TEXT_LIMIT:
            return value[:TEXT_LIMIT] + f"\n[... {len(value) - TEXT_LIMIT} more characters not shown]"
        return value
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean(v) for v in value]
    return str(value)


def _meta_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return str(clean(value))
    return str(clean(json.dumps(value, ensure_ascii=False, default=str)))


def _cut_text(text: pl.Expr) -> pl.Expr:
    """Texts cut at TEXT_LIMIT characters, saying how much was cut (vectorized ``clean``)."""
    length = text.str.len_chars()
    note = pl.lit("\n[... ") + (length - TEXT_LIMIT).cast(pl.Utf8) + pl.lit(" more characters not shown]")
    return pl.when(length > TEXT_LIMIT).then(text.str.slice(0, TEXT_LIMIT) + note).otherwise(text)


def _cut(column: str) -> pl.Expr:
    """A text column cut as :func:`_cut_text`."""
    return _cut_text(pl.col(column)).alias(column)


def _texts_bytes(frame: pl.DataFrame, columns: list[str]) -> pl.Expr:
    """Bytes of the text columns of a row (cut as on the page; a JSON-escaped quote or newline counts twice)."""
    texts = [c for c in columns if c in frame.columns and frame.schema[c] == pl.Utf8]
    parts = [pl.col(c).str.len_bytes().fill_null(0).clip(upper_bound=4 * TEXT_LIMIT) for c in texts]
    return pl.sum_horizontal(parts) * 1.15 if parts else pl.lit(0.0)


def estimate_sizes(
    samples: pl.DataFrame, results: pl.DataFrame, dimensions: pl.DataFrame, fields: pl.DataFrame
) -> pl.DataFrame:
    """Estimated JSON bytes of each card (``_key, _bytes``), from the lengths of its texts (vectorized)."""
    parts = []
    for frame, overhead in (
        (samples, _SAMPLE_OVERHEAD),
        (results, _RESULT_OVERHEAD),
        (dimensions, _DIMENSION_OVERHEAD),
        (fields, _FIELD_OVERHEAD),
    ):
        if frame.height:
            texts = [c for c in frame.columns if c not in (KEY, "sample_id", RUN_COLUMN)]
            size = _texts_bytes(frame, texts) + overhead
            if "images" in frame.columns:
                size = size + pl.col("images").list.len().fill_null(0) * 120
            parts.append(frame.select(KEY, size.alias("_bytes")))
    if not parts:
        return pl.DataFrame(schema={KEY: pl.Utf8, "_bytes": pl.Float64})
    return pl.concat(parts, how="vertical_relaxed").group_by(KEY).agg(pl.col("_bytes").sum())


def _present(frame: pl.DataFrame, columns: tuple[str, ...]) -> list[str]:
    """The columns that hold something in some row (all-null ones would only add ``null``s to every row)."""
    kept = []
    for column in columns:
        if column not in frame.columns or frame[column].null_count() == frame.height:
            continue
        if frame.schema[column] == pl.Boolean and column == "cached" and not frame[column].any():
            continue
        kept.append(column)
    return kept


def _grouped(frame: pl.DataFrame, columns: tuple[str, ...], name: str) -> pl.DataFrame:
    texts = [_cut(c) for c in columns if frame.schema.get(c) == pl.Utf8]
    kept = _present(frame, columns)
    return frame.with_columns(texts).group_by(_RESULT_KEY, maintain_order=True).agg(pl.struct(kept).alias(name))


def results_json(results: pl.DataFrame, dimensions: pl.DataFrame, fields: pl.DataFrame, compare: bool) -> pl.DataFrame:
    """``_key, _json``: per card key, its result rows as JSON objects joined by commas (encoded by Polars, texts
    cut)."""
    if not results.height:
        return pl.DataFrame(schema={KEY: pl.Utf8, "_json": pl.Utf8})
    frame = results.with_columns(_cut(c) for c in ("error", "details") if c in results.columns)
    extra: list[str] = []
    for table, columns, name in ((dimensions, DIMENSION_COLUMNS, "dimensions"), (fields, FIELD_COLUMNS, "fields")):
        if table.height:
            frame = frame.join(_grouped(table, columns, name), on=_RESULT_KEY, how="left", maintain_order="left")
            extra.append(name)
    selected = ([RUN_COLUMN] if compare else []) + _present(frame, RESULT_COLUMNS) + extra
    encoded = frame.select(KEY, pl.struct(selected).struct.json_encode().alias("_json"))
    return encoded.group_by(KEY, maintain_order=True).agg(pl.col("_json").str.join(","))


def json_value(value: pl.Expr) -> pl.Expr:
    """Each value of an expression as JSON text (encoded by Polars; null stays null, not ``"null"``)."""
    encoded = pl.struct(value.alias("v")).struct.json_encode().str.strip_prefix('{"v":').str.strip_suffix("}")
    return pl.when(value.is_not_null()).then(encoded)


def _as_texts(frame: pl.DataFrame, columns: list[str]) -> tuple[pl.DataFrame, dict[str, pl.Expr]]:
    """:func:`_meta_text` of each column: texts cut and integers or booleans as JSON prints them (vectorized), other
    values through ``json.dumps`` (in Python, only the chosen samples' cells)."""
    texts: dict[str, pl.Expr] = {}
    made: list[pl.Series] = []
    for column in columns:
        dtype = frame.schema.get(column)
        if dtype is None or dtype == pl.Null:
            texts[column] = pl.lit(None, pl.Utf8)
        elif dtype == pl.Utf8:
            texts[column] = _cut_text(pl.col(column))
        elif dtype.is_integer() or dtype == pl.Boolean:
            texts[column] = pl.col(column).cast(pl.Utf8)
        else:
            made.append(pl.Series(column, [_meta_text(v) for v in frame[column].to_list()], dtype=pl.Utf8))
            texts[column] = pl.col(column)
    return (frame.with_columns(made) if made else frame), texts


def _images_json(frame: pl.DataFrame, thumbs: dict[str, Thumb], display: PathDisplay) -> pl.Expr:
    """Each row's image entries (:func:`image_entries`) as a JSON array: made once per distinct reference."""
    if "images" not in frame.columns or not isinstance(frame.schema["images"], pl.List):
        return pl.lit("[]")
    ref_key = pl.element().struct.json_encode()
    refs = frame.select(pl.col("images").list.eval(pl.struct(ref_key.alias("k"), pl.element().alias("r"))))
    distinct = refs["images"].explode().drop_nulls().unique(maintain_order=True)
    entries: dict[str, str | None] = {}
    for item in distinct.to_list():
        entry = image_entries([item["r"]], thumbs, display)
        entries[item["k"]] = json.dumps(entry[0], ensure_ascii=False, default=str) if entry else None
    if not entries:
        return pl.lit("[]")
    texts = pl.col("images").list.eval(ref_key.replace_strict(entries, default=None, return_dtype=pl.Utf8))
    return "[" + texts.list.join(",").fill_null("") + "]"


def _views(samples: pl.DataFrame, thumbs: dict[str, Thumb], display: PathDisplay) -> pl.DataFrame:
    """Per sample row (its first row per card and variant), each field a card shows as JSON text (null: none)."""
    meta_columns = [c for c in samples.columns if c not in SAMPLE_TEXT and not c.startswith("_")]
    present = [c for c in ("input", "output", "expected_output", *meta_columns) if c in samples.columns]
    samples = samples.unique([KEY, RUN_COLUMN], keep="first", maintain_order=True)
    samples, texts = _as_texts(samples, present)

    def text(column: str) -> pl.Expr:
        return json_value(texts[column]) if column in texts else pl.lit(None, pl.Utf8)

    def raw(column: str) -> pl.Expr:
        return pl.col(column).cast(pl.Utf8) if column in samples.columns else pl.lit(None, pl.Utf8)

    row_error = pl.when(raw("row_error").is_not_null() & (raw("row_error") != "")).then(raw("row_error"))
    meta = [
        pl.when(pl.col(c).is_not_null()).then(json.dumps(c, ensure_ascii=False) + ":" + text(c)) for c in meta_columns
    ]
    return samples.select(
        KEY,
        pl.col(RUN_COLUMN).fill_null(""),
        pl.col("sample_id").cast(pl.Utf8),
        text("input").alias("input"),
        text("output").alias("output"),
        text("expected_output").alias("expected"),
        json_value(_cut_text(row_error.otherwise(raw("_row_error")))).alias("row_error"),
        _images_json(samples, thumbs, display).alias("images"),
        ("{" + pl.concat_str(meta, separator=",", ignore_nulls=True) + "}" if meta else pl.lit("{}")).alias("meta"),
    )


_FIELDS = ("input", "output", "expected", "row_error", "images", "meta")


def _fields(fields: list[pl.Expr]) -> pl.Expr:
    return pl.concat_str(fields, separator=",", ignore_nulls=True)


def card_texts(
    keys: pl.DataFrame,
    samples: pl.DataFrame,
    results: pl.DataFrame,
    changed: pl.DataFrame,
    thumbs: dict[str, Thumb],
    display: PathDisplay,
) -> pl.DataFrame:
    """``_rank, _order, _json``: the JSON text of each card in ``keys`` (``_key, _order, _rank``), built by Polars.

    ``results``: ``_key, _json`` (:func:`results_json`); ``changed``: ``_key, changed``. A field equal in every
    variant is the card's own (left out when empty), the others go under ``variants`` for every variant."""
    views = _views(samples, thumbs, display)
    differs = {name: pl.col(f"_n_{name}") > 1 for name in _FIELDS}
    cards = views.group_by(KEY, maintain_order=True).agg(
        pl.col("sample_id").first(),
        *(pl.col(name).n_unique().alias(f"_n_{name}") for name in _FIELDS),
        *(pl.col(name).first() for name in _FIELDS),
    )
    with_flags = views.join(cards.select(KEY, "^_n_.*$"), on=KEY, how="left", maintain_order="left")
    per_variant = with_flags.select(
        KEY,
        (
            json_value(pl.col(RUN_COLUMN))
            + ":{"
            + _fields([pl.when(differs[n]).then(f'"{n}":' + pl.col(n).fill_null("null")) for n in _FIELDS])
            + "}"
        ).alias("_variant"),
    )
    variants = per_variant.group_by(KEY, maintain_order=True).agg(pl.col("_variant").str.join(","))
    shown = [
        pl.when((pl.col(f"_n_{n}") == 1) & pl.col(n).is_not_null() & ~pl.col(n).is_in(["[]", "{}"])).then(
            f'"{n}":' + pl.col(n)
        )
        for n in _FIELDS
    ]
    any_differs = pl.any_horizontal(differs.values())
    variants_json = pl.when(any_differs).then('"variants":{' + pl.col("_variant") + "}")
    parts = cards.join(variants, on=KEY, maintain_order="left").select(
        KEY, "sample_id", _fields([*shown, variants_json]).alias("_own")
    )
    key = pl.col(KEY)
    # the key is the id, or "<content number>:<id>" for an id whose content differs between variants
    sample_id = pl.col("sample_id").fill_null(key)
    head = (
        '"id":'
        + json_value(sample_id)
        + pl.when(key != sample_id).then(',"key":' + json_value(key)).otherwise(pl.lit(""))
    )
    own = pl.when(pl.col("_own") != "").then(pl.col("_own"))
    card = "{" + _fields([head, own, '"changed":' + json_value(pl.col("changed"))])
    card = card + ',"results":[' + pl.col("_json").fill_null("") + "]}"
    return (
        keys.select(KEY, ORDER, RANK)
        .join(parts, on=KEY, how="left", maintain_order="left")
        .join(changed.select(KEY, "changed"), on=KEY, how="left", maintain_order="left")
        .join(results, on=KEY, how="left", maintain_order="left")
        .select(RANK, ORDER, card.alias("_json"))
    )
