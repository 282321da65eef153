"""Distinct values of a string column and each value's index among them (work once per distinct value)."""

from __future__ import annotations

import numpy as np
import polars as pl


def codes(values: pl.Series) -> tuple[pl.Series, np.ndarray]:
    """The distinct values (no null) and the index of each value among them (null: -1).

    A hash join: much faster than casting to an Enum of many categories.
    """
    distinct = values.drop_nulls().unique()
    index = distinct.to_frame("v").with_row_index("i")
    joined = values.to_frame("v").join(index, on="v", how="left", maintain_order="left")
    return distinct, joined["i"].cast(pl.Int64).fill_null(-1).to_numpy()
