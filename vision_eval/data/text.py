"""Text that is not valid Unicode, found at load: each such row becomes a row error naming the column and
where the row came from; the bad characters are replaced by U+FFFD so the frame (and samples.parquet) can
hold the row.

Two ways text goes bad: a lone surrogate (a ``\\ud800`` escape in JSON, or a Python ``str`` handed to
``evaluate``) and bytes that are not UTF-8 (raw ``\\xff`` in a JSONL, JSON or CSV file). Undecodable bytes
are decoded with ``surrogateescape``, so both end up as lone surrogates and one check finds them. Clean data
pays nothing: the checks run only after Polars refused the rows (or a CSV's strict UTF-8 read failed).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import polars as pl

_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def invalid_text_reason(column: str, where: str | None) -> str:
    """The row error of a row whose ``column`` held invalid text."""
    place = f"{where}: " if where else ""
    return (
        f"{place}column {column!r} is not valid text (bytes that are not UTF-8, or a lone surrogate; "
        "shown as U+FFFD in samples)"
    )


def _has_surrogate(text: str) -> bool:
    return not text.isascii() and _SURROGATE.search(text) is not None


def _clean(value: Any) -> tuple[Any, bool]:
    """``value`` with lone surrogates replaced (in strings, lists and dicts), and whether any was."""
    if isinstance(value, str):
        if _has_surrogate(value):
            return _SURROGATE.sub(REPLACEMENT, value), True
        return value, False
    if isinstance(value, list | tuple):
        cleaned = [_clean(v) for v in value]
        if any(bad for _, bad in cleaned):
            return [v for v, _ in cleaned], True
        return value, False
    if isinstance(value, dict):
        items = [(_clean(k), _clean(v)) for k, v in value.items()]
        if any(kb or vb for (_, kb), (_, vb) in items):
            return {k: v for (k, _), (v, _) in items}, True
        return value, False
    return value, False


def invalid_column(row: dict[str, Any]) -> str | None:
    """The first key of ``row`` whose value (or name) holds a lone surrogate, or ``None``."""
    return next((str(k) for k, v in row.items() if _clean(v)[1] or (isinstance(k, str) and _clean(k)[1])), None)


def sanitize_rows(rows: list[dict[str, Any]], where: Callable[[int], str] | None, error_key: str) -> int:
    """Replace lone surrogates in ``rows`` (in place) and set ``error_key`` on each row that had one, naming the
    first such column and ``where(i)`` (the row's place in its source). Returns the number of rows changed."""
    changed = 0
    for index, row in enumerate(rows):
        bad_columns = []
        for key in list(row):
            value, bad = _clean(row[key])
            name, bad_name = _clean(key) if isinstance(key, str) else (key, False)
            if bad_name:
                del row[key]
            if bad or bad_name:
                row[name] = value
                bad_columns.append(name)
        if bad_columns:
            changed += 1
            if not row.get(error_key):
                row[error_key] = invalid_text_reason(bad_columns[0], where(index) if where else f"row {index + 1}")
    return changed


def mark_replaced(frame: pl.DataFrame, where: Callable[[pl.Expr], pl.Expr], error_key: str) -> pl.DataFrame:
    """Row errors for the rows of a frame read with lossy UTF-8 decoding: a text cell holding U+FFFD names its
    column; ``where`` turns the 1-based row number into the row's place in its source."""
    texts = [c for c, dtype in frame.schema.items() if dtype == pl.Utf8 and c != error_key]
    if not texts:
        return frame
    number = pl.int_range(1, pl.len() + 1)
    reason: Any = pl
    for column in texts:
        before, after = invalid_text_reason(column, "\x00").split("\x00")
        message = pl.concat_str(pl.lit(before), where(number), pl.lit(after))
        reason = reason.when(pl.col(column).str.contains(REPLACEMENT, literal=True)).then(message)
    reason = reason.otherwise(pl.lit(None, pl.Utf8))
    if error_key in frame.columns:
        reason = pl.coalesce(pl.col(error_key), reason)
    return frame.with_columns(reason.alias(error_key))
