"""Two runs compared evaluator by evaluator on the samples they share (see :mod:`vision_eval.pairing`): the paired
means, their difference with a bootstrap interval and a p-value (:func:`vision_eval.stats.paired_test`), the samples
whose verdict flipped, and a verdict per evaluator (worse, better, no significant difference, not compared)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from vision_eval.compare.paired_rows import CANDIDATE, paired_rows, side_samples
from vision_eval.compare.sides import Side
from vision_eval.pairing import Pairing, content_columns, pair
from vision_eval.results import ERROR, PROCESSED, SKIPPED
from vision_eval.stats import PAIRED_RESAMPLES, mcnemar_exact, paired_test

WORSE, BETTER, SAME, NOT_COMPARED = "worse", "better", "no significant difference", "not compared"
FLIPS = ("to_pass", "to_fail", "to_error", "from_error", "to_skip", "from_skip")
"""How a paired sample's verdict can change: failed -> passed, passed -> failed, into an error (from a score or a
skip), out of an error, scored -> skipped, skipped -> scored."""


@dataclass
class Comparison:
    """What ``vision-eval compare`` reports."""

    table: pl.DataFrame
    """One row per evaluator (the columns of comparison.parquet)."""
    flips: pl.DataFrame
    """One row per paired sample x evaluator whose verdict changed: ``sample_id, evaluator, change`` (one of
    :data:`FLIPS`), both statuses, scores and pass flags."""
    pairing: Pairing
    baseline: Side
    candidate: Side


def _verdict_text(status: str, passed: str) -> pl.Expr:
    return (
        pl.when(pl.col(status) == PROCESSED)
        .then(
            pl.when(pl.col(passed)).then(pl.lit("passed")).when(~pl.col(passed)).then(pl.lit("failed"))
            .otherwise(pl.lit("processed"))
        )
        .otherwise(pl.col(status))
    )  # fmt: skip


def _change() -> pl.Expr:
    """Which of :data:`FLIPS` a joined row is (null: its verdict did not change)."""
    base, cand = pl.col("status"), pl.col("status" + CANDIDATE)
    passed, passed_c = pl.col("passed"), pl.col("passed" + CANDIDATE)
    scored = (base == PROCESSED) & (cand == PROCESSED)
    return (
        pl.when(scored & (passed == False) & (passed_c == True)).then(pl.lit("to_pass"))  # noqa: E712
        .when(scored & (passed == True) & (passed_c == False)).then(pl.lit("to_fail"))  # noqa: E712
        .when((cand == ERROR) & (base != ERROR)).then(pl.lit("to_error"))
        .when((base == ERROR) & (cand != ERROR)).then(pl.lit("from_error"))
        .when((base == PROCESSED) & (cand == SKIPPED)).then(pl.lit("to_skip"))
        .when((base == SKIPPED) & (cand == PROCESSED)).then(pl.lit("from_skip"))
    )  # fmt: skip


def _counts(frame: pl.DataFrame) -> dict[str, Any]:
    """One evaluator's paired samples, those scored on both sides, the flips, pass and error rates."""
    status, status_c = pl.col("status"), pl.col("status" + CANDIDATE)
    scored = (status == PROCESSED) & (status_c == PROCESSED)
    both_passed = scored & pl.col("passed").is_not_null() & pl.col("passed" + CANDIDATE).is_not_null()
    change = pl.col("_change")
    return frame.select(
        pl.len().alias("n_samples"),
        scored.sum().alias("n_paired"),
        *((change == name).sum().alias(name) for name in FLIPS),
        pl.when(both_passed).then(pl.col("passed")).mean().alias("baseline_pass_rate"),
        pl.when(both_passed).then(pl.col("passed" + CANDIDATE)).mean().alias("candidate_pass_rate"),
        (status == ERROR).mean().alias("baseline_error_rate"),
        (status_c == ERROR).mean().alias("candidate_error_rate"),
        ((status == SKIPPED) & (status_c == SKIPPED)).sum().alias("_skipped_both"),
    ).row(0, named=True)


