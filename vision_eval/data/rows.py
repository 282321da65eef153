"""Rows given as Python dicts (JSON lines, a JSON list, a list of dicts, a pandas frame that Polars cannot read)
turned into a Polars frame, with the rules every dict source shares: objects become JSON text (so that a missing
key and a null stay distinct), a column mixing text with other scalars becomes text, bytes mixed with other
values stay Python objects, and a row whose text is not valid Unicode gets a row error (``_row_error``) naming
the column and where the row came from (:mod:`vision_eval.data.text`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import polars as pl

from vision_eval.data.text import sanitize_rows

ROW_ERROR = "_row_error"
"""Column holding, for a row that could not be read as it is, the reason (null for good rows)."""


def _is_image_struct(value: Any) -> bool:
    return isinstance(value, dict) and bool(value) and set(value) <= {"bytes", "path"}


def _cell(value: Any) -> Any:
    """Objects become JSON text, so that a missing key and a null stay distinct."""
    if isinstance(value, dict) and not _is_image_struct(value):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list) and any(isinstance(v, dict) and not _is_image_struct(v) for v in value):
        return json.dumps(value, ensure_ascii=False)
    return value


def from_dicts(rows: list[dict[str, Any]], where: Callable[[int], str] | None = None) -> pl.DataFrame:
    """A frame from dicts: objects kept as JSON text; a column of mixed scalar types becomes text. A row with
    invalid text (a lone surrogate) becomes a row error naming the column and ``where(i)``, its place in the
    source (default: ``row i``)."""
    if not rows:
        return pl.DataFrame()
    rows = [{k: _cell(v) for k, v in row.items()} for row in rows]
    columns: dict[str, None] = {}
    for row in rows:
        columns.update(dict.fromkeys(row))
    mixed_bytes = []
    for column in columns:
        kinds = {type(row.get(column)) for row in rows if row.get(column) is not None}
        if (len(kinds) > 1 and kinds & {bytes, bytearray, memoryview}) or (
            list in kinds and _mixes_bytes(rows, column)
        ):
            mixed_bytes.append(column)
        elif len(kinds) > 1 and not kinds <= {int, float, bool} and str in kinds:
            for row in rows:
                value = row.get(column)
                if value is not None and not isinstance(value, str):
                    row[column] = json.dumps(value) if isinstance(value, list) else str(value)
    if mixed_bytes:  # Polars would read the text as bytes (or the bytes as text): keep both as Python values
        plain = from_dicts([{k: v for k, v in row.items() if k not in mixed_bytes} for row in rows], where)
        objects = [pl.Series(c, [row.get(c) for row in rows], dtype=pl.Object) for c in mixed_bytes]
        return plain.with_columns(objects) if plain.width else pl.DataFrame(objects)
    typed = _plain_frame(rows, list(columns)) if len(rows) >= ARROW_ROWS else None
    if typed is not None:
        return typed
    try:
        return pl.DataFrame(rows, infer_schema_length=None)
    except (TypeError, ValueError, pl.exceptions.PolarsError):
        pass
    # Only now (clean data never gets here) look for invalid text; then values Polars cannot type (e.g. PIL
    # images) stay Python objects.
    if sanitize_rows(rows, where, ROW_ERROR):
        columns = {}
        for row in rows:
            columns.update(dict.fromkeys(row))
        try:
            return pl.DataFrame(rows, infer_schema_length=None)
        except (TypeError, ValueError, pl.exceptions.PolarsError):
            pass
    return pl.DataFrame({c: pl.Series(c, [r.get(c) for r in rows], dtype=pl.Object) for c in columns})


ARROW_ROWS = 10_000
"""From this many rows, plain columns are built through Arrow; fewer are quick to build either way, and a small run
(a few rows from Python, a judge run) does not import pyarrow and numpy for them (~0.15 s)."""
PLAIN_TYPES = (pl.Utf8(), pl.Int64(), pl.Float64(), pl.Boolean(), pl.Null(), pl.List(pl.Utf8()), pl.List(pl.Null()))
"""Column types that Arrow builds from Python values exactly as Polars does from the same dicts."""


def _plain_frame(rows: list[dict[str, Any]], columns: list[str]) -> pl.DataFrame | None:
    """The frame ``pl.DataFrame(rows)`` gives, built column by column through Arrow (Polars builds a list cell,
    such as an ``images`` list of paths, one Series at a time: 8x slower); ``None`` when a column is of any other
    type, or Arrow refuses its values (mixed kinds, invalid text...): the caller then builds it as before."""
    import pyarrow as pa

    try:
        arrays = [pa.array([row.get(column) for row in rows]) for column in columns]
        frame = pl.from_arrow(pa.table(arrays, names=columns))
    except (pa.ArrowException, TypeError, ValueError, OverflowError, UnicodeError):
        return None
    if not isinstance(frame, pl.DataFrame) or any(dtype not in PLAIN_TYPES for dtype in frame.dtypes):
        return None
    return frame


def _mixes_bytes(rows: list[dict[str, Any]], column: str) -> bool:
    """True when the column holds bytes in some rows (or list items) and other values in others."""
    binary = other = False
    for row in rows:
        value = row.get(column)
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, bytes | bytearray | memoryview):
                binary = True
            elif item is not None:
                other = True
        if binary and other:
            return True
    return False
