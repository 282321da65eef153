"""OCR text: normalized similarity (rapidfuzz, vectorized in C) blended with keyword accuracy."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import polars as pl
import pyarrow as pa

# ASCII punctuation plus common typographic marks; a literal class is much faster than Unicode [^\w\s].
_PUNCTUATION = r"[!-/:-@\[-`{-~“”‘’«»–—…•·]"
_RUN = _PUNCTUATION[:-1] + r"\s]"
# A run of punctuation and whitespace, except a lone space (replacing it by a space would change nothing and
# costs as much as a real replacement): one with punctuation or other whitespace in it, or several spaces.
_PUNCT_OR_SPACE = rf"{_RUN}*[{_RUN}--[ ]]{_RUN}*| {{2,}}"


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
    if opts.strip_punctuation and opts.normalize_whitespace:
        # One pass: a run of punctuation and whitespace is what "punctuation -> space, collapse spaces" leaves
        # as a single space.
        return expr.str.replace_all(_PUNCT_OR_SPACE, " ").str.strip_chars()
    if opts.strip_punctuation:
        expr = expr.str.replace_all(_PUNCTUATION, "")
    if opts.normalize_whitespace:
        expr = expr.str.replace_all(r"\s+", " ").str.strip_chars()
    return expr


def similarity(a: list[str] | pl.Series, b: list[str] | pl.Series, scorer: str) -> np.ndarray:
    """Pairwise similarity in 0..1 of two equally long sequences of strings, computed in C (all cores)."""
    from rapidfuzz import fuzz
    from rapidfuzz.process import cpdist

    function = {"ratio": fuzz.ratio, "token_sort_ratio": fuzz.token_sort_ratio, "token_set_ratio": fuzz.token_set_ratio}
    if scorer not in function:
        raise ValueError(f"unknown scorer {scorer!r}; use one of {', '.join(function)}")
    if not len(a):
        return np.zeros(0)
    a, b = (x.to_list() if isinstance(x, pl.Series) else x for x in (a, b))
    return cpdist(a, b, scorer=function[scorer], workers=-1, dtype=np.float64) / 100.0


def _keywords(frame: pl.DataFrame, opts: OcrOptions) -> pl.Series:
    """Each row's keyword list (configured ones, the ``keywords`` column as a list or comma-separated text)."""
    if opts.keywords is not None:
        keywords = pl.Series("kw", [list(opts.keywords)] * frame.height, dtype=pl.List(pl.Utf8))
    elif "keywords" in frame.columns and isinstance(frame.schema["keywords"], pl.List):
        keywords = frame["keywords"].cast(pl.List(pl.Utf8)).alias("kw")
    elif "keywords" in frame.columns:
        keywords = frame["keywords"].cast(pl.Utf8).str.split(",").list.eval(pl.element().str.strip_chars()).alias("kw")
    else:
        keywords = pl.Series("kw", [None] * frame.height, dtype=pl.List(pl.Utf8))
    return keywords.list.eval(pl.element().filter(pl.element().str.strip_chars() != ""))


def _lists(values: pl.Series, counts: np.ndarray) -> pl.Series:
    """``values`` cut into consecutive lists of ``counts`` items (no grouping: the values are in row order)."""
    offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return pl.Series(pa.LargeListArray.from_arrays(pa.array(offsets), values.to_arrow()), dtype=pl.List(pl.Utf8))


def _json_number(value: float) -> str:
    return json.dumps(pl.Series([value]).round(4)[0])


def ocr_frame(frame: pl.DataFrame, opts: OcrOptions) -> pl.DataFrame:
    """Score ``output`` against ``expected_output`` (and the row's ``keywords`` list, or the configured ones)."""
    keywords = _keywords(frame, opts)
    counts = keywords.list.len().fill_null(0).to_numpy()
    texts = frame.select(
        normalize(pl.col("output"), opts).alias("got"), normalize(pl.col("expected_output"), opts).alias("want")
    )
    sim = similarity(texts["got"], texts["want"], opts.scorer)
    both_empty = ((texts["got"] == "") & (texts["want"] == "")).to_numpy()
    sim[both_empty] = 1.0

    # Keywords in row order, one row each: the row's text repeated alongside, a literal containment test,
    # then the hits cut back into per-row lists by their counts.
    kw = keywords.explode().drop_nulls()
    got = texts["got"].gather(np.repeat(np.arange(frame.height), counts))
    hit = pl.select(got.str.contains(normalize(pl.lit(kw), opts), literal=True)).to_series().to_numpy()
    hit_sums = np.concatenate([[0], np.cumsum(hit)])
    ends = np.cumsum(counts)
    hits = hit_sums[ends] - hit_sums[ends - counts]
    has_kw = counts > 0
    accuracy = np.divide(hits, counts, out=np.zeros(len(counts)), where=has_kw)
    found = _lists(kw.filter(pl.Series(hit)), hits)
    missing = _lists(kw.filter(pl.Series(~hit)), counts - hits)

    total = opts.similarity_weight + opts.keyword_weight
    w_sim = opts.similarity_weight / total if total else 1.0
    w_kw = opts.keyword_weight / total if total else 0.0
    score = np.where(has_kw, w_sim * sim + w_kw * accuracy, sim).clip(0.0, 1.0)
    weights = json.dumps({"similarity": 1.0, "keywords": 0.0})
    weights_kw = f'{{"similarity":{_json_number(w_sim)},"keywords":{_json_number(w_kw)}}}'
    out = pl.DataFrame(
        {"similarity": sim, "accuracy": pl.Series(accuracy).set(pl.Series(~has_kw), None), "has_kw": has_kw}
    )
    lists = pl.DataFrame({"keywords_found": found, "keywords_missing": missing}).select(
        pl.struct("keywords_found", "keywords_missing").struct.json_encode().str.slice(1).str.strip_suffix("}")
    )
    # The details JSON assembled from pieces: one json_encode of a nested struct costs several times more.
    details = pl.concat_str(
        pl.lit('{"similarity":'),
        pl.col("similarity").round(4).cast(pl.Utf8),
        pl.lit(',"keyword_accuracy":'),
        pl.col("accuracy").round(4).cast(pl.Utf8).fill_null("null"),
        pl.lit(","),
        lists.to_series(),
        pl.lit(',"weights":'),
        pl.when("has_kw").then(pl.lit(weights_kw)).otherwise(pl.lit(weights)),
        pl.lit(f',"scorer":{json.dumps(opts.scorer)}}}'),
    )
    return out.select(
        pl.lit("processed").alias("status"),
        pl.Series("score", score),
        details.alias("details"),
        pl.lit(None, pl.Utf8).alias("error"),
    )
