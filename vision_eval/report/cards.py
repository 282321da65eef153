"""The sample cards' JSON, built only for the chosen samples: each result row encoded by Polars, the sample's own
fields (shared by every variant, or per variant where they differ) in Python, per card.

A card: ``{"id", "key"?, input, output, expected, row_error, images, meta (the fields equal in every variant),
"variants"?: {variant: {differing fields}}, "changed"?: [evaluators], "results": [...]}``.
"""

from __future__ import annotations

import json
import math
from typing import Any

import polars as pl

from vision_eval.report.selection import KEY, RANK
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


def _cut(column: str) -> pl.Expr:
    """A text column cut at TEXT_LIMIT characters, saying how much was cut (vectorized ``clean``)."""
    text, length = pl.col(column), pl.col(column).str.len_chars()
    note = pl.lit("\n[... ") + (length - TEXT_LIMIT).cast(pl.Utf8) + pl.lit(" more characters not shown]")
    return pl.when(length > TEXT_LIMIT).then(text.str.slice(0, TEXT_LIMIT) + note).otherwise(text).alias(column)


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


def results_json(
    results: pl.DataFrame, dimensions: pl.DataFrame, fields: pl.DataFrame, compare: bool
) -> dict[str, str]:
    """Per card key, its result rows as JSON objects joined by commas (encoded by Polars, texts cut)."""
    if not results.height:
        return {}
    frame = results.with_columns(_cut(c) for c in ("error", "details") if c in results.columns)
    extra: list[str] = []
    for table, columns, name in ((dimensions, DIMENSION_COLUMNS, "dimensions"), (fields, FIELD_COLUMNS, "fields")):
        if table.height:
            frame = frame.join(_grouped(table, columns, name), on=_RESULT_KEY, how="left", maintain_order="left")
            extra.append(name)
    selected = ([RUN_COLUMN] if compare else []) + _present(frame, RESULT_COLUMNS) + extra
    encoded = frame.select(KEY, pl.struct(selected).struct.json_encode().alias("_json"))
    joined = encoded.group_by(KEY, maintain_order=True).agg(pl.col("_json").str.join(","))
    return dict(joined.iter_rows())


def _sample_view(
    row: dict[str, Any], meta_columns: list[str], thumbs: dict[str, Thumb], display: PathDisplay
) -> dict[str, Any]:
    return {
        "input": _meta_text(row.get("input")),
        "output": _meta_text(row.get("output")),
        "expected": _meta_text(row.get("expected_output")),
        "row_error": clean(row.get("row_error") or row.get("_row_error")),
        "images": image_entries(row.get("images"), thumbs, display),
        "meta": {c: _meta_text(row[c]) for c in meta_columns if row.get(c) is not None},
    }


def _merge_views(views: dict[str, dict[str, Any]]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The fields equal in every variant, and per variant the fields that differ."""
    first = next(iter(views.values()))
    shared: dict[str, Any] = {}
    per: dict[str, dict[str, Any]] = {label: {} for label in views}
    for name in first:
        values = [view[name] for view in views.values()]
        if all(v == values[0] for v in values[1:]):
            shared[name] = values[0]
        else:
            for label, view in views.items():
                per[label][name] = view[name]
    return shared, {label: fields for label, fields in per.items() if fields}


def card_texts(
    keys: pl.DataFrame,
    samples: pl.DataFrame,
    results: dict[str, str],
    changed: dict[str, list[str]],
    thumbs: dict[str, Thumb],
    display: PathDisplay,
    several_datasets: bool,
) -> list[tuple[int, int, str]]:
    """``(rank, order, JSON text)`` of each card in ``keys`` (``_key, _order, _rank``)."""
    meta_columns = [c for c in samples.columns if c not in SAMPLE_TEXT and not c.startswith("_")]
    views: dict[str, dict[str, dict[str, Any]]] = {}
    ids: dict[str, str] = {}
    for row in samples.iter_rows(named=True):
        ids[row[KEY]] = row["sample_id"]
        per_card = views.setdefault(row[KEY], {})
        if row[RUN_COLUMN] not in per_card:  # a duplicated id within one run: its first row
            per_card[row[RUN_COLUMN]] = _sample_view(row, meta_columns, thumbs, display)
    out = []
    for key, order, rank in keys.select(KEY, "_order", RANK).iter_rows():
        head: dict[str, Any] = {"id": key}
        if several_datasets:  # the key is "<dataset number>:<id>"
            head = {"id": ids.get(key, key.split(":", 1)[-1]), "key": key}
        if key in views:
            shared, per = _merge_views(views[key])
            head.update({name: value for name, value in shared.items() if value not in (None, [], {})})
            if per:
                head["variants"] = per
        if key in changed:
            head["changed"] = changed[key]
        text = json.dumps(head, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=str)
        out.append((rank, order, text[:-1] + ',"results":[' + results.get(key, "") + "]}"))
    return out
