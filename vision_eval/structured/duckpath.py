"""``field_accuracy`` extraction: DuckDB's JSON functions pull every configured path out of a whole column at once.

Each side's candidate JSON object text (the bare object, a fenced block's object, or the first ``{`` to the last ``}``
of prose, see :mod:`candidates`) is handed to DuckDB, which checks it (``json_valid``) and parses it in
C++ on every core and returns per path the JSON token text (``"x"``, ``1.5``, ``null``; SQL NULL when the path does not
resolve). Paths are JSON pointers, which resolve an index step as an array index or as an object key, exactly as
:func:`matching.resolve` does. Text that may nest deeper than ``MAX_DEPTH`` is left to the reference.

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
from functools import lru_cache
from typing import Any

import polars as pl

from vision_eval import duck
from vision_eval.structured import matching as m
from vision_eval.structured import msgpath
from vision_eval.structured.candidates import Paths, candidates, prepare_candidates
from vision_eval.structured.fastpath import CANONICAL_NUMBER, KIND, Side, python_value
from vision_eval.structured.masked import only


def pointer(steps: tuple[str | int, ...]) -> str:
    """The JSON pointer of parsed path steps (``~`` and ``/`` escaped)."""
    return "".join("/" + str(step).replace("~", "~0").replace("/", "~1") for step in steps)


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


def _duckdb_tokens(
    texts: pl.DataFrame, trusted: dict[str, pl.Series], lenient: dict[str, pl.Series], paths: Paths
) -> pl.DataFrame:
    """Per text column ``c``: ``c_ok`` (DuckDB parsed it), ``c_no`` (it is decided not to be JSON: a ``lenient`` text
    DuckDB reads, which the reference cannot, see :func:`candidates.candidates`) and ``c_t{i}``, the token of path
    ``i``; rows neither ``trusted`` nor ``lenient`` are not read (null)."""
    ptrs = _sql_list([pointer(p) for p in paths])
    columns = texts.columns
    # json_valid first: try() falls back to row-at-a-time evaluation for a whole vector as soon as one row in it
    # fails, which made every batch with some invalid responses ~3x slower.
    extract = [
        f"CASE WHEN {c}_trusted AND json_valid({c}) THEN try(json_extract({c}, {ptrs})) END AS {c}_e" for c in columns
    ]
    rejected = [f"coalesce(CASE WHEN {c}_lenient THEN json_valid({c}) END, false) AS {c}_no" for c in columns]
    table = texts.hstack([trusted[c].alias(f"{c}_trusted") for c in columns])
    table = table.hstack([lenient[c].alias(f"{c}_lenient") for c in columns])
    n = len(paths)
    if table.height > SMALL_RESULT:  # through Arrow, a column per token (cheaper than a list column)
        outer = [f"{c}_e IS NOT NULL AS {c}_ok" for c in columns] + [f"{c}_no" for c in columns]
        outer += [f"{c}_e[{i + 1}]::VARCHAR AS {c}_t{i}" for c in columns for i in range(n)]
        return query(table, f"SELECT {', '.join(outer)} FROM (SELECT {', '.join(extract + rejected)} FROM texts)")
    # As Python rows: a row's tokens joined into one text (a JSON token never holds a raw \x1f, nor is it empty: an
    # empty piece is a path that does not resolve), one Python object per row and side instead of one per token.
    joined = [
        f"array_to_string(list_transform({c}_e, lambda x: coalesce(x::VARCHAR, '')), chr(31)) AS {c}_j" for c in columns
    ]
    got = query(table, f"SELECT {', '.join(joined)}, {', '.join(c + '_no' for c in columns)} FROM "
                       f"(SELECT {', '.join(extract + rejected)} FROM texts)")  # fmt: skip
    parts = got.select(
        *(pl.col(f"{c}_no") for c in columns),
        *(
            pl.col(f"{c}_j")
            .str.split_exact(TOKEN_SEPARATOR, n - 1)
            .struct.rename_fields([f"{c}_t{i}" for i in range(n)])
            for c in columns
        ),
    ).unnest(*(f"{c}_j" for c in columns))
    return parts.select(
        *(pl.col(f"{c}_t0").is_not_null().alias(f"{c}_ok") for c in columns),
        *(pl.col(f"{c}_no") for c in columns),
        *(
            pl.when(pl.col(f"{c}_t{i}") != "").then(pl.col(f"{c}_t{i}")).alias(f"{c}_t{i}")
            for c in columns
            for i in range(n)
        ),
    )


TOKEN_SEPARATOR = "\x1f"


class _Stream:
    """A Polars frame as an Arrow C stream: DuckDB scans it without a pyarrow copy, string views uncopied."""

    def __init__(self, frame: pl.DataFrame) -> None:
        self.frame = frame

    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        return self.frame.__arrow_c_stream__(requested_schema)


MSGSPEC_ROWS = 20_000
"""A batch of up to this many rows is read with :mod:`msgpath` (msgspec, row by row: no engine to start); a larger one
with DuckDB, which costs ~0.1 s to start, then reads faster, in parallel C++ that releases the interpreter lock (the
halves of a batch overlap): a run's default batches (50k rows, evaluated in halves of 25k) go to DuckDB. Decided by
the batch alone (an evaluator keeps no state between batches); both give the reference's values."""
SMALL_RESULT = 20_000
"""Up to this many rows a result comes back as Python rows; larger ones through pyarrow, which costs half as much
per row but 0.1-0.2 s to import, more than a small batch costs (and importing it in the background would hold the
interpreter lock while the first batch runs). DuckDB 2.0's own Arrow stream export is not used: it leaks objects that
nanobind reports at exit."""
_DTYPES = {"BOOLEAN": pl.Boolean, "VARCHAR": pl.Utf8, "JSON": pl.Utf8, "BIGINT": pl.Int64, "INTEGER": pl.Int32}


