"""``field_accuracy``: which text of a response DuckDB reads, and where its reading is the reference's.

For each text, the candidate JSON object text where DuckDB's reading of it is :func:`values.read_json`'s: the whole
text (spaces stripped) when it is a plain object; the content of the first fenced block when that is an object; else,
in text with no fence, the first ``{`` to the last ``}``. Null where only the reference can decide (text that may be
a whole JSON document of another shape, a fenced block that is not an object, ...). Then the flags
:mod:`duckpath` decides rows with (see :func:`candidates`).

Most texts are a tight object (``{`` ... ``}``, no fence) already: the steps that find a candidate in other text run
on the other texts only.
"""

from __future__ import annotations

from functools import lru_cache

import polars as pl

from vision_eval.structured import matching as m
from vision_eval.structured.masked import only

Paths = tuple[tuple[str | int, ...], ...]

JSON_START = r"^[\s\x1c-\x1f]*(?:[\[{\"0-9-]|true|false|null|NaN|Infinity)"
"""Text starting like a JSON document once Python's ``str.strip`` has run (its whitespace is Unicode's plus
``\x1c-\x1f``): the reference reads the whole text first, so only it decides such a row when the first reading
failed."""
TRAILING_COMMA = r",\s*[\]}]"
ESCAPED_KEY = r'\\.(?:[^"\\]|\\.)*"\s*:'
"""A key written with an escape (``"\\u0061"`` is ``"a"``): repeated keys could hide behind it."""
UNLIKE_PYTHON = f"{TRAILING_COMMA}|{ESCAPED_KEY}"
"""Text DuckDB may read other than ``json.loads``: a trailing comma (DuckDB accepts it), an escaped key."""
NAN_INF = r"[:\[,]\s*[-+]?(?i:nan|inf)"
"""``nan``, ``inf``, ``Infinity`` spelt any way (DuckDB reads them all; ``json.loads`` only three spellings)."""
STRUCTURAL_COMMA = r'^(?:[^"]|"(?:[^"\\]|\\.)*")*,[ \t\n\r]*[\]}]'
"""A trailing comma outside every string (in JSON text, a ``"`` outside a string opens one, and the first unescaped
``"`` after it closes it)."""
OPEN_OBJECT = r"^[ \t\n\r]*\{"
FENCE_TAG = r"^[A-Za-z]*[ \t]*\n?"
"""What :data:`values.FENCE` reads between the opening fence and the block (a language tag, a line break)."""
SPACES = " \t\r\n"

_REGEX_META = set("\\.+*?()|[]{}^$#&-~")


def _literal(text: str) -> str:
    return "".join("\\" + c if c in _REGEX_META else c for c in text)


def candidates(raw: pl.DataFrame, paths: Paths, count_keys: bool = True) -> pl.DataFrame:
    """Per text column ``c``: ``c`` the candidate JSON object text, ``c_trusted`` (DuckDB's reading of it is the
    reference's, unless a key repeats), ``c_keys`` (quoted path keys in it; only where ``count_keys``),
    ``c_shallow`` (the text cannot nest deeper than MAX_DEPTH), ``c_esc`` (the text holds a backslash, so a string
    token may hold an escape), ``c_none`` (the text holds no JSON the reference could find) and ``c_lenient`` (the
    text is not JSON if DuckDB reads it: a trailing comma outside its strings)."""
    names = tuple(raw.columns)
    first, last = _stages(names, paths, count_keys)
    frame = raw.with_columns(first)
    # Texts that are not a tight object, of every column at once: their candidate, whether they hold no JSON.
    loose = [(~frame[f"{n}_tight"]).arg_true() for n in names]
    plan = pl.concat([frame[n].gather(rows) for n, rows in zip(names, loose)]).alias("t").to_frame().lazy()
    for stage in _loose_stages():
        plan = plan.with_columns(stage)
    read = plan.collect()
    found, start = [], 0
    for n, rows in zip(names, loose):
        part = read.slice(start, rows.len())
        start += rows.len()
        none = pl.Series(f"{n}_none", dtype=pl.Boolean).extend_constant(False, frame.height)
        found += [frame[n].scatter(rows, part["t"]), none.scatter(rows, part["none"])] if rows.len() else [none]
    plan = frame.lazy().with_columns(found)
    for stage in last:
        plan = plan.with_columns(stage)
    return plan.collect()


def prepare_candidates(names: tuple[str, ...], paths: Paths, count_keys: bool) -> None:
    """Build (and cache) the expressions :func:`candidates` runs on these columns for these paths."""
    _stages(names, paths, count_keys)
    _loose_stages()


