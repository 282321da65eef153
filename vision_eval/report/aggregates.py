"""The report's overview, over every row whatever the cards show: summary, histograms, dimension means, and for
several variants the variant x evaluator comparison (mean score, pass rate and the leaderboard's bootstrap interval).
All grouped by Polars in streaming passes over the (lazy) frames; only the small aggregated tables reach Python.
The comparison of several variants reads the counts of each distinct score (the leaderboard's bootstrap)."""

from __future__ import annotations

from typing import Any

import polars as pl

from vision_eval.leaderboard import leaderboard, run_columns
from vision_eval.ranking import Pairable
from vision_eval.report.cards import clean
from vision_eval.report.content import VariantPairing
from vision_eval.report.selection import Selection
from vision_eval.report.sources import LEADERBOARD, RUN_COLUMN, ReportInput, columns_of
from vision_eval.results import ERROR, PROCESSED, SKIPPED

BINS = 10
_PIVOT_COLUMNS = (
    "rows",
    "skipped",
    "errors",
    "mean_score",
    "ci_low",
    "ci_high",
    "pass_rate",
    "error_rate",
    "rank",
    "tied_with_best",
    "p_vs_best",
    "vs_best_test",
    "protocol",
)


def _cells(results: pl.LazyFrame) -> pl.LazyFrame:
    """The results grouped by everything the overview tells apart (variant, evaluator, type, status, passed, score
    bin: few groups), with the sums the overview is made of. Each number of the overview is then a sum over a few
    cells: one cheap streaming pass over the rows, rather than a dozen conditional aggregations of every row."""
    scored = (pl.col("status") == PROCESSED) & pl.col("score").is_not_null()
    binned = (pl.col("score").clip(0.0, 1.0) * BINS).floor().cast(pl.Int8).clip(0, BINS - 1)
    keys: list[str | pl.Expr] = [
        RUN_COLUMN,
        "evaluator",
        "type",
        "status",
        "passed",
        pl.when(scored).then(binned).alias("_bin"),
    ]
    return results.group_by(*keys, maintain_order=True).agg(
        pl.len().alias("_rows"),
        pl.col("score").sum().alias("_score_sum"),
        pl.col("score").count().alias("_scores"),
        pl.col("input_tokens").sum(),
        pl.col("output_tokens").sum(),
        pl.col("cost_usd").sum().alias("_cost_sum"),
        pl.col("cost_usd").count().alias("_costs"),
        pl.col("threshold").first(),
    )


def _summary(cells: pl.DataFrame) -> pl.DataFrame:
    """Per variant, evaluator and type, what ``summary.aggregates`` computes over the rows, from the cells."""
    rows, status, passed = pl.col("_rows"), pl.col("status"), pl.col("passed")
    processed = status == PROCESSED

    def ratio(part: pl.Expr, whole: pl.Expr) -> pl.Expr:
        return pl.when(whole > 0).then(part / whole)

    return cells.group_by(RUN_COLUMN, "evaluator", "type", maintain_order=True).agg(
        rows.sum().alias("rows"),
        rows.filter(processed).sum().alias("processed"),
        rows.filter(status == ERROR).sum().alias("errors"),
        rows.filter(status == SKIPPED).sum().alias("skipped"),
        ratio(pl.col("_score_sum").filter(processed).sum(), pl.col("_scores").filter(processed).sum()).alias(
            "mean_score"
        ),
        ratio(rows.filter(processed & passed).sum(), rows.filter(processed & passed.is_not_null()).sum()).alias(
            "pass_rate"
        ),
        pl.col("input_tokens").sum(),
        pl.col("output_tokens").sum(),
        pl.when(pl.col("_costs").sum() > 0).then(pl.col("_cost_sum").sum()).alias("cost_usd"),
        pl.col("threshold").first(),  # the first row's: the cells keep the order in which rows come
    )


def overview(results: pl.LazyFrame, dimensions: pl.LazyFrame, labels: list[str]) -> dict[str, Any]:
    """The overview over every row, in one streaming pass over the results and one over the dimensions (collected
    together): ``evaluators`` (in order of appearance); ``summary``, per variant and evaluator: counts by status,
    mean score, pass rate, tokens, cost and threshold; ``histograms``: counts of processed scores in ten bins of 0.1;
    ``dimensions``: per variant, evaluator and dimension, the mean score."""
    means = dimensions.group_by(RUN_COLUMN, "evaluator", "dimension", maintain_order=True).agg(
        pl.col("score").mean().alias("mean_score"), pl.col("score").count().alias("rows")
    )
    cells, dimension_means = pl.collect_all([_cells(results), means], engine="streaming")
    grouped = _summary(cells)
    bins = cells.group_by(RUN_COLUMN, "evaluator", maintain_order=True).agg(
        pl.col("_rows").filter(pl.col("_bin") == k).sum().alias(f"_{k}") for k in range(BINS)
    )
    thresholds = grouped.group_by(RUN_COLUMN, "evaluator", maintain_order=True).agg(pl.col("threshold").first())
    first = {(run, evaluator): value for run, evaluator, value in thresholds.iter_rows()}
    summary = []
    for label in labels or [""]:
        for row in grouped.filter(pl.col(RUN_COLUMN) == label).drop(RUN_COLUMN, "threshold").iter_rows(named=True):
            threshold = clean(first.get((label, row["evaluator"])))
            summary.append({"run": label, **clean(row), "threshold": threshold})
    return {
        "evaluators": grouped["evaluator"].drop_nulls().unique(maintain_order=True).to_list(),
        "summary": summary,
        "histograms": [
            {"run": run or "", "evaluator": name, "counts": list(counts)} for run, name, *counts in bins.iter_rows()
        ],
        "dimensions": [clean(row) for row in dimension_means.iter_rows(named=True)],
    }


