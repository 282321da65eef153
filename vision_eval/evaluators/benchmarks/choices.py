"""Pieces the multiple-choice benchmark metrics share: the options of a row, their letters, and the settings and
base class every such metric uses. Plain Python where a row function needs it (row functions run in worker
processes)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, ClassVar

import polars as pl
from pydantic import field_validator
from typing_extensions import TypeVar

from vision_eval.evaluators.benchmarks.grouped import GroupedMetric, RandomPick, per_group
from vision_eval.evaluators.benchmarks.protocols import Protocol, ProtocolSettings
from vision_eval.evaluators.benchmarks.text import details_json
from vision_eval.example import Example
from vision_eval.llm.templates import option_list
from vision_eval.results import PROCESSED
from vision_eval.rowwise import RowResult

OPTIONS_NOT_A_LIST = "options are not a list of texts"

__all__ = [
    "NOT_AN_INDEX",
    "OPTIONS_NOT_A_LIST",
    "ChoiceMetric",
    "ChoiceSettings",
    "LetterChoice",
    "LetterChoiceSettings",
    "gold_letter",
    "letters",
    "mcq_letter",
    "option_list",
    "two_rows",
    "verdict",
]


def letters(count: int, first: str = "A") -> list[str]:
    """The option letters of ``count`` options: A, B, C..."""
    return [chr(ord(first) + i) for i in range(count)]


class ChoiceSettings(ProtocolSettings):
    """Settings of a multiple-choice benchmark metric (each metric's own model sets its default protocol and checks
    that the metric offers it)."""


ChoiceSettingsT = TypeVar("ChoiceSettingsT", bound=ChoiceSettings, default=ChoiceSettings, covariant=True)


class ChoiceMetric(GroupedMetric[ChoiceSettingsT]):
    """Base of the multiple-choice benchmark metrics: how each protocol counts a reply it cannot read
    (``random_pick``: the reference's seeded draw, replayed; otherwise scored wrong), recorded in run.json."""

    random_pick: ClassVar[dict[str, RandomPick]] = {}
    """Protocol -> the random draw its reference makes for an unread reply (protocols not listed score it wrong)."""

    def describe(self) -> dict[str, Any]:
        pick = self.random_pick.get(self.protocol)
        counted = f"a random choice (Python random seeded {pick.seed}, {pick.where})" if pick is not None else "wrong"
        return {**super().describe(), "unparseable_counted_as": counted}


# --- lmms-eval's shared reader of a choice letter (tasks/_task_utils/mcq_extract.py) ------------------------------

_ANSWER_PHRASES = (
    "the answer is",
    "answer is",
    "the correct answer is",
    "correct answer is",
    "the best answer is",
    "best answer is",
    "the correct option is",
    "correct option is",
    "the best option is",
    "best option is",
    "the choice is",
    "choice is",
    "the correct choice is",
    "correct choice is",
    "i choose",
    "i select",
    "i pick",
    "my answer is",
    "my choice is",
    "옵션",
    "정답은",
    "답은",
    "답:",
    "答案是",
    "答案为",
    "选",
    "答えは",
)
"""The phrases after which lmms-eval looks for the letter (in its order)."""
_RANK = {"start": 10, "end": 9, "phrase": 7, "parentheses": 6, "period": 5, "colon": 4, "right_paren": 3, "space": 2}
_SHAPES = (("({})", "parentheses"), ("{}.", "period"), ("{}:", "colon"), ("{})", "right_paren"), ("{} ", "space"))


def mcq_letter(reply: str, choices: list[str]) -> str:
    """The letter lmms-eval's ``extract_mcq_answer`` reads from ``reply`` ("" when none): every place a letter
    appears in a known shape, ranked by shape (alone at the start, alone at the end, after an answer phrase,
    bracketed, before a period, colon, bracket or space), the last such place on a tie; a bare letter anywhere only
    when no shape matched."""
    if not reply.strip():
        return ""
    text = reply.strip()
    for mark in ",.!?;:'\"":  # one mark after the other
        text = text.strip(mark)
    text = f" {text} "
    found: list[tuple[str, int, str]] = []
    for shape, name in _SHAPES:
        found += [(c, text.rfind(shape.format(c)), name) for c in choices if shape.format(c) in text]
    lowered = text.lower()
    for phrase in _ANSWER_PHRASES:
        at = lowered.find(phrase)
        if at != -1:
            found += [(c, text.find(c, at + len(phrase)), "phrase") for c in choices if c in text[at + len(phrase) :]]
    bare = text.strip()
    for c in choices:
        if bare.startswith(c) and (len(bare) == 1 or not bare[1].isalpha()):
            found.append((c, 0, "start"))
    for c in choices:
        if bare.endswith(c) and (len(bare) == 1 or not bare[-2].isalpha()):
            found.append((c, len(text) - 1, "end"))
    if not found:
        found = [(c, text.rfind(c), "fallback") for c in choices if c in text]
    if not found:
        return ""
    return max(found, key=lambda f: (_RANK.get(f[2], 0), f[1]))[0]  # max keeps the first of equals, as the sort does


# --- the letter-choice benchmarks (SEED-Bench, AI2D, ScienceQA-IMG, RealWorldQA) ---------------------------------

NOT_AN_INDEX = "expected_output is not the index of an option"


def verdict(protocol: str, prediction: str | None, gold: str, right: bool, read: bool) -> RowResult:
    """A scored row: ``prediction`` as read (``read=False``: the reply gave no choice; it is counted unparseable)."""
    unread = {} if read else {"unparseable": True}
    details = details_json(protocol=protocol, prediction=prediction, expected=gold, **unread)
    return RowResult("processed", float(right), details)


def gold_letter(expected: str, options: Any) -> tuple[str, list[str]] | str:
    """(the answer's letter, the option letters) from an option index, or the reason the row cannot be scored."""
    choices = option_list(options)
    if choices is None:
        return OPTIONS_NOT_A_LIST
    try:
        return letters(len(choices))[int(expected)], letters(len(choices))
    except (ValueError, IndexError):
        return NOT_AN_INDEX


def _stripped(rule: Callable[..., RowResult], protocol: str, output: str, *values: Any) -> RowResult:
    return rule(protocol, output.strip(), *values)  # lmms-eval's api/task.py strips every reply first


class LetterChoiceSettings(ChoiceSettings):
    """Settings of the letter-choice benchmarks (``seedbench``, ``ai2d``, ``scienceqa``, ``realworldqa``)."""

    protocol: Protocol = "lmms_eval"
    """``lmms_eval`` (lmms-eval's task of the benchmark, the only protocol they offer); see docs/benchmarks.md."""

    @field_validator("protocol")
    @classmethod
    def _offered(cls, value: str) -> str:
        if value != "lmms_eval":
            raise ValueError(f"this benchmark has no {value!r} protocol; choose one of: lmms_eval")
        return value


class LetterChoice(ChoiceMetric[LetterChoiceSettings]):
    """Base of the letter-choice benchmarks: the benchmark's rule (``rule``) applied to the stripped reply; the
    summary's accuracy under ``headline``, and per group of each of ``group_columns``."""

    rule: ClassVar[Callable[..., RowResult]]
    headline: ClassVar[str] = "accuracy"

    def row_function(self) -> Callable[..., RowResult]:
        return partial(_stripped, type(self).rule, self.protocol)

    def benchmark(self, rows: pl.DataFrame) -> dict[str, Any]:
        processed = rows.filter(pl.col("status") == PROCESSED)
        groups = {column: per_group(processed, column) for column in self.group_columns}
        return {**self.counts(rows), self.headline: processed["score"].mean(), **groups}


def two_rows(type_name: str, good: dict[str, Any], bad: dict[str, Any]) -> Example:
    """A letter-choice benchmark's example: its settings and two rows (one right, one not)."""
    return Example({"type": type_name}, [{"id": "0", **good}, {"id": "1", **bad}])
