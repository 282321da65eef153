"""``field_accuracy`` vectorized: the semantics of :mod:`matching`, as Polars column operations over a batch.

Values are extracted by :mod:`duckpath` (DuckDB) into :class:`Side` columns (kind, text, json); this module compares
them. Composite values (objects, arrays) are compared in Python with the reference rules, dates are parsed once per
distinct string with the reference parser, fuzzy similarity once per distinct pair with rapidfuzz.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import polars as pl

from vision_eval.structured import matching as m
from vision_eval.structured.datepass import prepare_dates, shown_date_column
from vision_eval.structured.masked import only
from vision_eval.structured.values import SAFE_MARGIN, SLACK

# Numbers whose text is what Python's json.dumps prints for them (≤ 15 significant digits, no exponent; Python
# switches to an exponent below 1e-4).
CANONICAL_NUMBER = (
    r"^(?:-?[1-9][0-9]{0,8}|0|-?[1-9][0-9]{0,8}\.(?:[0-9]{0,5}[1-9]|0)|-?0\.(?:0{0,3}[1-9](?:[0-9]{0,4}[1-9])?|0))$"
)


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
    text: str = value if k == "string" else (m.to_json(value) or "")
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
    plain numbers already. Exact as long as :func:`inexact_numbers` is false."""
    k, t = pl.col(kind), pl.col(text)
    string = k == "string"
    plain = only(string, t).str.contains(m.NUMBER)  # false for the others: they skip the regex
    out = frame.select(
        pl.when((k == "number") | plain).then(t.cast(pl.Float64, strict=False)).alias("n"),
        (string & ~plain).fill_null(False).alias("dirty"),
    )
    rows = out["dirty"].arg_true()
    if not rows.len():
        return out["n"]
    return out["n"].scatter(rows, clean_numbers(frame[text].gather(rows)))


DIGITS = 16
"""Numbers with this many digits or more may not be exact as Float64 (2**53 has 16 digits)."""


def _many_digits(mask: pl.Expr, text: pl.Expr) -> pl.Expr:
    """``text`` holds at least :data:`DIGITS` digits (tested only where ``mask`` holds and the text is that long)."""
    return only(mask & (text.str.len_bytes() >= DIGITS), text).str.count_matches("[0-9]") >= DIGITS


def inexact_numbers(kind: pl.Expr, text: pl.Expr) -> pl.Expr:
    """Where a number (or numeric string) may not be read exactly as Float64 by :func:`numbers`: 16 digits or more
    (an integer beyond 2**53 is compared exactly by the reference), letters in a JSON number (``Infinity``), and
    non-ASCII strings (digits of other scripts)."""
    number, string = kind == "number", kind == "string"
    return (
        _many_digits(number | string, text)
        | only(number, text).str.contains("[A-Za-z]")
        | (string & (text.str.len_bytes() != text.str.len_chars()))
    ).fill_null(False)


def inexact_json_numbers(got: tuple[pl.Expr, pl.Expr], want: tuple[pl.Expr, pl.Expr]) -> pl.Expr:
    """Where two JSON numbers (kind, JSON text) may not compare exactly as Float64 (see :func:`inexact_numbers`);
    false unless both are numbers."""
    both = (got[0] == "number") & (want[0] == "number")
    return pl.any_horizontal(
        [_many_digits(both, text) | only(both, text).str.contains("[A-Za-z]") for _, text in (got, want)]
    ).fill_null(False)


def _fmt(expr: pl.Expr) -> pl.Expr:
    return expr.round(6).cast(pl.Utf8)


