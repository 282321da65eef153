"""The JSON the report page renders: the overview over every row, and sample cards for a bounded choice of samples
(see ``selection``) with their results and thumbnails, so a report stays small whatever the row count."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

import polars as pl

from vision_eval.report import aggregates
from vision_eval.report.cards import card_texts, estimate_sizes, results_json
from vision_eval.report.content import VariantPairing, no_pairing, variant_pairing
from vision_eval.report.page import RawJSON
from vision_eval.report.selection import KEY, ORDER, RANK, Limits, Selection, select_cards, with_keys, within_budget
from vision_eval.report.sources import LEADERBOARD, RUN_COLUMN, ReportInput
from vision_eval.report.thumbs import PathDisplay, build_thumbnails

MAX_SAMPLES = Limits.max_samples
"""Most sample cards by default (the overview always covers every row)."""


def _embedded(frames: dict[str, pl.LazyFrame], keys: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """The rows of each frame (with card keys) that belong to the chosen cards, with their rank (read in streaming
    passes that keep only those rows, collected together)."""
    wanted = keys[KEY].implode()
    collected = pl.collect_all(
        [frame.filter(pl.col(KEY).is_in(wanted)) for frame in frames.values()], engine="streaming"
    )
    out = {}
    for name, chosen in zip(frames, collected):
        if not chosen.height:
            out[name] = chosen.with_columns(pl.lit(None, pl.UInt32).alias(RANK))
        else:
            out[name] = chosen.join(keys.select(KEY, RANK), on=KEY, how="inner", maintain_order="left")
    return out


def _images_in_rank_order(samples: pl.DataFrame) -> pl.Series | list[Any]:
    if "images" not in samples.columns or not samples.height:
        return []
    return samples.sort(RANK, maintain_order=True)["images"]


def _cards(
    data: ReportInput, keyed: dict[str, pl.LazyFrame], limits: Limits, thumb_size: int, compare: bool
) -> tuple[RawJSON, dict[str, str], dict[str, Any], Selection]:
    """The cards' JSON array (chosen, then cut to the byte budgets), the thumbnails, the sampling note, and the
    selection (with, per evaluator, how many samples were compared and changed verdict between variants)."""
    samples, results = keyed["samples"], keyed["results"]
    selection = select_cards(samples, results, compare, limits, single_run=len(data.runs) == 1)
    chosen = _embedded(keyed, selection.keys)
    sizes = estimate_sizes(chosen["samples"], chosen["results"], chosen["dimensions"], chosen["fields"])
    keys = within_budget(selection.keys, sizes, limits.sample_bytes)
    if keys.height < selection.keys.height:
        chosen = {name: frame.join(keys.select(KEY), on=KEY, how="semi") for name, frame in chosen.items()}

    roots = [str((source.info.get("dataset") or {}).get("root") or "") for source in data.runs]
    images = chosen["samples"]["images"] if "images" in chosen["samples"].columns else None
    display = PathDisplay(roots, images)
    embedded_samples = display.frame(chosen["samples"], ["row_error", "_row_error"])
    embedded_results = display.frame(chosen["results"], ["error", "details"])
    with ThreadPoolExecutor(max_workers=1) as pool:  # Pillow releases the GIL: thumbnails beside the results' JSON
        pending = pool.submit(
            build_thumbnails,
            _images_in_rank_order(embedded_samples),
            thumb_size,
            display=display,
            budget=limits.thumb_bytes,
        )
        encoded = results_json(embedded_results, chosen["dimensions"], chosen["fields"], compare)
        thumbs = pending.result()
    changed = selection.changed.join(keys.select(KEY), on=KEY)
    texts = card_texts(keys, embedded_samples, encoded, changed, thumbs, display)

    # The exact size, in case the estimate was short: the last ranks go first (the first card is always kept).
    spent = (pl.col("_json").str.len_bytes() + 1).cum_sum()
    kept = texts.sort(RANK).filter((spent <= limits.sample_bytes) | (pl.int_range(pl.len()) == 0))
    failing_kept = int((kept[RANK] < selection.failing_shown).sum())  # the failing cards have the first ranks
    note = selection.note(limits)
    note["left_out_for_size"] = selection.keys.height - kept.height
    note.update(shown=kept.height, failing_shown=failing_kept, others_shown=kept.height - failing_kept)
    uris = {key: thumb.uri for key, thumb in thumbs.items() if thumb.uri}
    cards = kept.sort(ORDER)["_json"].str.join(",").item() if kept.height else ""
    return RawJSON("[" + cards + "]"), uris, note, selection


def build_payload(
    data: ReportInput, title: str = "vision-eval report", thumb_size: int = 256, limits: Limits | None = None
) -> dict[str, Any]:
    """The report's data: JSON-able, except ``samples``, which is already JSON text (:class:`RawJSON`).

    The overview covers every row; the cards follow ``limits`` (see :class:`~vision_eval.report.selection.Limits`).
    """
    limits = limits or Limits()
    labels = data.labels or [""]
    compare = len(labels) > 1
    pairing: VariantPairing = variant_pairing(data) if compare else no_pairing()
    keyed = {
        "samples": with_keys(data.samples, pairing.splits, "id"),
        "results": with_keys(data.results, pairing.splits),
        "dimensions": with_keys(data.dimensions, pairing.splits),
        "fields": with_keys(data.fields, pairing.splits),
    }
    with ThreadPoolExecutor(max_workers=1) as pool:  # Polars releases the GIL: the overview runs beside the cards
        pending = pool.submit(aggregates.overview, keyed["results"], keyed["dimensions"], labels)
        samples, thumbs, sampling, selection = _cards(data, keyed, limits, thumb_size, compare)
        overview = pending.result()
    board = data.tables.get(LEADERBOARD)
    return {
        "title": title,
        "generated": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "total_samples": sampling["total"],
        "sampling": sampling,
        "runs": [aggregates.run_entry(source) for source in data.runs],
        "labels": data.labels,
        **overview,
        "pivot": aggregates.pivot(data, overview["evaluators"], selection, pairing) if compare else None,
        "leaderboard": aggregates.table(board.drop(RUN_COLUMN, strict=False)) if board is not None else None,
        "tables": sorted(name for name in data.tables if name != LEADERBOARD),
        "thumbs": thumbs,
        "samples": samples,
    }


__all__ = ["MAX_SAMPLES", "ORDER", "Limits", "build_payload"]
