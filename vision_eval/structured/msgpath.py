"""``field_accuracy`` extraction for small batches: msgspec reads each candidate object into a structure typed after
the configured paths, whose leaves are raw JSON tokens (``msgspec.Raw``), the tokens :mod:`duckpath`'s DuckDB query
returns. No query engine starts: DuckDB's start (~0.1 s with its import) costs more than a small batch.

msgspec accepts exactly the JSON ``json.loads`` accepts, except ``NaN``/``Infinity`` and lone surrogates (it refuses
them), and, as ``json.loads``, takes the last of repeated keys: so a row it reads holds the reference's values (no
repeated-key test is needed) and a row it refuses goes to the reference. A value of another type where a path needs
an object (a string, a number, an array) fails validation: that row goes to the reference too. Paths with an index
step (a list index or a numeric key, decided per value), or a path that ends where another goes on, are left to
DuckDB (:func:`supported`).
"""

from __future__ import annotations

from functools import lru_cache
from operator import attrgetter
from typing import Any

import polars as pl

from vision_eval.structured.candidates import Paths

TOKEN_SEPARATOR = b"\x1f"
"""Never inside a raw JSON token (a control character is not JSON outside strings, nor raw inside one)."""


def supported(paths: Paths) -> bool:
    """Whether msgspec can read these paths: keys only, and no path a prefix of another."""
    if any(not isinstance(step, str) for steps in paths for step in steps):
        return False
    return not any(a != b and b[: len(a)] == a for a in paths for b in paths)


@lru_cache(maxsize=64)
def _reader(paths: Paths) -> tuple[Any, list[list[str]]]:
    """A decoder of the structure the paths need, and per path its attribute names (one per step)."""
    import msgspec

    tree: dict[str, Any] = {}
    for steps in paths:
        node = tree
        for step in steps:
            node = node.setdefault(str(step), {})

    def struct(node: dict[str, Any], name: str) -> tuple[Any, dict[str, str]]:
        fields: list[tuple[str, Any, Any]] = []
        attrs: dict[str, str] = {}
        for j, (key, below) in enumerate(node.items()):
            attr = f"f{j}"
            attrs[key] = attr
            if below:
                sub, _ = struct(below, f"{name}_{j}")
                # An absent object reads as an empty one (its leaves empty): a path walk needs no test per step.
                fields.append((attr, sub | None, msgspec.field(default_factory=sub)))
            else:
                fields.append((attr, msgspec.Raw, msgspec.Raw()))
        # gc=False: the structures hold no cycles, and tracking 10^4 of them set off collections of the whole heap.
        struct_type = msgspec.defstruct(name, fields, rename={a: k for k, a in attrs.items()}, gc=False)
        return struct_type, attrs

    root, _ = struct(tree, "Doc")
    chains = []
    for steps in paths:
        node, chain = tree, []
        for step in steps:
            chain.append(f"f{list(node).index(str(step))}")
            node = node[str(step)]
        chains.append(chain)
    return msgspec.json.Decoder(root), chains


def prepare(paths: Paths) -> None:
    """Build (and cache) the reader of these paths (importing msgspec)."""
    _reader(paths)


def tokens(
    texts: pl.DataFrame, trusted: dict[str, pl.Series], lenient: dict[str, pl.Series], paths: Paths
) -> pl.DataFrame:
    """What :func:`duckpath._duckdb_tokens` returns, read by msgspec: per text column ``c``: ``c_ok`` (a ``trusted``
    text msgspec read), ``c_no`` (a ``lenient`` text decided not to be JSON, see :func:`_not_json`) and ``c_t{i}``,
    the token of path ``i`` (null where the path does not resolve or the text was not read): its raw text, but a
    string written with escapes is written as DuckDB writes it (escaped only where JSON requires it)."""
    decoder, chains = _reader(paths)
    # Every column's texts in one reading: one split of the tokens, one pass over their escapes.
    read, pieces = _read(pl.concat([texts[c].filter(trusted[c]) for c in texts.columns]), decoder, chains)
    out: list[pl.DataFrame] = []
    total, start = read.len(), 0
    for c in texts.columns:
        count = int(trusted[c].sum())
        found = pl.DataFrame(
            [read.slice(start, count).alias(f"{c}_ok")]
            + [pieces.slice(i * total + start, count).alias(f"{c}_t{i}") for i in range(len(chains))]
        )
        # Back to one row per text: the i-th trusted text's row takes the i-th read (the others null).
        position = pl.when(pl.lit(trusted[c])).then(pl.lit(trusted[c]).cast(pl.UInt32).cum_sum() - 1)
        found = found.select(pl.all().gather(pl.select(position).to_series()))
        rejected = _not_json(texts[c], lenient[c]).alias(f"{c}_no")
        out.append(found.with_columns(pl.col(f"{c}_ok").fill_null(False), rejected))
        start += count
    return pl.concat(out, how="horizontal").select(
        *(f"{c}_{flag}" for c in texts.columns for flag in ("ok", "no")),
        *(f"{c}_t{i}" for c in texts.columns for i in range(len(chains))),
    )