def _incomparable(name: str, baseline: Side, candidate: Side, types: dict[str, tuple[Any, Any]]) -> str | None:
    """Why evaluator ``name``'s scores on the two sides mean different things (``None``: they are comparable)."""
    base_type, cand_type = types.get(name, (None, None))
    if base_type is None:
        return "in the candidate only"
    if cand_type is None:
        return "in the baseline only"
    if base_type != cand_type:
        return f"different types ({base_type} vs {cand_type})"
    protocols = baseline.evaluator_info(name).get("protocol"), candidate.evaluator_info(name).get("protocol")
    if protocols[0] != protocols[1]:
        return f"scored under different protocols ({protocols[0] or 'none'} vs {protocols[1] or 'none'})"
    return None


def _threshold_note(name: str, baseline: Side, candidate: Side) -> str | None:
    """A note when the two sides pass a score at different thresholds (their pass/fail flips partly say so)."""
    thresholds = baseline.evaluator_info(name).get("threshold"), candidate.evaluator_info(name).get("threshold")
    if thresholds[0] == thresholds[1]:
        return None
    return f"thresholds differ ({thresholds[0]} vs {thresholds[1]}): pass/fail flips follow them too"


def _types(side: Side) -> dict[str, Any]:
    """Each evaluator's type, from run.json (else the results, in one pass)."""
    types: dict[str, Any] = {}
    for info in side.infos:
        for name, described in (info.get("evaluators") or {}).items():
            if isinstance(described, dict) and described.get("type"):
                types.setdefault(str(name), described["type"])
    if types:
        return types
    frame = side.results.group_by("evaluator", maintain_order=True).agg(pl.col("type").first()).collect()
    return dict(zip(frame["evaluator"].to_list(), frame["type"].to_list(), strict=True))


def _flips(name: str, frame: pl.DataFrame) -> pl.DataFrame:
    return frame.filter(pl.col("_change").is_not_null()).select(
        "sample_id",
        pl.lit(name, pl.Utf8).alias("evaluator"),
        pl.col("_change").alias("change"),
        _verdict_text("status", "passed").alias("baseline_verdict"),
        _verdict_text("status" + CANDIDATE, "passed" + CANDIDATE).alias("candidate_verdict"),
        pl.col("score").alias("baseline_score"),
        pl.col("score" + CANDIDATE).alias("candidate_score"),
    )


def compare(baseline: Side, candidate: Side, *, seed: int = 0, resamples: int = PAIRED_RESAMPLES) -> Comparison:
    """Compare ``candidate`` with ``baseline`` on the samples that pair (same id and content). :class:`NotARun`
    when a side holds a sample id twice."""
    columns = content_columns([*baseline.infos, *candidate.infos])
    samples = side_samples(baseline, columns), side_samples(candidate, columns)
    paired, pairing = pair(samples[0].hashes, samples[1].hashes)
    base_types, cand_types = _types(baseline), _types(candidate)
    names = list(dict.fromkeys([*base_types, *cand_types]))
    types = {name: (base_types.get(name), cand_types.get(name)) for name in names}
    notes = {name: _incomparable(name, baseline, candidate, types) for name in names}
    comparable = [name for name in names if notes[name] is None]

    counted: dict[str, dict[str, Any]] = {}
    flips = []
    for name, frame in paired_rows(baseline, candidate, paired, samples, comparable):
        frame = frame.with_columns(_change().alias("_change"))
        scored = frame.filter((pl.col("status") == PROCESSED) & (pl.col("status" + CANDIDATE) == PROCESSED))
        base, cand = scored["score"].to_numpy(), scored["score" + CANDIDATE].to_numpy()
        counted[name] = {**_counts(frame), "test": paired_test(base, cand, seed, resamples)}
        flips.append(_flips(name, frame))
    rows = []
    for name in names:
        row: dict[str, Any] = {"evaluator": name, "type": types[name][0] or types[name][1]}
        row.update(counted.get(name, {"n_samples": 0, "n_paired": 0}))
        test = row.pop("test", None) or paired_test(np.array([]), np.array([]))
        skipped = row.pop("_skipped_both", 0) == row["n_samples"] > 0
        unscored = "skipped on both sides" if skipped else "no sample scored on both sides"
        row.update(
            baseline_mean=test.baseline_mean,
            candidate_mean=test.candidate_mean,
            delta=test.delta,
            ci_low=test.ci_low,
            ci_high=test.ci_high,
            p_value=test.p_value,
            test=test.test or None,
            error_p_value=mcnemar_exact(int(row.get("from_error") or 0), int(row.get("to_error") or 0)),
            note=notes[name] or (unscored if not row["n_paired"] else _threshold_note(name, baseline, candidate)),
        )
        rows.append(row)
    table = pl.DataFrame(rows, schema=_SCHEMA, strict=False).with_columns(pl.col(pl.Float64).fill_nan(None))
    flipped = pl.concat(flips) if flips else pl.DataFrame(schema=_FLIPS_SCHEMA)
    return Comparison(table, flipped, pairing, baseline, candidate)


