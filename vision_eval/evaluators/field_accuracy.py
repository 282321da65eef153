"""``field_accuracy``: structured extraction (invoices, forms, receipts) scored field by field.

Semantics live in :mod:`vision_eval.structured.matching` (the row-wise reference); this evaluator extracts values
with :mod:`vision_eval.structured.duckpath` (msgspec for small batches, DuckDB for large ones), compares them with
:mod:`vision_eval.structured.fastpath` (Polars) and writes one ``fields`` row per sample × field.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import ClassVar, Literal

import polars as pl
from pydantic import Field

from vision_eval.evaluator import EvalOutput, Evaluator, EvaluatorSettings
from vision_eval.registry import register
from vision_eval.results import ERROR, PROCESSED, SKIPPED
from vision_eval.structured import duckpath, fastpath
from vision_eval.structured.matching import NOT_AN_OBJECT, NOT_JSON, TOO_DEEP, FieldSpec

RAW_LIMIT = 2000


def score_parts(specs: list[FieldSpec]) -> list[pl.Expr]:
    """The columns a row score is made of, from the field score columns ``s0..sN`` (null = left out): ``_any``
    (some field counted), ``_all_hit``, ``_total`` (weighted sum of scores) and ``_weight`` (counted weight)."""
    scores = [pl.col(f"s{i}") for i in range(len(specs))]
    counted = [sc.is_not_null() for sc in scores]
    all_hit = pl.all_horizontal([(~c) | (sc == 1.0) for c, sc in zip(counted, scores)]).cast(pl.Float64)
    weight = pl.sum_horizontal([pl.when(c).then(pl.lit(spec.weight)).otherwise(0.0) for c, spec in zip(counted, specs)])
    total = pl.sum_horizontal([sc.fill_null(0.0) * spec.weight for sc, spec in zip(scores, specs)])
    return [
        pl.any_horizontal(counted).alias("_any"),
        all_hit.alias("_all_hit"),
        total.alias("_total"),
        weight.alias("_weight"),
    ]


def scores(frame: pl.DataFrame, specs: list[FieldSpec], aggregation: str) -> pl.Series:
    """Row scores from the field score columns (:func:`score_parts`); null where every field is left out. The
    division runs on Series: a Polars expression divides by a column holding one broadcast value as a
    multiplication by its reciprocal (3 / 5 = 0.6000000000000001), which the row-wise reference does not."""
    parts = frame.select(score_parts(specs))
    ratio = parts["_total"] / parts["_weight"]
    expr: pl.Expr
    if aggregation == "all_or_nothing":
        expr = pl.when(pl.col("_any")).then(pl.col("_all_hit"))
    else:
        expr = (
            pl.when(~pl.col("_any"))
            .then(None)
            .when(pl.col("_weight") > 0)
            .then(pl.col("_ratio"))
            .otherwise(pl.col("_all_hit"))
        )
    return parts.with_columns(ratio.alias("_ratio")).select(expr.alias("score")).to_series()


def _quoted(text: pl.Expr) -> pl.Expr:
    """A string column as JSON string literals (escaped exactly as Polars' ``json_encode`` does)."""
    return pl.struct(text.alias("v")).struct.json_encode().str.slice(5).str.head(-1)


def quote_labels(labels: list[tuple[str, pl.Series, pl.Series]]) -> list[pl.Series]:
    """``"<prefix><reason>"`` as JSON string literals, per ``(prefix, reasons, python)``: escaped only where a reason
    needs it. Reasons written in Polars embed JSON texts, kinds, dates and numbers, so only ``"`` and ``\\`` can need
    escaping; reasons of rows the reference compared (``python``) may hold control characters too."""
    heads = [json.dumps(prefix, ensure_ascii=False)[:-1] for prefix, _, _ in labels]
    reasons = pl.DataFrame([r.alias(f"r{i}") for i, (_, r, _) in enumerate(labels)])
    quoted = reasons.select(
        *((head + pl.col(f"r{i}") + '"').alias(f"q{i}") for i, head in enumerate(heads)),
        *(pl.col(f"r{i}").str.contains(r'["\\]').fill_null(False).alias(f"n{i}") for i in range(len(heads))),
    )
    out = []
    for i, (head, (_, column, python)) in enumerate(zip(heads, labels)):
        needs = quoted[f"n{i}"]
        if python.any():
            rows = python.arg_true()
            needs = needs.scatter(rows, needs.gather(rows) | column.gather(rows).str.contains(r"[\x00-\x1f]"))
        label = quoted[f"q{i}"]
        if needs.any():
            rows = needs.fill_null(False).arg_true()
            fixed = pl.select(head + _quoted(pl.lit(column.gather(rows))).str.slice(1)).to_series()
            label = label.scatter(rows, fixed)
        out.append(label)
    return out


class FieldAccuracySettings(EvaluatorSettings):
    """Settings of ``field_accuracy``."""

    fields: list[FieldSpec] = Field(min_length=1)
    """The fields to compare: ``path``, ``match``, ``required``, ``weight`` plus the match's own settings."""
    aggregation: Literal["weighted_average", "all_or_nothing"] = "weighted_average"
    """``weighted_average`` of field scores, or 1 only when every counted field is a hit."""


@register
class FieldAccuracy(Evaluator[FieldAccuracySettings]):
    """Weighted share of fields of the JSON response that match the expected JSON object."""

    type_name: ClassVar[str] = "field_accuracy"
    settings_model = FieldAccuracySettings
    required_columns = ("output", "expected_output")
    default_threshold = 0.8
    splittable = True

    def warm_up(self) -> None:
        duckpath.warm_up(self.settings.fields)
        fastpath.prepare(self.settings.fields)

    def evaluate(self, batch: pl.DataFrame) -> EvalOutput:
        s = self.settings
        specs = s.fields
        by_msgspec = batch.height <= duckpath.MSGSPEC_ROWS  # the batch alone decides: no state between batches
        sides = duckpath.extract_sides(batch, ("output", "expected_output"), specs, by_msgspec)
        (got_ok, got_deep, got), (want_ok, want_deep, want) = sides["output"], sides["expected_output"]
        compared = fastpath.compare(specs, got, want, got_ok)
        error = (
            pl.when(pl.lit(want_deep))
            .then(pl.lit(f"expected_output: {TOO_DEEP}"))
            .when(~pl.lit(want_ok))
            .then(pl.lit(NOT_AN_OBJECT))
            .when(pl.lit(got_deep))
            .then(pl.lit(f"output: {TOO_DEEP}"))
        )
        frame = pl.DataFrame({"sample_id": batch["id"], "g_ok": got_ok, "w_ok": want_ok, "raw": batch["output"]})
        frame = frame.with_columns(error.alias("error"))
        frame = frame.hstack(compared.get_columns())
        labels = quote_labels([(spec.path + ": ", frame[f"r{i}"], frame[f"p{i}"]) for i, spec in enumerate(specs)])
        frame = frame.hstack([label.alias(f"q{i}") for i, label in enumerate(labels)])
        frame = frame.with_columns(scores(frame, specs, s.aggregation))
        failed = pl.col("error").is_not_null()
        results = frame.select(
            pl.col("sample_id"),
            pl.when(failed)
            .then(pl.lit(ERROR))
            .when(pl.col("g_ok") & pl.col("score").is_null())
            .then(pl.lit(SKIPPED))
            .otherwise(pl.lit(PROCESSED))
            .alias("status"),
            pl.when(~failed).then(pl.col("score")).alias("score"),
            pl.col("error"),
            pl.when(~failed).then(_details(frame, len(specs))).alias("details"),
        )
        if not want_ok.all():
            rows = (~want_ok).arg_true()
            raw = batch["expected_output"].cast(pl.Utf8).gather(rows).str.head(RAW_LIMIT).alias("raw_expected")
            shown = raw.to_frame().select(pl.struct("raw_expected").struct.json_encode()).to_series()
            results = results.with_columns(results["details"].scatter(rows, shown))
        keep = frame.filter(~failed) if results["error"].null_count() < frame.height else frame
        fields = pl.concat(
            [
                keep.lazy().select(
                    pl.col("sample_id"),
                    pl.lit(spec.path).alias("path"),
                    pl.lit(spec.match).alias("match"),
                    pl.col(f"e{i}").alias("expected"),
                    pl.col(f"a{i}").alias("actual"),
                    pl.col(f"s{i}").alias("score"),
                    pl.col(f"h{i}").alias("hit"),
                    pl.col(f"r{i}").alias("reason"),
                )
                for i, spec in enumerate(specs)
            ]
        ).collect()  # the fields in one query
        return EvalOutput(results, fields=fields)


def _details(frame: pl.DataFrame, n_fields: int) -> pl.Series:
    """The details JSON of each row, assembled as text (Polars list columns cost ~4x more): ``hits``, ``misses`` and
    ``left_out`` lists of the quoted labels ``q{i}``, after a ``reason`` (and the ``raw`` response) where the response
    is not JSON or every field was left out."""

    def listed(key: str, cond: Callable[[pl.Expr], pl.Expr]) -> list[pl.Expr]:
        items = [pl.when(cond(pl.col(f"h{i}"))).then(pl.col(f"q{i}")) for i in range(n_fields)]
        return [pl.lit(f'"{key}":['), pl.concat_str(items, separator=",", ignore_nulls=True), pl.lit("]")]

    left_out = pl.lit('"reason":"every field was left out",')
    prefix = pl.when(pl.col("score").is_null()).then(left_out).otherwise(pl.lit(""))
    not_json = (~frame["g_ok"]).arg_true()
    if not_json.len():
        raw = frame["raw"].gather(not_json).str.head(RAW_LIMIT)
        shown = pl.select(pl.lit(f'"reason":"{NOT_JSON}","raw":') + _quoted(pl.lit(raw)) + ",").to_series()
        prefix = pl.lit(frame.select(prefix).to_series().scatter(not_json, shown))
    body = [*listed("hits", lambda h: h), pl.lit(","), *listed("misses", lambda h: ~h), pl.lit(",")]
    body += listed("left_out", pl.Expr.is_null)
    return frame.select(pl.concat_str([pl.lit("{"), prefix, *body, pl.lit("}")])).to_series()
