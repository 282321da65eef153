"""The leaderboard's numbers and its Markdown table: each rate from its own rows, the bootstrap drawn exactly as
its definition says however many chunks it is drawn in, ranks within an evaluator, and the table a user reads."""

from __future__ import annotations

import inspect

import numpy as np
import polars as pl
import pytest
from scipy import stats

from vision_eval.leaderboard import bootstrap_interval, dimension_board, leaderboard, markdown, unranked


def counted_definition(distinct: np.ndarray, counts: np.ndarray, seed: int, resamples: int) -> tuple[float, float]:
    """The percentile 95% interval of ``resamples`` means of n draws with replacement, drawn as multinomial counts
    of the distinct values from ``default_rng(seed)`` all at once."""
    n = int(counts.sum())
    means = np.random.default_rng(seed).multinomial(n, counts / n, size=resamples) @ distinct / n
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


def test_counted_bootstrap_is_its_definition_drawn_from_the_seed() -> None:
    # 50 distinct values x 8 rows: drawn as counts.
    distinct = np.linspace(0.0, 1.0, 50)
    values = np.repeat(distinct, 8)
    for seed, resamples in ((0, 2000), (5, 1000)):
        wanted = counted_definition(distinct, np.full(50, 8), seed, resamples)
        assert bootstrap_interval(values, seed=seed, resamples=resamples) == pytest.approx(wanted, abs=1e-12)


def test_drawn_bootstrap_in_chunks_is_scipys_interval() -> None:
    # 10,000 distinct values: drawn row by row in chunks of 500 resamples, as scipy draws them at once.
    values = np.random.default_rng(3).normal(size=10_000)
    rng = np.random.default_rng(9)
    kw = {"rng": rng} if "rng" in inspect.signature(stats.bootstrap).parameters else {"random_state": rng}
    res = stats.bootstrap((values,), np.mean, n_resamples=1000, method="percentile", vectorized=True, **kw)
    wanted = (res.confidence_interval.low, res.confidence_interval.high)
    assert bootstrap_interval(values, seed=9, resamples=1000) == pytest.approx(wanted, abs=1e-12)


def results(rows: list[tuple]) -> pl.DataFrame:
    """Result rows: (candidate, evaluator, status, score, passed, input_tokens, cost_usd, run_dir, protocol)."""
    names = ["candidate", "evaluator", "status", "score", "passed", "input_tokens", "cost_usd", "run_dir", "protocol"]
    frame = pl.DataFrame(rows, schema=names, orient="row")
    return frame.with_columns(
        pl.lit("none").alias("judge"), pl.lit("").alias("variant"), pl.col("input_tokens").alias("output_tokens")
    )


def test_each_rate_counts_its_own_rows_and_ranks_go_by_mean_within_an_evaluator() -> None:
    rows = [
        ("m1", "em", "processed", 1.0, True, 10, 0.5, "r1", None),
        ("m1", "em", "processed", 0.5, False, 10, None, "r1", None),
        ("m1", "em", "error", None, None, 5, None, "r2", None),
        ("m1", "em", "skipped", None, None, None, None, "r2", None),
        ("m2", "em", "processed", 1.0, True, 1, None, "r3", None),
        ("m2", "em", "processed", 0.9, True, 1, None, "r3", None),
        ("m1", "other", "processed", 0.0, False, 0, None, "r1", None),
    ]
    board = leaderboard(results(rows))
    by = {(r["candidate"], r["evaluator"]): r for r in board.iter_rows(named=True)}
    m1, m2, other = by[("m1", "em")], by[("m2", "em")], by[("m1", "other")]
    assert m1["mean_score"] == 0.75 and m1["pass_rate"] == 0.5  # over the processed rows only
    assert (m1["error_rate"], m1["skipped_rate"]) == (0.25, 0.25)  # over every row
    assert (m1["input_tokens"], m1["output_tokens"], m1["cost_usd"], m1["runs"]) == (25, 25, 0.5, 2)
    assert m2["cost_usd"] is None and m2["mean_score"] == pytest.approx(0.95) and m2["pass_rate"] == 1.0
    assert (m2["rank"], m1["rank"], other["rank"]) == (1, 2, 1)
    assert board["candidate"].to_list()[:2] == ["m2", "m1"]  # best first within the evaluator
    assert m1["ci_low"] <= 0.75 <= m1["ci_high"] and other["ci_low"] == other["ci_high"] == 0.0


