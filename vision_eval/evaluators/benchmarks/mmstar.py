"""``mmstar``: MMStar (Chen et al., 2024), 1,500 four-choice questions in six core capabilities.

Protocol ``lmms_eval`` (lmms-eval ``tasks/mmstar/utils.py``): the reply stripped, its letter read by lmms-eval's
shared reader (``tasks/_task_utils/mcq_extract.py``, :func:`~vision_eval.evaluators.benchmarks.choices.mcq_letter`)
over A-D; right when it equals the answer (stripped, upper-cased). A reply with no letter scores 0 and is counted as
``unparseable``.

Dataset-level numbers as lmms-eval reports them: per capability (``category``) the mean of its sub-capabilities'
(``l2_category``) accuracies, and ``average``: the mean over every sub-capability's accuracy (not over questions).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, ClassVar

import polars as pl
from pydantic import field_validator

from vision_eval.evaluators.benchmarks.choices import ChoiceMetric, ChoiceSettings, mcq_letter
from vision_eval.evaluators.benchmarks.grouped import per_group
from vision_eval.evaluators.benchmarks.protocols import Protocol, check_protocol
from vision_eval.evaluators.benchmarks.text import details_json
from vision_eval.example import Example
from vision_eval.results import PROCESSED
from vision_eval.rowwise import RowResult

CHOICES = ["A", "B", "C", "D"]
CAPABILITIES = [
    "coarse perception",
    "fine-grained perception",
    "instance reasoning",
    "logical reasoning",
    "science & technology",
    "math",
]


def score_row(protocol: str, output: str, expected: str) -> RowResult:
    """One MMStar question: the letter read from the reply against the answer."""
    letter = mcq_letter(output.strip(), CHOICES)
    gold = expected.strip().upper()
    unread = {"unparseable": True} if not letter else {}
    details = details_json(protocol=protocol, prediction=letter or None, expected=gold, **unread)
    return RowResult("processed", float(letter == gold), details)


class MmStarSettings(ChoiceSettings):
    """Settings of ``mmstar``."""

    protocol: Protocol = "lmms_eval"
    """``lmms_eval`` (lmms-eval's mmstar task); see docs/benchmarks.md."""

    @field_validator("protocol")
    @classmethod
    def _offered(cls, value: str) -> str:
        return check_protocol(MmStar, value)


class MmStar(ChoiceMetric[MmStarSettings]):
    """MMStar: the letter read from ``output`` equals ``expected_output``; grouped by ``category`` and
    ``l2_category`` (the summary's capabilities and ``average``, as lmms-eval computes them)."""

    type_name: ClassVar[str] = "mmstar"
    protocols: ClassVar[dict[str, str]] = {
        "lmms_eval": "lmms-eval tasks/mmstar/utils.py + tasks/_task_utils/mcq_extract.py @75571cf"
    }
    group_columns = ("category", "l2_category")
    example: ClassVar[Example] = Example(
        {"type": "mmstar"},
        [
            {
                "id": "0",
                "output": "The answer is (B).",
                "expected_output": "B",
                "category": "math",
                "l2_category": "geometry",
            },
            {"id": "1", "output": "C", "expected_output": "A", "category": "math", "l2_category": "geometry"},
        ],
    )

    def row_function(self) -> Callable[..., RowResult]:
        return partial(score_row, self.protocol)

    def benchmark(self, rows: pl.DataFrame) -> dict[str, Any]:
        processed = rows.filter(pl.col("status") == PROCESSED)
        parts = processed.group_by("category", "l2_category", maintain_order=True).agg(pl.col("score").mean())
        capabilities = per_group(parts, "category", order=CAPABILITIES)
        return {
            **self.counts(rows),
            "average": parts["score"].mean(),
            **{name: values["accuracy"] for name, values in capabilities.items()},
            "sub_capabilities": per_group(processed, "l2_category"),
        }
