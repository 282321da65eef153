"""OCR text: normalized similarity with the expected text, blended with the share of keywords found.

:func:`ocr_row` is the definition, one row at a time; :mod:`~vision_eval.validators.ocr_columns` scores whole frames
the same way.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from vision_eval.rowwise import RowResult
from vision_eval.validators.rows import details_text
from vision_eval.validators.text import SPACE, strip

PUNCTUATION = r"[!-/:-@\[-`{-~“”‘’«»–—…•·]"
"""ASCII punctuation plus common typographic marks."""
SCORERS = ("ratio", "token_sort_ratio", "token_set_ratio")


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

    def weights(self) -> tuple[float, float]:
        """The weights of similarity and keyword accuracy, as shares of their sum."""
        total = self.similarity_weight + self.keyword_weight
        return (self.similarity_weight / total, self.keyword_weight / total) if total else (1.0, 0.0)


@dataclass(frozen=True)
class OcrDetails:
    """The details of an OCR row (compact JSON)."""

    similarity: float
    """Similarity of the normalized texts, 0..1 (two empty texts: 1), rounded to 4 decimals."""
    keyword_accuracy: float | None
    """Share of the keywords found in the normalized response (null: no keywords), rounded to 4 decimals."""
    keywords_found: list[str]
    keywords_missing: list[str]
    weights: dict[str, float]
    """``similarity`` and ``keywords`` weights in the score (1 and 0 without keywords), rounded to 4 decimals."""
    scorer: str


def rounded(x: float) -> float:
    """``x`` to 4 decimals: ``x`` times 10⁴ to the nearest integer (ties to even), divided back (as Polars rounds)."""
    scaled = x * 10_000
    return round(scaled) / 10_000 if math.isfinite(scaled) else scaled / 10_000


def normalized(text: str, opts: OcrOptions) -> str:
    """The text as compared: lowercase unless case-sensitive, punctuation dropped (a space when whitespace is
    normalized), runs of whitespace as one space, trimmed."""
    if not opts.case_sensitive:
        text = text.lower()
    if opts.strip_punctuation:
        text = re.sub(PUNCTUATION, " " if opts.normalize_whitespace else "", text)
    if opts.normalize_whitespace:
        text = strip(re.sub(f"[{SPACE}]+", " ", text))
    return text


def row_keywords(opts: OcrOptions, column: list[str | None] | str | None) -> list[str]:
    """The row's keywords: the configured ones, else its ``keywords`` column (a list, or comma-separated text), blank
    ones left out."""
    if opts.keywords is not None:
        keywords: list[str | None] = list(opts.keywords)
    elif isinstance(column, str):
        keywords = [strip(k) for k in column.split(",")]
    else:
        keywords = list(column or [])
    return [k for k in keywords if k is not None and strip(k)]


def similarity(got: str, want: str, scorer: str) -> float:
    """rapidfuzz's similarity of two normalized texts, 0..1 (two empty texts are identical)."""
    from rapidfuzz import fuzz

    if scorer not in SCORERS:
        raise ValueError(f"unknown scorer {scorer!r}; use one of {', '.join(SCORERS)}")
    return 1.0 if not got and not want else getattr(fuzz, scorer)(got, want) / 100.0


def ocr_row(
    output: str | None, expected: str | None, keywords: list[str | None] | str | None, opts: OcrOptions
) -> RowResult:
    """The definition: similarity of the normalized texts, blended with keyword accuracy when there are keywords (a
    keyword is found when its normalized text is in the normalized response)."""
    got, want = normalized(output or "", opts), normalized(expected or "", opts)
    sim = similarity(got, want, opts.scorer)
    listed = row_keywords(opts, keywords)
    found = [k for k in listed if normalized(k, opts) in got]
    if not listed:
        details = OcrDetails(rounded(sim), None, [], [], {"similarity": 1.0, "keywords": 0.0}, opts.scorer)
        return RowResult("processed", min(max(sim, 0.0), 1.0), details_text(details))
    accuracy = len(found) / len(listed)
    w_sim, w_kw = opts.weights()
    missing = [k for k in listed if normalized(k, opts) not in got]
    weights = {"similarity": rounded(w_sim), "keywords": rounded(w_kw)}
    details = OcrDetails(rounded(sim), rounded(accuracy), found, missing, weights, opts.scorer)
    return RowResult("processed", min(max(w_sim * sim + w_kw * accuracy, 0.0), 1.0), details_text(details))
