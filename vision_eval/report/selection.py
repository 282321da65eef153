"""Which samples get a card. The overview covers every row; the cards are bounded so that a report stays small
whatever the row count: samples that changed between variants, failed or errored come first (up to a cap), then a
seeded random sample of the others, all within a byte budget.

A card is one sample: the same id and content in every variant (run group) that holds it (see ``content``).

The choice reads the rows lazily. One run's results hold, per evaluator, one row per sample in the samples' order
(checked in one streaming pass), so its failing samples are a bit per position and nothing per sample is held but
those bits (:func:`select_by_position`: a run larger than memory gets a report). Several runs are compared by
sample key (:func:`select_by_key`), which holds every key in memory.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from vision_eval.report.sources import POSITION, RUN_COLUMN, columns_of
from vision_eval.results import ERROR, PROCESSED

KEY = "_key"
"""The card key: the sample id, prefixed with a content number when its content differs between variants."""
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


VERDICTS = ("error", "passed", "failed", "processed")
"""What :func:`verdict` numbers: ``processed`` is a score without a threshold."""


def verdict() -> pl.Expr:
    """A result row's verdict as its index in VERDICTS (a small integer: cheap to group); null when skipped."""
    processed = pl.col("status") == PROCESSED
    return (
        pl.when(pl.col("status") == ERROR)
        .then(pl.lit(0, pl.UInt8))
        .when(processed & pl.col("passed"))
        .then(pl.lit(1, pl.UInt8))
        .when(processed & ~pl.col("passed"))
        .then(pl.lit(2, pl.UInt8))
        .when(processed)
        .then(pl.lit(3, pl.UInt8))
    )


def with_keys(frame: pl.LazyFrame, splits: pl.DataFrame | None = None, id_column: str = "sample_id") -> pl.LazyFrame:
    """``frame`` with its card key (``_key``), the sample id as text (``sample_id``) and a ``run`` column ("" when it
    had none). The key is the sample id, except for the samples of ``splits`` (``run, sample_id, _key``: an id
    whose content differs between variants, see :mod:`vision_eval.report.content`), which take the key given."""
    names = columns_of(frame)
    if RUN_COLUMN not in names:
        frame = frame.with_columns(pl.lit("", pl.Utf8).alias(RUN_COLUMN))
    sample_id = pl.col(id_column).cast(pl.Utf8) if id_column in names else pl.lit(None, pl.Utf8)
    frame = frame.with_columns(pl.col(RUN_COLUMN).fill_null(""), sample_id.alias("sample_id"))
    if splits is None or splits.is_empty():
        return frame.with_columns(pl.col("sample_id").alias(KEY))
    keyed = frame.join(splits.lazy(), on=[RUN_COLUMN, "sample_id"], how="left", maintain_order="left")
    return keyed.with_columns(pl.coalesce(KEY, "sample_id").alias(KEY))


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
    compared_counts: dict[str, int] = field(default_factory=dict)
    """Per evaluator, how many samples were compared: scored or errored by two or more variants (skipped rows
    aside), the same id and content in each."""

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


_FAILING = (pl.col("status") == ERROR) | ((pl.col("status") == PROCESSED) & (pl.col("passed") == False))  # noqa: E712


def _result_flags(results: pl.DataFrame, compare: bool) -> tuple[pl.DataFrame, dict[str, int], dict[str, int]]:
    """Per card key the results know: ``_bad`` (failed or errored in some variant) and ``changed`` (the evaluators
    whose verdict differs between the variants that scored the sample, skipped ones aside); and per evaluator how
    many samples changed, and how many were compared (a verdict in two or more variants)."""
    if not compare:
        keys = results[KEY].drop_nulls().unique()
        bad = results.filter(_FAILING)[KEY].unique()
        flags = pl.DataFrame({KEY: keys}).with_columns(
            pl.col(KEY).is_in(bad.implode()).alias("_bad"), pl.lit(None, pl.List(pl.Utf8)).alias("changed")
        )
        return flags, {}, {}
    per_evaluator = (
        results.drop_nulls(KEY)
        .with_columns(verdict().alias("_verdict"))
        .group_by(KEY, "evaluator")
        .agg(
            _FAILING.any().alias("_bad"),
            (pl.col("_verdict").min() != pl.col("_verdict").max()).alias("_changed"),
            (pl.col("_verdict").count() > 1).alias("_compared"),  # one row per variant: scored by two or more
        )
    )
    flips = per_evaluator.filter(pl.col("_changed"))
    flags = per_evaluator.group_by(KEY).agg(
        pl.col("_bad").any(), pl.col("evaluator").filter(pl.col("_changed")).sort().alias("changed")
    )
    compared = per_evaluator.group_by("evaluator").agg(pl.col("_compared").sum())
    changed_counts = {str(k): int(v) for k, v in flips.group_by("evaluator").len().iter_rows()}
    return flags, changed_counts, {str(k): int(v) for k, v in compared.iter_rows()}


