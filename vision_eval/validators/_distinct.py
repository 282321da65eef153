"""Distinct values of a string column and each value's index among them (work once per distinct value)."""

from __future__ import annotations

import numpy as np
import polars as pl


def codes(values: pl.Series) -> tuple[pl.Series, np.ndarray]:
    """The distinct values (no null) and the index of each value among them (null: -1).

    A cast to an Enum of the distinct values is the fastest way when they are few; with many, its cost
    grows faster than a hash join's.
    """
    distinct = values.drop_nulls().unique()
    if len(distinct) * 8 <= len(values):
        code = values.cast(pl.Enum(distinct)).to_physical()
    else:
        index = distinct.to_frame("v").with_row_index("i")
        code = values.to_frame("v").join(index, on="v", how="left", maintain_order="left")["i"]
    return distinct, code.cast(pl.Int64).fill_null(-1).to_numpy()
