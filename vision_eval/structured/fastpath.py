"""``field_accuracy`` vectorized: the semantics of :mod:`matching`, as Polars column operations over a batch.

Extraction never parses JSON row by row when it can be avoided: a strict JSON-grammar regex (nesting ≤ ``DEPTH``)
validates each document, a structural regex proves a key path exists at the right depth, and a plain regex
takes the leaf's raw token when the leaf key occurs once in the document (so the token is the right one).
Rows no regex can decide (escaped strings, objects/arrays, nulls, duplicate keys, deeper nesting, invalid JSON)
are resolved by :mod:`matching` in Python, so both paths give the same answer by construction; composite values
are compared in Python too. Dates are parsed once per distinct string with the reference parser.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import polars as pl

from vision_eval.structured import matching as m

DEPTH = 3
W = r"[ \t\n\r]*"
S = r'"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"'
NUM = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"
SCALAR = rf"(?:{S}|{NUM}|true|false|null)"
# Numbers whose text is what Python's json.dumps prints for them (≤ 15 significant digits, no exponent).
CANONICAL_NUMBER = r"^(?:-?[1-9][0-9]{0,8}|0|-?(?:0|[1-9][0-9]{0,8})\.(?:[0-9]{0,5}[1-9]|0))$"
LOOSE_S = r'"(?:[^"\\]|\\.)*"'
TOKEN = rf'("(?:[^"\\]|\\.)*"|{NUM}|true|false|null|\{{|\[)'
_SAFE_KEY = re.compile(r'^[^"\\\x00-\x1f]+$')


def _value_rx(depth: int) -> str:
    if depth == 0:
        return SCALAR
    v = _value_rx(depth - 1)
    obj = rf"\{{{W}(?:{S}{W}:{W}{v}{W}(?:,{W}{S}{W}:{W}{v}{W})*)?\}}"
    arr = rf"\[{W}(?:{v}{W}(?:,{W}{v}{W})*)?\]"
    return rf"(?:{SCALAR}|{obj}|{arr})"


def _balanced_rx(depth: int) -> str:
    """Content with balanced brackets (strings skipped whole), nesting ≤ depth. Only used on documents VALID
    accepted, so a loose string pattern is exact there (and much faster)."""
    g = rf'(?:[^{{}}\[\]"]|{LOOSE_S})*'
    for _ in range(depth):
        g = rf'(?:[^{{}}\[\]"]|{LOOSE_S}|[\[{{]{g}[\]}}])*'
    return g


VALID = rf"^{W}\{{{W}(?:{S}{W}:{W}{_value_rx(DEPTH - 1)}{W}(?:,{W}{S}{W}:{W}{_value_rx(DEPTH - 1)}{W})*)?\}}{W}$"
_BALANCED = _balanced_rx(DEPTH)


def doc_text(column: str) -> pl.Expr:
    """The candidate JSON object text of a column: fence stripped, first ``{`` to last ``}``."""
    text = pl.col(column)
    bare = text.str.strip_chars(" \t\r\n")
    plain = bare.str.starts_with("{") & bare.str.ends_with("}") & ~bare.str.contains("```", literal=True)
    other = pl.when(~plain).then(text)  # null for plain rows, so the regexes below skip them
    body = pl.coalesce(other.str.extract(m.FENCE, 1), other)
    return pl.coalesce(pl.when(plain).then(bare), body.str.extract(r"(?s)(\{.*\})", 1))


def _key_pattern(key: str) -> str:
    return '"' + re.escape(key) + '"' + W + ":"


@dataclass
class Side:
    """Extracted values of one field on one side: kind and text columns (text: decoded string or JSON)."""

    kind: pl.Series
    text: pl.Series


def _fast_extract(doc: pl.Expr, steps: tuple[str | int, ...], i: int) -> tuple[list[pl.Expr], list[pl.Expr]] | None:
    """Two stages of expressions for a path: raw columns, then ``d{i}`` (decided), ``k{i}`` (kind), ``t{i}`` (text).
    ``None`` when the path needs Python for every row."""
    keys = [s for s in steps if isinstance(s, str)]
    if not keys or not all(_SAFE_KEY.match(k) for k in keys) or not isinstance(steps[-1], str):
        return None
    leaf = steps[-1]
    count = doc.str.count_matches(_key_pattern(leaf))
    # The leaf key nowhere in a valid document: certainly missing. Other misses (an intermediate key absent while
    # the leaf key occurs elsewhere) are rare and left to Python.
    absent = count == 0
    tok, found = pl.col(f"_tok{i}"), pl.col(f"_found{i}")
    if all(isinstance(s, str) for s in steps):
        structure = r"^" + W + r"\{"
        for n, key in enumerate(steps):
            structure += (W + r"\{" if n else "") + _BALANCED + _key_pattern(str(key))
        raw = [
            doc.str.extract(_key_pattern(leaf) + W + TOKEN, 1).alias(f"_tok{i}"),
            (doc.str.contains(structure) & (count == 1)).alias(f"_found{i}"),
            absent.alias(f"_absent{i}"),
        ]
        is_str = tok.str.starts_with('"')
        plain = ~tok.str.contains("\\", literal=True) & ~tok.str.contains(r"^[\[{n]")
        plain = plain & (is_str | tok.is_in(["true", "false"]) | tok.str.contains(CANONICAL_NUMBER))
        present = pl.col("_valid") & found & tok.is_not_null() & plain
        text = pl.when(is_str).then(tok.str.slice(1).str.head(-1)).otherwise(tok)
    else:
        jsonpath = "$" + "".join(f"[{s}]" if isinstance(s, int) else f"['{s}']" for s in steps)
        raw = [
            doc.str.json_path_match(jsonpath).alias(f"_tok{i}"),
            doc.str.contains(_key_pattern(leaf) + W + '"').alias(f"_found{i}"),
            absent.alias(f"_absent{i}"),
            (count == 1).alias(f"_one{i}"),
        ]
        is_str = found
        present = pl.col("_valid") & tok.is_not_null() & pl.col(f"_one{i}") & ~tok.str.contains(r"^[\[{]")
        present = present & (is_str | tok.is_in(["true", "false"]) | tok.str.contains(CANONICAL_NUMBER))
        text = tok
    kind = (
        pl.when(is_str)
        .then(pl.lit("string"))
        .when(tok.is_in(["true", "false"]))
        .then(pl.lit("bool"))
        .otherwise(pl.lit("number"))
    )
    missing = pl.col("_valid") & pl.col(f"_absent{i}")
    decided = [
        (present | missing).fill_null(False).alias(f"d{i}"),
        pl.when(present).then(kind).when(missing).then(pl.lit("missing")).alias(f"k{i}"),
        pl.when(present).then(text).alias(f"t{i}"),
    ]
    return raw, decided


def _python_value(value: Any) -> tuple[str, str | None]:
    k = m.kind(value)
    if k in ("missing", "null"):
        return k, None
    text = value if k == "string" else m.to_json(value)
    try:
        text.encode()
    except UnicodeEncodeError:  # lone surrogates ("\ud800" is valid JSON) cannot enter a Polars string column
        text = _replace_surrogates(text)
    return k, text


def _replace_surrogates(text: str) -> str:
    return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)


def extract_side(batch: pl.DataFrame, column: str, specs: list[m.FieldSpec]) -> tuple[pl.Series, list[Side]]:
    """Per row whether ``column`` holds JSON (a JSON object for ``expected_output``), and per field its values."""
    doc = pl.col("_doc")
    frame = batch.select(doc_text(column).alias("_doc")).with_columns(
        doc.str.contains(VALID).fill_null(False).alias("_valid")
    )
    raw: list[pl.Expr] = []
    decided: list[pl.Expr] = []
    fast: list[bool] = []
    for i, spec in enumerate(specs):
        parts = _fast_extract(doc, m.parse_path(spec.path), i)
        fast.append(parts is not None)
        if parts is not None:
            raw += parts[0]
            decided += parts[1]
    out = frame.with_columns(raw).with_columns(decided) if raw else frame
    undecided: dict[int, pl.Series] = {}
    for i, is_fast in enumerate(fast):
        undecided[i] = (~out[f"d{i}"]).arg_true() if is_fast else pl.Series(range(out.height), dtype=pl.UInt32)
    need = sorted({int(x) for idx in undecided.values() for x in idx.to_list()})
    texts = batch[column].gather(need).to_list() if need else []
    parsed = dict(zip(need, (m.extract_json(t) for t in texts)))
    ok = out["_valid"].to_list()
    for row, (good, value) in parsed.items():
        ok[row] = good if column == "output" else good and isinstance(value, dict)
    sides = []
    for i, spec in enumerate(specs):
        steps = m.parse_path(spec.path)
        kinds = out[f"k{i}"] if fast[i] else pl.Series([None] * out.height, dtype=pl.Utf8)
        vals = out[f"t{i}"] if fast[i] else pl.Series([None] * out.height, dtype=pl.Utf8)
        rows = undecided[i].to_list()
        if rows:
            pairs = [_python_value(m.resolve(parsed[r][1], steps)) if parsed[r][0] else ("missing", None) for r in rows]
            index = pl.Series(rows, dtype=pl.UInt32)
            kinds = kinds.clone().scatter(index, pl.Series([p[0] for p in pairs], dtype=pl.Utf8))
            vals = vals.clone().scatter(index, pl.Series([p[1] for p in pairs], dtype=pl.Utf8))
        sides.append(Side(kinds, vals))
    return pl.Series("ok", ok, dtype=pl.Boolean), sides


def json_text(kind: pl.Expr, text: pl.Expr) -> pl.Expr:
    """JSON text of an extracted value (strings quoted and escaped)."""
    quoted = pl.struct(text.alias("v")).struct.json_encode().str.slice(5).str.head(-1)
    return pl.when(kind == "string").then(quoted).when(kind == "null").then(pl.lit("null")).otherwise(text)


def number_expr(kind: pl.Expr, text: pl.Expr) -> pl.Expr:
    """A number or numeric string as Float64 (the rules of :func:`matching.clean_number`)."""
    plain = text.str.contains(m.NUMBER)  # already clean: the cleaning chain below only sees the other strings
    t = pl.when(~plain).then(text).str.strip_chars()
    inner = t.str.extract(m.PARENS, 1)
    t = pl.when(inner.is_not_null()).then(pl.lit("-") + inner).otherwise(t)
    t = t.str.replace(m.ISO_PREFIX, "").str.replace(m.ISO_SUFFIX, "")
    t = t.str.replace_all(m.CURRENCY, "").str.replace_all(r"[\s,]", "").str.replace_all("--", "", literal=True)
    cleaned = pl.when(plain).then(text).when(t.str.contains(m.NUMBER)).then(t).cast(pl.Float64, strict=False)
    return pl.when(kind == "number").then(text.cast(pl.Float64, strict=False)).when(kind == "string").then(cleaned)


def _fmt(expr: pl.Expr) -> pl.Expr:
    return expr.round(6).cast(pl.Utf8)


def _dates(frame: pl.DataFrame, spec: m.FieldSpec) -> pl.DataFrame:
    strings = pl.concat(
        [frame.filter(pl.col("gk") == "string")["gt"], frame.filter(pl.col("wk") == "string")["wt"]]
    ).unique()
    formats = tuple(spec.formats or ())
    parsed = [m.parse_date(s, formats) for s in strings.to_list()]
    shown = [m.date_text(p, spec.compare_time) if p is not None else None for p in parsed]
    lookup = dict(zip(strings.to_list(), shown))
    table = pl.DataFrame({"key": list(lookup), "val": list(lookup.values())}, schema={"key": pl.Utf8, "val": pl.Utf8})
    frame = frame.join(table.rename({"key": "gt", "val": "gd"}), on="gt", how="left", maintain_order="left")
    return frame.join(table.rename({"key": "wt", "val": "wd"}), on="wt", how="left", maintain_order="left")


def _fuzzy(frame: pl.DataFrame, spec: m.FieldSpec) -> pl.Series:
    from rapidfuzz import process

    both = (pl.col("gk") == "string") & (pl.col("wk") == "string")
    pair = frame.select(
        pl.when(both).then(pl.col("gt")).otherwise(pl.lit("")).alias("g"),
        pl.when(both).then(pl.col("wt")).otherwise(pl.lit("")).alias("w"),
    )
    # Repeated (response, expected) pairs (vendor names, currencies, ...) are scored once.
    uniq = pair.unique()
    dedup = uniq.height * 2 < pair.height
    work = uniq if dedup else pair
    g, w = pl.col("g"), pl.col("w")
    if spec.normalize:
        g = g.str.to_lowercase().str.replace_all(r"\s+", " ").str.strip_chars()
        w = w.str.to_lowercase().str.replace_all(r"\s+", " ").str.strip_chars()
    normed = work.select(g.alias("ng"), w.alias("nw"))
    fn, scale = m.scorer(spec.algorithm)
    sims = process.cpdist(normed["ng"].to_list(), normed["nw"].to_list(), scorer=fn, workers=-1, dtype=None)
    work = work.with_columns((pl.Series("sim", sims, dtype=pl.Float64) / scale).alias("sim"))
    if dedup:
        return pair.join(work, on=["g", "w"], how="left", maintain_order="left")["sim"]
    return work["sim"]


def compare(spec: m.FieldSpec, got: Side, want: Side) -> pl.DataFrame:
    """Columns ``score, hit, reason, expected, actual`` for one field over the batch."""
    f = pl.DataFrame({"gk": got.kind, "gt": got.text, "wk": want.kind, "wt": want.text})
    gk, gt, wk, wt = pl.col("gk"), pl.col("gt"), pl.col("wk"), pl.col("wt")
    f = f.with_columns(json_text(gk, gt).alias("gj"), json_text(wk, wt).alias("wj"))
    gj, wj = pl.col("gj"), pl.col("wj")
    composite = gk.is_in(["object", "array"]) | wk.is_in(["object", "array"])
    miss = pl.lit(False)
    if spec.match == "exact":
        g_num, w_num = gt.cast(pl.Float64, strict=False), wt.cast(pl.Float64, strict=False)
        equal = pl.when(gk == "number").then(g_num == w_num).otherwise(gt == wt)
        rule = (
            pl.when(gk != wk)
            .then(
                pl.struct(
                    miss.alias("h"), pl.format("type mismatch: got {} {}, expected {} {}", gk, gj, wk, wj).alias("r")
                )
            )
            .when(equal)
            .then(pl.struct(pl.lit(True).alias("h"), pl.lit("equal").alias("r")))
            .otherwise(pl.struct(miss.alias("h"), pl.format("got {}, expected {}", gj, wj).alias("r")))
        )
    elif spec.match == "numeric_tolerance":
        f = f.with_columns(number_expr(gk, gt).alias("gn"), number_expr(wk, wt).alias("wn"))
        gn, wn = pl.col("gn"), pl.col("wn")
        diff = (gn - wn).abs()
        tol = (wn.abs() * spec.tolerance) if spec.relative else pl.lit(spec.tolerance)
        if spec.relative:
            tol = pl.when(wn == 0).then(pl.lit(spec.tolerance)).otherwise(tol)
        hit = diff <= tol + 1e-9 * pl.max_horizontal(pl.lit(1.0), tol)
        rule = (
            pl.when(wn.is_null())
            .then(pl.struct(miss.alias("h"), pl.format("expected value is not a number: {}", wj).alias("r")))
            .when(gn.is_null())
            .then(pl.struct(miss.alias("h"), pl.format("not a number: got {}", gj).alias("r")))
            .otherwise(
                pl.struct(
                    hit.alias("h"),
                    pl.format(
                        "diff={} {} tolerance {}",
                        _fmt(diff),
                        pl.when(hit).then(pl.lit("<=")).otherwise(pl.lit(">")),
                        _fmt(tol),
                    ).alias("r"),
                )
            )
        )
    elif spec.match == "date":
        f = _dates(f, spec)
        gd, wd = pl.col("gd"), pl.col("wd")
        rule = (
            pl.when(wk != "string")
            .then(pl.struct(miss.alias("h"), pl.format("expected value is not a date string: {}", wj).alias("r")))
            .when(gk != "string")
            .then(pl.struct(miss.alias("h"), pl.format("not a date string: got {}", gj).alias("r")))
            .when(wd.is_null())
            .then(pl.struct(miss.alias("h"), pl.format("could not parse expected date {}", wj).alias("r")))
            .when(gd.is_null())
            .then(pl.struct(miss.alias("h"), pl.format("could not parse date {}", gj).alias("r")))
            .when(gd == wd)
            .then(pl.struct(pl.lit(True).alias("h"), pl.format("same date {}", wd).alias("r")))
            .otherwise(pl.struct(miss.alias("h"), pl.format("got {}, expected {}", gd, wd).alias("r")))
        )
    else:
        f = f.with_columns(_fuzzy(f, spec))
        sim = pl.col("sim")
        hit = sim >= spec.threshold - 1e-12
        rule = (
            pl.when(wk != "string")
            .then(pl.struct(miss.alias("h"), pl.format("expected value is not a string: {}", wj).alias("r")))
            .when(gk != "string")
            .then(pl.struct(miss.alias("h"), pl.format("not a string: got {}", gj).alias("r")))
            .otherwise(
                pl.struct(
                    hit.alias("h"),
                    pl.format(
                        "similarity {} {} threshold " + str(spec.threshold),
                        sim.round(3).cast(pl.Utf8),
                        pl.when(hit).then(pl.lit(">=")).otherwise(pl.lit("<")),
                    ).alias("r"),
                )
            )
        )
    missing_reason = (
        "missing from the response" if spec.required else "optional field missing from the response (left out)"
    )
    full = (
        pl.when(wk == "missing")
        .then(pl.struct(pl.lit(True).alias("h"), pl.lit("no expected value").alias("r")))
        .when(gk == "missing")
        .then(
            pl.struct(
                pl.lit(False if spec.required else None, pl.Boolean).alias("h"), pl.lit(missing_reason).alias("r")
            )
        )
        .when((gk == "null") & (wk == "null"))
        .then(pl.struct(pl.lit(True).alias("h"), pl.lit("both null").alias("r")))
        .when((gk == "null") | (wk == "null"))
        .then(pl.struct(miss.alias("h"), pl.format("got {}, expected {}", gj, wj).alias("r")))
        .when(composite)
        .then(pl.struct(pl.lit(None, pl.Boolean).alias("h"), pl.lit(None, pl.Utf8).alias("r")))
        .otherwise(rule)
    )
    f = f.with_columns(full.alias("_o"), (composite & (gk != "missing") & (wk != "missing")).alias("_py"))
    out = f.select(
        pl.col("_o").struct.field("h").alias("hit"),
        pl.col("_o").struct.field("r").alias("reason"),
        pl.when(gk != "missing").then(gj).alias("actual"),
        pl.when(wk != "missing").then(wj).alias("expected"),
        pl.col("_py"),
    )
    rows = out["_py"].arg_true()
    if rows.len():
        sub = f[rows]
        outcomes = [
            m.compare_values(spec, _value(a, b), _value(c, d))
            for a, b, c, d in zip(sub["gk"].to_list(), sub["gt"].to_list(), sub["wk"].to_list(), sub["wt"].to_list())
        ]
        out = out.with_columns(
            out["hit"].clone().scatter(rows, pl.Series([o.hit for o in outcomes], dtype=pl.Boolean)),
            out["reason"].clone().scatter(rows, pl.Series([o.reason for o in outcomes], dtype=pl.Utf8)),
        )
    return out.drop("_py").with_columns(pl.col("hit").cast(pl.Float64).alias("score"))


def _value(kind: str, text: str | None) -> Any:
    if kind == "string":
        return text
    if kind == "null":
        return None
    return json.loads(text) if text is not None else None
