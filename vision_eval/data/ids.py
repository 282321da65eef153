"""Repeated ids are refused before anything is evaluated, without holding the ids in memory: a pre-pass reads the
id column alone (chunk by chunk, with the selection the run applies), keeps one 64-bit hash per id, and only when
two hashes are equal reads the ids again to confirm on the real values (a hash collision is not a repeat). For a
large dataset the hashes take 8 bytes per kept row (160 MB at 20M rows), in one array sorted in place."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import polars as pl

from vision_eval.data.canonical import Selection, canonical_ids
from vision_eval.data.sources import Source
from vision_eval.errors import DatasetError

SHOWN = 5
"""Repeated ids named in the error."""
IN_PLACE_ROWS = 1_000_000
"""From this many kept ids on, their hashes are sorted in place in one numpy array."""


def _selected_ids(
    source: Source, column: str, size: int, selection: Callable[[], Selection], generated: set[str] | None = None
) -> Iterator[pl.Series]:
    """The canonical ids of the kept rows, chunk by chunk (reading stops once no later row can be kept);
    ``generated`` (when given) collects the ids made for rows without one."""
    chosen = selection()
    for values in source.column_chunks(column, size, chosen.start):
        keep = chosen.take(values.len())
        if keep.len():
            kept = values if keep.len() == values.len() else values.gather(keep)
            ids = canonical_ids(kept, chosen.rank - keep.len())
            if generated is not None and kept.null_count():
                generated.update(ids.filter(kept.is_null()).to_list())
            yield ids
        if chosen.done:
            break


def _repeated_hashes(source: Source, column: str, size: int, selection: Callable[[], Selection]) -> pl.Series:
    """The hashes that more than one kept id has (one 64-bit hash per id, sorted). From ``IN_PLACE_ROWS`` ids on,
    the hashes go into one numpy array sized from the row count and sorted in place (8 bytes per row, never a second
    copy, returned to the system once freed); below, Polars sorts them (numpy is not imported for a small run)."""
    expected = selection().total
    if expected < IN_PLACE_ROWS:
        parts = [ids.hash() for ids in _selected_ids(source, column, size, selection)]
        if not parts:
            return pl.Series(dtype=pl.UInt64)
        hashes = pl.concat(parts).sort()
        return hashes.filter(hashes == hashes.shift(1)).unique()
    import numpy as np

    array = np.empty(expected, dtype=np.uint64)
    filled = 0
    for ids in _selected_ids(source, column, size, selection):
        values = ids.hash().to_numpy()
        if filled + values.size > array.size:  # more rows than counted: grow (never happens for a stable source)
            array = np.concatenate([array[:filled], np.empty(filled + values.size, dtype=np.uint64)])
        array[filled : filled + values.size] = values
        filled += values.size
    array = array[:filled]
    array.sort()
    return pl.Series(np.unique(array[1:][array[1:] == array[:-1]]), dtype=pl.UInt64)


def check_unique_ids(source: Source, column: str, size: int, selection: Callable[[], Selection]) -> None:
    """Raise ``DatasetError`` naming the first repeated ids (in dataset order) when two kept rows share an id.
    ``column``: the source column read as ``id``; ``selection`` makes the run's row selection afresh."""
    known = source.columns()
    if known is not None and column not in known:
        return  # every id is generated: positions, distinct by construction
    suspects = _repeated_hashes(source, column, size, selection)
    if suspects.is_empty():
        return
    wanted = suspects.implode()
    seen: set[str] = set()
    repeated: dict[str, None] = {}
    generated: set[str] = set()
    for ids in _selected_ids(source, column, size, selection, generated):
        for value in ids.filter(ids.hash().is_in(wanted)).to_list():
            if value in seen:
                repeated[value] = None
            seen.add(value)
    if repeated:
        shown = ", ".join(list(repeated)[:SHOWN])
        more = f" (and {len(repeated) - SHOWN} more)" if len(repeated) > SHOWN else ""
        made = [value for value in list(repeated)[:SHOWN] if value in generated]
        why = (
            f"; a row with no {column} gets its position as its id, which another row has as its own "
            f"({', '.join(made)}): give every row an id, or none"
            if made
            else ""
        )
        raise DatasetError(f"dataset ids must be unique; repeated: {shown}{more}{why}")
