"""Where a comparison goes: comparison.parquet (one row per evaluator), comparison_flips.parquet (every flipped
sample x evaluator) and comparison.html, in the candidate's folder unless told otherwise."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from vision_eval.compare.page import MAX_FLIPPED, write_page
from vision_eval.compare.table import Comparison

TABLE_FILE = "comparison.parquet"
FLIPS_FILE = "comparison_flips.parquet"
PAGE_FILE = "comparison.html"


def output_paths(comparison: Comparison, output: str | Path | None) -> tuple[Path, Path, Path]:
    """comparison.parquet, comparison_flips.parquet and comparison.html: in ``output`` (a folder, or the path of
    comparison.parquet itself, the others beside it), else in the candidate's folder."""
    if output is not None and Path(output).suffix == ".parquet":
        table = Path(output)
        return table, table.with_name(table.stem + "_flips.parquet"), table.with_suffix(".html")
    folder = Path(output) if output is not None else comparison.candidate.path
    return folder / TABLE_FILE, folder / FLIPS_FILE, folder / PAGE_FILE


def _write_parquet(frame: pl.DataFrame, path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    frame.write_parquet(tmp)
    tmp.replace(path)


def write_comparison(
    comparison: Comparison,
    table: pl.DataFrame,
    output: str | Path | None = None,
    html: bool = True,
    max_flipped: int = MAX_FLIPPED,
) -> list[Path]:
    """Write the judged ``table``, the flips and (``html``) the page; returns the paths written."""
    table_path, flips_path, page_path = output_paths(comparison, output)
    table_path.parent.mkdir(parents=True, exist_ok=True)
    sides = {"baseline": str(comparison.baseline.path), "candidate": str(comparison.candidate.path)}
    _write_parquet(table.with_columns(pl.lit(v).alias(k) for k, v in sides.items()), table_path)
    _write_parquet(comparison.flips, flips_path)
    written = [table_path, flips_path]
    if html:
        written.append(write_page(comparison, table, page_path, max_flipped))
    return written