def test_an_evaluator_scored_under_two_protocols_is_not_ranked() -> None:
    rows = [
        ("m1", "vqa", "processed", 1.0, True, 0, None, "r1", "official"),
        ("m2", "vqa", "processed", 0.0, False, 0, None, "r2", "lenient"),
        ("m3", "vqa", "processed", 0.5, False, 0, None, "r3", None),
        ("m1", "em", "processed", 1.0, True, 0, None, "r1", None),
    ]
    board = leaderboard(results(rows))
    assert board.filter(pl.col("evaluator") == "vqa")["rank"].to_list() == [None, None, None]
    assert board.filter(pl.col("evaluator") == "em")["rank"].to_list() == [1]
    assert unranked(board) == {"vqa": ["lenient", "official", "not recorded"]}
    assert unranked(board.filter(pl.col("evaluator") == "em")) == {} and unranked(pl.DataFrame()) == {}


def test_an_empty_results_frame_gives_an_empty_board() -> None:
    assert leaderboard(pl.DataFrame()).is_empty()
    assert leaderboard(results([]).cast({"score": pl.Float64})).is_empty()


def test_dimension_board_means_each_dimension() -> None:
    dims = pl.DataFrame(
        {
            "candidate": ["m"] * 3,
            "judge": ["j"] * 3,
            "variant": [""] * 3,
            "evaluator": ["g"] * 3,
            "dimension": ["a", "a", "b"],
            "score": [0.2, 0.6, 1.0],
            "weight": [2.0, 2.0, 1.0],
        }
    )
    board = dimension_board(dims)
    assert board.select("dimension", "rows", "mean_score", "weight").rows() == [("a", 2, 0.4, 2.0), ("b", 1, 1.0, 1.0)]
    assert dimension_board(pl.DataFrame()).is_empty()


def test_markdown_table_cells_and_the_unranked_note() -> None:
    board = pl.DataFrame(
        [
            {
                "evaluator": "em",
                "rank": 1,
                "candidate": "m1",
                "judge": "none",
                "variant": "t=0.5",
                "rows": 10,
                "mean_score": 0.61234,
                "ci_low": 0.3,
                "ci_high": 0.9,
                "protocol": "official",
                "pass_rate": 0.6,
                "error_rate": 0.1,
                "cost_usd": None,
            },
            {
                "evaluator": "em",
                "rank": None,
                "candidate": "m2",
                "judge": "gpt",
                "variant": "",
                "rows": 4,
                "mean_score": None,
                "ci_low": None,
                "ci_high": None,
                "protocol": None,
                "pass_rate": None,
                "error_rate": 0.25,
                "cost_usd": 0.123456,
            },
        ]
    )
    assert markdown(board).split("\n") == [
        "| evaluator | rank | candidate | judge | variant | rows | mean score (95% CI) | protocol | pass | errors "
        "| cost |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        "| em | 1 | m1 | none | t=0.5 | 10 | 0.612 (0.300–0.900) | official | 60% | 10% | - |",
        "| em | - | m2 | gpt | - | 4 | - | - | - | 25% | $0.1235 |",
        "",
        "Not ranked: em — its runs were scored under different protocols (official, not recorded); scores under "
        "different protocols are not comparable. Re-score them under one protocol (evaluators.em.protocol=...) to "
        "rank them.",
    ]


def test_unranked_evaluators_in_board_order_and_a_board_without_protocols() -> None:
    names = ["e5", "e1", "e4", "e2", "e3"]
    board = pl.DataFrame(
        {"evaluator": [n for n in names for _ in (0, 1)], "protocol": ["official", "lenient"] * len(names)}
    )
    assert list(unranked(board)) == names
    assert unranked(pl.DataFrame({"evaluator": ["em"], "mean_score": [1.0]})) == {}


def test_tied_ranks_tie_within_the_tolerance_or_on_the_same_scores_and_rank_by_competition() -> None:
    from vision_eval.ranking import SCORES_HASH, TIE, tied_ranks

    board = pl.DataFrame(
        {
            "evaluator": ["e", "e", "e", "e", "e", "f"],
            "mean_score": [0.9, 0.9 - TIE / 2, 0.8, 0.7, 0.6, None],
            SCORES_HASH: [1, 2, 3, 3, 4, 5],  # 0.8 and 0.7 come from the same scores (e.g. rounding apart)
        },
        schema_overrides={SCORES_HASH: pl.UInt64},
    )
    ranks = tied_ranks(board, pl.Series([True, True, True, True, True, True]))
    assert ranks.to_list() == [1, 1, 3, 3, 5, None]
    unranked = tied_ranks(board, pl.Series([True, False, True, True, True, True]))
    assert unranked.to_list() == [1, None, 2, 2, 4, None]