def _dates(frame: pl.DataFrame, spec: m.FieldSpec) -> pl.DataFrame:
    """``frame`` with the compared dates ``gd``/``wd`` of its string values ``gt``/``wt`` (each distinct string read
    once)."""
    strings = pl.concat([frame.filter(pl.col("gk") == "string")["gt"], frame.filter(pl.col("wk") == "string")["wt"]])
    strings = strings.unique()
    shown = shown_date_column(strings, tuple(spec.formats or ()), spec.compare_time)
    table = pl.DataFrame([strings.alias("key"), shown.alias("val")])
    frame = frame.join(table.rename({"key": "gt", "val": "gd"}), on="gt", how="left", maintain_order="left")
    return frame.join(table.rename({"key": "wt", "val": "wd"}), on="wt", how="left", maintain_order="left")


FEW_PAIRS = 2000
"""Up to this many distinct pairs, similarities are computed in a Python loop rather than by ``cpdist``."""


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
    got, want = normed["ng"].to_list(), normed["nw"].to_list()
    if len(got) <= FEW_PAIRS:  # a plain loop: no numpy to import, no threads to start
        sims: Any = [fn(a, b) for a, b in zip(got, want)]
    else:
        sims = process.cpdist(got, want, scorer=fn, workers=-1, dtype=None)
    work = work.with_columns((pl.Series("sim", sims, dtype=pl.Float64) / scale).alias("sim"))
    if dedup:
        return pair.join(work, on=["g", "w"], how="left", maintain_order="left")["sim"]
    return work["sim"]


def _inputs(spec: m.FieldSpec, got: Side, want: Side) -> pl.DataFrame:
    """The columns one field's rule reads: kinds and JSON texts (``gk, gj, wk, wj``) and the rule's own (numbers
    ``gn, wn``, compared dates ``gd, wd``, similarity ``sim``)."""
    columns = {"gk": got.kind, "gj": got.json, "wk": want.kind, "wj": want.json}
    if spec.match == "exact":  # exact compares JSON texts (one spelling per value); the other rules read values
        inexact = inexact_json_numbers((pl.col("gk"), pl.col("gj")), (pl.col("wk"), pl.col("wj")))
        return pl.DataFrame(columns).with_columns(inexact.alias("py"))
    f = pl.DataFrame(columns | {"gt": got.text, "wt": want.text})
    if spec.match == "numeric_tolerance":
        f = f.with_columns(
            numbers(f, "gk", "gt").alias("gn"),
            numbers(f, "wk", "wt").alias("wn"),
            (inexact_numbers(pl.col("gk"), pl.col("gt")) | inexact_numbers(pl.col("wk"), pl.col("wt"))).alias("py"),
        )
    elif spec.match == "date":
        f = _dates(f, spec).with_columns(pl.lit(False).alias("py"))
    else:
        f = f.with_columns(_fuzzy(f, spec), pl.lit(False).alias("py"))
    return f.drop("gt", "wt")


def _bound(tol: pl.Expr) -> pl.Expr:
    return tol + SLACK * pl.max_horizontal(pl.lit(1.0), tol)


def _near_bound(spec: m.FieldSpec, gn: pl.Expr, wn: pl.Expr) -> pl.Expr:
    """Where float64 rounding might decide ``diff <= bound`` differently from exact arithmetic (the reference
    decides those rows; see :func:`values.tolerance_compare`)."""
    diff = (gn - wn).abs()
    tol = (wn.abs() * spec.tolerance) if spec.relative else pl.lit(spec.tolerance)
    if spec.relative:
        tol = pl.when(wn == 0).then(pl.lit(spec.tolerance)).otherwise(tol)
    bound = _bound(tol)
    return ((diff - bound).abs() <= SAFE_MARGIN * pl.max_horizontal(diff, bound)).fill_null(False)