def _ordered_keys(samples: pl.DataFrame, flags: pl.DataFrame) -> pl.DataFrame:
    """Every card key once, in dataset order (``_order``), with its flags: the samples' rows first, then keys only
    the results know (a result for a sample missing from samples.parquet is still shown)."""
    if POSITION in samples.columns:  # shards merged: back in the order of the rows they were taken from
        samples = samples.sort(POSITION, maintain_order=True, nulls_last=True)
    keys = samples.select(KEY).drop_nulls()
    if keys[KEY].n_unique() < keys.height:  # several variants share their samples: each card once
        keys = keys.filter(pl.col(KEY).is_first_distinct())
    extra = flags.join(keys, on=KEY, how="anti").select(KEY).sort(KEY)
    ordered = pl.concat([keys, extra]).with_row_index(ORDER)
    return ordered.join(flags, on=KEY, how="left", maintain_order="left").with_columns(
        pl.col("_bad").fill_null(False), (pl.col("changed").list.len() > 0).fill_null(False).alias("_changed")
    )


def _ranked(first: pl.DataFrame, picked: pl.DataFrame) -> pl.DataFrame:
    return pl.concat([first.select(KEY, ORDER), picked.select(KEY, ORDER)]).with_row_index(RANK)


def select_by_key(samples: pl.LazyFrame, results: pl.LazyFrame, compare: bool, limits: Limits) -> Selection:
    """Choose the cards (``samples`` and ``results`` carry the key of :func:`with_keys`); ``compare``: several
    variants, so a sample whose verdict differs between them counts as failing and is chosen first."""
    needed = results.select(KEY, "evaluator", "status", "passed").collect(engine="streaming")
    kept = [c for c in (KEY, POSITION) if c in columns_of(samples)]
    flags, counts, compared = _result_flags(needed, compare)
    flagged = _ordered_keys(samples.select(kept).collect(engine="streaming"), flags)
    failing_keys = flagged.filter(pl.col("_bad") | pl.col("_changed"))
    first = failing_keys.sort(~pl.col("_changed"), ORDER).head(min(limits.max_failing, limits.max_samples))
    others = flagged.filter(~pl.col("_bad") & ~pl.col("_changed"))
    room = max(0, limits.max_samples - first.height)
    picked = others if others.height <= room else others.sample(room, seed=limits.seed).sort(ORDER)
    return Selection(
        keys=_ranked(first, picked),
        changed=flags.filter(pl.col("changed").list.len() > 0).select(KEY, "changed"),
        changed_counts=counts,
        compared_counts=compared,
        total=flagged.height,
        failing_total=failing_keys.height,
        failing_shown=first.height,
        others_total=others.height,
        others_shown=picked.height,
    )


def _pair_hash(sample_id: pl.Expr, position: pl.Expr) -> pl.Expr:
    """A hash of (sample id, position): u64 mixing of the two hashes (cheaper than hashing a struct)."""
    return (sample_id.cast(pl.Utf8).hash(11) ^ position.hash(13)).hash(17).bitwise_xor().alias("_h")


