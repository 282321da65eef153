"""Benchmark metrics that read a closed answer from the reply, vectorized: ``pope`` (yes/no) and ``exact_count``
(CountBench).

Each takes ``protocol`` (see ``docs/benchmarks.md``). A reply the protocol cannot read is counted the way the
protocol counts it: ``official`` POPE reads it as "yes", ``lmms_eval`` scores it wrong (a ``processed`` row with
score 0 and ``details.unparseable: true``), ``lenient`` makes it a row ``error`` with the raw text in ``details``.
The summary always reports how many replies were unparseable.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Literal

import polars as pl
from pydantic import field_validator, model_validator
from typing_extensions import TypeVar

from vision_eval.evaluator import EvalOutput, Evaluator, EvaluatorSettings
from vision_eval.evaluators.benchmarks import yes_no as _yes_no
from vision_eval.evaluators.benchmarks.counts import UNPARSEABLE_REASON, lenient_counts, lmms_eval_counts
from vision_eval.evaluators.benchmarks.protocols import Protocol, check_protocol, describe_protocol
from vision_eval.evaluators.benchmarks.text import details_json
from vision_eval.example import Example
from vision_eval.results import ERROR, PROCESSED, RESULT_ROW_SCHEMA, conform

RAW_CHARS = 500
"""How much of an unparseable reply is kept in ``details.raw``."""


def _results(
    batch: pl.DataFrame,
    error: pl.Expr,
    score: pl.Expr,
    details: pl.Expr,
    error_details: pl.Expr,
    unread: tuple[pl.Expr, pl.Expr] | None = None,
) -> EvalOutput:
    """Result rows in batch order; each kind of details is only built for the rows that carry it. ``unread``:
    (flag, details) of processed rows whose reply the protocol could not read."""
    batch = batch.with_row_index("_pos").with_columns(error.alias("_error"))
    failed = pl.col("_error").is_not_null()
    parts = [
        batch.filter(failed).select(
            "_pos",
            pl.col("id").alias("sample_id"),
            pl.lit(ERROR).alias("status"),
            error_details.alias("details"),
            pl.col("_error").alias("error"),
        )
    ]
    kinds = (
        [(~failed, details)] if unread is None else [(~failed & ~unread[0], details), (~failed & unread[0], unread[1])]
    )
    for selected, kind_details in kinds:
        parts.append(
            batch.filter(selected).select(
                "_pos",
                pl.col("id").alias("sample_id"),
                pl.lit(PROCESSED).alias("status"),
                score.alias("score"),
                kind_details.alias("details"),
            )
        )
    frame = pl.concat(parts, how="diagonal_relaxed").sort("_pos")
    return EvalOutput(conform(frame, RESULT_ROW_SCHEMA))


def _fast_gold(expected: pl.Series, parse: Callable[[], pl.Series]) -> pl.Expr:
    """``_gold``: the reference read by ``parse()``, skipped when every reference of the batch already is a bare
    ``yes``/``no``, as benchmark references almost always are."""
    bare = expected.str.strip_chars().str.to_lowercase()
    return pl.lit(bare if bare.is_in(["yes", "no"]).all() else parse()).alias("_gold")


def _raw(column: str) -> pl.Expr:
    return pl.col(column).cast(pl.Utf8).str.slice(0, RAW_CHARS)


def _unparseable_details(protocol: str, **fields: pl.Expr) -> pl.Expr:
    return details_json(protocol=pl.lit(protocol), **fields, unparseable=pl.lit(True), raw=_raw("output"))


class ProtocolSettings(EvaluatorSettings):
    """Settings every extracted-answer metric has."""

    protocol: Protocol
    """Whose scoring to reproduce (each metric offers its own protocols and default; see docs/benchmarks.md)."""


ProtocolSettingsT = TypeVar("ProtocolSettingsT", bound=ProtocolSettings, default=ProtocolSettings, covariant=True)


class ProtocolMetric(Evaluator[ProtocolSettingsT]):
    """Base of the extracted-answer metrics: the protocol, its description and the unparseable count."""

    required_columns = ("output", "expected_output")
    default_threshold = 1.0

    @property
    def protocol(self) -> str:
        """The scoring protocol in use."""
        return self.settings.protocol

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), **describe_protocol(self.type_name, self.protocol)}

    def unparseable(self, results: pl.DataFrame) -> int:
        """Replies the protocol could not read: error rows (lenient) or rows flagged in ``details``."""
        if self.protocol == "lenient":
            reason = pl.col("error").str.starts_with(UNPARSEABLE_REASON).fill_null(False)
            return results.filter((pl.col("status") == ERROR) & reason).height
        processed = results.filter(pl.col("status") == PROCESSED)
        if processed.height == 0:
            return 0
        flags = processed["details"].str.json_decode(pl.Struct({"unparseable": pl.Boolean}))
        return int(flags.struct.field("unparseable").fill_null(False).sum())


# --- pope ----------------------------------------------------------------------------------------------------


class PopeSettings(ProtocolSettings):
    """Settings of ``pope``."""

    protocol: Protocol = "official"
    """Whose scoring to reproduce: ``official`` (POPE's evaluate.py), ``lmms_eval`` (lmms-eval's pope task) or
    ``lenient`` (not comparable with published numbers); see docs/benchmarks.md."""

    @field_validator("protocol")
    @classmethod
    def _offered(cls, value: str) -> str:
        return check_protocol("pope", value)


class Pope(ProtocolMetric[PopeSettings]):
    """POPE: the yes/no read from ``output`` equals ``expected_output`` (``yes``/``no``).

    The summary has accuracy, precision, recall and F1 (``yes`` is the positive class), the share of ``yes``
    among the replies and the number of unparseable replies, each computed as the protocol's reference does.
    """

    type_name: ClassVar[str] = "pope"
    example: ClassVar[Example] = Example(
        {"type": "pope"},
        [
            {"id": "a", "output": "Yes, there is a dog in the image.", "expected_output": "yes"},
            {"id": "b", "output": "No.", "expected_output": "yes"},
        ],
    )

    def evaluate(self, batch: pl.DataFrame) -> EvalOutput:
        protocol = self.protocol
        if protocol == "lenient":
            return self._lenient(batch)
        gold = _yes_no.strict_answers(batch["expected_output"].cast(pl.Utf8))
        if protocol == "official":
            readings = _yes_no.official_readings(batch["output"])
        else:
            prediction = _yes_no.lmms_eval_readings(batch["output"])
            readings = pl.DataFrame({"prediction": prediction, "unparseable": prediction.is_null()})
        batch = batch.select("id", "output", "expected_output").with_columns(
            readings["prediction"].alias("_pred"), readings["unparseable"].alias("_unparseable"), gold.alias("_gold")
        )
        read = pl.concat_str(
            pl.lit(f'{{"protocol":"{protocol}","prediction":"'),
            "_pred",
            pl.lit('","expected":"'),
            "_gold",
            pl.lit('"}'),
        )
        unread = _unparseable_details(protocol, prediction=pl.col("_pred"), expected=pl.col("_gold"))
        return _results(
            batch,
            pl.when(pl.col("_gold").is_null()).then(pl.lit("expected_output is not yes or no")),
            (pl.col("_pred") == pl.col("_gold")).fill_null(False).cast(pl.Float64),
            read,
            details_json(protocol=pl.lit(protocol), raw=_raw("output"), expected=_raw("expected_output")),
            (pl.col("_unparseable"), unread),
        )

    def _lenient(self, batch: pl.DataFrame) -> EvalOutput:
        batch = batch.select(
            "id",
            "output",
            "expected_output",
            _yes_no.lenient_readings(batch["output"]).alias("_pred"),
            _fast_gold(batch["expected_output"], lambda: _yes_no.lenient_readings(batch["expected_output"])),
        )
        error = (
            pl.when(pl.col("_gold").is_null())
            .then(pl.lit("expected_output is not yes or no"))
            .when(pl.col("_pred").is_null())
            .then(pl.lit(f"{UNPARSEABLE_REASON} yes or no from the output"))
        )
        return _results(
            batch,
            error,
            (pl.col("_pred") == pl.col("_gold")).cast(pl.Float64),
            # Both values are "yes" or "no": no escaping needed, and far cheaper than a struct encode.
            pl.concat_str(
                pl.lit('{"protocol":"lenient","prediction":"'), "_pred", pl.lit('","expected":"'), "_gold", pl.lit('"}')
            ),
            details_json(protocol=pl.lit("lenient"), raw=_raw("output"), expected=_raw("expected_output")),
        )

    def summarize(self, results: pl.DataFrame) -> dict[str, Any]:
        processed = results.filter(pl.col("status") == PROCESSED)
        unparseable = self.unparseable(results)
        if processed.height == 0:
            return {"protocol": self.protocol, "n": 0, "unparseable": unparseable}
        labels = processed["details"].str.json_decode(pl.Struct({"prediction": pl.Utf8, "expected": pl.Utf8}))
        prediction, expected = labels.struct.field("prediction"), labels.struct.field("expected")
        return _yes_no.pope_metrics(self.protocol, prediction, expected, unparseable)


# --- exact_count -----------------------------------------------------------------------------------------------


class ExactCountSettings(ProtocolSettings):
    """Settings of ``exact_count``."""

    protocol: Protocol = "lmms_eval"
    """Whose scoring to reproduce: ``lmms_eval`` (lmms-eval's countbench task: the whole reply must be the count;
    CountBench has no official scoring script) or ``lenient`` (the first/last/only number found in the reply; not
    comparable with published numbers); see docs/benchmarks.md."""
    pick: Literal["first", "last", "only"] = "first"
    """``lenient`` only: which number of the reply is the answer: the ``first``, the ``last``, or ``only`` (a reply
    with several different numbers is then an error)."""

    @field_validator("protocol")
    @classmethod
    def _offered(cls, value: str) -> str:
        return check_protocol("exact_count", value)

    @model_validator(mode="after")
    def _pick_is_lenient(self) -> ExactCountSettings:
        if "pick" in self.model_fields_set and self.protocol != "lenient":
            raise ValueError(f"pick applies to protocol lenient only (protocol is {self.protocol})")
        return self


class ExactCount(ProtocolMetric[ExactCountSettings]):
    """CountBench: the count read from ``output`` equals the count in ``expected_output``.

    ``lmms_eval``: the whole reply, stripped and lowercased (a number word none..twenty as digits), must be the
    count's digits; anything that is not a number is unparseable and wrong. ``lenient``: the first (``pick``)
    number in the reply, digits or words up to a hundred (e.g. ``seven`` = ``7``).
    """

    type_name: ClassVar[str] = "exact_count"
    example: ClassVar[Example] = Example(
        {"type": "exact_count"},
        [{"id": "a", "output": "3", "expected_output": "3"}, {"id": "b", "output": "five", "expected_output": "4"}],
        note="protocol lmms_eval (default): the whole reply must be the count; protocol: lenient reads a number "
        "anywhere in the reply.",
    )

    def evaluate(self, batch: pl.DataFrame) -> EvalOutput:
        if self.protocol == "lenient":
            return self._lenient(batch)
        batch = batch.select("id", "output", "expected_output").with_columns(
            lmms_eval_counts(batch["output"]).alias("_pred"), lmms_eval_counts(batch["expected_output"]).alias("_gold")
        )
        digits = r"^[0-9]+$"
        fields = {"predicted": pl.col("_pred"), "expected": pl.col("_gold")}
        return _results(
            batch,
            pl.when(~pl.col("_gold").str.contains(digits).fill_null(False)).then(
                pl.lit("expected_output holds no count")
            ),
            (pl.col("_pred") == pl.col("_gold")).cast(pl.Float64),
            # Both are digits here: no escaping needed, and far cheaper than a struct encode.
            pl.concat_str(
                pl.lit('{"protocol":"lmms_eval","predicted":"'),
                "_pred",
                pl.lit('","expected":"'),
                "_gold",
                pl.lit('"}'),
            ),
            details_json(protocol=pl.lit("lmms_eval"), raw=_raw("output"), expected=_raw("expected_output")),
            (~pl.col("_pred").str.contains(digits), _unparseable_details("lmms_eval", **fields)),
        )

    def _lenient(self, batch: pl.DataFrame) -> EvalOutput:
        read = lenient_counts(batch["output"], batch["expected_output"], self.settings.pick)
        batch = pl.concat([batch.select("id", "output", "expected_output"), read], how="horizontal")
        return _results(
            batch,
            pl.col("_error"),
            (pl.col("_pred") == pl.col("_gold")).cast(pl.Float64),
            details_json(
                protocol=pl.lit("lenient"), predicted=pl.col("_pred"), expected=pl.col("_gold"), found=pl.col("_values")
            ),
            details_json(
                protocol=pl.lit("lenient"),
                raw=_raw("output"),
                expected=_raw("expected_output"),
                found=pl.col("_values"),
            ),
        )

    def summarize(self, results: pl.DataFrame) -> dict[str, Any]:
        processed = results.filter(pl.col("status") == PROCESSED)
        summary: dict[str, Any] = {"protocol": self.protocol, "n": processed.height}
        summary["unparseable"] = self.unparseable(results)
        if processed.height == 0:
            return summary
        value_type = pl.Float64 if self.protocol == "lenient" else pl.Utf8
        counts = processed["details"].str.json_decode(pl.Struct({"predicted": value_type, "expected": value_type}))
        predicted = counts.struct.field("predicted").cast(pl.Float64, strict=False)
        error = (predicted - counts.struct.field("expected").cast(pl.Float64, strict=False)).abs()
        summary["accuracy"] = float(processed["score"].mean())  # type: ignore[arg-type]
        summary["mae"] = error.mean()  # over the replies that give a number
        return summary
