"""Per-evaluator summary of a results frame, and its terminal rendering."""

from __future__ import annotations

import sys
from typing import Any

import polars as pl

from vision_eval.results import ERROR, PROCESSED, SKIPPED


def summarize(results: pl.DataFrame) -> pl.DataFrame:
    """One row per evaluator: counts by status, mean score, pass rate, tokens and cost."""
    processed = pl.col("status") == PROCESSED
    return results.group_by("evaluator", "type", maintain_order=True).agg(
        pl.len().alias("rows"),
        processed.sum().alias("processed"),
        (pl.col("status") == ERROR).sum().alias("errors"),
        (pl.col("status") == SKIPPED).sum().alias("skipped"),
        pl.col("score").filter(processed).mean().alias("mean_score"),
        pl.col("passed").filter(processed).cast(pl.Float64).mean().alias("pass_rate"),
        pl.col("input_tokens").sum().alias("input_tokens"),
        pl.col("output_tokens").sum().alias("output_tokens"),
        # Unknown prices stay unknown: a sum over only-null costs is null, not 0.
        pl.when(pl.col("cost_usd").is_not_null().any()).then(pl.col("cost_usd").sum()).alias("cost_usd"),
    )


def _fmt(value: Any, kind: str = "") -> str:
    if value is None:
        return "-"
    if kind == "pct":
        return f"{value:.0%}"
    if kind == "cost":
        return f"${value:.4f}"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def print_summary(summary: pl.DataFrame, metrics: dict[str, dict[str, Any]] | None = None) -> None:
    """Print the summary table (and dataset-level metrics) with rich."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title="vision-eval summary")
    for header in ("evaluator", "type", "rows", "mean score", "pass rate", "errors", "skipped", "tokens", "cost"):
        table.add_column(header, justify="left" if header in ("evaluator", "type") else "right")
    for row in summary.iter_rows(named=True):
        tokens = (row["input_tokens"] or 0) + (row["output_tokens"] or 0)
        table.add_row(
            row["evaluator"],
            row["type"],
            str(row["rows"]),
            _fmt(row["mean_score"]),
            _fmt(row["pass_rate"], "pct"),
            str(row["errors"]),
            str(row["skipped"]),
            str(tokens) if tokens else "-",
            _fmt(row["cost_usd"], "cost"),
        )
    console = Console(width=None if sys.stdout.isatty() else 140)
    console.print(table)
    for name, values in (metrics or {}).items():
        if values:
            shown = ", ".join(f"{k}={_fmt(v)}" for k, v in values.items() if not isinstance(v, dict | list))
            console.print(f"[bold]{name}[/bold]: {shown}")
