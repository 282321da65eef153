"""The self-contained HTML report: ``write_report(result_or_dirs, path)``.

One file, no network requests: thumbnails are embedded as data URIs, CSS and JS are inline and
the data is an escaped JSON block rendered with DOM text nodes (dataset text is never parsed as HTML).
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl

from vision_eval.report.page import render_html, script_json
from vision_eval.report.payload import build_payload
from vision_eval.report.selection import Limits
from vision_eval.report.sources import ReportInput, from_result, load_runs
from vision_eval.runs import find_run_dirs
from vision_eval.storage import write_atomically

REPORT_FILE = "report.html"

__all__ = [
    "REPORT_FILE",
    "Limits",
    "ReportInput",
    "build_html",
    "find_run_dirs",
    "from_result",
    "load_runs",
    "render_html",
    "script_json",
    "write_report",
]


def _input(source: Any, leaderboard: str | Path | pl.DataFrame | None, directory: str | None = None) -> ReportInput:
    if isinstance(source, ReportInput):
        return source
    # getattr_static: an EvalResult's frames are properties that read them whole (hasattr would, for every row)
    if all(inspect.getattr_static(source, name, None) is not None for name in ("results", "samples")):
        data = from_result(source, directory=directory)
        if isinstance(leaderboard, pl.DataFrame):
            data.tables["leaderboard"] = leaderboard
        elif leaderboard is not None and Path(leaderboard).is_file():
            data.tables["leaderboard"] = pl.read_parquet(leaderboard)
        return data
    paths = [source] if isinstance(source, str | Path) else list(source)
    dirs = find_run_dirs(paths)
    if not dirs:
        raise FileNotFoundError(f"no run directories (with results.parquet) found in: {', '.join(map(str, paths))}")
    return load_runs(dirs, leaderboard)


def _limits(limits: Limits | None, max_samples: int | None) -> Limits:
    limits = limits or Limits()
    if max_samples is None:
        return limits
    return replace(limits, max_samples=max_samples, max_failing=min(limits.max_failing, max_samples))


def build_html(
    source: Any,
    *,
    title: str | None = None,
    thumb_size: int = 256,
    leaderboard: str | Path | pl.DataFrame | None = None,
    max_samples: int | None = None,
    limits: Limits | None = None,
    directory: str | None = None,
) -> str:
    """The report page for an ``EvalResult``, a ``ReportInput``, or run directories / globs.

    ``limits``: how many samples get a card (:class:`Limits`); ``max_samples`` overrides its ``max_samples``."""
    data = _input(source, leaderboard, directory)
    payload = build_payload(data, title or "vision-eval report", thumb_size, _limits(limits, max_samples))
    return render_html(payload)


def write_report(
    source: Any | str | Path | Sequence[str | Path],
    path: str | Path,
    *,
    title: str | None = None,
    thumb_size: int = 256,
    leaderboard: str | Path | pl.DataFrame | None = None,
    max_samples: int | None = None,
    limits: Limits | None = None,
) -> Path:
    """Write ``report.html`` for ``source`` to ``path`` (a directory gets ``report.html`` inside).

    ``source``: an ``EvalResult``; a run directory; a folder of runs (multirun, shards); a glob;
    or a list of those. Several runs are compared: one card per sample with every variant's verdict (shards of one
    run are merged). ``thumb_size``: longest thumbnail side in pixels; ``limits`` / ``max_samples``: which samples
    get a card (failing, error and changed ones first, then a seeded random sample of the rest; the overview covers
    every row).
    """
    out = Path(path)
    if out.is_dir() or not out.suffix:
        out = out / REPORT_FILE
    text = build_html(
        source,
        title=title or f"vision-eval report: {out.parent.resolve().name}",
        thumb_size=thumb_size,
        leaderboard=leaderboard,
        max_samples=max_samples,
        limits=limits,
        directory=str(out.parent.resolve()),
    )
    write_atomically(out, lambda path: path.write_text(text, encoding="utf-8"))
    return out
