"""``field_accuracy`` extraction: DuckDB's JSON functions pull every configured path out of a whole column at once.

Each side's candidate JSON object text (fence stripped, first ``{`` to last ``}``, see :func:`fastpath.doc_text`) is
handed to DuckDB, which parses it in C++ on every core and returns per path the JSON token text (``"x"``, ``1.5``,
``null``; SQL NULL when the path does not resolve). Paths are JSON pointers, which resolve an index step as an array
index or as an object key, exactly as :func:`matching.resolve` does.

DuckDB's parser differs from ``json.loads`` (the reference) in a few places, so a row is decided by DuckDB only when
none can apply; every other row is resolved by :mod:`matching`, row by row:

- it accepts trailing commas and ``nan``/``inf`` in any case; it rejects lone surrogates (``"\\ud800"``);
- it takes the first of repeated keys where ``json.loads`` takes the last. A row is trusted when the path keys
  occur in its text exactly as often as the path nodes DuckDB found (a cheap count); a row where they occur more
  often (the same name at another level, or in a value) gets the exact test (``json_keys`` of every object on the
  paths). Keys written with escapes always go to the reference.

Tokens become (kind, text, json) columns; only strings with escapes, numbers Python would print differently and
objects/arrays are re-read with ``json.loads``.
"""

from __future__ import annotations

import re
from typing import Any

import polars as pl

from vision_eval import duck
from vision_eval.structured import matching as m
from vision_eval.structured.fastpath import CANONICAL_NUMBER, KIND, Side, doc_text, python_value

FENCE = "```"
"""A fence: the reference reads its content, not the text around it."""
TRAILING_COMMA = r",\s*[\]}]"
ESCAPED_KEY = r'\\.(?:[^"\\]|\\.)*"\s*:'
"""A key written with an escape (``"\\u0061"`` is ``"a"``): repeated keys could hide behind it."""
NAN_INF = r"[:\[,]\s*[-+]?(?i:nan|inf)"
"""``nan``, ``inf``, ``Infinity`` spelt any way (DuckDB reads them all; ``json.loads`` only three spellings)."""

_REGEX_META = set("\\.+*?()|[]{}^$#&-~")

Paths = tuple[tuple[str | int, ...], ...]


def pointer(steps: tuple[str | int, ...]) -> str:
    """The JSON pointer of parsed path steps (``~`` and ``/`` escaped)."""
    return "".join("/" + str(step).replace("~", "~0").replace("/", "~1") for step in steps)


def _literal(text: str) -> str:
    return "".join("\\" + c if c in _REGEX_META else c for c in text)


def _sql_list(items: list[str]) -> str:
    return "[" + ", ".join("'" + item.replace("'", "''") + "'" for item in items) + "]"


def _nodes(paths: Paths) -> list[list[int]]:
    """For every object-key node on the paths (a prefix ending in a key): the paths below it."""
    out: dict[tuple[str | int, ...], list[int]] = {}
    for i, steps in enumerate(paths):
        for n in range(1, len(steps) + 1):
            if isinstance(steps[n - 1], str):
                out.setdefault(steps[:n], []).append(i)
    return list(out.values())


def _duckdb_tokens(texts: pl.DataFrame, trusted: dict[str, pl.Series], paths: Paths) -> pl.DataFrame:
    """Per text column ``c``: ``c_ok`` (DuckDB parsed it) and ``c_t{i}``, the token of path ``i``; rows not
    ``trusted`` are not read (null)."""
    ptrs = _sql_list([pointer(p) for p in paths])
    inner = ", ".join(f"CASE WHEN {c}_trusted THEN try(json_extract({c}, {ptrs})) END AS {c}_e" for c in texts.columns)
    outer = [f"{c}_e IS NOT NULL AS {c}_ok" for c in texts.columns]
    outer += [f"{c}_e[{i + 1}] AS {c}_t{i}" for c in texts.columns for i in range(len(paths))]
    table = texts.hstack([trusted[c].alias(f"{c}_trusted") for c in texts.columns])
    with duck.cursor() as con:
        # String views cross into DuckDB without copying the texts.
        con.register("texts", table.to_arrow(compat_level=pl.CompatLevel.newest()))
        return con.sql(f"SELECT {', '.join(outer)} FROM (SELECT {inner} FROM texts)").pl()


