"""Which rows of a batch reach an evaluator, and the finished rows of the others.

A row is held back, without reaching the evaluator, when the candidate failed on it (``skipped``), the
evaluator's ``where`` filter does not select it (``skipped``; the filter sees the dataset's own columns), the
dataset marked it bad, or a value or image the evaluator needs is missing or unusable (``error`` with the
reason). Held-back rows are built cheaply: a reason shared by many rows is one literal, and putting every row
back in batch order gathers only the columns that hold values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import polars as pl

from vision_eval.columns import check_mapped, column_map, needed, view
from vision_eval.data import ROW_ERROR, check_columns
from vision_eval.errors import ConfigError
from vision_eval.evaluator import Evaluator
from vision_eval.images.refs import image_error_expr
from vision_eval.results import ERROR, NOT_SELECTED, RESULT_ROW_SCHEMA, SKIPPED, conform, to_json


def where_expr(evaluator: Evaluator) -> pl.Expr | None:
    where = evaluator.settings.where
    return pl.sql_expr(where) if where else None


_DATA_IN_MESSAGE = re.compile(r" for \d+ out of \d+ values|: \[|\n")
"""Where a Polars error message starts quoting the data's values (a row's text is never shown)."""


def filter_failed(evaluator: Evaluator, exc: Exception, sources: Any = None) -> ConfigError:
    """The config error of a ``where`` filter Polars cannot compute: its message up to the values it would quote."""
    message = _DATA_IN_MESSAGE.split(str(exc), maxsplit=1)[0].strip()
    key = f"evaluators.{evaluator.name}.where"
    return ConfigError(key, f"invalid filter: {message}", sources.file_for(key) if sources else None)


def check_stack(frame: pl.DataFrame, evaluators: list[Evaluator], dataset_cfg: Any, sources: Any = None) -> None:
    """Fail before any work when a column is missing or a ``where`` filter is invalid: the filter is computed on
    ``frame`` (the first batch), so a cast or comparison that fails on the values fails here too."""
    check_mapped(frame, evaluators, sources)
    check_columns(frame, {e.name: needed(e) for e in evaluators}, dataset_cfg)
    for evaluator in evaluators:
        if not evaluator.settings.where:
            continue
        try:
            frame.filter(pl.sql_expr(evaluator.settings.where))
        except Exception as exc:  # Polars raises several kinds for a bad predicate
            raise filter_failed(evaluator, exc, sources) from None


@dataclass
class Check:
    """A reason a row must not reach the evaluator: its condition, the status it gives, and the reason (a shared
    text, or an expression when it differs per row)."""

    condition: pl.Expr
    status: str
    reason: str | pl.Expr


WHERE = "_where"
"""Column holding the ``where`` filter's verdict, computed on the dataset's own columns (before the mapping)."""


def checks_of(evaluator: Evaluator, batch: pl.DataFrame) -> list[Check]:
    """The checks of a batch as the evaluator reads it (after its ``columns`` mapping, with ``_where``)."""
    checks = []
    if "candidate_error" in batch.columns:
        failed = pl.format("candidate generation failed: {}", pl.col("candidate_error"))
        checks.append(Check(pl.col("candidate_error").is_not_null(), SKIPPED, failed))
    if WHERE in batch.columns:
        reason = f"{NOT_SELECTED}: {evaluator.settings.where}"
        checks.append(Check(~pl.col(WHERE), SKIPPED, reason))
    if ROW_ERROR in batch.columns:
        checks.append(Check(pl.col(ROW_ERROR).is_not_null(), ERROR, pl.col(ROW_ERROR)))
    mapped = column_map(evaluator)
    nullable = set(evaluator.nullable_columns())
    for column in evaluator.columns_needed():
        if column in nullable:
            continue
        named = f"{', '.join(mapped[column])} (read as {column})" if column in mapped else column
        if column == "images":
            checks.append(Check(pl.col("images").list.len().fill_null(0) == 0, ERROR, f"row has no {named}"))
            checks.append(Check(image_error_expr().is_not_null(), ERROR, image_error_expr()))
        else:
            checks.append(Check(pl.col(column).is_null(), ERROR, f"{named} is missing"))
    return checks


def precheck(batch: pl.DataFrame, checks: list[Check]) -> pl.DataFrame:
    """``batch`` with ``_pre``: the index of the first check a row fails (null for rows the evaluator gets)."""
    code: Any = pl
    for index, check in enumerate(checks):
        code = code.when(check.condition).then(pl.lit(index, pl.UInt8))
    return batch.with_columns((code.otherwise(None) if checks else pl.lit(None, pl.UInt8)).alias("_pre"))


def held_rows_results(held: pl.DataFrame, checks: list[Check]) -> pl.DataFrame:
    """The finished rows of the held-back rows. A shared reason is one literal (cheap however many rows a ``where``
    filter skips); only per-row reasons are built row by row."""
    code = pl.col("_pre")
    status = code.replace_strict({i: c.status for i, c in enumerate(checks)}, return_dtype=pl.Utf8)
    error: Any = pl
    details: Any = pl
    for index, check in enumerate(checks):
        if check.status == ERROR:
            reason = pl.lit(check.reason) if isinstance(check.reason, str) else check.reason
            error = error.when(code == index).then(reason)
        elif isinstance(check.reason, str):
            details = details.when(code == index).then(pl.lit(to_json({"reason": check.reason})))
        else:
            details = details.when(code == index).then(pl.struct(check.reason.alias("reason")).struct.json_encode())
    rows = held.select(
        pl.col("id").alias("sample_id"),
        status.alias("status"),
        (error.otherwise(None) if error is not pl else pl.lit(None, pl.Utf8)).cast(pl.Utf8).alias("error"),
        (details.otherwise(None) if details is not pl else pl.lit(None, pl.Utf8)).alias("details"),
    )
    return conform(rows, RESULT_ROW_SCHEMA)


def split(evaluator: Evaluator, batch: pl.DataFrame) -> tuple[pl.DataFrame, pl.Series, pl.DataFrame]:
    """Rows for the evaluator (as it reads them: its ``columns`` mapping applied), their positions in the batch,
    and the finished rows of the others."""
    where = where_expr(evaluator)
    if where is not None:  # the filter sees the dataset's own columns, not the evaluator's mapping
        try:
            batch = batch.with_columns(where.fill_null(False).alias(WHERE))
        except pl.exceptions.PolarsError as exc:  # a value of a later batch the filter cannot read
            raise filter_failed(evaluator, exc) from None
    batch = view(evaluator, batch)
    checks = checks_of(evaluator, batch)
    checked = precheck(batch, checks).with_row_index("_pos")
    held = checked["_pre"].is_not_null()
    ready = checked.filter(~held).drop("_pre", WHERE, strict=False)
    reasons = [c for c in ("candidate_error", ROW_ERROR, "images") if c in checked.columns]
    held_rows = checked.select("id", "_pre", "_pos", *reasons).filter(held)
    pre = held_rows_results(held_rows, checks).with_columns(held_rows["_pos"])
    return ready.drop("_pos"), ready["_pos"], pre


def in_batch_order(batch: pl.DataFrame, parts: pl.DataFrame) -> pl.DataFrame:
    """``parts`` (rows with ``_pos``) in batch order. Only columns that hold values are gathered: ``sample_id``
    is the batch's own ``id`` and an all-null column stays a null column (skipped rows are cheap)."""
    order = parts["_pos"].arg_sort()
    columns = []
    for name in parts.columns:
        if name == "_pos":
            continue
        column = parts[name]
        if name == "sample_id":
            columns.append(batch["id"].cast(pl.Utf8).alias("sample_id"))
        elif column.null_count() == column.len():
            columns.append(pl.repeat(None, column.len(), dtype=column.dtype, eager=True).alias(name))
        else:
            columns.append(column.gather(order))
    return pl.DataFrame(columns)
