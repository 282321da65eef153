"""The shape of an expected JSON document, as :mod:`json_columns` compares whole groups of rows against it.

Rows whose ``expected_output`` has the same shape (same keys in the same order, same array lengths, scalars at the
same places; the scalar values may differ) are compared with the same JSON pointers. :func:`shape_regex` matches
exactly the texts of one shape (JSON grammar but for the escapes inside strings, which DuckDB checks when it reads
the rows; keys spelt as in the representative), so a whole column is sorted into shapes by one regex pass per shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

_REGEX_META = set("\\.+*?()|[]{}^$#&-~")
_WS = r"[ \t\n\r]*"
_STRING = r'"(?:[^"\\\x00-\x1f]|\\.)*"'
# At most two exponent digits: 1e400 is infinity for json.loads but refused by msgspec, a different result text.
_NUMBER = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]{1,2})?"
_SCALAR = f"(?:{_STRING}|{_NUMBER}|true|false|null)"


@dataclass(eq=False)
class Node:
    """One value of the expected document (compared by identity)."""

    kind: str
    """``object``, ``array`` or ``scalar``."""
    ptr: str
    """JSON pointer from the document root, or from the array item the node belongs to (``""``: the item itself)."""
    path: str
    """The path :class:`json_check._Compare` reports (``a.b``, ``items[0].name``; ``""`` for the root)."""
    keys: tuple[str, ...] = ()
    children: list[Node] = field(default_factory=list)
    """Object: one node per key; array: one per item."""
    leaves: int = 1
    """Fields counted when the node is missing (``json_check._leaves``)."""
    scalars: int = 1
    """Fields counted when the node is compared without a structural difference (empty containers count none)."""
    key_count: int = 0
    """Object keys in the subtree."""

    def walk(self) -> list[Node]:
        """The node and its descendants, depth first in key order, without entering array items."""
        out = [self]
        if self.kind == "object":
            for child in self.children:
                out += child.walk()
        return out

    def item_nodes(self) -> list[Node]:
        """The node and its descendants, array items included (for a node inside an item: the whole item)."""
        out = [self]
        for child in self.children:
            out += child.item_nodes()
        return out


def encode(value: Any) -> str:
    """``value`` as msgspec prints JSON (compact; how :func:`json_check.json_rows` writes details)."""
    import msgspec

    return msgspec.json.encode(value).decode()


def pointer_step(key: str | int) -> str:
    return "/" + str(key).replace("~", "~0").replace("/", "~1")


def build(value: Any, ptr: str = "", path: str = "", in_item: bool = False) -> Node | None:
    """The node of ``value``; ``None`` when an array sits inside an array item (the greedy matching of nested arrays
    stays with the row-wise comparison)."""
    if isinstance(value, dict):
        children = []
        for key, sub in value.items():
            child = build(sub, ptr + pointer_step(key), f"{path}.{key}" if path else key, in_item)
            if child is None:
                return None
            children.append(child)
        return Node(
            "object",
            ptr,
            path,
            tuple(value),
            children,
            leaves=sum(c.leaves for c in children) or 1,
            scalars=sum(c.scalars for c in children),
            key_count=len(children) + sum(c.key_count for c in children),
        )
    if isinstance(value, list):
        if in_item:
            return None
        items = []
        for i, sub in enumerate(value):
            item = build(sub, "", f"{path}[{i}]", True)
            if item is None:
                return None
            items.append(item)
        return Node(
            "array",
            ptr,
            path,
            (),
            items,
            leaves=sum(c.leaves for c in items) or 1,
            scalars=sum(c.scalars for c in items),
            key_count=sum(c.key_count for c in items),
        )
    return Node("scalar", ptr, path)


def _literal(text: str) -> str:
    return "".join("\\" + c if c in _REGEX_META else c for c in text)


def shape_regex(value: Any) -> str:
    """A regex matching exactly the JSON texts with the shape of ``value`` (any scalar where it has a scalar)."""
    return f"^{_WS}{_shape(value)}{_WS}$"


def _shape(value: Any) -> str:
    sep = f"{_WS},{_WS}"
    if isinstance(value, dict):
        members = [f"{_literal(encode(k))}{_WS}:{_WS}{_shape(v)}" for k, v in value.items()]
        return rf"\{{{_WS}{sep.join(members)}{_WS}\}}"
    if isinstance(value, list):
        return rf"\[{_WS}{sep.join(_shape(v) for v in value)}{_WS}\]"
    return _SCALAR


MAX_DEPTH = 64
"""JSON nested deeper than this is not read (a plain row error): deeper documents would exhaust Python's recursion
in parsing, comparison or JSON Schema validation, differently from run to run."""
_QUOTED = r'"(?:[^"\\]|\\.)*"'


def nesting_depth(text: str) -> int:
    """How deeply ``text`` (JSON) nests arrays and objects (brackets inside strings do not count); a text with at most
    ``MAX_DEPTH`` brackets is not scanned (its depth is at most that, and this returns its bracket count)."""
    openers = text.count("[") + text.count("{")
    if openers <= MAX_DEPTH:
        return openers
    import re

    import numpy as np

    brackets = re.sub(r"[^\[\]{}]", "", re.sub(_QUOTED, "", text)).encode()
    steps = np.where(np.isin(np.frombuffer(brackets, dtype=np.uint8), (ord("["), ord("{"))), 1, -1)
    return int(np.cumsum(steps).max(initial=0))


def too_deep(texts: pl.Series, openers: pl.Series | None = None) -> pl.Series:
    """Per text: nested deeper than ``MAX_DEPTH`` (or unbalanced), by the same reading as :func:`nesting_depth`;
    only texts with more brackets (``openers``: their count of ``[`` and ``{``, when known) than that are looked at,
    by removing innermost pairs ``MAX_DEPTH`` times."""
    if openers is None:
        openers = texts.str.count_matches(r"[\[{]")
    suspect = (openers > MAX_DEPTH).fill_null(False)
    deep = pl.repeat(False, len(texts), dtype=pl.Boolean, eager=True)
    rows = suspect.arg_true()
    if not len(rows):
        return deep
    brackets = texts.gather(rows).str.replace_all(_QUOTED, "").str.replace_all(r"[^\[\]{}]", "")
    for _ in range(MAX_DEPTH):
        left = brackets != ""
        if not left.any():
            break
        rows, brackets = rows.filter(left), brackets.filter(left).str.replace_all(r"\[\]|\{\}", "")
    return deep.scatter(rows.filter(brackets != ""), True) if len(rows) else deep
