"""Which samples get a card. The overview covers every row; the cards are bounded so that a report stays small
whatever the row count: samples that changed between variants, failed or errored come first (up to a cap), then a
seeded random sample of the others, all within a byte budget.

A card is one sample of one dataset: the same id in every variant (run group) that read the same rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from vision_eval.report.sources import POSITION, RUN_COLUMN
from vision_eval.results import ERROR, PROCESSED

DATASET = "_ds"
KEY = "_key"
"""The card key: the sample id, prefixed with the dataset number when the runs read several datasets."""
ORDER = "_order"
RANK = "_rank"


@dataclass(frozen=True)
class Limits:
    """How much of the rows a report embeds as sample cards (every aggregate covers all rows whatever these are)."""

    max_samples: int = 3000
    """Most sample cards."""
    max_failing: int = 2000
    """Most cards for samples that failed, errored or changed between variants (chosen first, changed ones first of
    all); the other cards are a random sample of the remaining samples."""
    seed: int = 0
    """Seed of the random sample of the other samples (the same seed picks the same samples)."""
    sample_bytes: int = 5_500_000
    """Most bytes of sample data (texts, verdicts, details) in the page: cards past it are left out, the randomly
    chosen ones first."""
    thumb_bytes: int = 3_000_000
    """Most bytes of embedded thumbnails (made smaller when many images are shown)."""


def verdict() -> pl.Expr:
    """A result row's verdict: ``passed``, ``failed``, ``error`` or ``processed`` (no threshold); null when skipped."""
    processed = pl.col("status") == PROCESSED
    return (
        pl.when(pl.col("status") == ERROR)
        .then(pl.lit("error"))
        .when(processed & pl.col("passed"))
        .then(pl.lit("passed"))
        .when(processed & ~pl.col("passed"))
        .then(pl.lit("failed"))
        .when(processed)
        .then(pl.lit("processed"))
    )


def with_keys(frame: pl.DataFrame, datasets: dict[str, int], id_column: str = "sample_id") -> pl.DataFrame:
    """``frame`` with its card key (``_key``), the dataset number of its run group (``_ds``), the sample id as text
    (``sample_id``) and a ``run`` column ("" when it had none)."""
    if RUN_COLUMN not in frame.columns:
        frame = frame.with_columns(pl.lit("", pl.Utf8).alias(RUN_COLUMN))
    run = pl.col(RUN_COLUMN).fill_null("")
    several = len(set(datasets.values())) > 1
    dataset = run.replace_strict(datasets, default=0, return_dtype=pl.UInt32) if several else pl.lit(0, pl.UInt32)
    sample_id = pl.col(id_column).cast(pl.Utf8) if id_column in frame.columns else pl.lit(None, pl.Utf8)
    frame = frame.with_columns(run.alias(RUN_COLUMN), dataset.alias(DATASET), sample_id.alias("sample_id"))
    key = pl.format("{}:{}", DATASET, "sample_id") if several else pl.col("sample_id")
    return frame.with_columns(key.alias(KEY))


@dataclass
class Selection:
    """The cards chosen and what the page says about the choice."""

    keys: pl.DataFrame
    """The chosen cards: ``_key``, ``_order`` (dataset order) and ``_rank`` (lower is kept first)."""
    changed: pl.DataFrame
    """``_key, changed``: the evaluators whose verdict differs between variants, per sample that has one."""
    changed_counts: dict[str, int]
    """Per evaluator, how many samples changed verdict between variants (over all rows)."""
    total: int
    """Samples in the runs."""
    failing_total: int
    """Samples that failed, errored or changed in some variant."""
    failing_shown: int
    others_total: int
    others_shown: int

    def note(self, limits: Limits) -> dict[str, int]:
        """What the page says about the cards it shows (filled in with ``shown`` once the byte budget is applied)."""
        return {
            "total": self.total,
            "failing_total": self.failing_total,
            "failing_shown": self.failing_shown,
            "failing_cap": limits.max_failing,
            "others_total": self.others_total,
            "others_shown": self.others_shown,
            "seed": limits.seed,
        }