def _outcome(spec: m.FieldSpec, col: Callable[[str], pl.Expr]) -> pl.Expr:
    """A struct ``h`` (hit: true, false, or null when left out), ``r`` (reason) per row; ``col`` names the columns
    of :func:`_inputs` (and ``got_json`` is the column of responses that are JSON). Composite values (objects,
    arrays) are left null for the reference."""
    gk, wk, gj, wj = col("gk"), col("wk"), col("gj"), col("wj")
    miss = pl.lit(False)

    def out(hit: pl.Expr | bool | None, reason: pl.Expr | str | None) -> pl.Expr:
        h = hit if isinstance(hit, pl.Expr) else pl.lit(hit, pl.Boolean)
        r = reason if isinstance(reason, pl.Expr) else pl.lit(reason, pl.Utf8)
        return pl.struct(h.alias("h"), r.alias("r"))

    if spec.match == "exact":
        g_num, w_num = gj.cast(pl.Float64, strict=False), wj.cast(pl.Float64, strict=False)
        equal = pl.when(gk == "number").then(g_num == w_num).otherwise(gj == wj)
        rule = (
            pl.when(gk != wk)
            .then(out(miss, pl.format("type mismatch: got {} {}, expected {} {}", gk, gj, wk, wj)))
            .when(equal)
            .then(out(True, "equal"))
            .otherwise(out(miss, pl.format("got {}, expected {}", gj, wj)))
        )
    elif spec.match == "numeric_tolerance":
        gn, wn = col("gn"), col("wn")
        diff = (gn - wn).abs()
        tol = (wn.abs() * spec.tolerance) if spec.relative else pl.lit(spec.tolerance)
        if spec.relative:
            tol = pl.when(wn == 0).then(pl.lit(spec.tolerance)).otherwise(tol)
        hit = diff <= _bound(tol)
        sign = pl.when(hit).then(pl.lit("<=")).otherwise(pl.lit(">"))
        rule = (
            pl.when(wn.is_null())
            .then(out(miss, pl.format("expected value is not a number: {}", wj)))
            .when(gn.is_null())
            .then(out(miss, pl.format("not a number: got {}", gj)))
            .otherwise(out(hit, pl.format("diff={} {} tolerance {}", _fmt(diff), sign, _fmt(tol))))
        )
    elif spec.match == "date":
        gd, wd = col("gd"), col("wd")
        rule = (
            pl.when(wk != "string")
            .then(out(miss, pl.format("expected value is not a date string: {}", wj)))
            .when(gk != "string")
            .then(out(miss, pl.format("not a date string: got {}", gj)))
            .when(wd.is_null())
            .then(out(miss, pl.format("could not parse expected date {}", wj)))
            .when(gd.is_null())
            .then(out(miss, pl.format("could not parse date {}", gj)))
            .when(gd == wd)
            .then(out(True, pl.format("same date {}", wd)))
            .otherwise(out(miss, pl.format("got {}, expected {}", gd, wd)))
        )
    else:
        sim = col("sim")
        hit = sim >= spec.threshold - 1e-12
        sign = pl.when(hit).then(pl.lit(">=")).otherwise(pl.lit("<"))
        shown = pl.format(f"similarity {{}} {{}} threshold {spec.threshold}", sim.round(3).cast(pl.Utf8), sign)
        rule = (
            pl.when(wk != "string")
            .then(out(miss, pl.format("expected value is not a string: {}", wj)))
            .when(gk != "string")
            .then(out(miss, pl.format("not a string: got {}", gj)))
            .otherwise(out(hit, shown))
        )
    missing = "missing from the response" if spec.required else "optional field missing from the response (left out)"
    return (
        pl.when(~pl.col("got_json"))
        .then(out(False, m.NOT_JSON))
        .when(wk == "missing")
        .then(out(True, "no expected value"))
        .when(gk == "missing")
        .then(out(False if spec.required else None, missing))
        .when((gk == "null") & (wk == "null"))
        .then(out(True, "both null"))
        .when((gk == "null") | (wk == "null"))
        .then(out(miss, pl.format("got {}, expected {}", gj, wj)))
        .when(gk.is_in(["object", "array"]) | wk.is_in(["object", "array"]))
        .then(out(None, None))
        .otherwise(rule)
    )


