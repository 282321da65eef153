"""Per-evaluator summary of a results frame, and its terminal rendering."""

from __future__ import annotations

import sys
from typing import Any

import polars as pl

from vision_eval.results import ERROR, PROCESSED, SKIPPED


def aggregates() -> list[pl.Expr]:
    processed = pl.col("status") == PROCESSED
    return [
        pl.len().alias("rows"),
        processed.sum().alias("processed"),
        (pl.col("status") == ERROR).sum().alias("errors"),
        (pl.col("status") == SKIPPED).sum().alias("skipped"),
        # when/then rather than filter: Polars' streaming engine runs these over a scan (a filter inside a grouped
        # aggregation reads every row into memory)
        pl.when(processed).then(pl.col("score")).mean().alias("mean_score"),
        pl.when(processed).then(pl.col("passed").cast(pl.Float64)).mean().alias("pass_rate"),
        pl.col("input_tokens").sum().alias("input_tokens"),
        pl.col("output_tokens").sum().alias("output_tokens"),
        # Unknown prices stay unknown: a sum over only-null costs is null, not 0.
        pl.when(pl.col("cost_usd").is_not_null().any()).then(pl.col("cost_usd").sum()).alias("cost_usd"),
    ]


def summarize(results: pl.DataFrame) -> pl.DataFrame:
    """One row per evaluator: counts by status, mean score, pass rate, tokens and cost."""
    return results.group_by("evaluator", "type", maintain_order=True).agg(aggregates())


def summarize_one(results: pl.DataFrame | pl.LazyFrame, evaluator: str, type_name: str) -> tuple[pl.DataFrame, int]:
    """The summary row of one evaluator's results (the same columns as :func:`summarize`, no grouping), computed
    in one streaming pass, and how many of its rows were answered from the call cache."""
    head = pl.DataFrame({"evaluator": [evaluator], "type": [type_name]})
    cached = pl.col("cached").fill_null(False).sum().alias("_cached")
    values = results.lazy().select(*aggregates(), cached).collect(engine="streaming")
    hits = int(values["_cached"][0] or 0)
    return pl.concat([head, values.drop("_cached")], how="horizontal"), hits


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


def _groups(members: dict[str, dict[str, Any]]) -> str:
    """A benchmark's groups on one line: each group's numbers (its count in brackets)."""
    parts = []
    for group, numbers in members.items():
        shown = " ".join(f"{k} {_fmt(v)}" for k, v in numbers.items() if k not in ("n", "images", "num"))
        count = numbers.get("n", numbers.get("images"))
        parts.append(f"{group} {shown}" + (f" ({count})" if count is not None else ""))
    return "; ".join(parts)


def print_summary(
    summary: pl.DataFrame, metrics: dict[str, dict[str, Any]] | None = None, run_info: dict[str, Any] | None = None
) -> None:
    """Print the summary table, dataset-level metrics and, with ``run_info``, what the run's exit code says:
    the gates, the most common error reasons, spending and resumed batches."""
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
            console.print(f"[bold]{name}[/bold]: {shown}", markup=True, highlight=False)
            for group, members in values.items():
                if isinstance(members, dict) and members and all(isinstance(m, dict) for m in members.values()):
                    console.print(f"  {group}: {_groups(members)}", markup=False, highlight=False)
    if run_info is not None:
        _print_outcome(console, run_info)


def _print_outcome(console: Any, info: dict[str, Any]) -> None:
    from rich.markup import escape

    for name, reasons in (info.get("top_errors") or {}).items():
        console.print(f"[bold]{escape(name)}[/bold] errors, most common:", highlight=False)
        for item in reasons:
            console.print(f"  {item['rows']:>6} x {escape(item['reason'][:300])}", highlight=False)
    gates = info.get("gates") or []
    for gate in gates:
        if not gate["passed"]:
            console.print(f"gate [red]FAIL[/red] {escape(gate['message'])}", highlight=False)
    held = sum(1 for g in gates if g["passed"])
    if held:
        console.print(f"gates held: {held} of {len(gates)}", highlight=False)
    spending = info.get("spending") or {}
    if spending.get("spent_usd") or spending.get("budget_usd"):
        budget = f" of ${spending['budget_usd']:.4f}" if spending.get("budget_usd") else ""
        console.print(f"spent ${spending['spent_usd']:.4f}{budget}", highlight=False)
    resumed = sum((info.get("resumed_batches") or {}).values())
    if resumed:
        console.print(f"resumed batches: {resumed}", highlight=False)
    for damaged in info.get("set_aside") or []:
        console.print(f"set aside (damaged): {escape(damaged)}", highlight=False)
    resent = (info.get("scheduler") or {}).get("resent")
    if resent:
        console.print(f"sent again: {resent} calls an earlier attempt had finished (the damaged journal had lost "
                      "their records; they were paid twice)", highlight=False)  # fmt: skip
    if info.get("moved_from"):
        console.print(f"note: {escape(info['moved_from'])} already held a run; this one was written elsewhere")
    code = info.get("exit_code", 0)
    verdict = (
        "[green]all gates hold[/green]"
        if code == 0
        else f"[red]exit {code}[/red]: " + escape("; ".join(info.get("problems") or []))
    )
    console.print(f"verdict: {verdict}", highlight=False)