def _repeated_keys(texts: pl.Series, paths: Paths) -> pl.Series:
    """Whether an object on a path holds one of the path's keys more than once (DuckDB would read the first
    occurrence, ``json.loads`` reads the last)."""
    steps_by_parent: dict[str, set[str]] = {}
    for steps in paths:
        for n in range(len(steps)):
            steps_by_parent.setdefault(pointer(steps[:n]), set()).add(str(steps[n]))
    parents = list(steps_by_parent)
    tests = [
        f"coalesce(len(list_filter(k[{j + 1}], lambda x: x = '{key.replace(chr(39), chr(39) * 2)}')) > 1, false)"
        for j, parent in enumerate(parents)
        for key in sorted(steps_by_parent[parent])
    ]
    query = f"SELECT {' OR '.join(tests)} AS repeated FROM (SELECT json_keys(t, {_sql_list(parents)}) AS k FROM texts)"
    with duck.cursor() as con:
        con.register("texts", texts.alias("t").to_frame().to_arrow())
        return con.sql(query).pl().to_series()


def _decide(texts: pl.DataFrame, paths: Paths, readable: dict[str, pl.Series]) -> pl.DataFrame:
    """``{c}_ok`` and ``{c}_t{i}`` per candidate column ``c``: ok where DuckDB's tokens are the reference's values
    (the text is a JSON object DuckDB reads as ``json.loads`` does and no key on a path repeats); only rows
    ``readable`` are read."""
    names = texts.columns
    keys = sorted({str(step) for steps in paths for step in steps})
    # `key"` rather than `"key"`: every quoted key still counts once, and the search runs faster (a name that merely
    # ends with a key counts too; that only sends the row to the exact test).
    quoted_keys = "|".join(_literal(k) + '"' for k in sorted(keys, key=len, reverse=True))
    checks = texts.select(
        *(pl.col(n).str.count_matches(quoted_keys).alias(f"{n}_keys") for n in names),
        *(
            (
                pl.col(n).str.starts_with("{")
                & ~pl.col(n).str.contains(FENCE, literal=True)
                & ~pl.col(n).str.contains(TRAILING_COMMA)
                & ~pl.col(n).str.contains(ESCAPED_KEY)
            )
            .fill_null(False)
            .alias(f"{n}_plain")
            for n in names
        ),
        *(pl.col(n).str.contains("(?i)nan|inf").fill_null(False).alias(f"{n}_nan") for n in names),
    )
    trusted = {}
    for n in names:
        plain = checks[f"{n}_plain"] & readable[n]
        maybe = (plain & checks[f"{n}_nan"]).arg_true()  # the literal test is cheap, the exact one runs on few rows
        if maybe.len():
            odd = texts[n].gather(maybe).str.contains(NAN_INF)
            plain = plain.scatter(maybe, ~odd)
        trusted[n] = plain
    tokens = _duckdb_tokens(texts, trusted, paths)
    nodes = _nodes(paths)
    counted = []
    for n in names:
        present = [pl.any_horizontal([pl.col(f"{n}_t{i}").is_not_null() for i in below]) for below in nodes]
        known = pl.sum_horizontal([p.cast(pl.UInt32) for p in present]) if present else pl.lit(0, pl.UInt32)
        # Each path node found holds one quoted key; a further occurrence may be a repeated key, or the same name
        # elsewhere (another level, a value): those rows get the exact test.
        counted.append((pl.col(f"{n}_keys") == known).alias(f"{n}_once"))
    tokens = tokens.with_columns(tokens.hstack(checks.select(f"{n}_keys" for n in names)).select(counted))
    for n in names:
        unsure = (tokens[f"{n}_ok"] & ~tokens[f"{n}_once"]).arg_true()
        if unsure.len():
            repeated = _repeated_keys(texts[n].gather(unsure), paths)
            tokens = tokens.with_columns(tokens[f"{n}_once"].scatter(unsure, ~repeated))
    return tokens.select(
        *((pl.col(f"{n}_ok") & pl.col(f"{n}_once")).alias(f"{n}_ok") for n in names),
        *(pl.col(f"{n}_t{i}") for n in names for i in range(len(paths))),
    )