def test_a_variant_is_compared_with_the_best_on_its_own_evaluators_pairable_samples() -> None:
    """The paired test reads one evaluator's processed rows of the two variants, on the samples that pair: an id
    whose content differs between the runs is left out. Runs m1 (r1) and m2 (r2) are the only runs recorded."""
    from vision_eval.ranking import Pairable

    em = {"m1": [1.0] * 9 + [0.0], "m2": [0.0] * 6 + [1.0] * 4}  # s0-s5 passed -> failed; s9 failed -> passed
    other = {"m1": [0.0] * 10, "m2": [1.0] * 10}
    rows, ids = [], []
    for evaluator, scores in (("em", em), ("other", other)):
        for candidate, run in (("m1", "r1"), ("m2", "r2")):
            for i, score in enumerate(scores[candidate]):
                rows.append((candidate, evaluator, "processed", score, score == 1.0, 0, None, run, None))
                ids.append(f"s{i}")
    rows.append(("m2", "em", "error", None, None, 0, None, "r2", None))  # no score: never paired
    ids.append("s0")
    frame = results(rows).with_columns(pl.Series("sample_id", ids))
    s9_differs = Pairable(frozenset({"r1", "r2"}), pl.Series("sample_id", ["s9"]))
    board = leaderboard(frame, pairable=s9_differs)
    by = {(r["candidate"], r["evaluator"]): r for r in board.iter_rows(named=True)}
    assert (by[("m1", "em")]["rank"], by[("m2", "other")]["rank"]) == (1, 1)
    m2 = by[("m2", "em")]
    assert (m2["vs_best_test"], m2["tied_with_best"]) == ("mcnemar_exact", False)
    assert m2["p_vs_best"] == pytest.approx(stats.binomtest(0, 6).pvalue)  # s9 left out: 6 to 0
    m1 = by[("m1", "other")]
    assert (m1["vs_best_test"], m1["p_vs_best"]) == ("mcnemar_exact", pytest.approx(stats.binomtest(0, 9).pvalue))
    all_pair = leaderboard(frame, pairable=Pairable(frozenset({"r1", "r2"}), pl.Series("sample_id", [], pl.Utf8)))
    m2 = all_pair.filter((pl.col("candidate") == "m2") & (pl.col("evaluator") == "em")).row(0, named=True)
    assert (m2["p_vs_best"], m2["tied_with_best"]) == (pytest.approx(stats.binomtest(1, 7).pvalue), True)
    unrecorded = leaderboard(frame, pairable=Pairable(frozenset({"r1"}), pl.Series("sample_id", [], pl.Utf8)))
    m2 = unrecorded.filter((pl.col("candidate") == "m2") & (pl.col("evaluator") == "em")).row(0, named=True)
    assert (m2["vs_best_test"], m2["p_vs_best"]) == ("intervals", None)  # r2 recorded no content


def test_a_board_with_nothing_ranked_keeps_the_ranking_columns_types() -> None:
    """An evaluator scored under two protocols is not ranked: its rank and comparison with the best are nulls of
    the columns' own types (the leaderboard file's schema does not depend on what could be ranked)."""
    rows = [
        ("m1", "vqa", "processed", 1.0, True, 0, None, "r1", "official"),
        ("m2", "vqa", "processed", 0.0, False, 0, None, "r2", "lenient"),
    ]
    board = leaderboard(results(rows))
    ranking = board.select("rank", "tied_with_best", "p_vs_best", "vs_best_test")
    assert ranking.rows() == [(None, None, None, None)] * 2
    assert dict(ranking.schema) == {
        "rank": pl.Int64, "tied_with_best": pl.Boolean, "p_vs_best": pl.Float64, "vs_best_test": pl.Utf8,
    }  # fmt: skip


def test_pairable_samples_leave_out_ids_whose_content_differs_or_was_not_recorded() -> None:
    from vision_eval.ranking import Pairable

    contents = pl.LazyFrame({
        "run_dir": ["r1", "r1", "r1", "r1", "r2", "r2", "r2", "r3"],
        "sample_id": ["same", "two", "none", "three", "same", "two", "none", "three"],
        "_content": [1, 2, 3, 4, 1, 5, None, 6],
    }, schema_overrides={"_content": pl.UInt64})  # fmt: skip
    pairable = Pairable.of(contents)
    assert pairable.run_dirs == frozenset({"r1", "r2", "r3"})
    assert sorted(pairable.excluded.to_list()) == ["none", "three", "two"]