@lru_cache(maxsize=64)
def _stages(names: tuple[str, ...], paths: Paths, count_keys: bool) -> tuple[list[pl.Expr], list[list[pl.Expr]]]:
    """What :func:`candidates` computes on every text before it finds the candidates (``c_shallow``, ``c_esc``,
    ``c_fence``, ``c_tight``) and the stages after (built once per field list: building them costs more than running
    them on a small batch)."""
    first = []
    for n in names:
        text = pl.col(n)
        fence = text.str.contains("```", literal=True).fill_null(False)
        first += [
            # Rows that may nest deeper than MAX_DEPTH (more brackets than that) are left to the reference.
            ((text.str.len_bytes() <= m.MAX_DEPTH) | (text.str.count_matches(r"[\[{]") <= m.MAX_DEPTH))
            .fill_null(True)
            .alias(f"{n}_shallow"),
            text.str.contains("\\", literal=True).fill_null(False).alias(f"{n}_esc"),
            fence.alias(f"{n}_fence"),
            (text.str.starts_with("{") & text.str.ends_with("}") & ~fence).fill_null(False).alias(f"{n}_tight"),
        ]
    keys = sorted({str(step) for steps in paths for step in steps})
    # `key"` rather than `"key"`: every quoted key still counts once, and the search runs faster (a name that merely
    # ends with a key counts too; that only sends the row to the exact test).
    quoted_keys = "|".join(_literal(k) + '"' for k in sorted(keys, key=len, reverse=True))
    checked = [pl.col(n).str.count_matches(quoted_keys).alias(f"{n}_keys") for n in names if count_keys]
    checked += [
        (pl.col(n).str.starts_with("{") & ~pl.col(n).str.contains(UNLIKE_PYTHON) & pl.col(f"{n}_shallow"))
        .fill_null(False)
        .alias(f"{n}_trusted")
        for n in names
    ]
    # The literal test is cheap; the exact one runs only on the rows it flags (a masked row is skipped).
    nan = [only(pl.col(f"{n}_trusted") & pl.col(n).str.contains("(?i)nan|inf"), pl.col(n)) for n in names]
    # A trailing comma outside the strings of a bare or prose-wrapped object (no fence: the reference would try
    # other blocks): when DuckDB reads the text as one value, json.loads fails at that comma (or before), on the
    # whole text and on the object at the first "{" alike.
    lenient = [
        only(
            (pl.col(n).str.starts_with("{") & ~pl.col(f"{n}_trusted") & pl.col(f"{n}_shallow")
             & ~pl.col(f"{n}_fence")).fill_null(False),
            pl.col(n),
        ).str.contains(STRUCTURAL_COMMA).alias(f"{n}_lenient")
        for n in names
    ]  # fmt: skip
    trusted = [
        (pl.col(f"{n}_trusted") & ~expr.str.contains(NAN_INF).fill_null(False)).alias(f"{n}_trusted")
        for n, expr in zip(names, nan)
    ]
    return first, [checked, trusted + lenient]


@lru_cache(maxsize=1)
def _loose_stages() -> list[list[pl.Expr]]:
    r"""Stages over ``t``, texts that are not a tight object: ``t`` becomes the candidate and ``none`` says whether
    the text holds no JSON the reference could find. Each step is a column of its own (Polars does not share a
    sub-expression between the branches of a ``when``), and most rows, a plain object already, skip the later steps
    (their value is empty there, see :func:`only`).

    The fenced block and the braced object are found as :data:`values.FENCE` and ``(?s)(\{.*\})`` find them, without
    capture groups (which make Rust's regex engine several times slower): the first fence pairs with the next one
    (the lazy body stops there, and without one no later fence has one either), and the tag (:data:`FENCE_TAG`)
    holds no backtick, so the next fence is never inside it; the braced object runs from the first ``{`` to the
    last ``}``, none when nothing is left between them."""
    text, fence, bare = pl.col("t"), pl.col("fence"), pl.col("bare")
    # No fence, and either no object and not a JSON document ("I could not read it."), or an object that never
    # closes (an answer cut short).
    none = ~fence & (
        (~text.str.contains("{", literal=True) & ~text.str.contains(JSON_START))
        | (text.str.contains(OPEN_OBJECT) & ~text.str.contains("}", literal=True))
    )
    plain = bare.str.starts_with("{") & bare.str.ends_with("}") & ~fence
    other = pl.col("other")
    fenced, blocks, braced = pl.col("fenced"), pl.col("blocks"), pl.col("braced")
    block = pl.when(fenced.str.starts_with("{") & fenced.str.ends_with("}")).then(fenced)
    return [
        [text.str.contains("```", literal=True).fill_null(False).alias("fence")],
        [text.str.strip_chars(SPACES).alias("bare"), none.fill_null(False).alias("none")],
        [plain.alias("plain"), (~plain & ~text.str.contains(JSON_START)).fill_null(False).alias("other")],
        [
            only(other & fence, text).str.splitn("```", 3).alias("blocks"),  # before, block, after (null: no fence)
            only(other & ~fence, text).str.replace(r"^[^{]*", "").str.replace(r"[^}]*$", "").alias("braced"),
        ],
        [
            pl.when(blocks.struct.field("field_2").is_not_null())
            .then(blocks.struct.field("field_1").str.replace(FENCE_TAG, "").str.strip_chars(SPACES))
            .alias("fenced"),
            pl.when(braced != "").then(braced).alias("prose"),
        ],
        [
            pl.when(pl.col("plain"))
            .then(bare)
            .when(fenced.is_not_null())
            .then(block)
            .otherwise(pl.col("prose"))
            .alias("t")
        ],
    ]
