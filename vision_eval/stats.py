"""Statistics over result scores, reused by the leaderboard and ``vision-eval compare``: bootstrap intervals of a mean
(of one run's scores, or of paired differences between two runs) and paired significance tests (exact McNemar on
pass/fail, Wilcoxon signed-rank on scores), the tests from scipy.

A percentile bootstrap resamples n values with replacement; what it costs is kept small without changing what is
drawn (:func:`bootstrap_interval`): few distinct values are drawn as multinomial counts of each value, and many
values in many rows as counts of equal-size bins of the sorted values (see :func:`_binned_interval`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BOOTSTRAP_RESAMPLES = 1000
"""Resamples of the leaderboard's intervals."""
PAIRED_RESAMPLES = 10_000
"""Resamples of a comparison's interval of a difference (a paper's figure: the Monte Carlo error stays small)."""
MCNEMAR = "mcnemar_exact"
WILCOXON = "wilcoxon"
_COUNTS_DRAW_MAX = 1000
"""Most distinct values for which resamples are drawn as counts of each value."""
_DRAWN_MAX = 50_000_000
"""Most values drawn one by one (rows x resamples); past it, resamples are drawn as counts of bins."""
_BINS = 256
_CHUNK = 5_000_000
"""Most numbers held at once while drawing (resamples x rows, or x distinct values)."""


def chunk_sizes(total: int, per_chunk: int) -> list[int]:
    """``total`` resamples drawn ``per_chunk`` at a time (at least one): the size of each draw, the last one what
    is left."""
    step = max(1, per_chunk)
    return [min(step, total - start) for start in range(0, total, step)]


def few_distinct(distinct: np.ndarray, n: int) -> bool:
    """True when resamples are drawn as counts of each distinct value: at most :data:`_COUNTS_DRAW_MAX` distinct
    values among ``n``, each repeated 8 times on average or more."""
    return len(distinct) <= _COUNTS_DRAW_MAX and len(distinct) * 8 <= n


