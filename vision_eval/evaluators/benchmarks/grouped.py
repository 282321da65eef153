"""Benchmarks whose numbers are dataset-level: per subject, per category, totals (MMMU, MME, OCRBench, MMStar...).

A benchmark metric here is a row rule (each reply read and scored by its protocol's function) whose batches also
hand back, as ``metric_inputs``, the dataset columns its groups are read from (subject, category, image id). Its
summary is built once over every batch from the scored rows, in dataset order, by :meth:`GroupedMetric.benchmark`
with the reusable pieces below: :func:`per_group` (a mean or a sum per group, groups in a fixed order) and
:func:`random_picks` (the choice a reference draws at random for a reply it cannot read, replayed exactly).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import polars as pl
from typing_extensions import TypeVar

from vision_eval.evaluator import EvalOutput
from vision_eval.evaluators.benchmarks.protocols import ProtocolMetric, ProtocolSettings
from vision_eval.results import ERROR, PROCESSED

GROUPS = "groups"
"""The name of the ``metric_inputs`` table holding each row's group columns."""

DETAILS = pl.Struct(
    {"prediction": pl.Utf8, "expected": pl.Utf8, "unparseable": pl.Boolean, "choices": pl.List(pl.Utf8)}
)
"""The ``details`` keys the dataset-level metrics read back (a rule's details may hold more)."""


def per_group(
    frame: pl.DataFrame,
    by: str,
    value: str = "score",
    how: Literal["mean", "sum"] = "mean",
    name: str = "accuracy",
    order: Sequence[str] | None = None,
) -> dict[str, dict[str, Any]]:
    """``{group: {name: mean (or sum) of value, "n": rows}}`` over the rows of ``frame``.

    Groups come in ``order`` (those with no row left out), then any other group in order of first appearance; a
    null group is left out."""
    aggregate = pl.col(value).mean() if how == "mean" else pl.col(value).sum()
    table = (
        frame.filter(pl.col(by).is_not_null())
        .group_by(by, maintain_order=True)
        .agg(aggregate.alias(name), pl.len().alias("n"))
    )
    found = {row[by]: {name: row[name], "n": row["n"]} for row in table.iter_rows(named=True)}
    ranked = [g for g in order or () if g in found] + [g for g in found if g not in set(order or ())]
    return {group: found[group] for group in ranked}


@dataclass(frozen=True)
class RandomPick:
    """How a reference counts a multiple-choice reply it cannot read: it draws one of the choices at random, with
    Python's ``random.choice`` on a generator seeded once with ``seed``, one draw per such reply, in the order it
    reads the replies. Replayed exactly by :func:`random_picks` (the same generator, the same draws)."""

    seed: int
    where: str
    """Where the reference seeds its generator (for the docs and run.json)."""


def random_picks(choices: Sequence[Sequence[str]], seed: int) -> list[str]:
    """The choice the reference draws for each unread reply, given each one's choices in the order it reads them."""
    generator = random.Random(seed)
    return [generator.choice(list(options)) for options in choices]


SettingsT = TypeVar("SettingsT", bound=ProtocolSettings, default=ProtocolSettings, covariant=True)


class GroupedMetric(ProtocolMetric[SettingsT]):
    """Base of the benchmark metrics with dataset-level numbers (see the module docstring).

    Subclasses set ``row_columns`` and ``row_function`` (the protocol's reading of one reply), ``group_columns``
    (dataset columns the summary groups by) and implement :meth:`benchmark`. Every column they name must exist
    (checked before the run)."""

    group_columns: ClassVar[tuple[str, ...]] = ()
    """Dataset columns handed to :meth:`benchmark` beside each row's score."""

    def columns_needed(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys((*self.required_columns, *self.row_columns, *self.group_columns)))

    def evaluate(self, batch: pl.DataFrame) -> EvalOutput:
        out = super().evaluate(batch)
        groups = batch.select(pl.col("id").alias("sample_id"), *(pl.col(c).cast(pl.Utf8) for c in self.group_columns))
        out.metric_inputs[GROUPS] = groups
        return out

    def summarize_from(self, results: pl.DataFrame, inputs: Mapping[str, pl.LazyFrame]) -> dict[str, Any]:
        groups = inputs[GROUPS].collect() if GROUPS in inputs else None
        return self.benchmark(scored_rows(results, groups, self.group_columns))

    def summarize(self, results: pl.DataFrame) -> dict[str, Any]:
        return self.benchmark(scored_rows(results, None, self.group_columns))

    def benchmark(self, rows: pl.DataFrame) -> dict[str, Any]:
        """The benchmark's numbers from its rows (see :func:`scored_rows`), named as its paper names them."""
        raise NotImplementedError(f"{type(self).__name__} does not implement benchmark()")

    def counts(self, rows: pl.DataFrame) -> dict[str, Any]:
        """What every summary reports beside its numbers: the protocol, rows scored, errors, unread replies."""
        processed = rows.filter(pl.col("status") == PROCESSED)
        return {
            "protocol": self.protocol,
            "n": processed.height,
            "errors": int((rows["status"] == ERROR).sum()),
            "unparseable": int(processed["unparseable"].sum()),
        }


def scored_rows(results: pl.DataFrame, groups: pl.DataFrame | None, columns: Sequence[str]) -> pl.DataFrame:
    """The evaluator's result rows in dataset order with ``details``' ``prediction``, ``expected``, ``unparseable``
    and ``choices`` as columns, and each row's group columns (null where a row has none)."""
    read = results.select(
        "sample_id",
        "status",
        "score",
        pl.col("details").str.json_decode(DETAILS).alias("_read"),
    ).unnest("_read")
    read = read.with_columns(pl.col("unparseable").fill_null(False))
    if groups is None:
        return read.with_columns(pl.lit(None, pl.Utf8).alias(c) for c in columns)
    return read.join(groups.unique("sample_id", keep="first"), on="sample_id", how="left", maintain_order="left")


def with_random_picks(rows: pl.DataFrame, pick: RandomPick, order: pl.Expr | None = None) -> pl.DataFrame:
    """``rows`` with ``score`` as the reference counts it: each processed row whose reply was not read gets the
    choice the reference draws (``pick``), in ``order`` (default: dataset order), scored against ``expected``;
    ``picked`` holds the draw (null elsewhere)."""
    rows = rows.with_row_index("_position")
    unread = rows.filter((pl.col("status") == PROCESSED) & pl.col("unparseable") & pl.col("choices").is_not_null())
    if order is not None:
        unread = unread.sort(order, "_position", maintain_order=True)
    drawn = random_picks(unread["choices"].to_list(), pick.seed)
    picks = unread.select("_position", pl.Series("picked", drawn, pl.Utf8))
    rows = rows.join(picks, on="_position", how="left", maintain_order="left")
    picked_right = (pl.col("picked") == pl.col("expected")).cast(pl.Float64)
    return rows.with_columns(
        pl.when(pl.col("picked").is_not_null()).then(picked_right).otherwise(pl.col("score")).alias("score")
    ).drop("_position")
