"""Judge reliability: aggregating repeated judgements and panels, agreement across a panel, and
calibration against human labels (pure functions, hand-checked in tests).

Aggregation (``samples: k`` and ``panel``): ``mean`` / ``median`` set the score; ``passed`` is then
``score >= threshold`` for graders whose pass is a score threshold (``g_eval``, ``context_*``) and the
strict majority of the individual verdicts for verdict graders (``llm_rubric``, ``factuality``,
``closed_qa``, ``select_best``). ``majority`` takes the strict majority of the verdicts and the median
score. A single judgement is returned unchanged.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any


def aggregate(
    scores: Sequence[float], passes: Sequence[bool], method: str, threshold: float | None, pass_from_score: bool
) -> tuple[float, bool]:
    """(score, passed) of several valid judgements of one row."""
    if len(scores) == 1:
        return float(scores[0]), bool(passes[0])
    majority = sum(bool(p) for p in passes) * 2 > len(passes)
    score = statistics.fmean(scores) if method == "mean" else statistics.median(scores)
    if method != "majority" and pass_from_score and threshold is not None:
        return score, score >= threshold
    return score, majority


def spread(scores: Sequence[float]) -> dict[str, float]:
    """Population standard deviation, min and max of the scores."""
    return {"std": statistics.pstdev(scores), "min": min(scores), "max": max(scores)}


def krippendorff_alpha(units: Sequence[Sequence[float | None]], level: str = "interval") -> float | None:
    """Krippendorff's alpha for ``units`` (one list of ratings per unit, ``None`` = missing), ``interval``
    (squared difference) or ``nominal`` (0/1) metric. Units with fewer than two ratings are ignored;
    ``None`` when fewer than two pairable values exist or there is no variation at all."""
    import numpy as np

    values = [[float(v) for v in unit if v is not None and not _nan(v)] for unit in units]
    values = [u for u in values if len(u) >= 2]
    if not values:
        return None

    def delta(a: Any, b: Any) -> Any:
        return (a != b).astype(float) if level == "nominal" else (a - b) ** 2

    total = sum(len(u) for u in values)
    observed = 0.0
    for unit in values:
        arr = np.asarray(unit)
        observed += delta(arr[:, None], arr[None, :]).sum() / (len(unit) - 1)
    observed /= total
    pooled = np.concatenate([np.asarray(u) for u in values])
    expected = delta(pooled[:, None], pooled[None, :]).sum() / (total * (total - 1))
    if expected == 0:
        return None
    return float(1.0 - observed / expected)


def _nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def to_levels(values: Sequence[float], low: float, high: float, levels: int) -> list[int]:
    """Map values on ``low..high`` onto ``levels`` ordered categories 0..levels-1 (nearest)."""
    span = high - low
    return [min(levels - 1, max(0, round((v - low) / span * (levels - 1)))) for v in values]


def weighted_kappa(a: Sequence[int], b: Sequence[int], levels: int, weights: str = "quadratic") -> float | None:
    """Cohen's kappa between two raters on ``levels`` ordered categories, ``linear`` or ``quadratic``
    disagreement weights (``none`` for unweighted); ``None`` when undefined (no expected disagreement)."""
    import numpy as np

    if not a or len(a) != len(b):
        return None
    observed = np.zeros((levels, levels))
    for i, j in zip(a, b, strict=True):
        observed[i, j] += 1
    observed /= observed.sum()
    expected = np.outer(observed.sum(1), observed.sum(0))
    grid = np.abs(np.subtract.outer(np.arange(levels), np.arange(levels))).astype(float)
    if weights == "quadratic":
        grid = grid**2
    elif weights == "none":
        grid = (grid > 0).astype(float)
    denominator = (grid * expected).sum()
    if denominator == 0:
        return None
    return float(1.0 - (grid * observed).sum() / denominator)


def label(value: Any) -> bool | None:
    """A human pass label: booleans, 1/0, or pass/fail, yes/no, true/false, y/n (``None`` otherwise)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and not _nan(value) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("pass", "passed", "yes", "y", "true", "1"):
            return True
        if text in ("fail", "failed", "no", "n", "false", "0"):
            return False
    return None


def correlations(judge: Sequence[float], human: Sequence[float]) -> dict[str, float | None]:
    """Spearman's rho and Kendall's tau-b (with p-values) between judge and human scores."""
    from scipy import stats

    if len(judge) < 2 or len(set(judge)) < 2 or len(set(human)) < 2:
        return {"spearman": None, "spearman_p": None, "kendall": None, "kendall_p": None}
    rho = stats.spearmanr(judge, human)
    tau = stats.kendalltau(judge, human)
    return {
        "spearman": float(rho.statistic),
        "spearman_p": float(rho.pvalue),
        "kendall": float(tau.statistic),
        "kendall_p": float(tau.pvalue),
    }


def calibration_row(
    judge: Sequence[float],
    human: Sequence[float],
    scale: tuple[float, float],
    levels: int,
    weights: str,
) -> dict[str, Any]:
    """Agreement of judge scores (0..1) with human scores on ``scale``: n, Spearman, Kendall, weighted kappa."""
    row: dict[str, Any] = {"n": len(judge), **correlations(judge, human)}
    row["kappa"] = (
        weighted_kappa(to_levels(judge, 0.0, 1.0, levels), to_levels(human, *scale, levels), levels, weights)
        if judge
        else None
    )
    row["kappa_levels"], row["kappa_weights"] = levels, weights
    return row


def default_levels(scale: tuple[float, float]) -> int:
    """Categories for kappa: one per point of an integer scale of 3 to 11 points (1..5 -> 5), else 5 bins."""
    low, high = scale
    if float(low).is_integer() and float(high).is_integer() and 2 <= high - low <= 10:
        return int(high - low) + 1
    return 5
