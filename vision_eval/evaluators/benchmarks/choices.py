"""Pieces the multiple-choice benchmark metrics share: the options of a row, their letters, and the settings and
base class every such metric uses. Plain Python where a row function needs it (row functions run in worker
processes)."""

from __future__ import annotations

from typing import Any, ClassVar

from typing_extensions import TypeVar

from vision_eval.evaluators.benchmarks.grouped import GroupedMetric, RandomPick
from vision_eval.evaluators.benchmarks.protocols import ProtocolSettings
from vision_eval.llm.templates import option_list

OPTIONS_NOT_A_LIST = "options are not a list of texts"

__all__ = ["OPTIONS_NOT_A_LIST", "ChoiceMetric", "ChoiceSettings", "letters", "option_list"]


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
