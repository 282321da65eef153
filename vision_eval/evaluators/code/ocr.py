"""OCR text: normalized similarity with the expected text, blended with the share of keywords found.

:func:`ocr_row` is the definition, one row at a time.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import ClassVar, Literal

import polars as pl

from vision_eval.evaluators.code.details import details_text
from vision_eval.evaluators.code.text import SPACE, strip
from vision_eval.example import Example
from vision_eval.rowwise import EvaluatorSettings, RowResult, RowRule

PUNCTUATION = r"[!-/:-@\[-`{-~“”‘’«»–—…•·]"
"""ASCII punctuation plus common typographic marks."""
SCORERS = ("ratio", "token_sort_ratio", "token_set_ratio")
_PUNCTUATION = re.compile(PUNCTUATION)
_SPACES = re.compile(f"[{SPACE}]+")
_PUNCTUATION_OR_SPACES = re.compile(f"[{PUNCTUATION[1:-1]}{SPACE}]+")
_SCORER_FUNCTIONS: dict[str, Callable[[str, str], float]] = {}


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


@dataclass  # not frozen: built for every row, and a frozen dataclass is slower to build
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
    return _normalized(text, opts.case_sensitive, opts.normalize_whitespace, opts.strip_punctuation)


def _normalized(text: str, case_sensitive: bool, normalize_whitespace: bool, strip_punctuation: bool) -> str:
    if not case_sensitive:
        text = text.lower()
    if normalize_whitespace:
        # Punctuation as spaces, then runs of whitespace as one: runs of either as one space.
        return strip((_PUNCTUATION_OR_SPACES if strip_punctuation else _SPACES).sub(" ", text))
    return _PUNCTUATION.sub("", text) if strip_punctuation else text


_cached = lru_cache(maxsize=4096)(_normalized)
""":func:`_normalized` of texts that repeat (expected texts, keywords)."""


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
    function = _SCORER_FUNCTIONS.get(scorer)
    if function is None:
        if scorer not in SCORERS:
            raise ValueError(f"unknown scorer {scorer!r}; use one of {', '.join(SCORERS)}")
        from rapidfuzz import fuzz

        function = _SCORER_FUNCTIONS[scorer] = getattr(fuzz, scorer)
    return 1.0 if not got and not want else function(got, want) / 100.0


def ocr_row(
    output: str | None, expected: str | None, keywords: list[str | None] | str | None, opts: OcrOptions
) -> RowResult:
    """The definition: similarity of the normalized texts, blended with keyword accuracy when there are keywords (a
    keyword is found when its normalized text is in the normalized response)."""
    flags = (opts.case_sensitive, opts.normalize_whitespace, opts.strip_punctuation)
    got, want = _normalized(output or "", *flags), _cached(expected or "", *flags)
    sim = similarity(got, want, opts.scorer)
    listed = row_keywords(opts, keywords)
    if not listed:
        details = OcrDetails(rounded(sim), None, [], [], {"similarity": 1.0, "keywords": 0.0}, opts.scorer)
        return RowResult("processed", min(max(sim, 0.0), 1.0), details_text(details))
    present = [_cached(k, *flags) in got for k in listed]
    found = [k for k, here in zip(listed, present, strict=True) if here]
    missing = [k for k, here in zip(listed, present, strict=True) if not here]
    accuracy = len(found) / len(listed)
    w_sim, w_kw = opts.weights()
    weights = {"similarity": rounded(w_sim), "keywords": rounded(w_kw)}
    details = OcrDetails(rounded(sim), rounded(accuracy), found, missing, weights, opts.scorer)
    return RowResult("processed", min(max(w_sim * sim + w_kw * accuracy, 0.0), 1.0), details_text(details))


class OcrValidatorSettings(EvaluatorSettings):
    """Settings of ``ocr_validator``."""

    case_sensitive: bool = False
    """Compare case-sensitively."""
    normalize_whitespace: bool = True
    """Collapse runs of whitespace (including newlines) and trim before comparing."""
    strip_punctuation: bool = True
    """Ignore punctuation when comparing."""
    scorer: Literal["ratio", "token_sort_ratio", "token_set_ratio"] = "ratio"
    """rapidfuzz similarity: ``ratio`` (character level, order matters) or a token-based one."""
    similarity_weight: float = 0.7
    """Weight of text similarity in the score when keywords are given."""
    keyword_weight: float = 0.3
    """Weight of keyword accuracy (share of keywords found) when keywords are given."""
    keywords: list[str] | None = None
    """Keywords for every row; ``None`` reads the row's ``keywords`` column when there is one."""


class OcrValidator(RowRule[OcrValidatorSettings]):
    """Normalized text similarity with ``expected_output``, blended with keyword accuracy."""

    type_name: ClassVar[str] = "ocr_validator"
    example: ClassVar[Example] = Example(
        {"type": "ocr_validator", "keywords": ["Proposal"]},
        [
            {"id": "a", "output": "Project Proposal Q1 2026", "expected_output": "Project Proposal Q1 2026"},
            {"id": "b", "output": "Project Propsal Q1 2026", "expected_output": "Project Proposal Q1 2026"},
        ],
    )
    required_columns = ("output", "expected_output")
    row_columns = ("output", "expected_output", "keywords")
    default_threshold = 0.9

    def row_inputs(self, batch: pl.DataFrame) -> pl.DataFrame:
        inputs = super().row_inputs(batch)
        # Configured keywords replace the column: without it, equal texts are scored once.
        return inputs.with_columns(pl.lit(None).alias("keywords")) if self.settings.keywords is not None else inputs

    def row_function(self) -> Callable[..., RowResult]:
        s = self.settings
        opts = OcrOptions(
            case_sensitive=s.case_sensitive,
            normalize_whitespace=s.normalize_whitespace,
            strip_punctuation=s.strip_punctuation,
            scorer=s.scorer,
            similarity_weight=s.similarity_weight,
            keyword_weight=s.keyword_weight,
            keywords=tuple(s.keywords) if s.keywords is not None else None,
        )
        return partial(ocr_row, opts=opts)
