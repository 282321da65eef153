"""``mme``: MME (Fu et al., 2023), yes/no questions asked in pairs about each image, scored per subtask and summed.

Protocol ``lmms_eval`` (lmms-eval ``tasks/mme/utils.py``): the reply stripped (``api/task.py``), then
``parse_pred_ans``: lowercased, stripped, periods removed; "yes"/"no" as is; a single letter "y"/"n" as yes/no
(another single character is "other"); otherwise "yes" if its first four characters contain "yes", else "no" if
they contain "no", else "other" (scored wrong, and counted as ``unparseable``). The reference answer, read the same
way, must be yes or no.

Dataset-level numbers, as the paper defines them and lmms-eval computes them: per subtask (``category``), per image
(``question_id``: each image has two questions) acc = the share of its questions right x 100 and acc+ = 100 when
both are right; the subtask's score is the mean over its images of acc + acc+ (0..200). **Perception** is the sum
of the scores of the ten perception subtasks (out of 2,000), **Cognition** the sum of the four cognition subtasks
(out of 800) — sums, not means. An image without exactly two scored questions (the reference stops on one) is
counted with what it has and reported under ``images_not_in_pairs``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, ClassVar

import polars as pl
from pydantic import field_validator

from vision_eval.evaluators.benchmarks.grouped import GroupedMetric, per_group
from vision_eval.evaluators.benchmarks.protocols import Protocol, ProtocolSettings, check_protocol
from vision_eval.evaluators.benchmarks.text import details_json
from vision_eval.example import Example
from vision_eval.results import PROCESSED
from vision_eval.rowwise import RowResult

PERCEPTION = [
    "existence",
    "count",
    "position",
    "color",
    "posters",
    "celebrity",
    "scene",
    "landmark",
    "artwork",
    "OCR",
]
COGNITION = ["commonsense_reasoning", "numerical_calculation", "text_translation", "code_reasoning"]
NOT_YES_OR_NO = "expected_output is not yes or no"


def read_yes_no(text: str) -> str:
    """``yes``, ``no`` or ``other``, as lmms-eval's ``parse_pred_ans`` reads a reply."""
    text = text.lower().strip().replace(".", "")
    if text in ("yes", "no"):
        return text
    if len(text) == 1:
        return {"y": "yes", "n": "no"}.get(text, "other")
    head = text[:4]
    return "yes" if "yes" in head else "no" if "no" in head else "other"


def score_row(protocol: str, output: str, expected: str) -> RowResult:
    """One MME question: 1 when the reply reads as the answer."""
    gold = expected.lower().strip().replace(".", "")
    if gold not in ("yes", "no"):
        return RowResult("error", details=details_json(protocol=protocol, expected=expected[:200]), error=NOT_YES_OR_NO)
    prediction = read_yes_no(output.strip())
    unread = prediction == "other"
    details = details_json(
        protocol=protocol, prediction=prediction, expected=gold, **({"unparseable": True} if unread else {})
    )
    return RowResult("processed", float(prediction == gold), details)


class MmeSettings(ProtocolSettings):
    """Settings of ``mme``."""

    protocol: Protocol = "lmms_eval"
    """``lmms_eval`` (lmms-eval's mme task); see docs/benchmarks.md."""

    @field_validator("protocol")
    @classmethod
    def _offered(cls, value: str) -> str:
        return check_protocol(Mme, value)


class Mme(GroupedMetric[MmeSettings]):
    """MME: the yes/no read from ``output`` against ``expected_output``, per question.

    Reads ``category`` (the subtask) and ``question_id`` (the image; its two questions share it). The summary has
    ``Perception`` and ``Cognition`` (sums of subtask scores, out of 2,000 and 800) and each subtask's score, acc
    and acc+ (see the module docstring)."""

    type_name: ClassVar[str] = "mme"
    protocols: ClassVar[dict[str, str]] = {"lmms_eval": "lmms-eval tasks/mme/utils.py @75571cf"}
    missing_protocols: ClassVar[dict[str, str]] = {
        "official": "the authors' calculation.py ships with the dataset and is not reproduced here; use lmms_eval",
    }
    group_columns = ("category", "question_id")
    example: ClassVar[Example] = Example(
        {"type": "mme"},
        [
            {"id": "0", "output": "Yes", "expected_output": "Yes", "category": "count", "question_id": "1.png"},
            {"id": "1", "output": "Yes, it is", "expected_output": "No", "category": "count", "question_id": "1.png"},
        ],
    )

    def row_function(self) -> Callable[..., RowResult]:
        return partial(score_row, self.protocol)

    def benchmark(self, rows: pl.DataFrame) -> dict[str, Any]:
        processed = rows.filter(pl.col("status") == PROCESSED)
        images = processed.group_by("category", "question_id", maintain_order=True).agg(
            (pl.col("score").mean() * 100).alias("acc"),
            (pl.col("score").min() * 100).alias("acc+"),
            pl.len().alias("questions"),
        )
        images = images.with_columns((pl.col("acc") + pl.col("acc+")).alias("score"))
        scores = per_group(images, "category", "score", name="score", order=PERCEPTION + COGNITION)
        accs = per_group(images, "category", "acc", name="acc")
        pluses = per_group(images, "category", "acc+", name="acc+")
        categories = {
            name: {"score": s["score"], "acc": accs[name]["acc"], "acc+": pluses[name]["acc+"], "images": s["n"]}
            for name, s in scores.items()
        }
        perception = [c for c in categories if c in PERCEPTION]
        cognition = [c for c in categories if c not in PERCEPTION]  # as lmms-eval: any other subtask is cognition
        return {
            **self.counts(rows),
            "Perception": sum(categories[c]["score"] for c in perception) if perception else None,
            "Cognition": sum(categories[c]["score"] for c in cognition) if cognition else None,
            "images_not_in_pairs": int((images["questions"] != 2).sum()),
            "categories": categories,
        }
