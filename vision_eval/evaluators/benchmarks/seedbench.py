"""``seedbench``: SEED-Bench (Li et al., 2023), protocol ``lmms_eval`` (lmms-eval ``tasks/seedbench/utils.py``): the
first character of the stripped reply, compared case-insensitively with the answer letter (a first character that is
not A-D is counted as ``unparseable``). Summary: ``Image``, ``Video`` and ``All`` accuracy (lmms-eval's seed_image,
seed_video and seed_all, by ``data_type``)."""

from __future__ import annotations

from typing import Any, ClassVar

import polars as pl

from vision_eval.evaluators.benchmarks.choices import LetterChoice, two_rows, verdict
from vision_eval.evaluators.benchmarks.grouped import per_group
from vision_eval.example import Example
from vision_eval.results import PROCESSED
from vision_eval.rowwise import RowResult


def seedbench_row(protocol: str, output: str, expected: str) -> RowResult:
    """SEED-Bench: the first character of the stripped reply against the answer letter."""
    prediction = output.strip()[:1]
    read = prediction.upper() in ("A", "B", "C", "D")
    return verdict(protocol, prediction, expected, prediction.lower().strip() == expected.lower().strip(), read)


class SeedBench(LetterChoice):
    """SEED-Bench: the first character of ``output`` against the letter ``expected_output``; ``Image``, ``Video``
    and ``All`` accuracy by ``data_type``."""

    type_name: ClassVar[str] = "seedbench"
    protocols: ClassVar[dict[str, str]] = {"lmms_eval": "lmms-eval tasks/seedbench/utils.py @75571cf"}
    rule = staticmethod(seedbench_row)
    group_columns = ("data_type",)
    example: ClassVar[Example] = two_rows(
        "seedbench",
        {"output": "B", "expected_output": "B", "data_type": "image"},
        {"output": "The answer is B", "expected_output": "B", "data_type": "image"},
    )

    def benchmark(self, rows: pl.DataFrame) -> dict[str, Any]:
        processed = rows.filter(pl.col("status") == PROCESSED)
        by_type = per_group(processed, "data_type")
        named = {kind.capitalize(): by_type[kind]["accuracy"] for kind in ("image", "video") if kind in by_type}
        return {**self.counts(rows), **named, "All": processed["score"].mean(), "data_types": by_type}