def query(table: pl.DataFrame, sql: str) -> pl.DataFrame:
    """``sql`` over ``table`` (named ``texts``) on the shared DuckDB database, as a Polars frame."""
    with duck.cursor() as con:
        con.register("texts", _Stream(table))
        if table.height > SMALL_RESULT:
            frame: pl.DataFrame = con.sql(sql).pl()
            return frame
        result = con.execute(sql)
        names = [(d[0], _DTYPES.get(str(d[1]).upper())) for d in result.description]
        rows = result.fetchall()
    columns = list(zip(*rows)) if rows else [()] * len(names)
    return pl.DataFrame([pl.Series(name, values, dtype=dtype) for (name, dtype), values in zip(names, columns)])


def warm_up(specs: list[m.FieldSpec]) -> None:
    """Build (and cache) what the first batch of these fields would otherwise wait for: the extraction's expressions
    and msgspec's reader, or, for paths only DuckDB reads, DuckDB itself (its import and start, ~0.1 s; other
    paths start it at the first batch larger than :data:`MSGSPEC_ROWS`). field_accuracy's
    ``warm_up``, which a run calls on the engine's thread while the dataset loads."""
    paths = tuple(m.parse_path(spec.path) for spec in specs)
    by_msgspec = msgpath.supported(paths)
    names = ("c0", "c1")
    prepare_candidates(names, paths, count_keys=not by_msgspec)
    texts = [spec.match != "exact" for spec in specs]
    _side_exprs(tuple(f"{n}_t{i}" for n in names for i in range(len(paths))), tuple(texts * len(names)))
    if by_msgspec:
        msgpath.prepare(paths)
    else:
        query(pl.DataFrame({"t": ["{}"]}), "SELECT json_valid(t) AS ok FROM texts")


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
    sql = f"SELECT {' OR '.join(tests)} AS repeated FROM (SELECT json_keys(t, {_sql_list(parents)}) AS k FROM texts)"
    return query(texts.alias("t").to_frame(), sql).to_series()


