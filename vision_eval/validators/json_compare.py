"""Expected and response JSON values compared column-wise, from the tokens DuckDB's ``json_extract`` returns.

DuckDB prints every token it returns (strings re-escaped, numbers as int64/double), so two string tokens are equal
exactly when the decoded strings are, and equal tokens are equal values. Each (expected, response) pair of token
columns is first compared as text, which decides most rows; only the rows whose tokens differ are compared as
:meth:`json_check._Compare.equal` does (kinds, numbers as floats, strings case-folded), in one long frame.
"""

from __future__ import annotations

import json
from typing import Any

import polars as pl

from vision_eval import duck
from vision_eval.validators.json_tree import encode

HIT, MISMATCH, MISSING, BAD = 0, 1, 2, 3
"""Outcome of a pair: equal, different, absent from the response, or a difference JSON Schema reports (kind)."""
_DIFFERENT = 4
SAFE_NUMBER = r"^-?(?:[1-9][0-9]{0,14}(?:\.[0-9]+)?|0(?:\.(?:0{0,4}[1-9][0-9]*|0))?)$"
"""Number tokens msgspec prints the same as DuckDB (shortest digits; msgspec writes exponents from 1e16 and below
1e-5); other numbers get their text from Python."""
_FIRST = {'"': "s", "t": "b", "f": "b", "n": "z", "{": "o", "[": "a"}

Pair = tuple[str, str, str, "pl.Expr | None"]
"""``(name, expected token column, response token column, gate)``; where the gate is false the pair is BAD."""


def extract(texts: pl.DataFrame, pointers: dict[str, list[str]]) -> pl.DataFrame:
    """For each text column ``c`` of ``texts`` (a key of ``pointers``): ``{c}ok`` (DuckDB parsed the text) and
    ``{c}{k}``, the JSON token at pointer ``k`` (null: absent). One query, one parse per text."""
    inner, outer = [], []
    for c, ptrs in pointers.items():
        listed = "[" + ", ".join("'" + p.replace("'", "''") + "'" for p in ptrs or [""]) + "]"
        inner.append(f"try(json_extract({c}, {listed})) AS {c}_x")
        outer += [f"{c}_x IS NOT NULL AS {c}ok", *(f"{c}_x[{k + 1}] AS {c}{k}" for k in range(len(ptrs)))]
    with duck.cursor() as con:
        con.register("docs", texts.select(list(pointers)).to_arrow())
        tokens: pl.DataFrame = con.sql(f"SELECT {', '.join(outer)} FROM (SELECT {', '.join(inner)} FROM docs)").pl()
        return tokens


def kind(token: pl.Expr) -> pl.Expr:
    """``s`` string, ``b`` boolean, ``z`` null, ``o`` object, ``a`` array, ``d`` number; null when absent."""
    first = token.str.head(1).replace_strict(_FIRST, default="d", return_dtype=pl.Utf8)
    return pl.when(token.is_not_null()).then(first)


def codes(frame: pl.DataFrame, pairs: list[Pair], opts: Any) -> pl.DataFrame:
    """One UInt8 column per pair: HIT, MISMATCH, MISSING or BAD."""
    quick = []
    for name, want, got, gate in pairs:
        w, g = pl.col(want), pl.col(got)
        code = (
            pl.when(g.is_null()).then(MISSING).when(w.is_null()).then(BAD).when(w == g).then(HIT).otherwise(_DIFFERENT)
        )
        quick.append((pl.when(gate).then(code).otherwise(BAD) if gate is not None else code).cast(pl.UInt8).alias(name))
    out = frame.select(quick)
    if not pairs:
        return out
    differing = [k for k, flag in enumerate(out.select((pl.all() == _DIFFERENT).any()).row(0)) if flag]
    if not differing:
        return out
    both = frame.hstack(out).lazy().with_row_index("at")  # pair names (m0, i...) are not token column names
    long = pl.concat(
        both.filter(pl.col(pairs[k][0]) == _DIFFERENT).select(
            pl.lit(k, pl.UInt32).alias("k"), "at", pl.col(pairs[k][1]).alias("w"), pl.col(pairs[k][2]).alias("g")
        )
        for k in differing
    ).collect()
    long = long.with_columns(_detailed(long, opts).alias("code"))
    fixed = []
    for (k,), sub in long.partition_by("k", as_dict=True, maintain_order=True).items():
        fixed.append(out[pairs[k][0]].clone().scatter(sub["at"], sub["code"]))
    return out.with_columns(fixed)


