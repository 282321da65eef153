"""OCR text: normalized similarity with the expected text, blended with the share of keywords found.

:func:`ocr_row` is the definition, one row at a time. :func:`ocr_columns` is the same rule over whole columns, used by
the evaluator on the rows whose texts are all ASCII (``benchmarks/bench_code_validators.py``: several times the row
function's rows/s on the process pool): the normalization as Polars expressions, and the similarity from the
definition's own function, rapidfuzz's ``fuzz.<scorer>``, which ``rapidfuzz.process.cpdist`` runs over the two columns
(a vectorized call of the same scorer, not a second implementation). Other rows go to :func:`ocr_row`: Python and Polars
lowercase some non-ASCII letters differently (their Unicode tables differ in age).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import ClassVar, Literal

import polars as pl

from vision_eval.evaluator import EvalOutput
from vision_eval.evaluators.code.details import details_text
from vision_eval.evaluators.code.text import SPACE, strip
from vision_eval.example import Example
from vision_eval.rowwise import EvaluatorSettings, RowResult, RowRule, handed_over

PUNCTUATION = r"[!-/:-@\[-`{-~“”‘’«»–—…•·]"
"""ASCII punctuation plus common typographic marks."""
SCORERS = ("ratio", "token_sort_ratio", "token_set_ratio")
_PUNCTUATION = re.compile(PUNCTUATION)
_SPACES = re.compile(f"[{SPACE}]+")
_PUNCTUATION_OR_SPACES = re.compile(f"[{PUNCTUATION[1:-1]}{SPACE}]+")
_SCORER_FUNCTIONS: dict[str, Callable[..., float]] = {}


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


def scorer_function(scorer: str) -> Callable[..., float]:
    """rapidfuzz's ``fuzz.<scorer>`` (0..100)."""
    function = _SCORER_FUNCTIONS.get(scorer)
    if function is None:
        if scorer not in SCORERS:
            raise ValueError(f"unknown scorer {scorer!r}; use one of {', '.join(SCORERS)}")
        from rapidfuzz import fuzz

        function = _SCORER_FUNCTIONS[scorer] = getattr(fuzz, scorer)
    return function


def similarity(got: str, want: str, scorer: str) -> float:
    """rapidfuzz's similarity of two normalized texts, 0..1 (two empty texts are identical)."""
    return 1.0 if not got and not want else scorer_function(scorer)(got, want) / 100.0


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


def _normalized_column(text: pl.Expr, opts: OcrOptions) -> pl.Expr:
    """:func:`normalized` of ASCII texts."""
    if not opts.case_sensitive:
        text = text.str.to_lowercase()
    if opts.normalize_whitespace:
        run = f"[{PUNCTUATION[1:-1] if opts.strip_punctuation else ''}{SPACE}]"
        # A run as one space, but a lone space left alone: replacing it by itself costs as much as a real replacement.
        return text.str.replace_all(f"{run}*[{run}--[ ]]{run}*| {{2,}}", " ").str.strip_chars()
    return text.str.replace_all(PUNCTUATION, "") if opts.strip_punctuation else text


def _keywords_column(opts: OcrOptions, dtype: pl.DataType) -> pl.Expr:
    """:func:`row_keywords` of every row, from the ``keywords`` column of type ``dtype``."""
    if opts.keywords is not None:
        listed = pl.lit(list(opts.keywords), dtype=pl.List(pl.String))
    elif dtype == pl.String:
        listed = pl.col("keywords").str.split(",").list.eval(pl.element().str.strip_chars())
    else:
        listed = pl.col("keywords").cast(pl.List(pl.String))
    return listed.list.eval(pl.element().filter(pl.element().str.strip_chars() != ""))


