"""What a validator's row-wise definition returns, how details are written, and how rows are handed over to it.

Each validator has one readable definition scoring one row (``count_row``, ``ocr_row``, ``chart_row``,
``json_check.check_one``) and a column-wise path that scores whole frames the same way. The column-wise path decides
only the rows it reads exactly as the definition does and hands the others to it (:func:`scored_in_parts`);
``tests/test_equivalence.py`` checks the two against each other on generated inputs.

A validator's details are declared once, as a dataclass with a docstring per field: the definition writes one with
:func:`details_text`, the column-wise path writes the same text from named columns with :func:`details_column`.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from vision_eval.rowwise import RowResult

RESULT_SCHEMA = {"status": pl.Utf8, "score": pl.Float64, "details": pl.Utf8, "error": pl.Utf8}
"""The columns every validator returns, one row per input row."""


def results_frame(results: Sequence[RowResult], passed: bool = False) -> pl.DataFrame:
    """The results as a frame of :data:`RESULT_SCHEMA` (and ``passed`` if asked)."""
    schema = {**RESULT_SCHEMA, "passed": pl.Boolean} if passed else RESULT_SCHEMA
    rows = [{name: getattr(result, name) for name in schema} for result in results]
    return pl.DataFrame(rows, schema=schema, orient="row")


def scored_in_parts(
    frame: pl.DataFrame,
    handed_over: np.ndarray,
    columns: Callable[[pl.DataFrame], pl.DataFrame],
    row: Callable[[dict[str, Any]], RowResult],
) -> pl.DataFrame:
    """The rows of ``frame`` scored by ``columns`` except where ``handed_over``, those by ``row`` (the definition, on
    the row as a dict), in the frame's order."""
    rest = np.flatnonzero(handed_over)
    if not len(rest):
        return columns(frame)
    by_row = results_frame([row(r) for r in frame[rest].iter_rows(named=True)])
    kept = np.flatnonzero(~handed_over)
    if not len(kept):
        return by_row
    parts = [columns(frame[kept]).with_columns(pl.Series("_row", kept)), by_row.with_columns(pl.Series("_row", rest))]
    return pl.concat(parts, how="vertical_relaxed").sort("_row").drop("_row")


def member_names(declared: type) -> list[str]:
    """The fields of a details dataclass, in the order the details JSON lists them."""
    return [f.name for f in dataclasses.fields(declared)]


def details_text(details: Any, compact: bool = True) -> str:
    """The details JSON of one row (a details dataclass), members in declared order. ``compact`` as msgspec
    writes JSON, else as ``json.dumps`` does by default (a space after ``,`` and ``:``)."""
    separators = (",", ":") if compact else (", ", ": ")
    return json.dumps(_members(details), separators=separators, ensure_ascii=False, default=_members)


def _members(details: Any) -> dict[str, Any]:
    return {name: getattr(details, name) for name in member_names(type(details))}


def details_column(declared: type, compact: bool = True, **members: pl.Expr) -> pl.Expr:
    """The details JSON of every row from named columns, each already JSON text: the same text as
    :func:`details_text` writes for the same values."""
    return pl.concat_str(_pieces(declared, compact, members))


def details_halves(declared: type, split_at: str, compact: bool = True, **members: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """:func:`details_column` in two halves, the members before ``split_at`` and the others (to build the first half
    once per distinct value when it depends on fewer columns)."""
    pieces = _pieces(declared, compact, members)
    at = 2 * member_names(declared).index(split_at)
    return pl.concat_str(pieces[:at]), pl.concat_str(pieces[at:])


def _pieces(declared: type, compact: bool, members: dict[str, pl.Expr]) -> list[pl.Expr]:
    names = member_names(declared)
    if sorted(members) != sorted(names):
        raise ValueError(f"{declared.__name__} has members {names}, not {sorted(members)}")
    comma, colon = (",", ":") if compact else (", ", ": ")
    pieces: list[pl.Expr] = []
    for i, name in enumerate(names):
        pieces += [pl.lit(("{" if i == 0 else comma) + json.dumps(name) + colon), members[name]]
    return [*pieces, pl.lit("}")]


def joined(
    texts: pl.Series | Sequence[pl.Series], owner: np.ndarray, n_owners: int, separator: str, lead: str = ""
) -> pl.Series:
    """Per owner ``0..n_owners-1``, its texts joined by ``separator`` and preceded by ``lead`` (``owner``: each
    text's owner, sorted; an owner without texts gets ``""``). Several ``texts`` series are concatenated element-wise.

    The texts, each preceded by the separator (an owner's first by ``lead``), form one Arrow string array whose bytes
    are already in owner order: each owner's text is those bytes cut at the owners' boundaries (faster than a join of
    lists)."""
    bounds = np.zeros(n_owners + 1, dtype=np.int64)
    np.cumsum(np.bincount(owner, minlength=n_owners), out=bounds[1:])
    first = np.zeros(len(owner), dtype=np.uint32)
    first[bounds[:-1][bounds[:-1] < len(owner)]] = 1
    prefix = pl.Series([separator, lead]).gather(first)
    parts = [texts] if isinstance(texts, pl.Series) else texts
    array = pl.select(pl.concat_str(pl.lit(prefix), *map(pl.lit, parts))).to_series().to_arrow()
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    array = array.cast(pa.large_string())
    offsets = np.frombuffer(array.buffers()[1], dtype=np.int64)[array.offset : array.offset + len(array) + 1]
    cut = pa.py_buffer(np.ascontiguousarray(offsets[bounds]))
    return pl.Series(pa.LargeStringArray.from_buffers(n_owners, cut, array.buffers()[2]))


def json_strings(texts: pl.Series) -> pl.Series:
    """Each text as a JSON string (``json.dumps(text, ensure_ascii=False)``; Polars escapes as Python does)."""
    encoded = texts.alias("s").to_frame().select(pl.struct("s").struct.json_encode()).to_series()
    return encoded.str.slice(5).str.head(-1)