def extract_sides(batch: pl.DataFrame, columns: tuple[str, ...], specs: list[m.FieldSpec]) -> dict[str, Any]:
    """Per column ``(ok, deep, sides)``: whether each row holds JSON (a JSON object for ``expected_output``), whether
    it nests deeper than :data:`values.MAX_DEPTH` (never read), and per field its values (:class:`Side`)."""
    paths = tuple(m.parse_path(spec.path) for spec in specs)
    names = [f"c{j}" for j in range(len(columns))]
    raw = batch.select(pl.col(col).cast(pl.Utf8).alias(n) for col, n in zip(columns, names))
    # Rows that may nest deeper than MAX_DEPTH (more brackets than that) are left to the reference.
    shallow = raw.select(
        ((pl.col(n).str.len_bytes() <= m.MAX_DEPTH) | (pl.col(n).str.count_matches(r"[\[{]") <= m.MAX_DEPTH))
        .fill_null(True)
        .alias(n)
        for n in names
    )
    readable = {n: shallow[n] for n in names}
    decided = _decide(raw, paths, readable)
    texts = [spec.match != "exact" for spec in specs]  # exact compares JSON texts, the others read the value
    oks, token_frames, escaped = [], [], []
    for n in names:
        ok = decided[f"{n}_ok"]
        tokens = decided.select(pl.col(f"{n}_t{i}") for i in range(len(paths)))
        again = (~ok).arg_true()
        if again.len():  # fenced, wrapped in prose, not JSON, ...: doc_text's candidate gets a second reading
            subset = {n: readable[n].gather(again)}
            second = _decide(raw.select(pl.col(n).gather(again)).select(doc_text(n)), paths, subset)
            ok = ok.scatter(again, second[f"{n}_ok"])
            tokens = tokens.with_columns(
                tokens.to_series(i).scatter(again, second[f"{n}_t{i}"]) for i in range(len(paths))
            )
        # Tokens of rows DuckDB may misread are dropped before they are read (json.loads would refuse "-inf").
        oks.append(ok)
        token_frames.append(tokens.select(pl.when(ok).then(pl.all()).name.keep()))
        escaped += [raw[n].str.contains("\\", literal=True).fill_null(False)] * len(paths)
    # Both sides in one call: fewer, wider Polars operations.
    every_side = _sides(pl.concat(token_frames, how="horizontal"), texts * len(names), escaped)
    out: dict[str, tuple[pl.Series, pl.Series, list[Side]]] = {}
    for j, (col, ok) in enumerate(zip(columns, oks)):
        sides = every_side[j * len(paths) : (j + 1) * len(paths)]
        rows = (~ok).arg_true()
        deep = pl.Series("deep", [False] * len(ok), dtype=pl.Boolean)
        if rows.len():
            ok, deep, sides = _resolve_rows(batch[col], col, rows, paths, ok, sides)
        out[col] = (ok.alias("ok"), deep.alias("deep"), sides)
    return out


def _kind(token: pl.Expr) -> pl.Expr:
    """The kind of a JSON token, told by its first character (an Enum: compared as integers downstream)."""

    def kind(name: str) -> pl.Expr:
        return pl.lit(name, KIND)

    return (
        pl.when(token.is_null())
        .then(kind("missing"))
        .when(token.str.starts_with('"'))
        .then(kind("string"))
        .when(token.str.starts_with("t") | token.str.starts_with("f"))
        .then(kind("bool"))
        .when(token.str.starts_with("n"))
        .then(kind("null"))
        .when(token.str.starts_with("{"))
        .then(kind("object"))
        .when(token.str.starts_with("["))
        .then(kind("array"))
        .otherwise(kind("number"))
    )