def table(frame: pl.DataFrame) -> dict[str, Any]:
    """A frame as ``{columns, rows}`` (object columns left out)."""
    frame = frame.select([c for c in frame.columns if frame[c].dtype != pl.Object])
    return {"columns": frame.columns, "rows": [clean(list(row)) for row in frame.iter_rows()]}


def run_entry(source: Any) -> dict[str, Any]:
    """What the page lists about one run directory."""
    info = source.info
    metrics = {
        name: {k: clean(v) for k, v in (values or {}).items() if not isinstance(v, dict | list)}
        for name, values in (info.get("metrics") or {}).items()
    }
    return {
        "label": source.label,
        "directory": source.directory,
        "run_id": info.get("run_id"),
        "counts": clean(info.get("counts")),
        "timings": clean(info.get("timings")),
        "totals": clean(info.get("totals")),
        "versions": clean(info.get("versions")),
        "dataset": clean({k: v for k, v in (info.get("dataset") or {}).items() if k not in ("columns", "root")}),
        "metrics": {k: v for k, v in metrics.items() if v},
    }


def variant_board(data: ReportInput, pairing: VariantPairing) -> pl.DataFrame:
    """The leaderboard of the report's variants, computed from its results (when no leaderboard came with them);
    variants are compared on the samples ``pairing`` pairs."""
    first: dict[str, Any] = {}
    for source in data.runs:
        first.setdefault(source.label, source.info)
    labels: list[Any] = []
    described: list[Any] = []
    for label, info in first.items():
        columns, by_evaluator = run_columns(info, label)
        labels.append({RUN_COLUMN: label, **columns})
        described.extend(
            {RUN_COLUMN: label, "evaluator": e, "protocol": d["protocol"], "_judge": d["judge"]}
            for e, d in by_evaluator.items()
        )
    label_frame = pl.DataFrame(
        labels, schema={RUN_COLUMN: pl.Utf8, "candidate": pl.Utf8, "judge": pl.Utf8, "variant": pl.Utf8}
    ).lazy()
    frame = data.results.with_columns(pl.col(RUN_COLUMN).fill_null("")).join(label_frame, on=RUN_COLUMN, how="left")
    evaluator_frame = pl.DataFrame(
        described,
        schema={RUN_COLUMN: pl.Utf8, "evaluator": pl.Utf8, "protocol": pl.Utf8, "_judge": pl.Utf8},
    ).with_columns(pl.lit(True).alias("_described"))
    frame = frame.join(evaluator_frame.lazy(), on=[RUN_COLUMN, "evaluator"], how="left").with_columns(
        pl.col(RUN_COLUMN).alias("run_dir"),
        pl.when(pl.col("_described")).then(pl.col("_judge")).otherwise(pl.col("judge")).alias("judge"),
    )
    pairable = Pairable(frozenset(first), pairing.splits["sample_id"].unique()) if columns_of(data.samples) else None
    return leaderboard(frame.drop("_judge", "_described"), pairable=pairable)


def pivot(
    data: ReportInput, evaluators: list[str], selection: Selection, pairing: VariantPairing
) -> dict[str, Any] | None:
    """For several variants: per variant x evaluator the leaderboard's mean score, 95% interval, pass and error
    rates and rank; per evaluator how many samples were compared and how many changed verdict between variants;
    and how the variants' samples paired."""
    labels = data.labels
    if len(labels) < 2:
        return None
    board = data.tables.get(LEADERBOARD)
    if board is None or "variant" not in board.columns or not set(labels) <= set(board["variant"].to_list()):
        board = variant_board(data, pairing)
    if board.is_empty():
        return None
    cells = board.filter(pl.col("variant").is_in(labels))
    kept = ["variant", "evaluator", *(c for c in _PIVOT_COLUMNS if c in cells.columns)]
    return {
        "variants": labels,
        "evaluators": evaluators,
        "cells": [clean(row) for row in cells.select(kept).iter_rows(named=True)],
        "changed": selection.changed_counts,
        "compared": selection.compared_counts,
        "pairing": {**pairing.counts, "sentence": pairing.sentence()},
    }
