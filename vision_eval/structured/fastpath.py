"""``field_accuracy`` vectorized: the semantics of :mod:`matching`, as Polars column operations over a batch.

Values are extracted by :mod:`duckpath` (DuckDB) into :class:`Side` columns (kind, text, json); this module compares
them. Composite values (objects, arrays) are compared in Python with the reference rules, dates are parsed once per
distinct string with the reference parser, fuzzy similarity once per distinct pair with rapidfuzz.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import polars as pl

from vision_eval.structured import matching as m

# Numbers whose text is what Python's json.dumps prints for them (≤ 15 significant digits, no exponent; Python
# switches to an exponent below 1e-4).
CANONICAL_NUMBER = (
    r"^(?:-?[1-9][0-9]{0,8}|0|-?[1-9][0-9]{0,8}\.(?:[0-9]{0,5}[1-9]|0)|-?0\.(?:0{0,3}[1-9](?:[0-9]{0,4}[1-9])?|0))$"
)


def doc_text(column: str) -> pl.Expr:
    """The candidate JSON object text of a column: fence stripped, first ``{`` to last ``}``."""
    text = pl.col(column)
    bare = text.str.strip_chars(" \t\r\n")
    plain = bare.str.starts_with("{") & bare.str.ends_with("}") & ~bare.str.contains("```", literal=True)
    other = pl.when(~plain).then(text)  # null for plain rows, so the regexes below skip them
    body = pl.coalesce(other.str.extract(m.FENCE, 1), other)
    return pl.coalesce(pl.when(plain).then(bare), body.str.extract(r"(?s)(\{.*\})", 1))


KIND = pl.Enum(["missing", "string", "number", "bool", "null", "object", "array"])
"""The kinds of JSON values (:func:`matching.kind`) as a column type."""


@dataclass
class Side:
    """Extracted values of one field on one side: kind, text (decoded string or JSON; ``None`` where no rule of the
    field reads it) and JSON text columns."""

    kind: pl.Series
    text: pl.Series | None
    json: pl.Series


def python_value(value: Any) -> tuple[str, str | None]:
    """Kind and text of a Python JSON value (the columns of a :class:`Side`)."""
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


def clean_numbers(texts: pl.Series) -> pl.Series:
    """Numeric strings as Float64 (the rules of :func:`matching.clean_number`; null where not a number). Each step
    is materialized once (an expression tree would repeat the shared steps in both branches)."""
    steps = texts.str.strip_chars().to_frame("t")
    steps = steps.with_columns(pl.col("t").str.extract(m.PARENS, 1).alias("inner"))
    t = pl.when(pl.col("inner").is_not_null()).then(pl.lit("-") + pl.col("inner")).otherwise(pl.col("t"))
    t = t.str.replace(m.ISO_PREFIX, "").str.replace(m.ISO_SUFFIX, "")
    t = t.str.replace_all(m.CURRENCY, "").str.replace_all(r"[\s,]", "").str.replace_all("--", "", literal=True)
    cleaned = steps.select(t).to_series()
    return pl.select(pl.when(cleaned.str.contains(m.NUMBER)).then(cleaned).cast(pl.Float64, strict=False)).to_series()


def numbers(frame: pl.DataFrame, kind: str, text: str) -> pl.Series:
    """A number or numeric string as Float64 (null otherwise); the cleaning chain runs only on strings that are not
    plain numbers already."""
    k, t = pl.col(kind), pl.col(text)
    plain = pl.when(k == "string").then(t).str.contains(m.NUMBER)  # null for the others: they skip the regex
    out = frame.select(
        pl.when((k == "number") | plain).then(t.cast(pl.Float64, strict=False)).alias("n"),
        (~plain).fill_null(False).alias("dirty"),
    )
    rows = out["dirty"].arg_true()
    if not rows.len():
        return out["n"]
    return out["n"].scatter(rows, clean_numbers(frame[text].gather(rows)))


def _fmt(expr: pl.Expr) -> pl.Expr:
    return expr.round(6).cast(pl.Utf8)


@lru_cache(maxsize=65536)
def _shown_date(text: str, formats: tuple[str, ...], compare_time: bool) -> str | None:
    """The compared form of a date string (cached: the same dates recur batch after batch)."""
    parsed = m.parse_date(text, formats)
    return m.date_text(parsed, compare_time) if parsed is not None else None


def _dates(frame: pl.DataFrame, spec: m.FieldSpec) -> pl.DataFrame:
    strings = (
        pl.concat([frame.filter(pl.col("gk") == "string")["gt"], frame.filter(pl.col("wk") == "string")["wt"]])
        .unique()
        .to_list()
    )
    formats = tuple(spec.formats or ())
    shown = [_shown_date(s, formats, spec.compare_time) for s in strings]
    table = pl.DataFrame({"key": strings, "val": shown}, schema={"key": pl.Utf8, "val": pl.Utf8})
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
    """Columns ``score, hit, reason, expected, actual, python`` for one field over the batch (``python``: the row was
    compared by the reference, so its reason may hold any character)."""
    columns = {"gk": got.kind, "gj": got.json, "wk": want.kind, "wj": want.json}
    if spec.match != "exact":  # exact compares JSON texts (one spelling per value); the other rules read values
        columns |= {"gt": got.text, "wt": want.text}
    f = pl.DataFrame(columns)
    gk, wk = pl.col("gk"), pl.col("wk")
    gj, wj = pl.col("gj"), pl.col("wj")
    composite = gk.is_in(["object", "array"]) | wk.is_in(["object", "array"])
    miss = pl.lit(False)
    if spec.match == "exact":
        g_num, w_num = gj.cast(pl.Float64, strict=False), wj.cast(pl.Float64, strict=False)
        equal = pl.when(gk == "number").then(g_num == w_num).otherwise(gj == wj)
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
        f = f.with_columns(numbers(f, "gk", "gt").alias("gn"), numbers(f, "wk", "wt").alias("wn"))
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
        gj.alias("actual"),  # null when missing
        wj.alias("expected"),
        pl.col("_py"),
    )
    rows = out["_py"].arg_true()
    if rows.len():
        sub = f[rows]
        outcomes = [
            m.compare_values(spec, _value(a, b), _value(c, d))
            for a, b, c, d in zip(sub["gk"].to_list(), sub["gj"].to_list(), sub["wk"].to_list(), sub["wj"].to_list())
        ]
        out = out.with_columns(
            out["hit"].clone().scatter(rows, pl.Series([o.hit for o in outcomes], dtype=pl.Boolean)),
            out["reason"].clone().scatter(rows, pl.Series([o.reason for o in outcomes], dtype=pl.Utf8)),
        )
    # ``python``: reasons written by the reference, which may hold raw object keys (control characters included).
    return out.rename({"_py": "python"}).with_columns(pl.col("hit").cast(pl.Float64).alias("score"))


def _value(kind: str, json_text: str | None) -> Any:
    return json.loads(json_text) if json_text is not None and kind != "missing" else None
