"""Panel math as pure Polars functions: weighted aggregate, rankings, plateaus, optimization feedback.

Inputs are long frames with one row per (sample, agent) verdict; every function works on the whole
run at once (group by brief and iteration), so the evaluator stays a thin layer over them.
"""

from __future__ import annotations

import polars as pl

SEVERITIES = ("critical", "major", "moderate", "minor")
"""TOP_ISSUE severities, most severe first (their order drives the feedback order)."""

ISSUE_DTYPE = pl.Struct(
    {
        "agent": pl.Utf8(),
        "severity": pl.Utf8(),
        "problem": pl.Utf8(),
        "fix": pl.Utf8(),
        "optimization_weight": pl.Float64(),
        "sample_id": pl.Utf8(),
    }
)


def aggregate_scores(verdicts: pl.DataFrame, weights: dict[str, float], require_all: bool = True) -> pl.DataFrame:
    """Per sample: Σ(score_i × w_i) / Σ(w_i) over the agents' scores (0..1).

    ``verdicts``: ``sample_id, agent, score`` (score null when the agent failed on that sample).
    ``weights``: agent -> scoring weight. With ``require_all`` a sample where any agent failed gets a
    null score (the caller makes it an error); otherwise the weights are re-normalized over the agents
    that scored. A sample whose scored weights sum to 0 gets a null score.
    Returns ``sample_id, score, weight_total, agents_scored, agents_failed`` (failed: list of names).
    """
    weight_frame = pl.DataFrame(
        {"agent": list(weights), "_w": [float(w) for w in weights.values()]},
        schema={"agent": pl.Utf8, "_w": pl.Float64},
    )
    joined = verdicts.select("sample_id", "agent", pl.col("score").cast(pl.Float64)).join(
        weight_frame, on="agent", how="left"
    )
    ok = pl.col("score").is_not_null()
    totals = joined.group_by("sample_id", maintain_order=True).agg(
        (pl.col("score") * pl.col("_w")).filter(ok).sum().alias("_num"),
        pl.col("_w").filter(ok).sum().alias("weight_total"),
        ok.sum().cast(pl.Int64).alias("agents_scored"),
        pl.col("agent").filter(~ok).alias("agents_failed"),
    )
    score = pl.when(pl.col("weight_total") > 0).then(pl.col("_num") / pl.col("weight_total"))
    if require_all:
        score = pl.when(pl.col("agents_failed").list.len() == 0).then(score)
    return totals.with_columns(score.alias("score")).select(
        "sample_id", "score", "weight_total", "agents_scored", "agents_failed"
    )


def _keys(frame: pl.DataFrame, group: str | None, iteration: str | None) -> tuple[pl.DataFrame, str, str]:
    """``frame`` with the group and iteration columns present (nulls when the dataset has none)."""
    group_col = group or "group"
    iter_col = iteration or "iteration"
    if group_col not in frame.columns:
        frame = frame.with_columns(pl.lit(None, pl.Utf8).alias(group_col))
    if iter_col not in frame.columns:
        frame = frame.with_columns(pl.lit(None, pl.Int64).alias(iter_col))
    return frame, group_col, iter_col


def rankings(scores: pl.DataFrame, group: str | None = "brief_id", iteration: str | None = "iteration") -> pl.DataFrame:
    """Rank images within each (group, iteration) by score, best first.

    ``scores``: ``sample_id, score`` plus the group and iteration columns (missing ones mean one
    group / no iterations). ``rank`` is 1 for the best (ties share the lower rank); exactly one
    ``winner`` per (group, iteration): the best score, ties broken by ``sample_id``. Samples without
    a score get a null rank and are never the winner.
    """
    frame, group_col, iter_col = _keys(scores, group, iteration)
    keys = [group_col, iter_col]
    scored = pl.col("score").is_not_null()
    ordered = frame.sort([*keys, "score", "sample_id"], descending=[False, False, True, False], nulls_last=True)
    ordinal = pl.int_range(pl.len()).over(keys) + 1
    rank = pl.col("score").rank(method="min", descending=True).over(keys).cast(pl.Int64)
    return ordered.select(
        group_col,
        iter_col,
        "sample_id",
        pl.col("score"),
        pl.when(scored).then(rank).alias("rank"),
        (scored & (ordinal == 1)).alias("winner"),
    )


def iteration_best(
    ranked: pl.DataFrame, group: str | None = "brief_id", iteration: str | None = "iteration"
) -> pl.DataFrame:
    """The winner's score per (group, iteration), from :func:`rankings`; sorted by iteration."""
    frame, group_col, iter_col = _keys(ranked, group, iteration)
    return (
        frame.filter(pl.col("winner"))
        .select(group_col, iter_col, pl.col("score").alias("best_score"), pl.col("sample_id").alias("winner_id"))
        .sort([group_col, iter_col], nulls_last=True)
    )


