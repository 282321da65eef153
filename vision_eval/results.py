"""The result tables every evaluator produces, and helpers to build them.

An evaluator returns, per batch, a frame with one row per sample (``RESULT_ROW_SCHEMA``),
and optionally per-dimension and per-field frames. The engine adds the columns that
identify the evaluator (``evaluator``, ``type``, ``threshold``) and writes
``RESULT_SCHEMA`` to ``results.parquet``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import polars as pl

PROCESSED = "processed"
ERROR = "error"
SKIPPED = "skipped"
NOT_SELECTED = "row not selected by where"
"""How the reason of a row an evaluator's ``where`` left out begins."""
STATUSES = (PROCESSED, ERROR, SKIPPED)

# What an evaluator returns for each sample of a batch.
RESULT_ROW_SCHEMA: dict[str, pl.DataType] = {
    "sample_id": pl.Utf8(),
    "status": pl.Utf8(),
    "score": pl.Float64(),
    "passed": pl.Boolean(),
    "details": pl.Utf8(),
    "error": pl.Utf8(),
    "input_tokens": pl.Int64(),
    "output_tokens": pl.Int64(),
    "cost_usd": pl.Float64(),
    "latency_s": pl.Float64(),
    "cached": pl.Boolean(),
    "score_std": pl.Float64(),
}

# What results.parquet holds: one row per sample x evaluator (``run_id`` names the run that produced it).
RESULT_SCHEMA: dict[str, pl.DataType] = {
    "run_id": pl.Utf8(),
    "sample_id": pl.Utf8(),
    "evaluator": pl.Utf8(),
    "type": pl.Utf8(),
    **{k: v for k, v in RESULT_ROW_SCHEMA.items() if k != "sample_id"},
    "threshold": pl.Float64(),
}

DIMENSION_ROW_SCHEMA: dict[str, pl.DataType] = {
    "sample_id": pl.Utf8(),
    "dimension": pl.Utf8(),
    "score": pl.Float64(),
    "weight": pl.Float64(),
}
DIMENSION_SCHEMA: dict[str, pl.DataType] = {
    "run_id": pl.Utf8(),
    "sample_id": pl.Utf8(),
    "evaluator": pl.Utf8(),
    "dimension": pl.Utf8(),
    "score": pl.Float64(),
    "weight": pl.Float64(),
}

FIELD_ROW_SCHEMA: dict[str, pl.DataType] = {
    "sample_id": pl.Utf8(),
    "path": pl.Utf8(),
    "match": pl.Utf8(),
    "expected": pl.Utf8(),
    "actual": pl.Utf8(),
    "score": pl.Float64(),
    "hit": pl.Boolean(),
    "reason": pl.Utf8(),
}
FIELD_SCHEMA: dict[str, pl.DataType] = {
    "run_id": pl.Utf8(),
    "sample_id": pl.Utf8(),
    "evaluator": pl.Utf8(),
    **{k: v for k, v in FIELD_ROW_SCHEMA.items() if k != "sample_id"},
}


def empty(schema: Mapping[str, pl.DataType]) -> pl.DataFrame:
    """An empty frame with the given schema."""
    return pl.DataFrame(schema=dict(schema))


def conform(frame: pl.DataFrame, schema: Mapping[str, pl.DataType]) -> pl.DataFrame:
    """Select and cast ``frame`` to ``schema``, adding missing columns as nulls."""
    exprs = []
    for name, dtype in schema.items():
        if name in frame.columns:
            exprs.append(pl.col(name).cast(dtype, strict=False))
        else:
            exprs.append(pl.lit(None, dtype=dtype).alias(name))
    return frame.select(exprs)


def to_json(value: Any) -> str:
    """JSON text for a details value; anything not JSON-native becomes its string form."""
    return json.dumps(value, ensure_ascii=False, default=str, sort_keys=False)


def rows_frame(rows: Iterable[Mapping[str, Any]]) -> pl.DataFrame:
    """Build a result-row frame from dicts (``details`` may be a dict; it is encoded)."""
    prepared = []
    for row in rows:
        row = dict(row)
        details = row.get("details")
        if details is not None and not isinstance(details, str):
            row["details"] = to_json(details)
        prepared.append(row)
    if not prepared:
        return empty(RESULT_ROW_SCHEMA)
    frame = pl.DataFrame(prepared, infer_schema_length=None)
    return conform(frame, RESULT_ROW_SCHEMA)


def status_rows(
    sample_ids: Iterable[str] | pl.Series,
    status: str,
    reason: str,
    details: Mapping[str, Any] | None = None,
) -> pl.DataFrame:
    """Rows with the same non-processed status and reason for every sample given."""
    ids = pl.Series("sample_id", list(sample_ids), dtype=pl.Utf8)
    frame = pl.DataFrame({"sample_id": ids}).with_columns(
        pl.lit(status).alias("status"),
        pl.lit(reason).alias("error" if status == ERROR else "details_reason"),
    )
    if status == ERROR:
        payload = dict(details or {})
        frame = frame.with_columns(pl.lit(to_json(payload) if payload else None, dtype=pl.Utf8).alias("details"))
    else:
        payload = {"reason": reason, **(details or {})}
        frame = frame.with_columns(pl.lit(to_json(payload)).alias("details"))
    return conform(frame, RESULT_ROW_SCHEMA)


def error_rows(sample_ids: Iterable[str] | pl.Series, reason: str, **details: Any) -> pl.DataFrame:
    """``error`` rows with ``reason`` for every sample given."""
    return status_rows(sample_ids, ERROR, reason, details or None)


def skipped_rows(sample_ids: Iterable[str] | pl.Series, reason: str, **details: Any) -> pl.DataFrame:
    """``skipped`` rows whose details say why (``details.reason``)."""
    return status_rows(sample_ids, SKIPPED, reason, details or None)


def passed_expr(score: pl.Expr, threshold: float | None) -> pl.Expr:
    """``passed`` from a score column: score >= threshold (or score == 1 with no threshold)."""
    if threshold is None:
        return score >= 1.0
    return score >= threshold
