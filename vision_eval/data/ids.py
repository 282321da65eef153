"""Repeated ids are refused before anything is evaluated, without holding the ids in memory: a pre-pass reads the
id column alone (chunk by chunk, with the selection the run applies), keeps one 64-bit hash per id, and only when
two hashes are equal reads the ids again to confirm on the real values (a hash collision is not a repeat). The
hashes take 8 bytes per kept row (160 MB at 20M rows), in one array sorted in place."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import polars as pl

from vision_eval.data.canonical import Selection, canonical_ids
from vision_eval.data.sources import Source
from vision_eval.errors import DatasetError

SHOWN = 5
"""Repeated ids named in the error."""


def _selected_ids(source: Source, column: str, size: int, selection: Callable[[], Selection]) -> Iterator[pl.Series]:
    """The canonical ids of the kept rows, chunk by chunk (reading stops once no later row can be kept)."""
    chosen = selection()
    for values in source.column_chunks(column, size):
        keep = chosen.take(values.len())
        if keep.len():
            kept = values if keep.len() == values.len() else values.gather(keep)
            yield canonical_ids(kept, chosen.kept - keep.len())
        if chosen.done:
            break


def _sorted_hashes(source: Source, column: str, size: int, selection: Callable[[], Selection]) -> np.ndarray:
    """One 64-bit hash per kept id, sorted: filled into one array sized from the row count and sorted in place (8
    bytes per row, never a second copy; numpy returns the memory to the system once it is freed)."""
    hashes = np.empty(selection().expected(source.count()), dtype=np.uint64)
    filled = 0
    for ids in _selected_ids(source, column, size, selection):
        values = ids.hash().to_numpy()
        if filled + values.size > hashes.size:  # more rows than counted: grow (never happens for a stable source)
            hashes = np.concatenate([hashes[:filled], np.empty(filled + values.size, dtype=np.uint64)])
        hashes[filled : filled + values.size] = values
        filled += values.size
    hashes = hashes[:filled]
    hashes.sort()
    return hashes


def check_unique_ids(source: Source, column: str, size: int, selection: Callable[[], Selection]) -> None:
    """Raise ``DatasetError`` naming the first repeated ids (in dataset order) when two kept rows share an id.
    ``column``: the source column read as ``id``; ``selection`` makes the run's row selection afresh."""
    known = source.columns()
    if known is not None and column not in known:
        return  # every id is generated: positions, distinct by construction
    hashes = _sorted_hashes(source, column, size, selection)
    suspects = np.unique(hashes[1:][hashes[1:] == hashes[:-1]])
    del hashes
    if not suspects.size:
        return
    wanted = pl.Series(suspects, dtype=pl.UInt64).implode()
    seen: set[str] = set()
    repeated: dict[str, None] = {}
    for ids in _selected_ids(source, column, size, selection):
        for value in ids.filter(ids.hash().is_in(wanted)).to_list():
            if value in seen:
                repeated[value] = None
            seen.add(value)
    if repeated:
        shown = ", ".join(list(repeated)[:SHOWN])
        more = f" (and {len(repeated) - SHOWN} more)" if len(repeated) > SHOWN else ""
        raise DatasetError(f"dataset ids must be unique; repeated: {shown}{more}")
