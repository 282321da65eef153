"""json_validator column-wise: the rows without structural surprise, scored with no Python loop over rows.

:func:`json_check.json_row` is the definition: every row this module cannot decide exactly is left to the row-wise
path (:func:`json_check.json_rows`). Per batch:

1. Rows are sorted by the *shape* of their ``expected_output`` (:mod:`json_tree`): one regex pass per shape finds
   every row sharing it, so the JSON pointers of the expected fields are known for the whole group.
2. DuckDB's ``json_extract(text, [pointers])`` reads every field of the group in one parse per text, on both sides.
   Array items of the response are read at every position (``/items/0/name``, ``/items/1/name``...).
3. Fields are compared column-wise (:mod:`json_compare`). The greedy best-overlap pairing of array items becomes a
   hits matrix per row, and the greedy rounds run over all rows at once in numpy.
4. The details (:class:`json_check.JsonDetails`) are built from named columns, as msgspec prints them (what
   :func:`json_check.details_json` does for rows both sides of which msgspec decodes, the only rows this module
   accepts).

Left to the row-wise path: a configured ``json_schema``; texts DuckDB or msgspec read differently from
``json.loads`` (trailing commas, NaN/Infinity, huge exponents or integers, deep nesting, repeated expected keys);
every difference the inferred JSON Schema reports other than absent top-level keys (type errors, nested missing
keys, arrays of another length: those messages come from jsonschema); an expected null facing an object or array
(the mismatch shows it whole); extra keys msgspec escapes its own way or named like array items (:mod:`json_extras`);
arrays inside array items; shapes shared by fewer than ``min_rows`` rows.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from vision_eval.validators import json_compare as jc
from vision_eval.validators.json_check import (
    NO_JSON,
    RESULT_SCHEMA,
    JsonDetails,
    JsonOptions,
    details_json,
    extract_candidates,
    json_rows,
    required_message,
)
from vision_eval.validators.json_extras import extra_keys
from vision_eval.validators.json_tree import (
    MAX_DEPTH,
    Node,
    build,
    encode,
    nesting_depth,
    pointer_step,
    shape_regex,
    too_deep,
)
from vision_eval.validators.rows import details_column

MIN_GROUP_ROWS = 1000
"""Below this many rows of one shape, the row-wise path is cheaper than a group's fixed cost (~12 ms: the row-wise
path takes ~17 µs a row, the columnar one ~2 µs)."""
MAX_ROUNDS = 16
"""Regex passes spent sorting rows into shapes."""
MAX_POINTERS = 400
"""A shape needing more JSON pointers than this is left to the row-wise path."""
MAX_OPENERS = 400
"""More ``[``/``{`` than this: maybe nested beyond msgspec's recursion limit (the row-wise path then fails)."""
TRAILING_COMMAS = (",]", ",}", r",[ \t\n\r]+[\]}]")
"""DuckDB accepts trailing commas, json.loads does not (literals first: a regex starting with a comma is slow)."""
HUGE_NUMBERS = (r"[eE][-+]?[0-9][0-9][0-9]", "[0-9]{300}")
"""Exponents json.loads reads as infinity and msgspec refuses; integers float() refuses."""
NAN_INF = r"[:\[,][ \t\n\r]*[-+]?(?i:nan|inf)"
"""NaN/Infinity in any spelling (DuckDB reads them all, msgspec none)."""
_RESULT_SCHEMA = {"row": pl.UInt32, "score": pl.Float64, "passed": pl.Boolean, "details": pl.Utf8}
_NO_JSON = details_json(NO_JSON, strict=False)  # json_rows' spelling when msgspec decoded no response


def json_frame(frame: pl.DataFrame, opts: JsonOptions) -> pl.DataFrame:
    """Score every row as :func:`json_check.json_row` does; ``passed`` is set to false (whatever the score) when the
    JSON breaks the schema. Rows this module can decide exactly are scored column-wise, the others by ``json_rows``."""
    texts = prepared(frame)
    decided = score_columns(texts, opts).with_columns(
        pl.lit("processed").alias("status"), pl.lit(None, pl.Utf8).alias("error")
    )
    if decided.height == texts.height:
        return decided.select(list(RESULT_SCHEMA))
    rows = pl.Series("row", range(texts.height), pl.UInt32)
    rest = rows.filter(~rows.is_in(decided["row"].implode()))
    scored = json_rows(texts[rest], opts).with_columns(rest)
    parts = [decided.select("row", *RESULT_SCHEMA), scored.select("row", *RESULT_SCHEMA)]
    return pl.concat(parts).sort("row").drop("row")


def prepared(frame: pl.DataFrame) -> pl.DataFrame:
    """The texts both paths read: ``raw`` (the response), its JSON ``candidate`` and ``expected_output``."""
    expected = (
        pl.col("expected_output") if "expected_output" in frame.columns else pl.lit(None).alias("expected_output")
    )
    return frame.select(
        pl.col("output").cast(pl.Utf8).alias("raw"),
        extract_candidates(frame["output"].cast(pl.Utf8)).alias("candidate"),
        expected.cast(pl.Utf8),
    )


def score_columns(prepared: pl.DataFrame, opts: Any, min_rows: int | None = None) -> pl.DataFrame:
    """Results (``row``, ``score``, ``passed``, ``details``) of the rows of ``prepared`` (``candidate``,
    ``expected_output``) decided column-wise; the other rows are absent. ``min_rows``: ``MIN_GROUP_ROWS``
    unless given."""
    min_rows = MIN_GROUP_ROWS if min_rows is None else min_rows
    tol = opts.number_tolerance
    if opts.schema is not None or not (math.isfinite(tol) and tol >= 0) or prepared.height < min_rows:
        return pl.DataFrame(schema=_RESULT_SCHEMA)
    c, e = pl.col("c"), pl.col("e")
    plain = (
        (c.str.starts_with("{") | c.str.starts_with("["))
        & ~pl.any_horizontal(c.str.contains(p, literal=not p.startswith(",[")) for p in TRAILING_COMMAS)
        & ~pl.any_horizontal(c.str.contains(p) for p in HUGE_NUMBERS)
        & ~(c.str.contains("(?i)nan|inf") & c.str.contains(NAN_INF))
        & ~(pl.col("openers") > MAX_OPENERS)
    )
    frame = (
        prepared.lazy()
        .select(pl.col("candidate").alias("c"), pl.col("expected_output").alias("e"))
        .with_row_index("row")
        .with_columns((c.is_null() | (c == "")).alias("empty"), c.str.count_matches(r"[\[\{]").alias("openers"))
        .filter(
            (pl.col("empty") | plain.fill_null(False))
            & e.str.contains(r"^[ \t\n\r]*[\{\[]").fill_null(False)
            & ~e.str.contains(HUGE_NUMBERS[1]).fill_null(True)
        )
        .collect()
    )
    if (frame["openers"] > MAX_DEPTH).any():  # the row-wise path reports JSON nested too deeply
        frame = frame.filter(~too_deep(frame["c"], frame["openers"]))
    parts = [_score_group(frame[members], tree, opts) for tree, members in _shapes(frame["e"], min_rows)]
    return pl.concat([pl.DataFrame(schema=_RESULT_SCHEMA), *parts]).sort("row")


def _shapes(expected: pl.Series, min_rows: int) -> list[tuple[Node, pl.Series]]:
    """Groups of rows (positions in ``expected``) sharing the shape of their first row's expected_output."""
    groups = []
    remaining = pl.Series("i", range(expected.len()), pl.UInt32)
    for _ in range(MAX_ROUNDS):
        if remaining.len() < min_rows:
            break
        texts = expected.gather(remaining)
        try:
            if nesting_depth(texts[0]) > MAX_DEPTH:  # the row-wise path reports it (the whole shape nests as deep)
                raise RecursionError
            value = json.loads(texts[0])
            match = texts.str.contains(shape_regex(value)).fill_null(False)
            tree = build(value)
        except (ValueError, RecursionError, pl.exceptions.PolarsError):  # not JSON, too deep, regex too large
            remaining = remaining.slice(1)
            continue
        members = remaining.filter(match)
        remaining = remaining.filter(~match)
        if not match[0]:  # the representative itself is off (a key spelt with escapes...): the row-wise path has it
            remaining = remaining.slice(1)
        if tree is not None and members.len() >= min_rows:
            groups.append((tree, members))
    return groups


def _plain(node: Node) -> bool:
    """No key below ``node`` that DuckDB could read as an array index (``/items/0`` resolves in an array or an object
    alike): a field found below it proves every object on its way is an object."""
    return all(not k.isdigit() for k in node.keys) and all(_plain(c) for c in node.children)


def _inferable(node: Node) -> bool:
    """Whether ``node`` needs no token of its own: its fields, which a clean row has all of, show it is there.
    An object or array that a row lacks, or has of another kind, then lacks fields too (so the row is left to the
    row-wise path), except a top-level key, which :mod:`json_extras` checks (its key is one more colon)."""
    if node.kind == "object":
        return node.scalars > 0 and _plain(node)
    return node.kind == "array" and bool(node.children) and all(i.scalars > 0 for i in node.children) and _plain(node)


class _Pointers:
    """Token columns of a shape: ``want`` (expected scalars) and ``got`` (everything read from the response),
    pointer -> column name. Objects and arrays get no token when their fields tell enough (``inferred``)."""

    def __init__(self, tree: Node) -> None:
        self.want: dict[str, str] = {}
        self.got: dict[str, str] = {}
        self.arrays = [n for n in tree.walk() if n.kind == "array"]
        self.inferred = {id(n) for n in tree.walk()[1:] if _inferable(n)}
        self.inferred |= {id(m) for a in self.arrays for i in a.children for m in i.item_nodes() if _inferable(m)}
        for node in tree.walk():
            if node.ptr and id(node) not in self.inferred:
                self.got.setdefault(node.ptr, f"g{len(self.got)}")
            if node.kind == "scalar":
                self.want.setdefault(node.ptr, f"w{len(self.want)}")
        for a in self.arrays:
            nodes = [m for item in a.children for m in item.item_nodes() if id(m) not in self.inferred]
            below = list(dict.fromkeys(m.ptr for m in nodes))
            for j in range(len(a.children) + 1):  # one more: present only when the response has more items
                for rel in below if j < len(a.children) else [""]:
                    self.got.setdefault(a.ptr + pointer_step(j) + rel, f"g{len(self.got)}")
            for i, item in enumerate(a.children):
                for m in item.item_nodes():
                    if m.kind == "scalar":
                        self.want.setdefault(self.item(a, i, m), f"w{len(self.want)}")

    @staticmethod
    def item(a: Node, j: int, node: Node) -> str:
        return a.ptr + pointer_step(j) + node.ptr

    def present(self, node: Node) -> pl.Expr:
        """Whether the response has ``node`` (a top-level key); for an inferred one, whether it has a field of it."""
        if node.ptr in self.got:
            return pl.col(self.got[node.ptr]).is_not_null()
        return pl.any_horizontal(pl.col(c).is_not_null() for p, c in self.got.items() if p.startswith(node.ptr + "/"))


def _item_pairs(ptrs: _Pointers, a: Node) -> tuple[list[jc.Pair], list[pl.Expr], list[list[Node]]]:
    """Pairs (expected item ``i``, response item ``j``) of every leaf, whether response item ``j`` has the shape
    of item ``i`` (objects where it has objects), and the leaves of each item."""
    pairs, shapes, layout = [], [], []
    for i, item in enumerate(a.children):
        leaves = [m for m in item.item_nodes() if m.kind == "scalar"]
        objects = [m for m in item.item_nodes() if m.kind == "object" and id(m) not in ptrs.inferred]
        for j in range(len(a.children)):
            is_object = {
                m.ptr: pl.col(ptrs.got[ptrs.item(a, j, m)]).str.starts_with("{").fill_null(False) for m in objects
            }
            shapes.append(pl.all_horizontal(list(is_object.values())) if objects else pl.repeat(True, pl.len()))
            for r, leaf in enumerate(leaves):
                above = [x for p, x in is_object.items() if p == "" or leaf.ptr.startswith(p + "/")]
                gate = pl.all_horizontal(above) if above else None
                name = f"i{id(a)}_{i}_{j}_{r}"
                pairs.append((name, ptrs.want[ptrs.item(a, i, leaf)], ptrs.got[ptrs.item(a, j, leaf)], gate))
        layout.append(leaves)
    return pairs, shapes, layout


def _greedy(scores: list[np.ndarray]) -> np.ndarray:
    """``best[:, i]``: the response item expected item ``i`` is compared with (``_Compare._list``: items in order,
    each taking the first unused response item with the most matching fields)."""
    n, width = scores[0].shape
    used = np.zeros((n, width), dtype=bool)
    best = np.zeros((n, len(scores)), dtype=np.int64)
    rows = np.arange(n)
    for i, s in enumerate(scores):
        b = np.where(used, -1, s.astype(np.int64)).argmax(axis=1)
        best[:, i] = b
        used[rows, b] = True
    return best


def _entries(n: int, rows: np.ndarray, path: str, want: pl.Series, got: pl.Series) -> pl.Series:
    """The value_mismatches entry of ``path`` at ``rows`` (null elsewhere)."""
    head = '{"path":' + encode(path or "$") + ',"expected":'
    text = pl.concat_str(
        pl.lit(head), pl.lit(jc.canonical(want)), pl.lit(',"actual":'), pl.lit(jc.canonical(got)), pl.lit("}")
    )
    return pl.repeat(None, n, dtype=pl.Utf8, eager=True).scatter(rows, pl.select(text).to_series())


def _items(
    f: pl.DataFrame, ptrs: _Pointers, a: Node, gate: np.ndarray, shapes: list[pl.Expr], layout: list[list[Node]]
) -> tuple[np.ndarray, np.ndarray, dict[tuple[int, int], pl.Series], np.ndarray]:
    """Array ``a`` (as many items on both sides): rows to leave to the row-wise path, matched fields, the
    value_mismatches entries per (item, leaf) and the response item each expected item is compared with."""
    n, size = f.height, len(a.children)
    names = [
        [f"i{id(a)}_{i}_{j}_{r}" for j in range(size) for r in range(len(leaves))] for i, leaves in enumerate(layout)
    ]
    matrix = f.select(
        *(s.cast(pl.UInt8).alias(f"s{k}") for k, s in enumerate(shapes)), *(name for block in names for name in block)
    ).to_numpy()
    fits = matrix[:, : len(shapes)].astype(bool).reshape(n, len(a.children), size)
    scores, valid, codes, col = [], [], [], len(shapes)
    for i, leaves in enumerate(layout):
        block = matrix[:, col : col + len(names[i])].reshape(n, size, len(leaves))
        col += len(names[i])
        scores.append((block == jc.HIT).sum(axis=2))
        valid.append(fits[:, i, :] & (block <= jc.MISMATCH).all(axis=2))
        codes.append(block)
    best = _greedy(scores)
    rows = np.arange(n)
    ok = np.logical_and.reduce([v[rows, best[:, i]] for i, v in enumerate(valid)])
    hits = np.sum([s[rows, best[:, i]] for i, s in enumerate(scores)], axis=0)
    entries = {}
    for i, leaves in enumerate(layout):
        for r, leaf in enumerate(leaves):
            wrong = np.flatnonzero((codes[i][rows, best[:, i], r] == jc.MISMATCH) & gate & ok)
            if wrong.size:
                got = pl.concat([f[ptrs.got[ptrs.item(a, j, leaf)]] for j in range(size)])
                want = f[ptrs.want[ptrs.item(a, i, leaf)]].gather(wrong)
                entries[(i, r)] = _entries(n, wrong, leaf.path, want, got.gather(best[wrong, i] * n + wrong))
    return gate & ~ok, np.where(gate, hits, 0), entries, best


def _score_group(rows: pl.DataFrame, tree: Node, opts: Any) -> pl.DataFrame:
    """Results of the decided rows of one shape."""
    ptrs = _Pointers(tree)
    if len(ptrs.got) + len(ptrs.want) > MAX_POINTERS:
        return pl.DataFrame(schema=_RESULT_SCHEMA)
    f = rows.hstack(jc.extract(rows.select(g="c", w="e"), {"g": list(ptrs.got), "w": list(ptrs.want)}))
    tops = tree.children if tree.kind == "object" else []
    present = {t.ptr: ptrs.present(t) for t in tops}
    gate_of = {id(node): present[top.ptr] for top in tops for node in top.walk()}
    main = [n for n in tree.walk() if n.kind == "scalar"]
    pairs: list[jc.Pair] = [(f"m{k}", ptrs.want[n.ptr], ptrs.got[n.ptr], None) for k, n in enumerate(main)]
    items = {}
    for a in ptrs.arrays:
        item_pairs, shapes, layout = _item_pairs(ptrs, a)
        pairs += item_pairs
        items[id(a)] = (shapes, layout)
    f = f.hstack(jc.codes(f, pairs, opts))
    bad = [~pl.col("gok"), ~pl.col("wok"), ~pl.col("c").str.starts_with("{" if tree.kind == "object" else "[")]
    bad += [gate_of[id(n)] & (pl.col(f"m{k}") >= jc.MISSING) for k, n in enumerate(main)]
    for node in tree.walk()[1:]:
        if node.kind != "scalar" and id(node) not in ptrs.inferred:
            shaped = pl.col(ptrs.got[node.ptr]).str.starts_with("{" if node.kind == "object" else "[")
            bad.append(gate_of[id(node)] & ~shaped.fill_null(False))
    hits = [pl.when(gate_of[id(n)] & (pl.col(f"m{k}") == jc.HIT)).then(1).otherwise(0) for k, n in enumerate(main)]
    item_entries: dict[int, dict[tuple[int, int], pl.Series]] = {}
    bests: dict[int, np.ndarray] = {}
    for k, a in enumerate(ptrs.arrays):
        gate = gate_of.get(id(a), pl.lit(True))
        size = len(a.children)
        # Without item tokens, a missing item lacks the fields its expected item is compared on (see _items).
        items_read = [a.ptr + pointer_step(j) for j in range(size) if a.ptr + pointer_step(j) in ptrs.got]
        holes = [pl.col(ptrs.got[p]).is_null() for p in items_read]
        bad.append(gate & pl.any_horizontal([*holes, pl.col(ptrs.got[a.ptr + pointer_step(size)]).is_not_null()]))
        if size:
            gate_np = f.select(gate.fill_null(False)).to_series().to_numpy()
            a_bad, a_hits, item_entries[id(a)], bests[id(a)] = _items(f, ptrs, a, gate_np, *items[id(a)])
            f = f.with_columns(pl.Series(f"ibad{k}", a_bad), pl.Series(f"ihits{k}", a_hits))
            bad.append(pl.col(f"ibad{k}"))
            hits.append(pl.col(f"ihits{k}"))
    mismatches = _mismatches(f, tree, ptrs, gate_of, item_entries)
    absent_tops = [~present[t.ptr] for t in tops]
    missing = [pl.when(x).then(pl.lit(encode(t.path))) for x, t in zip(absent_tops, tops)]
    required = [pl.when(x).then(pl.lit(encode(required_message(t.path)))) for x, t in zip(absent_tops, tops)]
    if tops:
        total = pl.sum_horizontal(pl.when(present[t.ptr]).then(t.scalars).otherwise(t.leaves) for t in tops)
        keys = pl.sum_horizontal(pl.when(present[t.ptr]).then(1 + t.key_count).otherwise(0) for t in tops)
        any_absent = pl.any_horizontal(absent_tops)
    else:
        total, keys, any_absent = pl.lit(tree.scalars), pl.lit(tree.key_count), pl.lit(False)
    if len(tops) > 20:  # the row-wise path keeps the first 20 JSON Schema messages
        bad.append(pl.sum_horizontal(absent_tops) > 20)
    # Every colon is at most one key: as many colons as expected keys present means no extra (or repeated) key.
    f = f.with_columns(
        pl.any_horizontal(bad).fill_null(True).alias("bad"),
        (pl.col("c").str.count_matches(":", literal=True) != keys).alias("more"),
        any_absent.alias("absent"),
        (pl.sum_horizontal(hits) if hits else pl.lit(0)).cast(pl.Int64).alias("hits"),
        total.cast(pl.Int64).alias("total"),
        *(pl.lit(m).alias(f"mm{k}") for k, m in enumerate(mismatches)),
    )
    inferred_tops = {t.path: present[t.ptr] for t in tops if id(t) in ptrs.inferred}
    inferred_arrays = [a.ptr for a in ptrs.arrays if id(a) in ptrs.inferred]
    keyed = (~f["bad"] & f["more"]).arg_true()
    f = f.with_columns(_keyed(f, tree, bests, keyed, inferred_tops, inferred_arrays))
    f = f.filter(pl.col("empty") | ~(pl.col("bad") | pl.col("kbad")))
    absent = pl.col("absent")
    details = details_column(
        JsonDetails,
        valid_json=pl.lit("true"),
        schema_valid=pl.when(absent).then(pl.lit("false")).otherwise(pl.lit("true")),
        schema_errors="[" + _join(required) + "]",
        missing_keys="[" + _join(missing) + "]",
        extra_keys="[" + pl.col("ek").fill_null("") + "]",
        type_errors=pl.lit("[]"),
        value_mismatches="[" + _join([pl.col(f"mm{k}") for k in range(len(mismatches))]) + "]",
        fields_matched=pl.col("hits").cast(pl.Utf8),
        fields_expected=pl.col("total").cast(pl.Utf8),
    )
    h, t = f["hits"].to_numpy(), f["total"].to_numpy()
    # numpy divides as Python does (Polars may multiply by the reciprocal of a constant divisor).
    score = pl.Series(np.where(t > 0, h / np.maximum(t, 1), 1.0))
    passed = pl.when(absent).then(pl.lit(False)) if opts.require_valid_schema else pl.lit(None, pl.Boolean)
    empty = pl.col("empty")
    return f.select(
        "row",
        pl.when(empty).then(0.0).otherwise(pl.lit(score)).alias("score"),
        pl.when(~empty).then(passed).cast(pl.Boolean).alias("passed"),
        pl.when(empty).then(pl.lit(_NO_JSON)).otherwise(details).alias("details"),
    )


def _keyed(
    f: pl.DataFrame,
    tree: Node,
    bests: dict[int, np.ndarray],
    rows: pl.Series,
    tops: dict[str, pl.Expr],
    arrays: list[str],
) -> list[pl.Series]:
    """``ek`` (extra_keys entries) and ``kbad`` (leave the row to the row-wise path) of ``rows``."""
    text = pl.repeat(None, f.height, dtype=pl.Utf8, eager=True).alias("ek")
    wrong = pl.repeat(False, f.height, eager=True).alias("kbad")
    if rows.len():
        picked = rows.to_numpy()
        flags = f.select(x.alias(f"p{k}") for k, x in enumerate(tops.values())).gather(rows) if tops else None
        present = dict(zip(tops, flags.get_columns())) if flags is not None else {}
        best = {k: v[picked] for k, v in bests.items()}
        extra, odd = extra_keys(f["c"].gather(rows), tree, best, present, arrays)
        text, wrong = text.scatter(rows, extra), wrong.scatter(rows, odd)
    return [text, wrong]


def _mismatches(
    f: pl.DataFrame,
    tree: Node,
    ptrs: _Pointers,
    gate_of: dict[int, pl.Expr],
    item_entries: dict[int, dict[tuple[int, int], pl.Series]],
) -> list[pl.Series]:
    """value_mismatches entries in the order the comparison visits the fields (array items with their match)."""
    leaves = [n for n in tree.walk() if n.kind == "scalar"]
    wrong = f.select(
        (gate_of[id(n)].fill_null(False) & (pl.col(f"m{k}") == jc.MISMATCH)).alias(f"m{k}")
        for k, n in enumerate(leaves)
    )
    flags = wrong.select(pl.all().any()).row(0) if leaves else ()
    any_wrong = {id(n): k for k, (n, flag) in enumerate(zip(leaves, flags)) if flag}
    out = []
    for node in tree.walk():
        if id(node) in any_wrong:
            rows = wrong[f"m{any_wrong[id(node)]}"].arg_true().to_numpy()
            want, got = f[ptrs.want[node.ptr]].gather(rows), f[ptrs.got[node.ptr]].gather(rows)
            out.append(_entries(f.height, rows, node.path, want, got))
        elif node.kind == "array":
            entries = item_entries.get(id(node), {})
            for i, item in enumerate(node.children):
                leaves = [m for m in item.item_nodes() if m.kind == "scalar"]
                out += [entries[(i, r)] for r in range(len(leaves)) if (i, r) in entries]
    return out


def _join(parts: Sequence[pl.Expr]) -> pl.Expr:
    return pl.concat_str(parts, separator=",", ignore_nulls=True) if parts else pl.lit("")
