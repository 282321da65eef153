"""The result rows of the samples two sides share, evaluator by evaluator, side by side.

A run writes its results as one block of rows per evaluator, each in its samples' order. When both sides' results
are laid out that way (checked: every block's ids are the samples' ids), a paired sample's rows are found by
position: no join on the id text, and only the status, score and pass columns are read (a 1M-sample comparison
costs a fraction of a second). Otherwise the rows are joined on (sample id, evaluator).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import polars as pl

from vision_eval.compare.sides import NotARun, Side
from vision_eval.pairing import POSITION_BASELINE, POSITION_CANDIDATE, content_hashes

KEPT = ("status", "score", "passed")
CANDIDATE = "_c"
"""The suffix of the candidate's columns."""


@dataclass
class SideSamples:
    """A side's samples: their ids and content hashes (the side's directories in order), and each directory's
    sample count."""

    hashes: pl.DataFrame
    sizes: list[int]


def side_samples(side: Side, columns: Sequence[str]) -> SideSamples:
    """Read a side's samples' ids and content hashes; :class:`NotARun` when its runs hold an id twice."""
    parts = []
    for directory in side.dirs:
        path = directory / "samples.parquet"
        if path.is_file():
            parts.append(content_hashes(pl.scan_parquet(path), columns).collect())
        else:
            parts.append(pl.DataFrame(schema={"sample_id": pl.Utf8, "_content": pl.UInt64}))
    hashes = pl.concat(parts, how="vertical_relaxed")
    # a run refuses repeated ids: only several runs (shards, or runs of the same samples by mistake) can repeat one
    if len(parts) > 1 and hashes["sample_id"].n_unique() < hashes.height:
        repeated = hashes.filter(pl.col("sample_id").is_duplicated())["sample_id"].unique(maintain_order=True)
        shown = ", ".join(repeated.head(5).to_list()) + (", ..." if repeated.len() > 5 else "")
        raise NotARun(
            f"{side.path} holds {repeated.len()} sample id(s) more than once ({shown}): several runs of the same "
            "samples? name one of them"
        )
    return SideSamples(hashes, [part.height for part in parts])


def _blocks(path: str, ids: pl.Series) -> dict[str, pl.LazyFrame] | None:
    """Per evaluator, its rows of one results file in the samples' order (lazy slices), when the file holds one
    block per evaluator with exactly the samples' ids in order; else ``None``."""
    scan = pl.scan_parquet(path)
    rows, total = len(ids), scan.select(pl.len()).collect().item()
    if not rows or total % rows:
        return None
    blocks: dict[str, pl.LazyFrame] = {}
    for index in range(total // rows):
        block = scan.slice(index * rows, rows)
        head = block.select("sample_id", "evaluator").collect()
        name = head["evaluator"][0]
        if name is None or name in blocks or not (head["evaluator"] == name).all():
            return None
        if not head["sample_id"].cast(pl.Utf8).equals(ids):
            return None
        blocks[name] = block.select(KEPT)
    return blocks


def _aligned(side: Side, samples: SideSamples) -> dict[str, list[pl.LazyFrame]] | None:
    """Per evaluator, its rows over the whole side in the samples' order (one lazy part per directory), when every
    directory's results are laid out by block (see :func:`_blocks`) with the same evaluators; else ``None``."""
    out: dict[str, list[pl.LazyFrame]] = {}
    start = 0
    for directory, size in zip(side.dirs, samples.sizes, strict=True):
        blocks = _blocks(str(directory / "results.parquet"), samples.hashes["sample_id"].slice(start, size))
        start += size
        if blocks is None or (out and set(blocks) != set(out)):
            return None
        for name, block in blocks.items():
            out.setdefault(name, []).append(block)
    return out


def _by_position(
    paired: pl.DataFrame, base: list[pl.LazyFrame], cand: list[pl.LazyFrame], identity: bool
) -> pl.DataFrame:
    frames = pl.collect_all([pl.concat(base), pl.concat(cand)])
    left, right = frames[0], frames[1].rename({c: c + CANDIDATE for c in KEPT})
    if not identity:
        left = left.select(pl.all().gather(paired[POSITION_BASELINE]))
        right = right.select(pl.all().gather(paired[POSITION_CANDIDATE]))
    return pl.concat([paired.select("sample_id", POSITION_BASELINE), left, right], how="horizontal")


def paired_rows(
    baseline: Side,
    candidate: Side,
    paired: pl.DataFrame,
    samples: tuple[SideSamples, SideSamples],
    names: Sequence[str],
) -> Iterator[tuple[str, pl.DataFrame]]:
    """For each evaluator of ``names`` that both sides scored, the rows of the ``paired`` samples (see
    :func:`vision_eval.pairing.pair`): ``sample_id``, the baseline's position, ``status, score, passed`` and the
    candidate's (suffixed ``_c``), in the baseline's order. One evaluator at a time: memory holds one."""
    base_blocks, cand_blocks = _aligned(baseline, samples[0]), _aligned(candidate, samples[1])
    if base_blocks is not None and cand_blocks is not None:
        rows = samples[0].hashes.height
        identity = (
            paired.height == rows == samples[1].hashes.height
            and bool((paired[POSITION_BASELINE] == pl.int_range(rows, eager=True)).all())
            and bool((paired[POSITION_CANDIDATE] == pl.int_range(rows, eager=True)).all())
        )
        for name in names:
            if name in base_blocks and name in cand_blocks:
                yield name, _by_position(paired, base_blocks[name], cand_blocks[name], identity)
        return
    keys = paired.select("sample_id", POSITION_BASELINE).lazy()
    kept = ("sample_id", "evaluator", *KEPT)
    joined = (
        baseline.results.select(kept)
        .filter(pl.col("evaluator").is_in(list(names)))
        .join(keys, on="sample_id", how="inner")
        .join(candidate.results.select(kept), on=["sample_id", "evaluator"], how="inner", suffix=CANDIDATE)
        .collect(engine="streaming")
    )
    parts = joined.partition_by("evaluator", as_dict=True, include_key=False)
    for name in names:
        part = parts.get((name,))
        if part is not None:
            yield name, part.sort(POSITION_BASELINE).select("sample_id", POSITION_BASELINE, *KEPT,
                                                            *(c + CANDIDATE for c in KEPT))  # fmt: skip
