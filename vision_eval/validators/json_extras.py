"""``extra_keys`` for the columnar json_validator path: the keys of the response's objects that the expected
objects lack, in the order ``json_check._Compare`` lists them.

Only rows with more colons than expected keys present can have any (see :mod:`json_columns`); for those, DuckDB's
``json_keys`` lists every compared object's keys in text order. ``json.loads`` keeps a repeated key once (at its
first place, with its last value): repeated extra keys are listed once, a repeated expected key (whose value DuckDB
and ``json.loads`` read differently) sends the row to the row-wise path, as do keys msgspec would escape
differently and keys ending in ``]`` (which the row-wise path takes for extra array items).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import polars as pl

from vision_eval import duck
from vision_eval.validators.json_tree import Node, encode, pointer_step

Slot = tuple[Node | None, int, Node]
"""``(None, 0, object)`` outside arrays, ``(array, i, object)`` inside item ``i``."""


def _objects(node: Node, array: Node | None = None, i: int = 0) -> Iterator[Slot]:
    """Object nodes in the order their extra keys are listed: after everything below them."""
    if node.kind == "object":
        for child in node.children:
            yield from _objects(child, array, i)
        yield (array, i, node)
    elif node.kind == "array" and array is None:
        for k, item in enumerate(node.children):
            yield from _objects(item, node, k)


def extra_keys(
    texts: pl.Series, tree: Node, best: dict[int, np.ndarray], present: dict[str, pl.Series], arrays: list[str]
) -> tuple[pl.Series, pl.Series]:
    """Per row of ``texts``: the extra_keys entries (JSON, comma-separated; null for none) and whether the row must
    go to the row-wise path. ``best[id(array)][:, i]``: the response item expected item ``i`` was compared with;
    ``present``: top-level keys the columnar path found by their fields (the row is left to the row-wise path when
    the response has one of them but none of its fields); ``arrays``: pointers of arrays found by their items'
    fields (the row is left to the row-wise path when one is an object with keys like ``"0"``)."""
    slots = list(_objects(tree))
    pointers: dict[str, str] = {}
    for array, _, node in slots:
        for j in range(len(array.children)) if array is not None else [0]:
            ptr = array.ptr + pointer_step(j) + node.ptr if array is not None else node.ptr
            pointers.setdefault(ptr, f"k{len(pointers)}")
    for ptr in arrays:
        pointers.setdefault(ptr, f"k{len(pointers)}")
    if not pointers:
        return pl.repeat(None, texts.len(), dtype=pl.Utf8, eager=True), pl.repeat(False, texts.len(), eager=True)
    listed = "[" + ", ".join("'" + p.replace("'", "''") + "'" for p in pointers) + "]"
    cols = ", ".join(f"x[{k + 1}] AS k{k}" for k in range(len(pointers)))
    with duck.cursor() as con:
        con.register("docs", texts.alias("d").to_frame().to_arrow())
        keys = con.sql(f"SELECT {cols} FROM (SELECT json_keys(d, {listed}) AS x FROM docs)").pl()
    texts_, bad = [], []
    for array, i, node in slots:
        prefix = f"{node.path}." if node.path else ""
        if array is None:
            text, wrong = _extras(pl.col(pointers[node.ptr]), node.keys, prefix)
        else:
            chosen = pl.lit(pl.Series(best[id(array)][:, i]))
            per_item = [
                _extras(pl.col(pointers[array.ptr + pointer_step(j) + node.ptr]), node.keys, prefix)
                for j in range(len(array.children))
            ]
            text = pl.coalesce(pl.when(chosen == j).then(t) for j, (t, _) in enumerate(per_item))
            wrong = pl.coalesce(pl.when(chosen == j).then(w) for j, (_, w) in enumerate(per_item))
        texts_.append(text)
        bad.append(wrong.fill_null(False))
    top = pl.col(pointers[""]) if tree.kind == "object" else None
    bad += [
        (top.list.contains(key) != pl.lit(flags)).fill_null(True) for key, flags in present.items() if top is not None
    ]
    bad += [pl.col(pointers[ptr]).list.len().fill_null(0) > 0 for ptr in arrays]
    out = keys.select(
        pl.concat_str(texts_, separator=",", ignore_nulls=True).alias("extra"), pl.any_horizontal(bad).alias("bad")
    )
    return out["extra"].replace("", None), out["bad"]


def _extras(keys: pl.Expr, want: tuple[str, ...], prefix: str) -> tuple[pl.Expr, pl.Expr]:
    expected = pl.element().is_in(pl.lit(pl.Series(want, dtype=pl.Utf8)).implode())
    present = keys.list.eval(pl.element().filter(expected))
    extra = keys.list.eval(pl.element().filter(~expected)).list.unique(maintain_order=True)
    odd = extra.list.eval(pl.element().str.contains(r"[\x00-\x1f]") | pl.element().str.ends_with("]")).list.any()
    head = '"' + encode(prefix)[1:-1]
    escaped = pl.element().str.replace_all("\\", "\\\\", literal=True).str.replace_all('"', '\\"', literal=True)
    text = extra.list.eval(pl.lit(head) + escaped + pl.lit('"')).list.join(",")
    return pl.when(extra.list.len() > 0).then(text), (present.list.len() != present.list.n_unique()) | odd