def _decide(cands: pl.DataFrame, names: list[str], paths: Paths, by_msgspec: bool) -> pl.DataFrame:
    """``{c}_ok``, ``{c}_no`` and ``{c}_t{i}`` per text column ``c`` (of :func:`candidates.candidates`): ok where
    DuckDB's tokens are the reference's values (the text is a JSON object DuckDB reads as ``json.loads`` does and no key
    on a path repeats), no where the text is decided not to be JSON; tokens of the other rows are null. Read by
    msgspec instead where ``by_msgspec`` (it can read the paths: :func:`msgpath.supported`)."""
    trusted, lenient = ({n: cands[f"{n}_{flag}"] for n in names} for flag in ("trusted", "lenient"))
    if by_msgspec:
        # msgspec reads repeated keys as json.loads does: every row it read is decided.
        return msgpath.tokens(cands.select(names), trusted, lenient, paths)
    tokens = _duckdb_tokens(cands.select(names), trusted, lenient, paths)
    nodes = _nodes(paths)
    counted = []
    for n in names:
        present = [pl.any_horizontal([pl.col(f"{n}_t{i}").is_not_null() for i in below]) for below in nodes]
        known = pl.sum_horizontal([p.cast(pl.UInt32) for p in present]) if present else pl.lit(0, pl.UInt32)
        # Each path node found holds one quoted key; a further occurrence may be a repeated key, or the same name
        # elsewhere (another level, a value): those rows get the exact test.
        counted.append((pl.col(f"{n}_keys") == known).alias(f"{n}_once"))
    tokens = tokens.hstack(cands.select(f"{n}_keys" for n in names)).with_columns(counted)
    for n in names:
        unsure = (tokens[f"{n}_ok"] & ~tokens[f"{n}_once"]).arg_true()
        if unsure.len():
            repeated = _repeated_keys(cands[n].gather(unsure), paths)
            tokens = tokens.with_columns(tokens[f"{n}_once"].scatter(unsure, ~repeated))
    ok = {n: pl.col(f"{n}_ok") & pl.col(f"{n}_once") for n in names}
    return tokens.select(
        *(expr.alias(f"{n}_ok") for n, expr in ok.items()),
        *(pl.col(f"{n}_no") for n in names),
        # Tokens of rows DuckDB may misread are dropped before they are read (json.loads would refuse "-inf").
        *(pl.when(ok[n]).then(pl.col(f"{n}_t{i}")).alias(f"{n}_t{i}") for n in names for i in range(len(paths))),
    )


def extract_sides(
    batch: pl.DataFrame, columns: tuple[str, ...], specs: list[m.FieldSpec], by_msgspec: bool = True
) -> dict[str, Any]:
    """Per column ``(ok, deep, sides)``: whether each row holds JSON (a JSON object for ``expected_output``), whether
    it nests deeper than :data:`values.MAX_DEPTH` (never read), and per field its values (:class:`Side`). Read by
    msgspec where ``by_msgspec`` and it can read the paths, else by DuckDB (see :data:`MSGSPEC_ROWS`)."""
    paths = tuple(m.parse_path(spec.path) for spec in specs)
    names = [f"c{j}" for j in range(len(columns))]
    raw = batch.select(pl.col(col).cast(pl.Utf8).alias(n) for col, n in zip(columns, names))
    by_msgspec = by_msgspec and msgpath.supported(paths)
    cands = candidates(raw, paths, count_keys=not by_msgspec)  # msgspec reads repeated keys as json.loads does
    decided = _decide(cands, names, paths, by_msgspec)
    texts = [spec.match != "exact" for spec in specs]  # exact compares JSON texts, the others read the value
    escaped = [cands[f"{n}_esc"] for n in names for _ in paths]
    # Both sides in one call: fewer, wider Polars operations.
    every_side = _sides(decided.select(pl.exclude("^.*_(ok|no)$")), texts * len(names), escaped)
    out: dict[str, tuple[pl.Series, pl.Series, list[Side]]] = {}
    for j, (col, n) in enumerate(zip(columns, names)):
        ok = decided[f"{n}_ok"]
        sides = every_side[j * len(paths) : (j + 1) * len(paths)]
        decided_not_json = (cands[f"{n}_none"] & cands[f"{n}_shallow"]) | decided[f"{n}_no"]
        rows = (~ok & ~decided_not_json).arg_true()
        deep = pl.Series("deep", [False] * len(ok), dtype=pl.Boolean)
        if rows.len():
            ok, deep, sides = _resolve_rows(batch[col], col, rows, paths, ok, sides)
        out[col] = (ok.alias("ok"), deep.alias("deep"), sides)
    return out


