"""``vision-eval-report``: leaderboard.parquet (printed as Markdown) and report.html for one or more runs,
a multirun folder or shard folders."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from vision_eval.console import guarded_console
from vision_eval.exit_codes import EXIT_INCOMPLETE
from vision_eval.leaderboard import markdown, write_leaderboard
from vision_eval.report import REPORT_FILE, find_run_dirs, load_runs, write_report
from vision_eval.report.selection import Limits
from vision_eval.report.sources import LEADERBOARD
from vision_eval.shard_check import check_shards, describe
from vision_eval.wording import counted


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (other steps, e.g. the leaderboard, add their options here)."""
    parser = argparse.ArgumentParser(
        prog="vision-eval-report",
        description="Write a self-contained report.html for run directories, a multirun folder or shard folders.",
    )
    parser.add_argument(
        "paths",
        nargs="+",
        help="run directories, folders holding runs (searched recursively) or globs of folders / Parquet files",
    )
    parser.add_argument(
        "-o",
        "--output",
        help=f"where to write the report, {LEADERBOARD}.parquet beside it (default: <common folder of the runs>/"
        f"{REPORT_FILE})",
    )
    parser.add_argument("--title", help="page title (default: derived from the folder)")
    parser.add_argument("--thumb-size", type=int, default=256, help="longest side of embedded thumbnails, pixels")
    parser.add_argument(
        "--max-samples",
        type=int,
        default=Limits.max_samples,
        help="most samples given a card (the overview always covers every row)",
    )
    parser.add_argument(
        "--max-failing",
        type=int,
        default=Limits.max_failing,
        help="most cards for samples that failed, errored or changed between variants (they come first; "
        "the other cards are a random sample of the rest)",
    )
    parser.add_argument("--seed", type=int, default=Limits.seed, help="seed of the random sample of the other samples")
    parser.add_argument("--no-html", action="store_true", help="do not write report.html")
    parser.add_argument(
        "--allow-partial",
        action="store_true",
        help="merge shards even when one is missing, running, done twice or short (the page and the leaderboard "
        "are marked partial); without it such a merge exits 3",
    )
    return parser


def output_root(paths: Sequence[str], dirs: Sequence[Path]) -> Path:
    """The folder the command writes into: the single folder given, else the runs' common folder."""
    if len(paths) == 1 and Path(paths[0]).is_dir():
        return Path(paths[0]).resolve()
    if len(dirs) == 1:
        return dirs[0]
    return Path(os.path.commonpath([str(d) for d in dirs]))


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the process exit code. A reader that closes the pipe (``| head``) stops the printing,
    not the report."""
    with guarded_console():
        return _report(build_parser().parse_args(argv))


def _report(args: argparse.Namespace) -> int:
    dirs = find_run_dirs(args.paths)
    if not dirs:
        print(
            f"vision-eval-report: no run directories (with results.parquet) in: {' '.join(args.paths)}", file=sys.stderr
        )
        return 2
    root = output_root(args.paths, dirs)
    problems = check_shards(dirs, args.paths)
    if problems:
        print(f"vision-eval-report: the shards do not add up to their runs:\n{describe(problems)}", file=sys.stderr)
        if not args.allow_partial:
            print("vision-eval-report: exit 3: nothing written (--allow-partial merges them anyway)", file=sys.stderr)
            return EXIT_INCOMPLETE
    out = Path(args.output) if args.output else root / REPORT_FILE
    folder = out.parent if args.output else root  # the leaderboard goes beside the report
    data = load_runs(dirs)
    board, _ = write_leaderboard(dirs, folder, partial=bool(problems))
    print(markdown(board))
    print(f"wrote {folder / (LEADERBOARD + '.parquet')}")
    data.tables[LEADERBOARD] = board
    if args.no_html:
        return 0
    title = args.title or f"vision-eval report: {root.name}"
    if problems:
        title = f"PARTIAL ({len(problems)} shard problem{'s' if len(problems) > 1 else ''}) {title}"
    limits = Limits(max_samples=args.max_samples, max_failing=min(args.max_failing, args.max_samples), seed=args.seed)
    written = write_report(data, out, title=title, thumb_size=args.thumb_size, limits=limits)
    samples = data.samples.select(pl.len()).collect(engine="streaming").item()
    print(
        f"wrote {written} ({counted(len(dirs), 'run directory', 'run directories')}, {counted(samples, 'sample row')})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
