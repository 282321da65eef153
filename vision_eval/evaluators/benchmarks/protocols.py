"""Scoring protocols of the benchmark metrics: which reference implementation a score reproduces, and the bases the
five metrics share.

``official`` follows the benchmark authors' evaluation script, ``lmms_eval`` follows lmms-eval's task code (for
parity with numbers produced by it), ``lenient`` is this project's own more forgiving reading (not comparable with
published numbers). Each metric class lists the protocols it offers in ``protocols`` (protocol -> the reference it
reproduces). What each protocol does, where they differ and the agreement figures: ``docs/benchmarks.md``.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import polars as pl
from typing_extensions import TypeVar

from vision_eval.evaluator import EvaluatorSettings
from vision_eval.evaluators.benchmarks.text import PY_WHITE_SPACE
from vision_eval.results import ERROR, PROCESSED
from vision_eval.rowwise import RowRule

Protocol = Literal["official", "lmms_eval", "lenient"]

LENIENT = "vision_eval's own reading, more forgiving than the references; not comparable with published numbers"

UNPARSEABLE_REASON = "cannot extract"
"""How the error of a reply the ``lenient`` protocol cannot read begins."""
RAW_CHARS = 500
"""How much of an unparseable reply is kept in ``details.raw``."""


def check_protocol(metric: type[ProtocolMetric], protocol: str) -> str:
    """``protocol`` if ``metric`` offers it, else ``ValueError`` naming the ones it offers."""
    if protocol not in metric.protocols:
        why = metric.missing_protocols.get(protocol)
        offered = ", ".join(metric.protocols)
        raise ValueError(
            f"{metric.type_name} has no {protocol!r} protocol{f' ({why})' if why else ''}; choose one of: {offered}"
        )
    return protocol


def describe_protocol(metric: type[ProtocolMetric], protocol: str) -> dict[str, Any]:
    """The run.json entries naming the protocol and the reference it reproduces."""
    return {"protocol": protocol, "protocol_source": metric.protocols[protocol], "comparable": protocol != "lenient"}


class ProtocolSettings(EvaluatorSettings):
    """Settings every benchmark metric has."""

    protocol: Protocol
    """Whose scoring to reproduce (each metric offers its own protocols and default; see docs/benchmarks.md)."""


ProtocolSettingsT = TypeVar("ProtocolSettingsT", bound=ProtocolSettings, default=ProtocolSettings, covariant=True)


class ProtocolMetric(RowRule[ProtocolSettingsT]):
    """Base of the benchmark metrics: the protocols offered, the one in use and its description."""

    protocols: ClassVar[dict[str, str]] = {}
    """Protocol -> the reference implementation it reproduces."""
    missing_protocols: ClassVar[dict[str, str]] = {}
    """Protocol -> why the metric does not offer it (shown in the config error)."""
    required_columns = ("output", "expected_output")

    @property
    def protocol(self) -> str:
        """The scoring protocol in use."""
        return self.settings.protocol

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), **describe_protocol(type(self), self.protocol)}


class ExtractedMetric(ProtocolMetric[ProtocolSettingsT]):
    """Base of the metrics that read a closed answer from the reply (``pope``, ``exact_count``).

    A reply the protocol cannot read is counted the way the protocol counts it: ``official`` POPE reads it as "yes",
    ``lmms_eval`` scores it wrong (a ``processed`` row with score 0 and ``details.unparseable: true``), ``lenient``
    makes it a row ``error`` with the raw text in ``details``. The summary always reports how many there were.
    """

    default_threshold = 1.0

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


class ReferenceSettings(ProtocolSettings):
    """Settings shared by metrics that compare ``output`` with reference answers."""

    protocol: Protocol = "official"
    """Whose scoring to reproduce: ``official`` (the benchmark authors' evaluation script), ``lmms_eval``
    (lmms-eval's task code) or ``lenient`` (more forgiving, not comparable with published numbers). Recorded in
    every row's ``details``, in run.json and in the leaderboard; see docs/benchmarks.md."""
    answers_column: str | None = None
    """Column holding the reference answers as a list (e.g. ``answers``); default: ``expected_output``,
    which holds one answer, or a JSON list of answers when it starts with ``[`` (one that then does not
    parse is a row error)."""


ReferenceSettingsT = TypeVar("ReferenceSettingsT", bound=ReferenceSettings, default=ReferenceSettings, covariant=True)


class ReferenceMetric(ProtocolMetric[ReferenceSettingsT]):
    """Base of the metrics scored against one or more reference answers (``relaxed_accuracy``, ``anls``,
    ``vqa_accuracy``). Their row functions get ``(output, answers)``: the reply as the protocol's reference hands it
    to its metric (:meth:`reply`) and the answers as text (one answer or a JSON list; a list column is handed as a
    JSON list), read by ``text.reference_answers``."""

    def columns_needed(self) -> tuple[str, ...]:
        column = self.settings.answers_column
        return ("output", column) if column else self.required_columns

    @property
    def reference_column(self) -> str:
        """The column the reference answers are read from."""
        return self.settings.answers_column or "expected_output"

    def reply(self) -> pl.Expr:
        """Column ``output`` as the protocol's reference scores it: lmms-eval strips every ``generate_until`` reply
        (Python's ``str.strip()``) in ``ConfigurableTask.process_results`` before the task's metric sees it; the
        authors' scripts take the reply as given."""
        output = pl.col("output").cast(pl.Utf8)
        return output.str.strip_chars(PY_WHITE_SPACE) if self.protocol == "lmms_eval" else output

    def row_inputs(self, batch: pl.DataFrame) -> pl.DataFrame:
        return batch.select(self.reply(), answers_text(batch, self.reference_column))

    def summarize(self, results: pl.DataFrame) -> dict[str, Any]:
        processed = results.filter(pl.col("status") == PROCESSED)
        mean = processed["score"].mean() if processed.height else None
        # Every reply is compared as text by these metrics: none is left unread.
        return {
            "protocol": self.protocol,
            self.type_name: mean,
            "n": processed.height,
            "errors": int((results["status"] == ERROR).sum()),
            "unparseable": 0,
        }


def answers_text(batch: pl.DataFrame, column: str) -> pl.Expr:
    """Column ``answers``: the reference answers of each row as text; a list column's as a JSON list of texts (a
    list of annotations, like VQAv2's ``{answer, answer_confidence, answer_id}``, gives their ``answer`` fields)."""
    dtype = batch.schema[column]
    if not isinstance(dtype, pl.List | pl.Array):
        return pl.col(column).cast(pl.Utf8).alias("answers")
    items = pl.col(column)
    if isinstance(dtype.inner, pl.Struct) and "answer" in {field.name for field in dtype.inner.fields}:
        items = items.list.eval(pl.element().struct.field("answer"))
    listed = items.cast(pl.List(pl.Utf8)).list.drop_nulls().alias("a")
    return pl.struct(listed).struct.json_encode().str.strip_prefix('{"a":').str.strip_suffix("}").alias("answers")
