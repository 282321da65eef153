"""Evaluators that misbehave on purpose, for the fault tests."""

from __future__ import annotations

import os
from typing import ClassVar

import polars as pl

from vision_eval.evaluator import EvalOutput, Evaluator


class Picky(Evaluator):
    """Raises for the whole batch when any row's output starts with "bad" (as a vectorized evaluator might)."""

    type_name: ClassVar[str] = "picky"

    def evaluate(self, batch: pl.DataFrame) -> EvalOutput:
        bad = batch.filter(pl.col("output").str.starts_with("bad"))
        if bad.height:
            raise ValueError(f"cannot read {bad['output'][0]}")
        return EvalOutput(batch.select(pl.col("id").alias("sample_id"), pl.lit(1.0).alias("score")))


class BrokenFinalize(Evaluator):
    """Scores every row 1, then raises in ``finalize`` (a plugin's bug the run does not guard against), with the
    judge's key in the message (an internal error must not show it)."""

    type_name: ClassVar[str] = "broken_finalize"

    def evaluate(self, batch: pl.DataFrame) -> EvalOutput:
        return EvalOutput(batch.select(pl.col("id").alias("sample_id"), pl.lit(1.0).alias("score")))

    def finalize(self, results: pl.DataFrame, dimensions: pl.DataFrame) -> dict[str, pl.DataFrame]:
        raise RuntimeError(f"finalize broke with key {os.environ.get('OPENAI_API_KEY')}")