def _sides(tokens: pl.DataFrame, with_text: list[bool], escaped: list[pl.Series]) -> list[Side]:
    """Kind, JSON text and (where ``with_text``) text columns from DuckDB tokens (one column per path and side);
    tokens only ``json.loads`` reads exactly (strings with escapes, numbers Python prints differently, objects,
    arrays) are re-read. ``escaped``: per column, whether the row's document holds a backslash (no token of the others
    can)."""
    kinds = tokens.select(_kind(pl.col(c)).alias(c) for c in tokens.columns)
    exprs = []
    for c, kind, wanted, esc in zip(tokens.columns, kinds.get_columns(), with_text, escaped):
        t, k = pl.col(c), pl.lit(kind)
        text = pl.when(k == "string").then(t.str.slice(1).str.head(-1)).when(k.is_in(["number", "bool"])).then(t)
        text = text if wanted else pl.lit(None, pl.Utf8)
        # The string tests run only on the tokens they concern (a masked token is skipped).
        redo = (
            pl.when((k == "string") & pl.lit(esc)).then(t).str.contains("\\", literal=True).fill_null(False)
            | k.is_in(["object", "array"])
            | ~pl.when(k == "number").then(t).str.contains(CANONICAL_NUMBER).fill_null(True)
        )
        exprs += [k.alias(f"{c}_k"), text.alias(f"{c}_x"), redo.alias(f"{c}_r")]
    frame = tokens.hstack(tokens.select(exprs))
    sides = []
    for c, wanted in zip(tokens.columns, with_text):
        side = Side(frame[f"{c}_k"], frame[f"{c}_x"] if wanted else None, frame[c])
        rows = frame[f"{c}_r"].arg_true()
        if rows.len():
            values = [m.loads(v) for v in frame[c].gather(rows).to_list()]
            pairs = [python_value(v) for v in values]
            side = Side(
                side.kind.scatter(rows, pl.Series([k for k, _ in pairs], dtype=KIND)),
                _scatter(side.text, rows, [x for _, x in pairs]),
                side.json.scatter(rows, pl.Series([_json(v) for v in values], dtype=pl.Utf8)),
            )
        sides.append(side)
    return sides


def _scatter(column: pl.Series | None, rows: pl.Series, values: list[str | None]) -> pl.Series | None:
    return None if column is None else column.clone().scatter(rows, pl.Series(values, dtype=pl.Utf8))


def _json(value: Any) -> str:
    text = m.to_json(value) or ""
    try:
        text.encode()
    except UnicodeEncodeError:  # lone surrogates cannot enter a Polars string column
        text = re.sub("[\ud800-\udfff]", "\ufffd", text)
    return text


def _resolve_rows(
    texts: pl.Series,
    column: str,
    rows: pl.Series,
    paths: Paths,
    fast: pl.Series,
    sides: list[Side],
) -> tuple[pl.Series, pl.Series, list[Side]]:
    """The rows DuckDB did not decide, resolved by the reference (``read_json`` + ``resolve``)."""
    parsed = [m.read_json(t) for t in texts.gather(rows).to_list()]
    good = [ok if column == "output" else ok and isinstance(v, dict) for ok, v, _ in parsed]
    ok = fast.clone().scatter(rows, pl.Series(good, dtype=pl.Boolean))
    deep = pl.Series([False] * len(fast), dtype=pl.Boolean)
    deep = deep.scatter(rows, pl.Series([problem == m.TOO_DEEP for _, _, problem in parsed], dtype=pl.Boolean))
    out = []
    for steps, side in zip(paths, sides):
        values = [m.resolve(v, steps) if g else m.MISSING for g, (_, v, _) in zip(good, parsed)]
        pairs = [python_value(v) for v in values]
        shown = [_json(v) if v is not m.MISSING else None for v in values]
        out.append(
            Side(
                side.kind.clone().scatter(rows, pl.Series([k for k, _ in pairs], dtype=KIND)),
                _scatter(side.text, rows, [x for _, x in pairs]),
                side.json.clone().scatter(rows, pl.Series(shown, dtype=pl.Utf8)),
            )
        )
    return ok, deep, out
