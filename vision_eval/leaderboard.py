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

from vision_eval.pairing import content_columns, content_hashes
from vision_eval.ranking import SCORES_HASH, Pairable, scores_hash, tied_ranks, versus_best
from vision_eval.runs import find_run_dirs, read_json, run_labels
from vision_eval.stats import BOOTSTRAP_RESAMPLES, bootstrap_interval, counted_interval, few_distinct

KEY = ["candidate", "judge", "variant", "evaluator"]
PROTOCOL = "protocol"


def _candidate_label(candidate: dict[str, Any]) -> str:
    return str(candidate.get("name") or candidate.get("model") or "dataset output")


def _evaluator_judge(described: dict[str, Any], run_judge: str) -> str | None:
    """The judge of one evaluator (its run.json description): the models it calls, the run's judge when it calls the
    configured one, ``None`` when it calls no judge."""
    if "models" in described:  # model-graded evaluators
        models = [str(m) for m in described.get("models") or []]
        return ", ".join(models) if models else run_judge
    if "agents" in described:  # judge-agent panels
        agents = described.get("agents") or []
        models = list(dict.fromkeys(str(a["model"]) for a in agents if isinstance(a, dict) and a.get("model")))
        return ", ".join(models) if models else run_judge
    return None


def run_columns(info: dict[str, Any], variant: str) -> tuple[dict[str, str], dict[str, dict[str, str | None]]]:
    """The candidate, judge and variant labels of one run (its run.json ``info``), and per evaluator it describes,
    its ``protocol`` (benchmark metrics) and its ``judge`` (``None`` for an evaluator that calls no judge; an
    evaluator the run does not describe keeps the run's judge)."""
    config = info.get("config", {})
    labels = {
        "candidate": _candidate_label(config.get("candidate") or {}),
        "judge": str((config.get("judge") or {}).get("model") or "none"),
        "variant": variant,
    }
    described = info.get("evaluators") or {}
    evaluators = {
        str(name): {
            PROTOCOL: str(d[PROTOCOL]) if d.get(PROTOCOL) else None,
            "judge": _evaluator_judge(d, labels["judge"]),
        }
        for name, d in described.items()
        if isinstance(d, dict)
    }
    return labels, evaluators


def _labels(runs: list[Path]) -> tuple[dict[Path, dict[str, str]], dict[Path, dict[str, dict[str, str | None]]]]:
    """Candidate, judge and variant of each run (the variant is what tells a run's config from the others;
    shards of one job share it), and the protocol and judge of each of its evaluators."""
    infos = [read_json(run / "run.json") for run in runs]
    variants = run_labels(runs, infos)
    labels, evaluators = {}, {}
    for run, info, variant in zip(runs, infos, variants, strict=True):
        labels[run], evaluators[run] = run_columns(info, variant)
    return labels, evaluators


def looked_up(column: pl.Expr, mapping: dict[str, str | None], default: str | None = None) -> pl.Expr:
    """``mapping[value]`` for each value of ``column`` (``default`` when absent), as a when/then chain: Polars'
    streaming engine runs it (``replace_strict`` read every row into memory)."""
    chain: Any = None
    for key, value in mapping.items():
        step = column == key
        chain = pl.when(step).then(pl.lit(value, pl.Utf8)) if chain is None else chain.when(step).then(pl.lit(value))
    return pl.lit(default, pl.Utf8) if chain is None else chain.otherwise(pl.lit(default, pl.Utf8))


