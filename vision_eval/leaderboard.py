"""Leaderboards across runs: a run dir, a multirun folder, shard folders or a glob of results files.

Rows are grouped by candidate x judge x variant (the sweep overrides of the job, shard settings
left out so shards of one job merge) x evaluator x protocol (a benchmark metric's scoring protocol, from
run.json); each gets a mean score with a bootstrap 95% interval, pass rate, error rate, tokens and cost, and a
rank within its evaluator. Scores of one evaluator under different protocols are not comparable: such an evaluator
is listed unranked, with a note saying why.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from vision_eval.runs import find_run_dirs, read_json, run_labels
from vision_eval.stats import BOOTSTRAP_RESAMPLES, bootstrap_interval, counted_interval, few_distinct

KEY = ["candidate", "judge", "variant", "evaluator"]
PROTOCOL = "protocol"


def _candidate_label(candidate: dict[str, Any]) -> str:
    return str(candidate.get("name") or candidate.get("model") or "dataset output")


def run_columns(info: dict[str, Any], variant: str) -> tuple[dict[str, str], dict[str, str]]:
    """The candidate, judge and variant labels of one run (its run.json ``info``), and the protocol of each of its
    evaluators that has one."""
    config = info.get("config", {})
    labels = {
        "candidate": _candidate_label(config.get("candidate") or {}),
        "judge": str((config.get("judge") or {}).get("model") or "none"),
        "variant": variant,
    }
    described = info.get("evaluators") or {}
    protocols = {
        str(name): str(d[PROTOCOL]) for name, d in described.items() if isinstance(d, dict) and d.get(PROTOCOL)
    }
    return labels, protocols


def _labels(runs: list[Path]) -> tuple[dict[Path, dict[str, str]], dict[Path, dict[str, str]]]:
    """Candidate, judge and variant of each run (the variant is what tells a run's config from the others;
    shards of one job share it), and the protocol of each of its evaluators that has one."""
    infos = [read_json(run / "run.json") for run in runs]
    variants = run_labels(runs, infos)
    labels, protocols = {}, {}
    for run, info, variant in zip(runs, infos, variants, strict=True):
        labels[run], protocols[run] = run_columns(info, variant)
    return labels, protocols


def _looked_up(column: pl.Expr, mapping: dict[str, str]) -> pl.Expr:
    """``mapping[value]`` for each value of ``column`` (null when absent), as a when/then chain: Polars' streaming
    engine runs it (``replace_strict`` read every row into memory)."""
    chain: Any = None
    for key, value in mapping.items():
        step = column == key
        chain = pl.when(step).then(pl.lit(value, pl.Utf8)) if chain is None else chain.when(step).then(pl.lit(value))
    return pl.lit(None, pl.Utf8) if chain is None else chain.otherwise(pl.lit(None, pl.Utf8))


def _read(runs: list[Path], name: str) -> pl.LazyFrame:
    """The runs' ``name`` files as one lazy scan, each row labelled with its run's candidate, judge, variant,
    directory and protocol (nothing is read here)."""
    labels, protocols = _labels(runs)
    frames = []
    for run in runs:
        path = run / name
        if path.exists():
            frame = pl.scan_parquet(path).with_columns(
                *(pl.lit(v).alias(k) for k, v in labels[run].items()), pl.lit(str(run)).alias("run_dir")
            )
            if "evaluator" in frame.collect_schema().names():
                frame = frame.with_columns(_looked_up(pl.col("evaluator"), protocols[run]).alias(PROTOCOL))
            frames.append(frame)
    return pl.concat(frames, how="diagonal_relaxed") if frames else pl.LazyFrame()


def _intervals(results: pl.LazyFrame, groups: pl.DataFrame, keys: list[str], seed: int) -> list[tuple[float, float]]:
    """Each group's bootstrap interval, from the counts of its distinct processed scores (one streaming pass); only
    a group with many distinct scores has its scores read, in row order, to draw from them."""
    processed = results.filter(pl.col("status") == "processed")
    numbered = groups.select(keys).with_row_index("_group")
    counted = (
        processed.group_by([*keys, "score"])
        .len()
        .collect(engine="streaming")
        .join(numbered, on=keys, how="inner", nulls_equal=True)
        .sort("_group", "score", nulls_last=True)
    )
    by_group = {key[0]: part for key, part in counted.partition_by("_group", as_dict=True).items()}
    out = []
    for group in range(groups.height):
        part = by_group.get(group)
        if part is None:
            out.append((float("nan"), float("nan")))
            continue
        distinct = np.asarray(part["score"].to_numpy(), dtype=float)
        counts = part["len"].to_numpy().astype(np.int64)
        n = int(counts.sum())
        if n > 1 and few_distinct(distinct, n) and not np.isnan(distinct).any():
            out.append(counted_interval(distinct, counts, seed, BOOTSTRAP_RESAMPLES))
            continue
        one = numbered.filter(pl.col("_group") == group).drop("_group").lazy()
        scores = processed.join(one, on=keys, how="semi", nulls_equal=True, maintain_order="left").select("score")
        out.append(bootstrap_interval(np.asarray(scores.collect()["score"].to_numpy(), dtype=float), seed))
    return out


def leaderboard(results: pl.DataFrame | pl.LazyFrame, seed: int = 0) -> pl.DataFrame:
    """Per candidate x judge x variant x evaluator x protocol: score, interval, rates, tokens, cost, and ``rank``
    within the evaluator (null when its rows use different protocols: see :func:`unranked`). ``results`` is read in
    streaming passes (a run larger than memory gets a leaderboard)."""
    lazy = results.lazy()
    names = lazy.collect_schema().names()
    if not names:
        return pl.DataFrame()
    if PROTOCOL not in names:
        lazy = lazy.with_columns(pl.lit(None, pl.Utf8).alias(PROTOCOL))
    processed = pl.col("status") == "processed"
    keys = [*KEY, PROTOCOL]
    board = (
        lazy.group_by(keys, maintain_order=True)
        .agg(
            pl.len().alias("rows"),
            # when/then rather than filter: Polars' streaming engine runs these (a filter inside an aggregation
            # made it read every row into memory)
            pl.when(processed).then(pl.col("score")).mean().alias("mean_score"),
            pl.when(processed).then(pl.col("passed").cast(pl.Float64)).mean().alias("pass_rate"),
            (pl.col("status") == "error").mean().alias("error_rate"),
            (pl.col("status") == "skipped").mean().alias("skipped_rate"),
            pl.col("input_tokens").sum().alias("input_tokens"),
            pl.col("output_tokens").sum().alias("output_tokens"),
            pl.when(pl.col("cost_usd").is_not_null().any()).then(pl.col("cost_usd").sum()).alias("cost_usd"),
            pl.col("run_dir").n_unique().alias("runs"),
        )
        .collect(engine="streaming")
    )
    if board.is_empty():
        return pl.DataFrame()
    intervals = _intervals(lazy, board, keys, seed)
    protocols_of_evaluator = pl.col(PROTOCOL).n_unique().over("evaluator")
    rank = pl.col("mean_score").rank(method="min", descending=True).over("evaluator").cast(pl.Int64)
    return (
        board.with_columns(
            pl.Series("ci_low", [i[0] for i in intervals], pl.Float64).fill_nan(None),
            pl.Series("ci_high", [i[1] for i in intervals], pl.Float64).fill_nan(None),
        )
        .with_columns(pl.when(protocols_of_evaluator == 1).then(rank).alias("rank"))
        .sort(["evaluator", PROTOCOL, "mean_score"], descending=[False, False, True], nulls_last=True)
    )


def unranked(board: pl.DataFrame) -> dict[str, list[str]]:
    """Evaluators the leaderboard does not rank, with the protocols their rows use: a benchmark score means
    something different under each protocol, so runs scored under different ones are not compared."""
    if board.is_empty() or PROTOCOL not in board.columns:
        return {}
    mixed = board.group_by("evaluator", maintain_order=True).agg(pl.col(PROTOCOL).unique().sort(nulls_last=True))
    return {
        row["evaluator"]: [p if p is not None else "not recorded" for p in row[PROTOCOL]]
        for row in mixed.iter_rows(named=True)
        if len(row[PROTOCOL]) > 1
    }


def dimension_board(dimensions: pl.DataFrame) -> pl.DataFrame:
    """Mean score per candidate x judge x variant x evaluator x dimension."""
    if dimensions.is_empty():
        return pl.DataFrame()
    return dimensions.group_by([*KEY, "dimension"], maintain_order=True).agg(
        pl.len().alias("rows"), pl.col("score").mean().alias("mean_score"), pl.col("weight").first().alias("weight")
    )


def markdown(board: pl.DataFrame) -> str:
    """The leaderboard as a Markdown table (the protocol beside each benchmark score), then a line for each
    evaluator left unranked because its runs use different protocols."""
    headers = ["evaluator", "rank", "candidate", "judge", "variant", "rows", "mean score (95% CI)", "protocol"]
    headers += ["pass", "errors", "cost"]
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for row in board.iter_rows(named=True):
        score = "-" if row["mean_score"] is None else f"{row['mean_score']:.3f}"
        if row["ci_low"] is not None:
            score += f" ({row['ci_low']:.3f}–{row['ci_high']:.3f})"
        cells = [
            row["evaluator"],
            "-" if row.get("rank") is None else str(row["rank"]),
            row["candidate"],
            row["judge"],
            row["variant"] or "-",
            str(row["rows"]),
            score,
            row.get(PROTOCOL) or "-",
            "-" if row["pass_rate"] is None else f"{row['pass_rate']:.0%}",
            f"{row['error_rate']:.0%}",
            "-" if row["cost_usd"] is None else f"${row['cost_usd']:.4f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    for evaluator, protocols in unranked(board).items():
        lines.append(
            f"\nNot ranked: {evaluator} — its runs were scored under different protocols ({', '.join(protocols)}); "
            "scores under different protocols are not comparable. Re-score them under one protocol "
            f"(evaluators.{evaluator}.protocol=...) to rank them."
        )
    return "\n".join(lines)


def write_leaderboard(paths: Sequence[str | Path], out_dir: str | Path | None = None) -> tuple[pl.DataFrame, Path]:
    """Build the leaderboard of every run under ``paths`` and write it (default: into the first path)."""
    runs = find_run_dirs(paths)
    if not runs:
        raise FileNotFoundError(f"no results.parquet under {', '.join(map(str, paths))}")
    board = leaderboard(_read(runs, "results.parquet"))
    target = Path(out_dir) if out_dir else Path(paths[0]) if Path(paths[0]).is_dir() else runs[0].parent
    target.mkdir(parents=True, exist_ok=True)
    board.write_parquet(target / "leaderboard.parquet")
    dims = dimension_board(_read(runs, "dimensions.parquet").collect(engine="streaming"))
    if not dims.is_empty():
        dims.write_parquet(target / "leaderboard_dimensions.parquet")
    return board, target
