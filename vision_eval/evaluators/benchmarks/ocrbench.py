"""``ocrbench``: OCRBench (Liu et al., 2024), 1,000 questions in ten categories, one point each.

Protocol ``lmms_eval`` (lmms-eval ``tasks/ocrbench/utils.py``): the reply stripped; a question right when one of
its reference answers is a substring of the reply. Questions of the HME100k source (handwritten formulas): both
texts with new lines made spaces and every space removed, case kept. Every other source: fullwidth ASCII and the
ideographic space folded to ASCII, both texts lowercased, stripped, new lines made spaces. No reply is unreadable.

Dataset-level numbers, as the OCRBench paper and lmms-eval report them: the points of each ``question_type``;
**Text Recognition** = the six recognition types summed (out of 300); **Final Score** = all ten (out of 1,000).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, ClassVar

import polars as pl
from pydantic import field_validator

from vision_eval.evaluators.benchmarks.grouped import GroupedMetric, per_group
from vision_eval.evaluators.benchmarks.protocols import RAW_CHARS, Protocol, ProtocolSettings, check_protocol
from vision_eval.evaluators.benchmarks.text import details_json, reference_answers
from vision_eval.example import Example
from vision_eval.results import PROCESSED
from vision_eval.rowwise import RowResult

RECOGNITION = [
    "Regular Text Recognition",
    "Irregular Text Recognition",
    "Artistic Text Recognition",
    "Handwriting Recognition",
    "Digit String Recognition",
    "Non-Semantic Text Recognition",
]
OTHER_TYPES = [
    "Scene Text-centric VQA",
    "Doc-oriented VQA",
    "Key Information Extraction",
    "Handwritten Mathematical Expression Recognition",
]
FORMULAS = "HME100k"
"""The source whose answers are compared without spaces and with case kept."""

_FULLWIDTH = {code: code - 0xFEE0 for code in range(0xFF01, 0xFF5F)} | {0x3000: 0x20}


def _folded(text: str) -> str:
    return text.translate(_FULLWIDTH).lower().strip().replace("\n", " ")


def _spaceless(text: str) -> str:
    return text.strip().replace("\n", " ").replace(" ", "")


def score_row(protocol: str, output: str, expected: str, source: str | None) -> RowResult:
    """One OCRBench question: 1 when a reference answer is inside the reply (see the module docstring)."""
    answers, problem = reference_answers(expected, "expected_output")
    if answers is None:
        return RowResult("error", details=details_json(protocol=protocol), error=problem)
    reply = output.strip()
    prepare = _spaceless if source == FORMULAS else _folded
    prediction = prepare(reply)
    matched = next((answer for answer in answers if prepare(answer) in prediction), None)
    details = details_json(protocol=protocol, prediction=prediction[:RAW_CHARS], matched=matched)
    return RowResult("processed", float(matched is not None), details)


class OcrBenchSettings(ProtocolSettings):
    """Settings of ``ocrbench``."""

    protocol: Protocol = "lmms_eval"
    """``lmms_eval`` (lmms-eval's ocrbench task); see docs/benchmarks.md."""

    @field_validator("protocol")
    @classmethod
    def _offered(cls, value: str) -> str:
        return check_protocol(OcrBench, value)


class OcrBench(GroupedMetric[OcrBenchSettings]):
    """OCRBench: a reference answer (``expected_output``: one, or a JSON list) found inside ``output``.

    Reads ``dataset`` (the question's source: HME100k formulas are compared without spaces) and ``question_type``
    (the category). The summary has the points per category, ``Text Recognition`` and ``Final Score`` (out of
    1,000 on the full set)."""

    type_name: ClassVar[str] = "ocrbench"
    protocols: ClassVar[dict[str, str]] = {"lmms_eval": "lmms-eval tasks/ocrbench/utils.py @75571cf"}
    missing_protocols: ClassVar[dict[str, str]] = {
        "official": "the authors' scoring is the same substring rule without lmms-eval's fullwidth folding; "
        "not reproduced separately, use lmms_eval",
    }
    row_columns = ("output", "expected_output", "dataset")
    group_columns = ("question_type",)
    default_threshold = 1.0
    example: ClassVar[Example] = Example(
        {"type": "ocrbench"},
        [
            {
                "id": "0",
                "output": "The sign says STOP.",
                "expected_output": '["stop"]',
                "dataset": "IIIT5K",
                "question_type": "Regular Text Recognition",
            },
            {
                "id": "1",
                "output": "x ^ 2",
                "expected_output": '["x^{2}"]',
                "dataset": "HME100k",
                "question_type": "Handwritten Mathematical Expression Recognition",
            },
        ],
    )

    def row_function(self) -> Callable[..., RowResult]:
        return partial(score_row, self.protocol)

    def benchmark(self, rows: pl.DataFrame) -> dict[str, Any]:
        processed = rows.filter(pl.col("status") == PROCESSED)
        points = per_group(processed, "question_type", how="sum", name="points", order=RECOGNITION + OTHER_TYPES)
        total = {name: int(values["points"]) for name, values in points.items()}
        recognition = sum(total.get(name, 0) for name in RECOGNITION)
        return {
            **self.counts(rows),
            "Final Score": recognition + sum(total.get(name, 0) for name in OTHER_TYPES),
            "Text Recognition": recognition,
            **{name: total[name] for name in OTHER_TYPES if name in total},
            "categories": {name: {"points": total[name], "n": values["n"]} for name, values in points.items()},
        }