def _detailed(long: pl.DataFrame, opts: Any) -> pl.Series:
    """Codes of pairs whose tokens differ (``w``, ``g``: both present)."""
    w, g, kw, kg = pl.col("w"), pl.col("g"), pl.col("kw"), pl.col("kg")
    columns = [kind(w).alias("kw"), kind(g).alias("kg")]
    # Different tokens are different strings, which case-folding and whitespace collapsing may make equal.
    folding = opts.compare_values and not opts.case_sensitive
    if folding:
        columns += [_folded(w).alias("fw"), _folded(g).alias("fg"), _plain(w).alias("pw"), _plain(g).alias("pg")]
    frame = long.with_columns(columns)
    if folding:
        fixed = []
        for token, folded, plain, k in (("w", "fw", "pw", "kw"), ("g", "fg", "pg", "kg")):
            rows = frame.select((pl.col(k) == "s") & ~pl.col(plain)).to_series().arg_true()
            texts = [" ".join(json.loads(t).lower().split()) for t in frame[token].gather(rows).to_list()]
            fixed.append(frame[folded].scatter(rows, pl.Series(texts, dtype=pl.Utf8)) if texts else frame[folded])
        frame = frame.with_columns(fixed)
    equal: pl.Expr = pl.lit(not opts.compare_values)
    if opts.compare_values:
        a, b, tol = w.cast(pl.Float64, strict=False), g.cast(pl.Float64, strict=False), opts.number_tolerance
        close = a == b
        if tol:  # math.isclose(a, b, rel_tol=tol, abs_tol=0.0), operation for operation
            diff = (b - a).abs()
            close = close | (diff <= (b * tol).abs()) | (diff <= (a * tol).abs())
        strings = (pl.col("fw") == pl.col("fg")) if folding else pl.lit(False)
        equal = pl.when((kw == "s") & (kg == "s")).then(strings).when((kw == "d") & (kg == "d")).then(close)
        equal = equal.otherwise(False)
    bad = (kw != "z") & (kw != kg)
    if opts.compare_values:  # an expected null against an object or array: a mismatch showing the whole value
        bad = bad | ((kw == "z") & kg.is_in(["o", "a"]))
    return frame.select(pl.when(bad).then(BAD).when(equal).then(HIT).otherwise(MISMATCH).cast(pl.UInt8)).to_series()


def _plain(token: pl.Expr) -> pl.Expr:
    """A string token Polars folds as Python does: ASCII without escapes."""
    return ~token.str.contains("\\", literal=True) & (token.str.len_bytes() == token.str.len_chars())


def _folded(token: pl.Expr) -> pl.Expr:
    """``" ".join(s.lower().split())`` of a plain string token (see :func:`_plain`; Python folds the others)."""
    inner = token.str.strip_prefix('"').str.strip_suffix('"')
    return inner.str.to_lowercase().str.replace_all(" +", " ").str.strip_chars(" ")


def canonical(tokens: pl.Series) -> pl.Series:
    """Each token as msgspec prints the value (``json_check.json_rows`` encodes such details with msgspec)."""
    t = pl.col(tokens.name)
    odd = t.str.contains("\\", literal=True) | (~t.str.contains(SAFE_NUMBER) & ~t.str.contains(r'^["tfn]'))
    rows = tokens.to_frame().select(odd.fill_null(False)).to_series().arg_true()
    if not rows.len():
        return tokens
    texts = [encode(json.loads(t)) for t in tokens.gather(rows).to_list()]
    return tokens.clone().scatter(rows, texts)