_FLIPS_SCHEMA: dict[str, Any] = {
    "sample_id": pl.Utf8,
    "evaluator": pl.Utf8,
    "change": pl.Utf8,
    "baseline_verdict": pl.Utf8,
    "candidate_verdict": pl.Utf8,
    "baseline_score": pl.Float64,
    "candidate_score": pl.Float64,
}
_SCHEMA: dict[str, Any] = {
    "evaluator": pl.Utf8,
    "type": pl.Utf8,
    "n_paired": pl.Int64,
    "baseline_mean": pl.Float64,
    "candidate_mean": pl.Float64,
    "delta": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "p_value": pl.Float64,
    "test": pl.Utf8,
    **dict.fromkeys(FLIPS, pl.Int64),
    "n_samples": pl.Int64,
    "baseline_pass_rate": pl.Float64,
    "candidate_pass_rate": pl.Float64,
    "baseline_error_rate": pl.Float64,
    "candidate_error_rate": pl.Float64,
    "error_p_value": pl.Float64,
    "note": pl.Utf8,
}
"""comparison.parquet's columns (then ``verdict``, ``alpha`` and ``min_delta``: :func:`judged`)."""


def judged(table: pl.DataFrame, alpha: float = 0.05, min_delta: float = 0.0) -> pl.DataFrame:
    """``table`` with each evaluator's ``verdict``: ``worse`` when its mean score dropped by at least ``min_delta``
    with p < ``alpha``, or its error rate rose by at least ``min_delta`` with the exact McNemar p of the error
    flips < ``alpha``; ``better`` when its mean rose by at least ``min_delta`` with p < ``alpha`` (and it is not
    worse); ``not compared`` without a sample scored on both sides; else ``no significant difference``."""
    delta, errors = pl.col("delta"), pl.col("candidate_error_rate") - pl.col("baseline_error_rate")
    significant = pl.col("p_value") < alpha
    worse_score = significant & (delta < 0) & (-delta >= min_delta)
    worse_errors = (pl.col("error_p_value") < alpha) & (errors > 0) & (errors >= min_delta)
    verdict = (
        pl.when(worse_score.fill_null(False) | worse_errors.fill_null(False)).then(pl.lit(WORSE))
        .when(pl.col("n_paired").fill_null(0) == 0).then(pl.lit(NOT_COMPARED))
        .when((significant & (delta > 0) & (delta >= min_delta)).fill_null(False)).then(pl.lit(BETTER))
        .otherwise(pl.lit(SAME))
    )  # fmt: skip
    return table.with_columns(
        verdict.alias("verdict"), pl.lit(alpha).alias("alpha"), pl.lit(min_delta).alias("min_delta")
    )
