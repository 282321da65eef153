"""Strings concatenated from pieces of a small pool, without one string operation per row or per piece."""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa


def concatenated(pool: pl.Series, pieces: np.ndarray, bounds: np.ndarray) -> pl.Series:
    """Row ``r`` is the concatenation of ``pool[pieces[bounds[r]:bounds[r + 1]]]`` (``pool`` holds no null).

    The gathered pieces form one Arrow string array whose bytes are already in row order, so the rows are
    those bytes cut at other offsets.
    """
    rows = len(bounds) - 1
    if not len(pieces):
        return pl.repeat("", rows, dtype=pl.Utf8, eager=True)
    # Polars' gather and export: pyarrow's take allocates from mimalloc, which slows down badly while earlier
    # batches' results are held.
    gathered = pool.gather(pieces).to_arrow()
    if isinstance(gathered, pa.ChunkedArray):
        gathered = gathered.combine_chunks()
    if gathered.type != pa.large_string():
        gathered = gathered.cast(pa.large_string())
    start = gathered.offset
    offsets = np.frombuffer(gathered.buffers()[1], dtype=np.int64)[start : start + len(gathered) + 1]
    cut = pa.py_buffer(np.ascontiguousarray(offsets[bounds]))
    return pl.Series(pa.LargeStringArray.from_buffers(rows, cut, gathered.buffers()[2]))
