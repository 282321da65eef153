"""Which rows of a report's variants are the same sample: the same id and the same content
(:mod:`vision_eval.pairing`), whatever file each variant read. Such rows share one card, where their verdicts are
compared. An id whose content differs between variants gets one card per content (keyed ``<n>:<id>``), so what is
not the same sample is never compared; the page says how many samples were paired, differ or are in one variant
only."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from vision_eval.pairing import CONTENT, LISTED, content_columns, content_hashes
from vision_eval.report.sources import RUN_COLUMN, ReportInput, columns_of

KEY = "_key"


@dataclass
class VariantPairing:
    """How the variants' samples pair."""

    splits: pl.DataFrame
    """``run, sample_id, _key`` for the samples whose content differs between variants (their card key)."""
    counts: dict[str, Any] = field(default_factory=dict)
    """``samples`` (distinct ids), ``paired`` (in two or more variants, the same content in all),
    ``differ`` (an id whose content differs between variants), ``single`` (in one variant only), ``differing``
    (up to :data:`~vision_eval.pairing.LISTED` of those ids) and ``variants``."""

    def sentence(self) -> str:
        """The pairing in words, for the page."""
        c = self.counts
        text = f"{c['paired']} of {c['samples']} samples paired across variants (the same id and content)"
        if c["differ"]:
            named = ", ".join(c["differing"]) + (", ..." if c["differ"] > len(c["differing"]) else "")
            text += f"; {c['differ']} share an id but differ in content ({named}): not compared, one card each"
        if c["single"]:
            text += f"; {c['single']} in one variant only"
        return text


def no_pairing() -> VariantPairing:
    """The pairing of a single variant: nothing split, nothing to say."""
    return VariantPairing(pl.DataFrame(schema={RUN_COLUMN: pl.Utf8, "sample_id": pl.Utf8, KEY: pl.Utf8}))


def _same_ids(parts: list[pl.DataFrame]) -> bool:
    """True when every variant holds the same ids in the same order (then contents compare row by row)."""
    first = parts[0]["sample_id"]
    return all(part.height == first.len() and part["sample_id"].equals(first) for part in parts[1:])


def variant_pairing(data: ReportInput) -> VariantPairing:
    """Pair the samples of the report's variants by id and content (one pass over the samples)."""
    if len(data.labels) < 2 or not columns_of(data.samples):
        return no_pairing()
    columns = content_columns(source.info for source in data.runs)
    samples = data.samples.with_columns(pl.col(RUN_COLUMN).fill_null(""))
    hashed = content_hashes(samples, columns, keep=[RUN_COLUMN]).collect(engine="streaming")
    parts = hashed.partition_by(RUN_COLUMN, maintain_order=True)
    if len(parts) > 1 and _same_ids(parts):
        first = parts[0][CONTENT]
        agree = pl.all_horizontal(
            [first.is_not_null(), *((part[CONTENT] == first).fill_null(False) for part in parts[1:])]
        )
        if bool(pl.select(agree).to_series().all()):  # the usual case: nothing differs, nothing to split
            counts = {"samples": first.len(), "paired": first.len(), "differ": 0, "single": 0, "differing": []}
            return VariantPairing(no_pairing().splits, {**counts, "variants": len(data.labels)})
    return _pairing_by_id(hashed, data.labels)


def _pairing_by_id(hashed: pl.DataFrame, labels: list[str]) -> VariantPairing:
    # A sample without recorded content pairs with nothing: its own value per variant.
    content = pl.col(CONTENT).fill_null(pl.col(RUN_COLUMN).hash(7))
    per_variant = hashed.group_by(RUN_COLUMN, "sample_id", maintain_order=True).agg(content.first().alias(CONTENT))
    order = {label: index for index, label in enumerate(labels)}
    per_id = per_variant.group_by("sample_id", maintain_order=True).agg(
        pl.col(RUN_COLUMN).n_unique().alias("_variants"), pl.col(CONTENT).n_unique().alias("_contents")
    )
    differ = per_id.filter(pl.col("_contents") > 1)
    counts = {
        "samples": per_id.height,
        "paired": per_id.filter((pl.col("_variants") > 1) & (pl.col("_contents") == 1)).height,
        "differ": differ.height,
        "single": per_id.filter(pl.col("_variants") == 1).height,
        "differing": differ["sample_id"].head(LISTED).to_list(),
        "variants": len(labels),
    }
    split = per_variant.join(differ.select("sample_id"), on="sample_id", how="semi")
    rank = pl.col(RUN_COLUMN).replace_strict(order, default=len(order), return_dtype=pl.Int64)
    numbered = (
        split.with_columns(rank.alias("_rank"))
        .sort("sample_id", "_rank")
        .with_columns(pl.col(CONTENT).rank("dense").over("sample_id").alias("_n"))
    )
    # dense rank orders contents by value: renumber them in the order of the variants that hold them
    first = numbered.group_by("sample_id", "_n").agg(pl.col("_rank").min().alias("_first"))
    first = first.with_columns(pl.col("_first").rank("ordinal").over("sample_id").alias("_class"))
    splits = numbered.join(first, on=["sample_id", "_n"]).select(
        RUN_COLUMN, "sample_id", pl.format("{}:{}", pl.col("_class").cast(pl.Utf8), "sample_id").alias(KEY)
    )
    return VariantPairing(splits, counts)
