"""``field_accuracy`` extraction with msgspec: only the configured paths are decoded, in C, as raw JSON tokens.

A ``msgspec.Struct`` type is built from the field paths (nested Structs for keys, tuples for indexes, leaves typed
``msgspec.Raw`` so the token text is kept: ``"100"`` vs ``100``, ``null`` vs missing). Each document's candidate
JSON object text (fence stripped, first ``{`` to last ``}``, as :func:`fastpath.doc_text`) is decoded against it;
msgspec is at least as strict as ``json.loads`` (it rejects ``NaN``, lone surrogates, ...), and with ``json.loads``
a decoded object is exactly what the reference extracts, so every document msgspec accepts gets the reference's
values. Documents it rejects (not JSON, wrapped oddly, a non-object where an object is expected on a path) are
resolved row by row by :mod:`matching`. Tokens become (kind, text) columns in Polars; only strings with escapes,
non-canonical numbers and objects/arrays are re-read with ``json.loads``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from operator import attrgetter
from typing import Any

import msgspec
import polars as pl

from vision_eval.structured import matching as m
from vision_eval.structured.fastpath import CANONICAL_NUMBER, Side, doc_text, python_value

EMPTY = msgspec.Raw(b"")
"""The token of a missing value (a real JSON value is never empty)."""
_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, TypeError)
_LEAF = object()


@dataclass(frozen=True)
class Plan:
    """The decoder of the configured paths, a blank document and one token getter per path."""

    decode: Callable[[str], Any]
    blank: Any
    getters: tuple[Callable[[Any], Any], ...]


def _tree(paths: tuple[tuple[str | int, ...], ...]) -> dict[Any, Any]:
    root: dict[Any, Any] = {}
    for steps in paths:
        node = root
        for step in steps:
            node = node.setdefault(step, {})
        node[_LEAF] = True
    return root


def _typed(node: dict[Any, Any], names: dict[int, int]) -> tuple[Any, Any]:
    """Type and default of a tree node. A node that is both a leaf and a parent, or has keys and indexes, is Raw:
    its children are then resolved in Python from the token."""
    children = [k for k in node if k is not _LEAF]
    if not children or _LEAF in node or len({type(k) for k in children}) > 1:
        return msgspec.Raw, EMPTY
    if isinstance(children[0], int):
        item, _ = _typed(_merge([node[k] for k in children]), names)
        return tuple[item, ...], ()  # type: ignore[valid-type]
    fields, rename = [], {}
    for key in children:
        typ, default = _typed(node[key], names)
        attr = f"k{len(rename)}"
        rename[attr] = key
        fields.append((attr, typ, default))
    names[id(node)] = len(names)
    struct = msgspec.defstruct(f"Doc{names[id(node)]}", fields, rename=rename, gc=False, frozen=True)
    return struct, struct()


def _merge(nodes: list[dict[Any, Any]]) -> dict[Any, Any]:
    """All array items share one item type: the union of what the indexes need."""
    out: dict[Any, Any] = {}
    for node in nodes:
        for key, child in node.items():
            out[key] = True if key is _LEAF else _merge([out.get(key, {}), child])
    return out


def _getter(root: dict[Any, Any], steps: tuple[str | int, ...]) -> Callable[[Any], Any]:
    """The token (``msgspec.Raw`` or bytes) at ``steps`` of a decoded document."""
    node, ops = root, []
    for n, step in enumerate(steps):
        typed = [k for k in node if k is not _LEAF]
        if _LEAF in node or len({type(k) for k in typed}) > 1:
            return _from_raw(_getter(root, steps[:n]), steps[n:])
        if isinstance(step, int):
            ops.append(step)
            node = _merge([node[k] for k in typed])
        else:
            ops.append(f"k{sorted_keys(node).index(step)}")
            node = node[step]
    if not ops:
        return _identity
    if all(isinstance(op, str) for op in ops):
        return attrgetter(".".join(ops))  # type: ignore[arg-type]

    def get(doc: Any) -> Any:
        for op in ops:
            if isinstance(op, int):
                if op >= len(doc):
                    return EMPTY
                doc = doc[op]
            else:
                doc = getattr(doc, op)
        return doc

    return get


def _identity(doc: Any) -> Any:
    return doc


def sorted_keys(node: dict[Any, Any]) -> list[Any]:
    """Children of a node in the order :func:`_typed` numbers them."""
    return [k for k in node if k is not _LEAF]


def _from_raw(parent: Callable[[Any], Any], rest: tuple[str | int, ...]) -> Callable[[Any], Any]:
    def get(doc: Any) -> Any:
        raw = parent(doc)
        if not len(raw):
            return EMPTY
        value = m.resolve(json.loads(bytes(raw)), rest)
        return EMPTY if value is m.MISSING else json.dumps(value, ensure_ascii=False).encode()

    return get


@lru_cache(maxsize=64)
def plan(paths: tuple[tuple[str | int, ...], ...]) -> Plan:
    """The msgspec decoder and getters for these parsed paths."""
    root = _tree(paths)
    typ, blank = _typed(root, {})
    return Plan(msgspec.json.Decoder(typ).decode, blank, tuple(_getter(root, p) for p in paths))


def decode_all(texts: list[str | None], p: Plan) -> tuple[list[Any], list[int]]:
    """Decoded documents (``p.blank`` where decoding failed) and the indexes that failed."""
    docs: list[Any] = []
    failed: list[int] = []
    it = iter(texts)
    while True:
        try:
            docs.extend(map(p.decode, it))  # extend keeps what was decoded before an error
            return docs, failed
        except _ERRORS:
            failed.append(len(docs))
            docs.append(p.blank)


KIND_BY_FIRST = {"": "missing", '"': "string", "t": "bool", "f": "bool", "n": "null", "{": "object", "[": "array"}


def token_frame(tokens: bytes) -> pl.DataFrame:
    """Kind and text per token (``\\x00``-separated); ``py`` marks tokens only ``json.loads`` can read exactly."""
    tok = pl.col("tok")
    # Tokens are valid JSON: the first character tells the kind (t/f/n can only start true, false, null).
    kind = tok.str.head(1).replace_strict(KIND_BY_FIRST, default="number", return_dtype=pl.Utf8)
    k = pl.col("kind")
    py = (
        ((k == "string") & tok.str.contains("\\", literal=True))
        | k.is_in(["object", "array"])
        | ((k == "number") & ~tok.str.contains(CANONICAL_NUMBER))
    )
    text = pl.when(k == "string").then(tok.str.slice(1).str.head(-1)).when(k.is_in(["number", "bool"])).then(tok)
    frame = pl.DataFrame({"tok": pl.Series([tokens], dtype=pl.Binary).cast(pl.Utf8).str.split("\x00").explode()})
    return frame.with_columns(kind.alias("kind")).with_columns(text.alias("text"), py.alias("py"))


def extract_side(batch: pl.DataFrame, column: str, specs: list[m.FieldSpec]) -> tuple[pl.Series, list[Side]]:
    """Per row whether ``column`` holds JSON (a JSON object for ``expected_output``), and per field its values."""
    paths = tuple(m.parse_path(spec.path) for spec in specs)
    p = plan(paths)
    # A JSON object text with no fence is its own candidate (first "{" to last "}"), so the raw texts are decoded
    # first; doc_text runs only on the rows that failed (fenced, wrapped in prose, not JSON).
    fenced = pl.col(column).str.contains("```", literal=True)
    texts = batch.select(pl.when(~fenced).then(pl.col(column))).to_series().to_list()
    docs, failed = decode_all(texts, p)
    if failed:
        index = pl.Series(failed, dtype=pl.UInt32)
        again, still = decode_all(batch[index].select(doc_text(column)).to_series().to_list(), p)
        for row, doc in zip(failed, again):
            docs[row] = doc
        failed = [failed[i] for i in still]
    n = len(docs)
    originals = batch[column].gather(failed).to_list() if failed else []
    parsed = [m.extract_json(t) for t in originals]
    good_rows = [good if column == "output" else good and isinstance(value, dict) for good, value in parsed]
    ok = pl.repeat(True, n, dtype=pl.Boolean, eager=True).alias("ok")
    if failed:
        ok = ok.scatter(pl.Series(failed, dtype=pl.UInt32), pl.Series(good_rows, dtype=pl.Boolean))
    frame = token_frame(b"\x00".join([b"\x00".join(map(get, docs)) for get in p.getters]))
    del docs
    kinds, values = frame["kind"], frame["text"]
    redo = frame["py"].arg_true()
    if redo.len():
        pairs = [python_value(json.loads(t)) for t in frame["tok"].gather(redo).to_list()]
        kinds = kinds.scatter(redo, pl.Series([k for k, _ in pairs], dtype=pl.Utf8))
        values = values.scatter(redo, pl.Series([t for _, t in pairs], dtype=pl.Utf8))
    sides = []
    for i, steps in enumerate(paths):
        kind, text = kinds.slice(i * n, n), values.slice(i * n, n)
        if failed:
            index = pl.Series(failed, dtype=pl.UInt32)
            pairs = [python_value(m.resolve(v, steps)) if good else ("missing", None) for good, v in parsed]
            kind = kind.clone().scatter(index, pl.Series([k for k, _ in pairs], dtype=pl.Utf8))
            text = text.clone().scatter(index, pl.Series([t for _, t in pairs], dtype=pl.Utf8))
        sides.append(Side(kind, text))
    return ok, sides
