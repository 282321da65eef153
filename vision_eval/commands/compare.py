"""``vision-eval compare BASELINE CANDIDATE``: two runs compared on the samples they share, as a table, Parquet files
and a page of the flipped samples; with ``--fail-on-regression``, a CI gate.

Exit codes: 0 compared (and, as a gate, no evaluator significantly worse), 1 (gate only) an evaluator is
significantly worse, 2 a side is not a run, or nothing could be paired.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

import polars as pl

from vision_eval.gates import EXIT_CONFIG

EXIT_REGRESSION = 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="vision-eval compare",
        description="Compare a candidate run with a baseline run sample by sample: per evaluator both means, the "
        "difference with a paired bootstrap 95%% interval, a p-value (exact McNemar for pass/fail scores, Wilcoxon "
        "signed-rank otherwise) and the samples whose verdict flipped. Samples pair on their id when their input, "
        "expected output and images are the same on both sides.",
    )
    parser.add_argument("baseline", help="the baseline: a run directory, or a folder holding the shards of one run")
    parser.add_argument("candidate", help="the candidate: a run directory, or a folder holding the shards of one run")
    parser.add_argument(
        "-o",
        "--output",
        help="folder for comparison.parquet, comparison_flips.parquet and comparison.html, or the path of "
        "comparison.parquet (default: the candidate's folder)",
    )
    parser.add_argument(
        "--fail-on-regression",
        action="store_true",
        help="exit 1 when an evaluator is significantly worse in the candidate (a CI gate)",
    )
    parser.add_argument("--alpha", type=float, default=0.05, help="significance level of the tests (default 0.05)")
    parser.add_argument(
        "--min-delta",
        type=float,
        default=0.0,
        help="smallest drop of the mean score (or rise of the error rate) that counts as worse, e.g. 0.02 "
        "(default 0: any significant drop)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (default 0)")
    parser.add_argument("--resamples", type=int, default=None, help="bootstrap resamples (default 10000)")
    parser.add_argument("--max-flipped", type=int, default=None, help="most flipped samples on the page (default 2000)")
    parser.add_argument("--no-html", action="store_true", help="do not write comparison.html")
    return parser


def _cell(value: Any, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def markdown(table: pl.DataFrame) -> str:
    """The judged comparison table as Markdown."""
    headers = ["evaluator", "n", "baseline", "candidate", "Δ (95% CI)", "p", "test"]
    headers += ["fail→pass", "pass→fail", "→error", "error→", "verdict"]
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for row in table.iter_rows(named=True):
        delta = _cell(row["delta"], "+.3f")
        if row["ci_low"] is not None:
            delta += f" ({row['ci_low']:+.3f}, {row['ci_high']:+.3f})"
        p_value = row["p_value"]
        p_text = "-" if p_value is None else ("<0.0001" if p_value < 1e-4 else f"{p_value:.4f}")
        verdict = row["verdict"] + (f" ({row['note']})" if row["note"] else "")
        cells = [
            row["evaluator"],
            str(row["n_paired"]),
            _cell(row["baseline_mean"], ".3f"),
            _cell(row["candidate_mean"], ".3f"),
            delta,
            p_text,
            row["test"] or "-",
            *(str(row[name] or 0) for name in ("to_pass", "to_fail", "to_error", "from_error")),
            verdict,
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str]) -> int:
    """Run the command; returns its exit code."""
    from vision_eval.compare import WORSE, NotARun, compare, judged, load_side, write_comparison
    from vision_eval.compare.page import MAX_FLIPPED
    from vision_eval.stats import PAIRED_RESAMPLES

    args = build_parser().parse_args(list(argv))
    try:
        baseline, candidate = load_side(args.baseline), load_side(args.candidate)
        comparison = compare(baseline, candidate, seed=args.seed, resamples=args.resamples or PAIRED_RESAMPLES)
    except NotARun as exc:
        print(f"vision-eval compare: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    pairing = comparison.pairing
    print(f"pairing: {pairing.sentence()}")
    if not pairing.paired:
        print(
            "vision-eval compare: nothing could be paired: no sample has the same id and content in both runs",
            file=sys.stderr,
        )
        return EXIT_CONFIG
    table = judged(comparison.table, args.alpha, args.min_delta)
    print(markdown(table))
    written = write_comparison(
        comparison, table, args.output, html=not args.no_html, max_flipped=args.max_flipped or MAX_FLIPPED
    )
    print("wrote " + ", ".join(str(p) for p in written))
    if not int(table["n_samples"].fill_null(0).sum()):
        print(
            "vision-eval compare: no evaluator scored a paired sample on both sides: nothing compared", file=sys.stderr
        )
        return EXIT_CONFIG
    worse = table.filter(pl.col("verdict") == WORSE)["evaluator"].to_list()
    if worse:
        rule = f"p < {args.alpha:g}" + (f", drop of at least {args.min_delta:g}" if args.min_delta else "")
        print(f"significantly worse in the candidate ({rule}): {', '.join(worse)}")
    else:
        print(f"no evaluator is significantly worse in the candidate (p < {args.alpha:g})")
    return EXIT_REGRESSION if worse and args.fail_on_regression else 0