def _changed(results: pl.DataFrame) -> pl.DataFrame:
    """Per sample and evaluator whose verdict differs between the variants that scored it (skipped ones aside)."""
    return (
        results.select(KEY, "evaluator", verdict().alias("_verdict"))
        .drop_nulls("_verdict")
        .group_by(KEY, "evaluator")
        .agg(pl.col("_verdict").n_unique().alias("_verdicts"))
        .filter(pl.col("_verdicts") > 1)
    )


def _ordered_keys(samples: pl.DataFrame, results: pl.DataFrame) -> pl.DataFrame:
    """Every card key once, in dataset order (``_order``): the samples' rows, then keys only results know."""
    if POSITION in samples.columns:  # shards merged: back in the order of the rows they were taken from
        samples = samples.sort(POSITION, maintain_order=True, nulls_last=True)
    keys = samples.select(KEY).drop_nulls()
    if keys[KEY].n_unique() < keys.height:  # one key column: hashing it is cheap next to a multi-column unique
        keys = keys.filter(pl.col(KEY).is_first_distinct())
    known = results[KEY].drop_nulls().unique()
    extra = known.filter(~known.is_in(keys[KEY].implode()))
    if extra.len():  # a result for a sample missing from samples.parquet: still shown
        keys = pl.concat([keys, extra.sort().to_frame()])
    return keys.with_row_index(ORDER)


def select_cards(samples: pl.DataFrame, results: pl.DataFrame, compare: bool, limits: Limits) -> Selection:
    """Choose the cards (``samples`` and ``results`` carry the key of :func:`with_keys`); ``compare``: several
    variants, so a sample whose verdict differs between them counts as failing and is chosen first."""
    keys = _ordered_keys(samples, results)
    failing = (pl.col("status") == ERROR) | ((pl.col("status") == PROCESSED) & (pl.col("passed") == False))  # noqa: E712
    bad = results.filter(failing)[KEY].unique()
    flips = _changed(results) if compare else pl.DataFrame(schema={KEY: pl.Utf8, "evaluator": pl.Utf8})
    changed = flips.group_by(KEY).agg(pl.col("evaluator").sort().alias("changed"))
    counts = dict(flips.group_by("evaluator").len().iter_rows()) if compare else {}
    flagged = keys.with_columns(
        pl.col(KEY).is_in(bad.implode()).alias("_bad"), pl.col(KEY).is_in(changed[KEY].implode()).alias("_changed")
    )
    failing_keys = flagged.filter(pl.col("_bad") | pl.col("_changed"))
    first = failing_keys.sort(~pl.col("_changed"), ORDER).head(min(limits.max_failing, limits.max_samples))
    others = flagged.filter(~pl.col("_bad") & ~pl.col("_changed"))
    room = max(0, limits.max_samples - first.height)
    picked = others if others.height <= room else others.sample(room, seed=limits.seed).sort(ORDER)
    chosen = pl.concat([first.select(KEY, ORDER), picked.select(KEY, ORDER)]).with_row_index(RANK)
    return Selection(
        keys=chosen,
        changed=changed,
        changed_counts={str(k): int(v) for k, v in counts.items()},
        total=keys.height,
        failing_total=failing_keys.height,
        failing_shown=first.height,
        others_total=others.height,
        others_shown=picked.height,
    )


def within_budget(keys: pl.DataFrame, sizes: pl.DataFrame, budget: int) -> pl.DataFrame:
    """The chosen ``keys`` whose estimated sizes (``_key, _bytes``), added up in rank order, stay within ``budget``
    bytes (the first card is always kept)."""
    ranked = keys.join(sizes, on=KEY, how="left").with_columns(pl.col("_bytes").fill_null(0)).sort(RANK)
    running = pl.col("_bytes").cum_sum()
    return ranked.filter((running <= budget) | (pl.col(RANK) == ranked[RANK].min())).drop("_bytes")
