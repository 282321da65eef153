"""Ranks that mean something, for the leaderboard: equal scores share a rank, and the variants not significantly
different from the best are marked.

Two means are equal when they differ by at most :data:`TIE` (sums of the same scores in another order differ in
their last bits: 0.858305052790347 and 0.8583050527903469), or when the variants scored every sample alike
(the same hash of their per-row scores). Ranks are competition ranks (1, 1, 3).

A variant is *tied with the best* when a paired test on the samples both scored (the same id and content, see
:mod:`vision_eval.pairing`) finds no significant difference (p >= :data:`ALPHA`: exact McNemar on pass/fail scores,
Wilcoxon signed-rank otherwise), or, where no sample pairs, when its bootstrap interval reaches the best's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from vision_eval.pairing import CONTENT
from vision_eval.stats import paired_p_value

TIE = 1e-12
"""Means at most this far apart are equal."""
ALPHA = 0.05
"""Significance level of the comparison with the best."""
SCORES_HASH = "_scores_hash"
INTERVALS = "intervals"
"""The ``vs_best_test`` of a variant compared through the bootstrap intervals (no sample pairs with the best)."""


def scores_hash() -> pl.Expr:
    """An aggregation: a hash of a group's processed (sample id, score) pairs, whatever their order."""
    processed = pl.col("status") == "processed"
    return pl.when(processed).then(pl.struct("sample_id", "score").hash(5)).bitwise_xor().alias(SCORES_HASH)


def tied_ranks(board: pl.DataFrame, ranked: pl.Series) -> pl.Series:
    """The competition rank of each row of ``board`` within its evaluator, by ``mean_score`` (highest first), equal
    means sharing a rank; null where ``ranked`` is false or the mean is null."""
    out: list[int | None] = [None] * board.height
    has_hash = SCORES_HASH in board.columns
    frame = board.select(
        pl.int_range(pl.len()).alias("_row"),
        "evaluator",
        "mean_score",
        (pl.col(SCORES_HASH) if has_hash else pl.lit(None, pl.UInt64)).alias("_hash"),
        ranked.alias("_ranked"),
    ).filter(pl.col("_ranked") & pl.col("mean_score").is_not_null())
    for part in frame.sort("evaluator", "mean_score", descending=[False, True]).partition_by("evaluator"):
        leader: tuple[float, Any] | None = None
        rank = 0
        for position, (row, mean, hashed) in enumerate(part.select("_row", "mean_score", "_hash").iter_rows(), 1):
            same = leader is not None and (leader[0] - mean <= TIE or (hashed is not None and hashed == leader[1]))
            if not same:
                leader, rank = (mean, hashed), position
            out[row] = rank
    return pl.Series("rank", out, dtype=pl.Int64)


@dataclass(frozen=True)
class Pairable:
    """Which samples the leaderboard may compare between variants: those of the runs that recorded their content
    (``run_dirs``), except the ids whose content differs between runs, or was not recorded (``excluded``)."""

    run_dirs: frozenset[str]
    excluded: pl.Series

    @classmethod
    def of(cls, contents: pl.LazyFrame) -> Pairable:
        """From ``run_dir, sample_id, _content`` of every sample (:func:`vision_eval.pairing.content_hashes`)."""
        per_id = (
            contents.group_by("sample_id")
            .agg(pl.col(CONTENT).n_unique().alias("_n"), pl.col(CONTENT).null_count().alias("_nulls"))
            .filter((pl.col("_n") > 1) | (pl.col("_nulls") > 0))
            .select("sample_id")
        )
        run_dirs, excluded = pl.collect_all([contents.select(pl.col("run_dir").unique()), per_id], engine="streaming")
        return cls(frozenset(run_dirs["run_dir"].to_list()), excluded["sample_id"])


def _scores(rows: pl.DataFrame, keys: list[str], group: dict[str, Any]) -> pl.DataFrame:
    mine = pl.all_horizontal(pl.col(k).eq_missing(pl.lit(group[k], pl.Utf8)) for k in keys)
    return rows.filter(mine).select("sample_id", "score")


def _evaluator_rows(results: pl.LazyFrame, keys: list[str], evaluator: str) -> pl.DataFrame:
    """The processed rows of one evaluator, every group's (one pass)."""
    mine = (pl.col("evaluator") == evaluator) & (pl.col("status") == "processed")
    return results.filter(mine).select(*keys, "sample_id", "score").collect(engine="streaming")


def _paired_scores(best: pl.DataFrame, other: pl.DataFrame, pairable: Pairable) -> tuple[np.ndarray, np.ndarray]:
    """The processed scores of the samples two groups both scored with the same content, aligned."""
    pairs = best.join(other, on="sample_id", how="inner", suffix="_other")
    if pairable.excluded.len():
        pairs = pairs.filter(~pl.col("sample_id").is_in(pairable.excluded.implode()))
    return pairs["score"].to_numpy(), pairs["score_other"].to_numpy()


def versus_best(board: pl.DataFrame, results: pl.LazyFrame, pairable: Pairable | None, keys: list[str]) -> pl.DataFrame:
    """``board`` (with ``rank`` and ``_run_dirs``, each group's run directories) with, per row of a ranked
    evaluator: ``tied_with_best`` (rank 1, or not significantly different from the first rank-1 row),
    ``p_vs_best`` and ``vs_best_test`` (the paired test's name, or :data:`INTERVALS`)."""
    tied: list[bool | None] = [None] * board.height
    p_values: list[float | None] = [None] * board.height
    tests: list[str | None] = [None] * board.height
    indexed = board.with_row_index("_row")
    for part in indexed.filter(pl.col("rank").is_not_null()).partition_by("evaluator"):
        ordered = part.sort("rank", "_row")
        best = ordered.row(0, named=True)
        best_scores: pl.DataFrame | None = None
        rows: pl.DataFrame | None = None
        for row in ordered.iter_rows(named=True):
            index = row["_row"]
            if row["rank"] == 1:
                tied[index] = True
                continue
            recorded = pairable is not None and set(best["_run_dirs"]) | set(row["_run_dirs"]) <= pairable.run_dirs
            base = other = np.array([])
            if recorded and pairable is not None:
                rows = rows if rows is not None else _evaluator_rows(results, keys, best["evaluator"])
                best_scores = best_scores if best_scores is not None else _scores(rows, keys, best)
                base, other = _paired_scores(best_scores, _scores(rows, keys, row), pairable)
            if len(base):
                p_values[index], tests[index] = paired_p_value(base, other)
                tied[index] = p_values[index] >= ALPHA
            elif row["ci_high"] is not None and best["ci_low"] is not None:
                tests[index] = INTERVALS
                tied[index] = row["ci_high"] >= best["ci_low"]
    return board.with_columns(
        pl.Series("tied_with_best", tied, dtype=pl.Boolean),
        pl.Series("p_vs_best", p_values, dtype=pl.Float64),
        pl.Series("vs_best_test", tests, dtype=pl.Utf8),
    )