_FIRST_CHARACTER_KINDS = {'"': "string", "t": "bool", "f": "bool", "n": "null", "{": "object", "[": "array"}


@lru_cache(maxsize=1)
def _first_character_kinds() -> tuple[pl.Series, pl.Series]:
    """:data:`_FIRST_CHARACTER_KINDS` as Series (built once: from a dict, each expression would build them again)."""
    return pl.Series(list(_FIRST_CHARACTER_KINDS)), pl.Series(list(_FIRST_CHARACTER_KINDS.values()), dtype=KIND)


def _kind(token: pl.Expr) -> pl.Expr:
    """The kind of a JSON token, told by its first character (an Enum: compared as integers downstream)."""
    first, kinds = _first_character_kinds()
    kind = token.str.head(1).replace_strict(first, kinds, default=pl.lit("number", KIND), return_dtype=KIND)
    return pl.when(token.is_null()).then(pl.lit("missing", KIND)).otherwise(kind)


@lru_cache(maxsize=64)
def _side_exprs(columns: tuple[str, ...], with_text: tuple[bool, ...]) -> tuple[list[pl.Expr], list[pl.Expr]]:
    """Two stages, per token column ``c`` (beside ``c_esc``, see :func:`_sides`): its kind ``c_k``; then ``c_x`` the
    text (decoded string, number or bool JSON; where ``with_text``) and ``c_r`` whether ``json.loads`` must re-read
    it. Built once per field list: building them costs more than running them on a small batch."""
    exprs = []
    for c, wanted in zip(columns, with_text):
        t, k = pl.col(c), pl.col(f"{c}_k")
        text: pl.Expr = pl.lit(None, pl.Utf8)
        if wanted:
            text = pl.when(k == "string").then(t.str.slice(1).str.head(-1)).when(k.is_in(["number", "bool"])).then(t)
        # The string tests run only on the tokens they concern (a masked token is skipped).
        number = k == "number"
        redo = (
            only((k == "string") & pl.col(f"{c}_esc"), t).str.contains("\\", literal=True).fill_null(False)
            | k.is_in(["object", "array"])
            | (number & ~only(number, t).str.contains(CANONICAL_NUMBER).fill_null(False))
        )
        exprs += [text.alias(f"{c}_x"), redo.alias(f"{c}_r")]
    return [_kind(pl.col(c)).alias(f"{c}_k") for c in columns], exprs


def _sides(tokens: pl.DataFrame, with_text: list[bool], escaped: list[pl.Series]) -> list[Side]:
    """Kind, JSON text and (where ``with_text``) text columns from DuckDB tokens (one column per path and side);
    tokens only ``json.loads`` reads exactly (strings with escapes, numbers Python prints differently, objects,
    arrays) are re-read. ``escaped``: per column, whether the row's document holds a backslash (no token of the others
    can)."""
    columns = tuple(tokens.columns)
    frame = tokens.hstack([esc.alias(f"{c}_esc") for c, esc in zip(columns, escaped)])
    kinds, exprs = _side_exprs(columns, tuple(with_text))
    frame = frame.with_columns(kinds).with_columns(exprs)
    sides = []
    for c, wanted in zip(tokens.columns, with_text):
        side = Side(frame[f"{c}_k"], frame[f"{c}_x"] if wanted else None, frame[c])
        if frame[f"{c}_r"].any():
            rows = frame[f"{c}_r"].arg_true()
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
    # The sides of undecided rows already read "missing" (their tokens are null): only documents the reference
    # reads need their values.
    docs = [v for g, (_, v, _) in zip(good, parsed) if g]
    if not docs:
        return ok, deep, sides
    rows = rows.filter(pl.Series(good, dtype=pl.Boolean))
    out = []
    for steps, side in zip(paths, sides):
        values = [m.resolve(v, steps) for v in docs]
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
