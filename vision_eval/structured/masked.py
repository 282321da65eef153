"""String tests on the rows they concern.

Polars runs a string function on every value of a column, the values under nulls included: a test on
``pl.when(mask).then(text)`` costs as much as on the whole column. :func:`only` hands the function empty strings
instead, so it costs next to nothing on the rows outside the mask.
"""

from __future__ import annotations

import polars as pl


def only(mask: pl.Expr, text: pl.Expr) -> pl.Expr:
    """``text`` where ``mask`` holds, an empty string elsewhere (a null mask counts as false)."""
    return pl.when(mask).then(text).otherwise(pl.lit(""))


def containing(text: pl.Expr, chars: list[str]) -> pl.Expr | None:
    """Whether ``text`` holds every one of ``chars`` (``None`` for no chars: no test)."""
    if not chars:
        return None
    return pl.all_horizontal([text.str.contains(c, literal=True) for c in chars])