def _read(runs: list[Path], name: str) -> pl.LazyFrame:
    """The runs' ``name`` files as one lazy scan, each row labelled with its run's candidate, judge (its
    evaluator's: none for an evaluator that calls no judge), variant, directory and protocol (nothing is read
    here)."""
    labels, evaluators = _labels(runs)
    frames = []
    for run in runs:
        path = run / name
        if path.exists():
            frame = pl.scan_parquet(path).with_columns(
                *(pl.lit(v).alias(k) for k, v in labels[run].items()), pl.lit(str(run)).alias("run_dir")
            )
            if "evaluator" in frame.collect_schema().names():
                described = evaluators[run]
                protocols = {e: d[PROTOCOL] for e, d in described.items() if d[PROTOCOL]}
                judges = {e: d["judge"] for e, d in described.items()}
                frame = frame.with_columns(
                    looked_up(pl.col("evaluator"), protocols).alias(PROTOCOL),
                    looked_up(pl.col("evaluator"), judges, labels[run]["judge"]).alias("judge"),
                )
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


def leaderboard(results: pl.DataFrame | pl.LazyFrame, seed: int = 0, pairable: Pairable | None = None) -> pl.DataFrame:
    """Per candidate x judge x variant x evaluator x protocol: ``rows`` (the rows the evaluator scored), ``skipped``
    and ``errors`` (counts), score, interval, rates, tokens, cost, and ``rank`` within the evaluator (equal means
    share one; null when its rows use different protocols: see :func:`unranked`), with ``tied_with_best``,
    ``p_vs_best`` and ``vs_best_test`` (see :mod:`vision_eval.ranking`). ``pairable``: which samples may be compared
    between variants (:class:`~vision_eval.ranking.Pairable`); without it variants are compared through their
    intervals. ``results`` is read in streaming passes (a run larger
    than memory gets a leaderboard)."""
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
            processed.sum().alias("rows"),
            (pl.col("status") == "skipped").sum().alias("skipped"),
            (pl.col("status") == "error").sum().alias("errors"),
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
            pl.col("run_dir").unique().alias("_run_dirs"),
            *([scores_hash()] if "sample_id" in names else []),
        )
        .collect(engine="streaming")
    )
    if board.is_empty():
        return pl.DataFrame()
    intervals = _intervals(lazy, board, keys, seed)
    board = board.with_columns(
        pl.Series("ci_low", [i[0] for i in intervals], pl.Float64).fill_nan(None),
        pl.Series("ci_high", [i[1] for i in intervals], pl.Float64).fill_nan(None),
    )
    one_protocol = board.select(pl.col(PROTOCOL).n_unique().over("evaluator") == 1).to_series()
    board = board.with_columns(tied_ranks(board, one_protocol))
    board = versus_best(board, lazy, pairable if "sample_id" in names else None, keys)
    return board.drop(SCORES_HASH, "_run_dirs", strict=False).sort(
        ["evaluator", PROTOCOL, "mean_score"], descending=[False, False, True], nulls_last=True, maintain_order=True
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


METRICS_SCHEMA = {
    "candidate": pl.Utf8,
    "judge": pl.Utf8,
    "variant": pl.Utf8,
    "evaluator": pl.Utf8,
    PROTOCOL: pl.Utf8,
    "metric": pl.Utf8,
    "value": pl.Float64,
    "run_dir": pl.Utf8,
}
METRIC_PATH = " / "
"""How the path of a nested dataset-level number is written (``subjects / Art / accuracy``)."""


def _numbers(values: Any, path: tuple[str, ...] = ()) -> list[tuple[str, float]]:
    """Every number in a run.json ``metrics`` entry, by its path (nested groups included; flags and text left out)."""
    if isinstance(values, dict):
        return [item for key, value in values.items() for item in _numbers(value, (*path, str(key)))]
    if isinstance(values, int | float) and not isinstance(values, bool):
        return [(METRIC_PATH.join(path), float(values))]
    return []


def metrics_board(runs: Sequence[Path]) -> pl.DataFrame:
    """The dataset-level numbers of each run's evaluators (run.json ``metrics``: a benchmark's totals, per subject,
    per category...), one row per candidate x judge x variant x evaluator x number, with the protocol they were
    computed under (numbers under different protocols are not comparable; nothing here is ranked)."""
    labels, evaluators = _labels(list(runs))
    rows = []
    for run in runs:
        info = read_json(run / "run.json")
        for evaluator, values in (info.get("metrics") or {}).items():
            described = evaluators[run].get(evaluator, {})
            for metric, value in _numbers(values):
                rows.append(
                    {
                        **labels[run],
                        "judge": described.get("judge") or labels[run]["judge"],
                        "evaluator": evaluator,
                        PROTOCOL: described.get(PROTOCOL),
                        "metric": metric,
                        "value": value,
                        "run_dir": str(run),
                    }
                )
    return pl.DataFrame(rows, schema=METRICS_SCHEMA)


def dimension_board(dimensions: pl.DataFrame) -> pl.DataFrame:
    """Mean score per candidate x judge x variant x evaluator x dimension."""
    if dimensions.is_empty():
        return pl.DataFrame()
    return dimensions.group_by([*KEY, "dimension"], maintain_order=True).agg(
        pl.len().alias("rows"), pl.col("score").mean().alias("mean_score"), pl.col("weight").first().alias("weight")
    )


def _rows_cell(row: dict[str, Any]) -> str:
    """The rows an evaluator scored, with its skipped and error rows beside them."""
    skipped, errors = row.get("skipped") or 0, row.get("errors") or 0
    others = [f"{skipped} skipped"] if skipped else []
    others += [f"{errors} error{'s' if errors != 1 else ''}"] if errors else []
    return str(row["rows"]) + (f" ({', '.join(others)})" if others else "")


def _rank_cell(row: dict[str, Any]) -> str:
    if row.get("rank") is None:
        return "-"
    tied = row.get("tied_with_best") and row["rank"] != 1
    return str(row["rank"]) + (" (≈ best)" if tied else "")


def markdown(board: pl.DataFrame) -> str:
    """The leaderboard as a Markdown table (the protocol beside each benchmark score; ``≈ best``: not significantly
    different from the best), then a line for each evaluator left unranked because its runs use different
    protocols."""
    headers = ["evaluator", "rank", "candidate", "judge", "variant", "rows", "mean score (95% CI)", "protocol"]
    headers += ["pass", "errors", "cost"]
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for row in board.iter_rows(named=True):
        score = "-" if row["mean_score"] is None else f"{row['mean_score']:.3f}"
        if row["ci_low"] is not None:
            score += f" ({row['ci_low']:.3f}–{row['ci_high']:.3f})"
        cells = [
            row["evaluator"],
            _rank_cell(row),
            row["candidate"],
            row["judge"] or "-",
            row["variant"] or "-",
            _rows_cell(row),
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
    """Build the leaderboard of every run under ``paths`` and write it (default: into the first path), with the
    runs' dataset-level numbers beside it (``leaderboard_metrics.parquet``, :func:`metrics_board`)."""
    runs = find_run_dirs(paths)
    if not runs:
        raise FileNotFoundError(f"no results.parquet under {', '.join(map(str, paths))}")
    pairable = None
    if any((run / "samples.parquet").is_file() for run in runs):
        columns = content_columns(read_json(run / "run.json") for run in runs)
        pairable = Pairable.of(content_hashes(_read(runs, "samples.parquet"), columns, keep=["run_dir"]))
    board = leaderboard(_read(runs, "results.parquet"), pairable=pairable)
    target = Path(out_dir) if out_dir else Path(paths[0]) if Path(paths[0]).is_dir() else runs[0].parent
    target.mkdir(parents=True, exist_ok=True)
    board.write_parquet(target / "leaderboard.parquet")
    numbers = metrics_board(runs)
    if not numbers.is_empty():
        numbers.write_parquet(target / "leaderboard_metrics.parquet")
    dims = dimension_board(_read(runs, "dimensions.parquet").collect(engine="streaming"))
    if not dims.is_empty():
        dims.write_parquet(target / "leaderboard_dimensions.parquet")
    return board, target