def prepare(specs: list[m.FieldSpec]) -> None:
    """Build (and cache) what :func:`compare` runs for these fields: their rules, their date expressions (importing
    ``_strptime``), their fuzzy scorers (importing rapidfuzz)."""
    for i, spec in enumerate(specs):
        _field_exprs(spec.model_dump_json(exclude_unset=True), i)
        if spec.match == "date":
            prepare_dates(tuple(spec.formats or ()), spec.compare_time)
        elif spec.match == "fuzzy":
            m.scorer(spec.algorithm)


@lru_cache(maxsize=256)
def _field_exprs(spec_json: str, i: int) -> list[pl.Expr]:
    """The columns :func:`compare` computes for field ``i`` (built once per field: building them costs more than
    running them on a small batch)."""
    spec = m.FieldSpec.model_validate_json(spec_json)
    gk, wk = pl.col(f"gk{i}"), pl.col(f"wk{i}")
    reference = gk.is_in(["object", "array"]) | wk.is_in(["object", "array"]) | pl.col(f"py{i}")
    if spec.match == "numeric_tolerance":
        reference = reference | _near_bound(spec, pl.col(f"gn{i}"), pl.col(f"wn{i}"))
    outcome = _outcome(spec, lambda name: pl.col(f"{name}{i}"))
    return [
        outcome.alias(f"o{i}"),
        pl.col(f"gj{i}").alias(f"a{i}"),  # null when missing
        pl.col(f"wj{i}").alias(f"e{i}"),
        (reference & (gk != "missing") & (wk != "missing")).alias(f"p{i}"),
    ]


def compare(specs: list[m.FieldSpec], got: list[Side], want: list[Side], got_json: pl.Series) -> pl.DataFrame:
    """Per field ``i``: ``s{i}`` (score), ``h{i}`` (hit), ``r{i}`` (reason), ``a{i}``/``e{i}`` (actual/expected JSON
    texts) and ``p{i}`` (the row was compared by the reference: composite values, numbers float64 may not read
    exactly, differences at the tolerance bound; its reason may hold any character). Where the response is not JSON
    (``got_json`` false; its values read "missing"), every field misses with :data:`matching.NOT_JSON`. Every
    field's rule is one expression of one ``select``, so Polars evaluates the fields in parallel."""
    inputs = [_inputs(spec, g, w) for spec, g, w in zip(specs, got, want)]
    columns = [column.alias(f"{column.name}{i}") for i, f in enumerate(inputs) for column in f.get_columns()]
    wide = pl.DataFrame([*columns, got_json.alias("got_json")])
    out = wide.select(
        expr for i, spec in enumerate(specs) for expr in _field_exprs(spec.model_dump_json(exclude_unset=True), i)
    )
    out = out.with_columns(
        expr
        for i in range(len(specs))
        for expr in (pl.col(f"o{i}").struct.field("h").alias(f"h{i}"), pl.col(f"o{i}").struct.field("r").alias(f"r{i}"))
    ).drop(f"o{i}" for i in range(len(specs)))
    for i, spec in enumerate(specs):
        if not out[f"p{i}"].any():
            continue
        rows = out[f"p{i}"].arg_true()
        sub = wide.select(pl.col(f"{c}{i}").gather(rows).alias(c) for c in ("gk", "gj", "wk", "wj"))
        outcomes = [
            m.compare_values(spec, _value(a, b), _value(c, d))
            for a, b, c, d in zip(sub["gk"].to_list(), sub["gj"].to_list(), sub["wk"].to_list(), sub["wj"].to_list())
        ]
        out = out.with_columns(
            out[f"h{i}"].clone().scatter(rows, pl.Series([o.hit for o in outcomes], dtype=pl.Boolean)),
            out[f"r{i}"].clone().scatter(rows, pl.Series([o.reason for o in outcomes], dtype=pl.Utf8)),
        )
    return out.with_columns(pl.col(f"h{i}").cast(pl.Float64).alias(f"s{i}") for i in range(len(specs)))


def _value(kind: str, json_text: str | None) -> Any:
    return m.loads(json_text) if json_text is not None and kind != "missing" else None