def ocr_columns(inputs: pl.DataFrame, opts: OcrOptions, workers: int = 1) -> pl.DataFrame:
    """:func:`ocr_row` of every row of ``inputs`` (``output``, ``expected_output``, ``keywords``), all of whose texts
    must be ASCII, as the columns of :data:`~vision_eval.rowwise.RESULT_COLUMNS`; ``workers`` threads for rapidfuzz."""
    import numpy as np
    from rapidfuzz.process import cpdist

    n = inputs.height
    keywords = inputs.select(
        pl.int_range(pl.len(), dtype=pl.UInt32).alias("row"),
        _keywords_column(opts, inputs.schema["keywords"]).alias("keyword"),
    ).explode("keyword", empty_as_null=True)  # one row per keyword, a null one for a row without
    # The responses, the expected texts and the keywords normalized in one pass, as one column.
    texts = [inputs[name].cast(pl.String).fill_null("") for name in ("output", "expected_output")]
    stacked = pl.concat([*texts, keywords["keyword"]]).to_frame("text")
    normalized = stacked.select(_normalized_column(pl.col("text"), opts)).to_series()
    got, want = normalized[:n], normalized[n : 2 * n]
    scores = cpdist(
        got.to_list(), want.to_list(), scorer=scorer_function(opts.scorer), dtype=np.float64, workers=workers
    )
    # Each keyword found or not in its row's normalized text, then gathered back per row.
    keywords = keywords.with_columns(got.gather(keywords["row"]).alias("got"), normalized[2 * n :].alias("normalized"))
    keywords = keywords.with_columns(pl.col("got").str.contains(pl.col("normalized"), literal=True).alias("hit"))
    rows = keywords.group_by("row", maintain_order=True).agg(
        pl.col("keyword").filter("hit").alias("keywords_found"),
        pl.col("keyword").filter(~pl.col("hit")).alias("keywords_missing"),
        pl.col("hit").sum().alias("found"),
        pl.col("keyword").count().alias("listed"),
    )
    # Divided here: Polars divides a column by a number as a product with its inverse (not always the same float).
    sim = pl.when((got == "") & (want == "")).then(1.0).otherwise(pl.Series(scores / 100.0))
    has_keywords = pl.col("listed") > 0
    accuracy = pl.when(has_keywords).then(pl.col("found") / pl.col("listed"))
    w_sim, w_kw = opts.weights()
    score = pl.when(has_keywords).then(w_sim * pl.col("sim") + w_kw * pl.col("accuracy")).otherwise(pl.col("sim"))
    # The details: Polars rounds as `rounded` does and writes these members as json.dumps does (ASCII text, numbers
    # in 0..1); the weights and the scorer, the same on every row, are written by details_text.
    members = pl.struct(
        pl.col("sim").round(4).alias("similarity"),
        pl.col("accuracy").round(4).alias("keyword_accuracy"),
        "keywords_found",
        "keywords_missing",
    ).struct.json_encode()
    weights = {"similarity": rounded(w_sim), "keywords": rounded(w_kw)}
    no_weights = {"similarity": 1.0, "keywords": 0.0}
    rest = (
        pl.when(has_keywords)
        .then(pl.lit(_details_rest(weights, opts.scorer)))
        .otherwise(pl.lit(_details_rest(no_weights, opts.scorer)))
    )
    return rows.with_columns(sim.alias("sim"), accuracy.alias("accuracy")).select(
        pl.lit("processed").alias("status"),
        score.clip(0.0, 1.0).alias("score"),
        pl.concat_str(members.str.head(-1), rest).alias("details"),  # the members' closing brace left out
        pl.lit(None, pl.String).alias("error"),
        pl.lit(None, pl.Boolean).alias("passed"),
    )


def _details_rest(weights: dict[str, float], scorer: str) -> str:
    """The end of the details JSON, from the ``weights`` member on: ``,"weights":{...},"scorer":"..."}``."""
    return "," + details_text({"weights": weights, "scorer": scorer})[1:]


_COLUMN_TYPES = {
    "output": (pl.String, pl.Null),
    "expected_output": (pl.String, pl.Null),
    "keywords": (pl.String, pl.Null, pl.List(pl.String), pl.List(pl.Null)),
}
"""The input types :func:`ocr_columns` reads (others go to :func:`ocr_row`)."""


def _ascii(text: pl.Expr) -> pl.Expr:
    """Whether a text is ASCII (null: true)."""
    return (text.str.len_bytes() == text.str.len_chars()).fill_null(True)


def column_readable(inputs: pl.DataFrame, opts: OcrOptions) -> pl.Series:
    """The rows :func:`ocr_columns` reads as :func:`ocr_row` does: all their texts (keywords included) ASCII, in
    columns of the types it reads."""
    schema = inputs.schema
    if not all(schema[name] in types for name, types in _COLUMN_TYPES.items()) or not all(
        k.isascii() for k in opts.keywords or ()
    ):
        return pl.repeat(False, inputs.height, eager=True)
    if schema["keywords"] == pl.String:
        keywords = _ascii(pl.col("keywords"))
    else:
        keywords = pl.col("keywords").cast(pl.List(pl.String)).list.eval(_ascii(pl.element())).list.all()
    texts = _ascii(pl.col("output").cast(pl.String)) & _ascii(pl.col("expected_output").cast(pl.String))
    return inputs.select(texts & keywords.fill_null(True)).to_series()


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

    def options(self) -> OcrOptions:
        """The settings as :class:`OcrOptions`."""
        s = self.settings
        return OcrOptions(
            case_sensitive=s.case_sensitive,
            normalize_whitespace=s.normalize_whitespace,
            strip_punctuation=s.strip_punctuation,
            scorer=s.scorer,
            similarity_weight=s.similarity_weight,
            keyword_weight=s.keyword_weight,
            keywords=tuple(s.keywords) if s.keywords is not None else None,
        )

    def row_function(self) -> Callable[..., RowResult]:
        return partial(ocr_row, opts=self.options())

    def evaluate(self, batch: pl.DataFrame) -> EvalOutput:
        """:func:`ocr_columns` on the rows it reads, :func:`ocr_row` (through the engine) on the others."""
        inputs, opts = self.row_inputs(batch), self.options()
        readable = column_readable(inputs, opts)
        if not readable.any():
            return super().evaluate(batch)
        columns = ocr_columns(inputs.filter(readable), opts, self.workers())
        columns = columns.with_columns(batch["id"].filter(readable).alias("sample_id"))
        if readable.all():
            return EvalOutput(columns)
        rows = inputs.with_columns(batch["id"].alias("sample_id")).with_row_index("_pos")
        others = handed_over(rows.filter(~readable), self.row_columns, self.row_function(), self.workers())
        parts = [columns.with_columns(rows["_pos"].filter(readable)), others.select(*columns.columns, "_pos")]
        return EvalOutput(pl.concat(parts).sort("_pos").drop("_pos"))
