"""Distinct values of a string column and each value's index among them (work once per distinct value), and runs of
equal values."""

from __future__ import annotations

import numpy as np
import polars as pl


def codes(values: pl.Series, *, repeats_ok: bool = False) -> tuple[pl.Series, np.ndarray]:
    """The distinct values (no null) and each value's index among them (null: -1).

    With ``repeats_ok`` (the caller only wants to save work on repeated values) and nearly all values distinct
    anyway, the values themselves are returned, each its own index. A cast to an Enum of the distinct values
    is the fastest way when they are few; with many, its cost grows faster than a hash join's.
    """
    distinct = values.drop_nulls().unique()
    if len(distinct) * 8 <= len(values):
        code = values.cast(pl.Enum(distinct)).to_physical()
    elif repeats_ok and len(distinct) * 5 > len(values) * 4 and not values.null_count():
        return values, np.arange(len(values), dtype=np.int64)
    else:
        index = distinct.to_frame("v").with_row_index("i")
        code = values.to_frame("v").join(index, on="v", how="left", maintain_order="left")["i"]
    return distinct, code.cast(pl.Int64).fill_null(-1).to_numpy()


def run_starts(values: np.ndarray) -> np.ndarray:
    """Whether each position of ``values`` starts a run of equal values."""
    start = np.empty(len(values), dtype=bool)
    start[:1] = True
    np.not_equal(values[1:], values[:-1], out=start[1:])
    return start
