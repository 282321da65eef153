"""ocr_validator column-wise: :func:`~vision_eval.validators.ocr.ocr_row` for whole frames (rapidfuzz's similarity
vectorized in C on all cores). Case-insensitive rows holding a character Polars lowercases otherwise than Python (their
Unicode tables differ in age) are handed to ``ocr_row``."""

from __future__ import annotations

import json

import numpy as np
import polars as pl

from vision_eval.validators.ocr import PUNCTUATION, SCORERS, OcrDetails, OcrOptions, ocr_row, rounded
from vision_eval.validators.rows import details_column, joined, json_strings, scored_in_parts
from vision_eval.validators.text import SPACE, holding_any, lowercase_disagreements

_RUN = PUNCTUATION[:-1] + SPACE + "]"
# A run of punctuation and whitespace, except a lone space (replacing it by a space would change nothing and
# costs as much as a real replacement): one with punctuation or other whitespace in it, or several spaces.
_PUNCT_OR_SPACE = rf"{_RUN}*[{_RUN}--[ ]]{_RUN}*| {{2,}}"


def normalize(expr: pl.Expr, opts: OcrOptions) -> pl.Expr:
    """:func:`ocr.normalized` of every text (null becomes empty)."""
    expr = expr.cast(pl.Utf8).fill_null("")
    if not opts.case_sensitive:
        expr = expr.str.to_lowercase()
    if opts.strip_punctuation and opts.normalize_whitespace:
        # One pass: a run of punctuation and whitespace is what "punctuation -> space, collapse spaces" leaves
        # as a single space.
        return expr.str.replace_all(_PUNCT_OR_SPACE, " ").str.strip_chars()
    if opts.strip_punctuation:
        expr = expr.str.replace_all(PUNCTUATION, "")
    if opts.normalize_whitespace:
        expr = expr.str.replace_all(f"[{SPACE}]+", " ").str.strip_chars()
    return expr


def similarity(a: pl.Series, b: pl.Series, scorer: str) -> np.ndarray:
    """:func:`ocr.similarity` of two equally long columns of normalized texts, computed in C (all cores)."""
    from rapidfuzz import fuzz
    from rapidfuzz.process import cpdist

    if scorer not in SCORERS:
        raise ValueError(f"unknown scorer {scorer!r}; use one of {', '.join(SCORERS)}")
    if not len(a):
        return np.zeros(0)
    sim = cpdist(a.to_list(), b.to_list(), scorer=getattr(fuzz, scorer), workers=-1, dtype=np.float64) / 100.0
    sim[((a == "") & (b == "")).to_numpy()] = 1.0
    return sim


def _keywords(frame: pl.DataFrame, opts: OcrOptions) -> pl.Series:
    """:func:`ocr.row_keywords` of every row."""
    if opts.keywords is not None:
        keywords = pl.Series("kw", [list(opts.keywords)] * frame.height, dtype=pl.List(pl.Utf8))
    elif "keywords" in frame.columns and isinstance(frame.schema["keywords"], pl.List):
        keywords = frame["keywords"].cast(pl.List(pl.Utf8)).alias("kw")
    elif "keywords" in frame.columns:
        keywords = frame["keywords"].cast(pl.Utf8).str.split(",").list.eval(pl.element().str.strip_chars()).alias("kw")
    else:
        keywords = pl.Series("kw", [None] * frame.height, dtype=pl.List(pl.Utf8))
    return keywords.list.eval(pl.element().filter(pl.element().str.strip_chars() != ""))


def ocr_frame(frame: pl.DataFrame, opts: OcrOptions) -> pl.DataFrame:
    """Score ``output`` against ``expected_output`` (and the row's ``keywords`` list, or the configured ones), as
    :func:`ocr_row` does each row."""
    keywords = _keywords(frame, opts)
    if not opts.case_sensitive:
        chars = lowercase_disagreements()
        odd = holding_any(frame["output"].cast(pl.Utf8), chars) | holding_any(
            frame["expected_output"].cast(pl.Utf8), chars
        )
        if holding_any(keywords.explode(), chars).any():
            odd |= keywords.list.eval(pl.element().str.contains_any(list(chars))).list.any().fill_null(False)
        if odd.any():
            row = lambda r: ocr_row(r["output"], r["expected_output"], r["_kw"], opts)  # noqa: E731
            columns = lambda part: _ocr_frame(part, part["_kw"], opts)  # noqa: E731
            with_keywords = frame.select("output", "expected_output", keywords.alias("_kw"))
            return scored_in_parts(with_keywords, odd.to_numpy(), columns, row)
    return _ocr_frame(frame, keywords, opts)


def _ocr_frame(frame: pl.DataFrame, keywords: pl.Series, opts: OcrOptions) -> pl.DataFrame:
    counts = keywords.list.len().fill_null(0).to_numpy()
    texts = frame.select(
        normalize(pl.col("output"), opts).alias("got"), normalize(pl.col("expected_output"), opts).alias("want")
    )
    sim = similarity(texts["got"], texts["want"], opts.scorer)
    # Keywords in row order, one row each: the row's text repeated alongside, a literal containment test,
    # then the hits cut back into per-row lists by their counts.
    kw = keywords.explode().drop_nulls()
    owner = np.repeat(np.arange(frame.height), counts)
    quoted = json_strings(kw)
    got = texts["got"].gather(owner)
    hit = pl.select(got.str.contains(normalize(pl.lit(kw), opts), literal=True)).to_series().to_numpy()
    hit_sums = np.concatenate([[0], np.cumsum(hit)])
    ends = np.cumsum(counts)
    hits = hit_sums[ends] - hit_sums[ends - counts]
    has_kw = counts > 0
    accuracy = np.divide(hits, counts, out=np.zeros(len(counts)), where=has_kw)
    w_sim, w_kw = opts.weights()
    score = np.where(has_kw, w_sim * sim + w_kw * accuracy, sim).clip(0.0, 1.0)
    out = pl.DataFrame(
        {
            "similarity": sim,
            "accuracy": pl.Series(accuracy).set(pl.Series(~has_kw), None),
            "has_kw": has_kw,
            "found": joined(quoted.filter(pl.Series(hit)), owner[hit], frame.height, ","),
            "missing": joined(quoted.filter(pl.Series(~hit)), owner[~hit], frame.height, ","),
        }
    )
    weights = json.dumps({"similarity": rounded(w_sim), "keywords": rounded(w_kw)}, separators=(",", ":"))
    # Numbers in 0..1 rounded by Polars print as json.dumps prints them rounded by ocr.rounded.
    details = details_column(
        OcrDetails,
        similarity=pl.col("similarity").round(4).cast(pl.Utf8),
        keyword_accuracy=pl.col("accuracy").round(4).cast(pl.Utf8).fill_null("null"),
        keywords_found="[" + pl.col("found") + "]",
        keywords_missing="[" + pl.col("missing") + "]",
        weights=pl.when("has_kw").then(pl.lit(weights)).otherwise(pl.lit('{"similarity":1.0,"keywords":0.0}')),
        scorer=pl.lit(json.dumps(opts.scorer)),
    )
    return out.select(
        pl.lit("processed").alias("status"),
        pl.Series("score", score),
        details.alias("details"),
        pl.lit(None, pl.Utf8).alias("error"),
    )