def _blocks(results: pl.LazyFrame, rows: int) -> pl.LazyFrame:
    """Per evaluator: its first and last row, its row count and the hash of its (sample id, position) pairs."""
    position = (pl.col("_i") % rows).cast(pl.Int64)
    return (
        results.with_row_index("_i")
        .group_by("evaluator")
        .agg(
            pl.col("_i").min().alias("_start"),
            pl.col("_i").max().alias("_end"),
            pl.len().alias("_n"),
            _pair_hash(pl.col("sample_id"), position),
        )
    )


def _aligned(blocks: pl.DataFrame, expected: int, rows: int) -> list[str] | None:
    """The evaluators of a run's results, in order, when each holds exactly one row per sample in the samples' order
    (its rows a contiguous block whose (sample id, position) pairs hash to the samples' ``expected``); else
    ``None``."""
    blocks = blocks.sort("_start")
    for index, (start, end, count, value) in enumerate(blocks.select("_start", "_end", "_n", "_h").iter_rows()):
        if start != index * rows or end != start + rows - 1 or count != rows or value != expected:
            return None
    return [str(name) for name in blocks["evaluator"].to_list()]


def select_by_position(samples: pl.LazyFrame, results: pl.LazyFrame, limits: Limits) -> Selection | None:
    """The cards of one run whose results are aligned with its samples (see :func:`_aligned`), holding one bit per
    sample; ``None`` when they are not aligned. One streaming pass over the results checks the alignment and reads
    the failing bits."""
    rows = int(samples.select(pl.len()).collect().item())
    if not rows or "id" not in columns_of(samples):
        return None
    expected = samples.select(_pair_hash(pl.col("id"), pl.int_range(pl.len(), dtype=pl.Int64)))
    failing_rows = results.select(_FAILING.fill_null(False).alias("_bad"))
    blocks, hashed, bad_rows = pl.collect_all([_blocks(results, rows), expected, failing_rows], engine="streaming")
    evaluators = _aligned(blocks, hashed["_h"][0], rows)
    if evaluators is None:
        return None
    failing = bad_rows["_bad"]
    bad = pl.repeat(False, rows, dtype=pl.Boolean, eager=True)
    for index in range(len(evaluators)):
        bad = bad | failing.slice(index * rows, rows)
    del failing, bad_rows
    failing_total = int(bad.sum())
    first = bad.arg_true().head(min(limits.max_failing, limits.max_samples))
    others = (~bad).arg_true()
    room = max(0, limits.max_samples - first.len())
    picked = others if others.len() <= room else others.sample(room, seed=limits.seed).sort()
    chosen = pl.concat([first, picked])
    keys = (
        samples.with_row_index(ORDER)
        .filter(pl.col(ORDER).is_in(chosen.implode()))
        .select(KEY, ORDER)
        .collect(engine="streaming")
    )
    is_first = pl.col(ORDER).is_in(first.implode())
    ordered = pl.concat([keys.filter(is_first), keys.filter(~is_first)])
    return Selection(
        keys=ordered.with_row_index(RANK),
        changed=pl.DataFrame(schema={KEY: pl.Utf8, "changed": pl.List(pl.Utf8)}),
        changed_counts={},
        total=rows,
        failing_total=failing_total,
        failing_shown=first.len(),
        others_total=others.len(),
        others_shown=picked.len(),
    )


def select_cards(
    samples: pl.LazyFrame, results: pl.LazyFrame, compare: bool, limits: Limits, single_run: bool = False
) -> Selection:
    """Choose the cards: by position for one run (a bit per sample), else by key (see the module docstring)."""
    if single_run and not compare:
        chosen = select_by_position(samples, results, limits)
        if chosen is not None:
            return chosen
    return select_by_key(samples, results, compare, limits)


def within_budget(keys: pl.DataFrame, sizes: pl.DataFrame, budget: int) -> pl.DataFrame:
    """The chosen ``keys`` whose estimated sizes (``_key, _bytes``), added up in rank order, stay within ``budget``
    bytes (the first card is always kept)."""
    ranked = keys.join(sizes, on=KEY, how="left").with_columns(pl.col("_bytes").fill_null(0)).sort(RANK)
    running = pl.col("_bytes").cum_sum()
    return ranked.filter((running <= budget) | (pl.col(RANK) == pl.col(RANK).min())).drop("_bytes")
