"""Frozen copy of the implementation before the perf3 fast paths (equivalence tests only).

OCR text: normalized similarity (rapidfuzz, vectorized in C) blended with keyword accuracy."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

# ASCII punctuation plus common typographic marks; a literal class is much faster than Unicode [^\w\s].
_PUNCTUATION = r"[!-/:-@\[-`{-~“”‘’«»–—…•·]"


@dataclass(frozen=True)
class OcrOptions:
    """How text is compared (see ``OcrValidatorSettings`` for the meaning of each field)."""

    case_sensitive: bool = False
    normalize_whitespace: bool = True
    strip_punctuation: bool = True
    scorer: str = "ratio"
    similarity_weight: float = 0.7
    keyword_weight: float = 0.3
    keywords: tuple[str, ...] | None = None


def normalize(expr: pl.Expr, opts: OcrOptions) -> pl.Expr:
    """Text normalized as the options say (null becomes empty)."""
    expr = expr.cast(pl.Utf8).fill_null("")
    if not opts.case_sensitive:
        expr = expr.str.to_lowercase()
    if opts.strip_punctuation:
        expr = expr.str.replace_all(_PUNCTUATION, " " if opts.normalize_whitespace else "")
    if opts.normalize_whitespace:
        expr = expr.str.replace_all(r"\s+", " ").str.strip_chars()
    return expr


def similarity(a: list[str], b: list[str], scorer: str) -> list[float]:
    """Pairwise similarity in 0..1 of two equally long lists of strings, computed in C."""
    from rapidfuzz import fuzz
    from rapidfuzz.process import cpdist

    function = {"ratio": fuzz.ratio, "token_sort_ratio": fuzz.token_sort_ratio, "token_set_ratio": fuzz.token_set_ratio}
    if scorer not in function:
        raise ValueError(f"unknown scorer {scorer!r}; use one of {', '.join(function)}")
    if not a:
        return []
    # float64, as rapidfuzz's scorers return them one at a time (cpdist's default float32 lost ~1e-8).
    scores = cpdist(a, b, scorer=function[scorer], workers=-1, dtype="float64")
    return (scores / 100.0).tolist()


def ocr_frame(frame: pl.DataFrame, opts: OcrOptions) -> pl.DataFrame:
    """Score ``output`` against ``expected_output`` (and the row's ``keywords`` list, or the configured ones)."""
    texts = frame.select(
        normalize(pl.col("output"), opts).alias("got"), normalize(pl.col("expected_output"), opts).alias("want")
    )
    both_empty = (texts["got"] == "") & (texts["want"] == "")
    sim = pl.Series("sim", similarity(texts["got"].to_list(), texts["want"].to_list(), opts.scorer), pl.Float64)
    sim = pl.select(pl.when(both_empty).then(1.0).otherwise(sim)).to_series().alias("sim")

    if opts.keywords is not None:
        keywords = pl.Series("kw", [list(opts.keywords)] * frame.height, dtype=pl.List(pl.Utf8))
    elif "keywords" in frame.columns and isinstance(frame.schema["keywords"], pl.List):
        keywords = frame["keywords"].cast(pl.List(pl.Utf8)).alias("kw")
    elif "keywords" in frame.columns:  # comma-separated text
        keywords = frame["keywords"].cast(pl.Utf8).str.split(",").list.eval(pl.element().str.strip_chars()).alias("kw")
    else:
        keywords = pl.Series("kw", [None] * frame.height, dtype=pl.List(pl.Utf8))
    keywords = keywords.list.eval(pl.element().filter(pl.element().str.strip_chars() != ""))

    long = (
        pl.DataFrame({"_row": pl.int_range(0, frame.height, eager=True), "got": texts["got"], "kw": keywords})
        .explode("kw")
        .drop_nulls("kw")
        .with_columns(pl.col("got").str.contains(normalize(pl.col("kw"), opts), literal=True).alias("hit"))
    )
    # Plain column aggregations (lists) stay on Polars' fast path; filtering inside agg would not.
    long = long.with_columns(
        pl.when("hit").then("kw").alias("keywords_found"), pl.when(~pl.col("hit")).then("kw").alias("keywords_missing")
    )
    per_row = long.group_by("_row").agg(
        "keywords_found", "keywords_missing", pl.col("hit").mean().alias("keyword_accuracy")
    )
    per_row = per_row.with_columns(pl.col("keywords_found", "keywords_missing").list.drop_nulls())
    out = (
        pl.DataFrame({"_row": pl.int_range(0, frame.height, eager=True), "similarity": sim})
        .join(per_row, on="_row", how="left")
        .sort("_row")
    )
    has_kw = pl.col("keyword_accuracy").is_not_null()
    total = opts.similarity_weight + opts.keyword_weight
    w_sim = pl.when(has_kw).then(pl.lit(opts.similarity_weight / total if total else 1.0)).otherwise(1.0)
    w_kw = pl.when(has_kw).then(pl.lit(opts.keyword_weight / total if total else 0.0)).otherwise(0.0)
    score = (w_sim * pl.col("similarity") + w_kw * pl.col("keyword_accuracy").fill_null(0.0)).clip(0.0, 1.0)
    details = pl.struct(
        pl.col("similarity").round(4),
        pl.col("keyword_accuracy").round(4),
        pl.col("keywords_found").fill_null(pl.lit([], pl.List(pl.Utf8))),
        pl.col("keywords_missing").fill_null(pl.lit([], pl.List(pl.Utf8))),
        pl.struct(w_sim.round(4).alias("similarity"), w_kw.round(4).alias("keywords")).alias("weights"),
        pl.lit(opts.scorer).alias("scorer"),
    ).struct.json_encode()
    return out.select(
        pl.lit("processed").alias("status"),
        score.alias("score"),
        details.alias("details"),
        pl.lit(None, pl.Utf8).alias("error"),
    )