CHUNK = 2048
"""Texts read per step: the Python objects of a step (texts, structures, joined tokens) stay small enough to reuse
the memory of the step before (a batch's worth at once is fresh memory, a page fault per 4 KiB)."""


def _read(texts: pl.Series, decoder: Any, chains: list[list[str]]) -> tuple[pl.Series, pl.Series]:
    """Whether msgspec read each text, and the tokens of every path (path by path, text by text; null where the
    path does not resolve or the text was not read)."""
    import msgspec

    decode, error = decoder.decode, (msgspec.DecodeError, msgspec.ValidationError)
    unread = decoder.type()  # every leaf empty
    getters = [attrgetter(".".join(chain)) for chain in chains]
    read: list[bool] = []
    joined: list[list[str]] = [[] for _ in chains]
    for start in range(0, texts.len(), CHUNK):
        docs: list[Any] = []
        for text in texts.slice(start, CHUNK).to_list():
            try:
                docs.append(decode(text))
            except error:
                docs.append(unread)
        read += [d is not unread for d in docs]
        for chain, get, parts in zip(chains, getters, joined):
            try:
                text = TOKEN_SEPARATOR.join(map(get, docs))
            except AttributeError:  # an object on the path is null: walk each document step by step
                text = TOKEN_SEPARATOR.join([_walk(d, chain) for d in docs])
            parts.append(text.decode())
    pieces = [part for parts in joined for part in parts]
    if not pieces:
        return pl.Series(read, dtype=pl.Boolean), pl.Series([], dtype=pl.Utf8)
    t = pl.col("t")
    tokens = (
        pl.LazyFrame({"t": pieces}, schema={"t": pl.Utf8})
        .select(t.str.split(TOKEN_SEPARATOR.decode()).explode())
        .select(pl.when(t != "").then(t))  # a path that does not resolve: null
        .collect()
        .to_series()
    )
    return pl.Series(read, dtype=pl.Boolean), _unescaped(tokens)


def _walk(doc: Any, chain: list[str]) -> Any:
    """The token of a path in one document, where an object on the path may be null (empty token)."""
    import msgspec

    for attr in chain:
        doc = getattr(doc, attr)
        if doc is None:
            return msgspec.Raw()
    return doc


def _constant(name: str, value: bool | None, dtype: type[pl.DataType], height: int) -> pl.Series:
    # From a list: extend_constant runs a query (~0.1 ms each, and ~10 ms the first time in a process).
    return pl.Series(name, [value] * height, dtype=dtype)


def _unescaped(pieces: pl.Series) -> pl.Series:
    """String tokens written with escapes (``"Z\\u00fcrich"``) rewritten with as few as JSON allows, as DuckDB
    returns them (most then need no re-reading by ``json.loads``)."""
    import msgspec

    token = pl.col("t")
    escaped = token.str.starts_with('"') & token.str.contains("\\", literal=True)
    rows = pieces.to_frame("t").select(escaped.arg_true()).to_series()
    if not rows.len():
        return pieces
    encode, decode = msgspec.json.encode, msgspec.json.decode
    escaped_tokens = pieces.gather(rows).to_list()
    try:  # all at once, as one JSON array of strings
        strings = decode("[" + ",".join(escaped_tokens) + "]")
    except msgspec.DecodeError:  # an escape msgspec refuses (a lone surrogate): the error is the token's own
        strings = [decode(t) for t in escaped_tokens]
    return pieces.scatter(rows, pl.Series([encode(s).decode() for s in strings], dtype=pl.Utf8))


_TRAILING_COMMAS = r'("(?:[^"\\]|\\.)*")|,([ \t\n\r]*[\]}])'
"""A JSON string (kept), or a comma before a closing bracket outside strings (dropped)."""


def _not_json(texts: pl.Series, lenient: pl.Series) -> pl.Series:
    """Where a ``lenient`` text (an object with a trailing comma outside its strings, no fence) is one JSON value
    once its trailing commas are dropped: ``json.loads`` fails at such a comma, on the whole text and on the object
    at its first ``{`` alike, so the text holds no JSON the reference reads (what DuckDB's ``json_valid``, which
    accepts trailing commas, decides on the large batches)."""
    import msgspec

    rows = lenient.arg_true()
    out = _constant("no", False, pl.Boolean, texts.len())
    if not rows.len():
        return out
    valid = []
    for text in texts.gather(rows).str.replace_all(_TRAILING_COMMAS, "${1}${2}").to_list():
        try:
            msgspec.json.decode(text)
            valid.append(True)
        except msgspec.DecodeError:
            valid.append(False)
    return out.scatter(rows, pl.Series(valid, dtype=pl.Boolean))