def plateaus(
    ranked: pl.DataFrame,
    group: str | None = "brief_id",
    iteration: str | None = "iteration",
    window: int = 3,
    threshold: float = 0.02,
) -> pl.DataFrame:
    """Per group: the iteration at which the best score per iteration stopped improving.

    With b_t the winner's score of iteration t (0..1, iterations with no score left out), the plateau
    is detected at the first t that closes a window of ``window`` iterations whose gain
    max(b_{t-window+2..t}) - b_{t-window+1} is below ``threshold`` (absolute, on the 0..1 scale: 0.02
    is 2 points of 100; a gain equal to the threshold, up to float rounding, still counts as improving).
    ``plateau_iteration`` is the window's first iteration (scores stopped improving there),
    ``detected_at`` its last. Groups with fewer than ``window`` iterations, or still improving, have
    ``plateaued`` false and null iterations.
    """
    if window < 2:
        raise ValueError("plateau window must be at least 2 iterations")
    best = iteration_best(ranked, group, iteration)
    _, group_col, iter_col = _keys(best, group, iteration)
    position = pl.int_range(pl.len()).over(group_col)
    start_score = pl.col("best_score").shift(window - 1).over(group_col)
    start_iter = pl.col(iter_col).shift(window - 1).over(group_col)
    later_max = pl.col("best_score").rolling_max(window_size=window - 1).over(group_col)
    flagged = best.with_columns(
        ((position >= window - 1) & ((later_max - start_score) < threshold - 1e-9)).alias("_flat"),
        start_iter.alias("_start"),
    )
    per_group = flagged.group_by(group_col, maintain_order=True).agg(
        pl.len().alias("iterations"),
        pl.col("best_score").max().alias("best_score"),
        pl.col(iter_col).sort_by("best_score", descending=True).first().alias("best_iteration"),
        pl.col("_flat").any().alias("plateaued"),
        pl.col("_start").filter(pl.col("_flat")).first().alias("plateau_iteration"),
        pl.col(iter_col).filter(pl.col("_flat")).first().alias("detected_at"),
    )
    return per_group.with_columns(
        pl.lit(window, pl.Int64).alias("window"), pl.lit(threshold, pl.Float64).alias("threshold")
    ).sort(group_col, nulls_last=True)


def _dedupe(values: pl.Expr) -> pl.Expr:
    """List of strings de-duplicated case- and whitespace-insensitively, first form and order kept."""
    key = pl.element().str.strip_chars().str.replace_all(r"\s+", " ").str.to_lowercase()
    return values.list.eval(pl.element().filter(key.is_first_distinct() & (key != "")))


def optimization_feedback(
    verdicts: pl.DataFrame, group: str | None = "brief_id", iteration: str | None = "iteration"
) -> pl.DataFrame:
    """Per (group, iteration): the TOP_ISSUEs in optimization order and the de-duplicated prompt instructions.

    ``verdicts``: ``sample_id, agent, optimization_weight, severity, problem, fix, prompt_instructions``
    (list of strings) plus the group and iteration columns. Issues are ordered by severity (critical,
    major, moderate, minor, then unknown), then by the agent's ``optimization_weight`` (highest first),
    then agent name and sample id. Agents with optimization weight 0 do not steer the optimization and
    are left out. ``prompt_instructions`` follow the same order, de-duplicated ignoring case and spacing.
    """
    frame, group_col, iter_col = _keys(verdicts, group, iteration)
    keys = [group_col, iter_col]
    severity_rank = (
        pl.col("severity").replace_strict(list(SEVERITIES), list(range(len(SEVERITIES))), default=len(SEVERITIES))
    ).cast(pl.Int64)
    steering = frame.filter(pl.col("optimization_weight") > 0).with_columns(
        severity_rank.alias("_sev"), pl.col("optimization_weight").cast(pl.Float64)
    )
    ordered = steering.sort(
        [*keys, "_sev", "optimization_weight", "agent", "sample_id"],
        descending=[False, False, False, True, False, False],
        nulls_last=True,
    )
    has_issue = pl.col("problem").is_not_null() | pl.col("fix").is_not_null()
    issue = pl.struct("agent", "severity", "problem", "fix", "optimization_weight", "sample_id").cast(ISSUE_DTYPE)
    instructions = ordered.group_by(keys, maintain_order=True).agg(
        issue.filter(has_issue).alias("top_issues"),
        pl.col("prompt_instructions").explode().drop_nulls().alias("prompt_instructions"),
    )
    return instructions.with_columns(_dedupe(pl.col("prompt_instructions")).alias("prompt_instructions")).sort(
        keys, nulls_last=True
    )