def counted_interval(distinct: np.ndarray, counts: np.ndarray, seed: int, resamples: int) -> tuple[float, float]:
    """The bootstrap interval of the mean of ``counts[i]`` copies of each ``distinct[i]`` (sorted), drawn as
    multinomial counts."""
    n = int(counts.sum())
    rng = np.random.default_rng(seed)
    means = [
        rng.multinomial(n, counts / n, size=size) @ distinct / n
        for size in chunk_sizes(resamples, _CHUNK // len(distinct))
    ]
    low, high = np.percentile(np.concatenate(means), [2.5, 97.5])
    return float(low), float(high)


def _binned_interval(values: np.ndarray, seed: int, resamples: int) -> tuple[float, float]:
    """The bootstrap interval of the mean of many distinct values in many rows, drawn by bins.

    A resample's n draws fall into :data:`_BINS` equal-count bins of the sorted values as multinomial counts
    ``m``; the draws within bin k add up to a sum with mean ``m_k * mean_k`` and variance ``m_k * var_k``, drawn
    as a normal variable with those moments (each bin holds many rows, so its sum is normal to a fine
    approximation, and its spread is a small part of the whole). Cost: resamples x bins, not resamples x rows."""
    ordered = np.sort(values)
    n = len(ordered)
    edges = np.linspace(0, n, _BINS + 1).astype(np.int64)
    starts, sizes = edges[:-1], np.diff(edges)
    means = np.add.reduceat(ordered, starts) / sizes
    spreads = np.add.reduceat((ordered - np.repeat(means, sizes)) ** 2, starts) / sizes
    rng = np.random.default_rng(seed)
    drawn = []
    for size in chunk_sizes(resamples, _CHUNK // _BINS):
        picks = rng.multinomial(n, sizes / n, size=size)
        sums = picks @ means + rng.standard_normal(size) * np.sqrt(picks @ spreads)
        drawn.append(sums / n)
    low, high = np.percentile(np.concatenate(drawn), [2.5, 97.5])
    return float(low), float(high)


def bootstrap_interval(values: np.ndarray, seed: int = 0, resamples: int = BOOTSTRAP_RESAMPLES) -> tuple[float, float]:
    """Percentile bootstrap 95% interval of the mean (NaN for no values).

    A resample of n values drawn with replacement is, for values taking few distinct values (pass/fail, a 1-10
    scale, differences of those), the same as multinomial counts of those values: drawn that way it costs
    resamples x distinct values instead of resamples x n (a 1M-row evaluator: milliseconds instead of seconds),
    with the same distribution. Many distinct values in more rows than :data:`_DRAWN_MAX` / resamples are drawn
    by bins (:func:`_binned_interval`); otherwise row by row, as ``scipy.stats.bootstrap`` draws them."""
    n = len(values)
    if n == 0:
        return float("nan"), float("nan")
    if n == 1:
        return float(values[0]), float(values[0])
    distinct, counts = np.unique(values, return_counts=True)
    if few_distinct(distinct, n):
        return counted_interval(distinct, counts, seed, resamples)
    if n * resamples > _DRAWN_MAX and n >= _BINS * 100:
        return _binned_interval(values, seed, resamples)
    rng = np.random.default_rng(seed)
    means = [values[rng.integers(0, n, size=(size, n))].mean(axis=1) for size in chunk_sizes(resamples, _CHUNK // n)]
    low, high = np.percentile(np.concatenate(means), [2.5, 97.5])
    return float(low), float(high)


def mcnemar_exact(to_pass: int, to_fail: int) -> float:
    """Two-sided exact McNemar p-value from the discordant pairs (failed -> passed, passed -> failed): how unlikely
    so uneven a split is under Binomial(to_pass + to_fail, 1/2) (``scipy.stats.binomtest``). 1 with no discordant
    pair."""
    if to_pass + to_fail == 0:
        return 1.0
    from scipy.stats import binomtest

    return float(binomtest(to_pass, to_pass + to_fail, 0.5).pvalue)


def wilcoxon_signed_rank(differences: np.ndarray) -> float:
    """Two-sided Wilcoxon signed-rank p-value of paired differences (``scipy.stats.wilcoxon``; zero differences are
    dropped, as its default does). 1 when every difference is zero."""
    nonzero = differences[differences != 0]
    if nonzero.size == 0:
        return 1.0
    from scipy.stats import wilcoxon

    return float(wilcoxon(nonzero).pvalue)


@dataclass(frozen=True)
class PairedTest:
    """The comparison of two runs' scores on the same samples."""

    n: int
    baseline_mean: float
    candidate_mean: float
    delta: float
    """``candidate_mean - baseline_mean``: the mean of the paired differences."""
    ci_low: float
    ci_high: float
    """The paired bootstrap 95% interval of ``delta``."""
    p_value: float
    test: str
    """:data:`MCNEMAR` (pass/fail scores) or :data:`WILCOXON` (other scores); empty with no pair."""


def is_pass_fail(baseline: np.ndarray, candidate: np.ndarray) -> bool:
    """True when both sides' scores are all 0 or 1: their mean is a pass rate, compared by McNemar's test."""
    return bool(np.isin(baseline, (0.0, 1.0)).all() and np.isin(candidate, (0.0, 1.0)).all())


def paired_p_value(baseline: np.ndarray, candidate: np.ndarray) -> tuple[float, str]:
    """The two-sided p-value of a difference between two runs' scores of the same samples, and the test's name:
    the exact McNemar test when the scores are pass/fail (0 or 1), else the Wilcoxon signed-rank test."""
    differences = candidate.astype(np.float64) - baseline.astype(np.float64)
    if is_pass_fail(baseline, candidate):
        return mcnemar_exact(int((differences > 0).sum()), int((differences < 0).sum())), MCNEMAR
    return wilcoxon_signed_rank(differences), WILCOXON


def paired_test(
    baseline: np.ndarray, candidate: np.ndarray, seed: int = 0, resamples: int = PAIRED_RESAMPLES
) -> PairedTest:
    """Compare two runs' scores of the same samples (``baseline[i]`` and ``candidate[i]`` score sample i): both
    means, their difference with a seeded paired bootstrap 95% interval, and a p-value, by the exact McNemar test
    when the scores are pass/fail (0 or 1) and the Wilcoxon signed-rank test otherwise. The pairs are resampled
    in the order of their differences, so the same seed gives the same interval whatever order they come in."""
    n = len(baseline)
    if n == 0:
        nan = float("nan")
        return PairedTest(0, nan, nan, nan, nan, nan, nan, "")
    # sorted: the interval depends on the pairs, not on the order in which a join handed them over
    differences = np.sort(candidate.astype(np.float64) - baseline.astype(np.float64))
    low, high = bootstrap_interval(differences, seed, resamples)
    p_value, test = paired_p_value(baseline, candidate)
    base_mean, cand_mean = float(baseline.mean()), float(candidate.mean())
    return PairedTest(n, base_mean, cand_mean, float(differences.mean()), low, high, p_value, test)
