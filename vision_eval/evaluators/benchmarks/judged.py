"""The base of the benchmark metrics whose reference itself asks an LLM (MMBench's option matching, MathVista's
answer extraction, MM-Vet's grading): a model-graded evaluator with a protocol, the judge model the reference uses,
and whether the run's numbers are comparable with the reference's.

The judge a preset pins is the reference's (``reference_judge``); the run records the model actually used
(``models`` in run.json) and, when it is another one (compared without the provider prefix: ``openai/gpt-4o`` is
``gpt-4o``), or an option departs from the reference, ``comparable: false`` with the reasons
(``not_comparable_because``), in run.json and the leaderboard.
"""

from __future__ import annotations

from typing import Any, ClassVar

from typing_extensions import TypeVar

from vision_eval.grading.base import GradedEvaluator
from vision_eval.grading.settings import GradedSettings


class JudgedBenchmarkSettings(GradedSettings):
    """Settings every judged benchmark metric has."""

    protocol: str
    """Whose scoring to reproduce (each metric offers its own; see docs/benchmarks.md)."""
    images: list[str] = []
    """Columns whose images the judge sees: none (the references' judges read text only)."""


SettingsT = TypeVar("SettingsT", bound=JudgedBenchmarkSettings, default=JudgedBenchmarkSettings, covariant=True)


def same_model(used: str, reference: str) -> bool:
    """Whether a litellm model id names the reference's model (the provider prefix aside)."""
    return used.rsplit("/", 1)[-1] == reference


class JudgedBenchmark(GradedEvaluator[SettingsT]):
    """Base of the judged benchmark metrics (see the module docstring)."""

    protocols: ClassVar[dict[str, str]] = {}
    """Protocol -> the reference implementation it reproduces."""
    reference_judge: ClassVar[str] = ""
    """The judge model the reference uses (its model id, without a provider prefix)."""
    judge_sees_images = False
    default_threshold: ClassVar[float | None] = 1.0
    pass_from_score: ClassVar[bool] = True

    @property
    def protocol(self) -> str:
        """The scoring protocol in use."""
        return self.settings.protocol

    def comparable_reasons(self) -> list[str]:
        """Why this run's numbers are not the reference's (empty: they are comparable)."""
        used = [label for label, _ in self.judges]
        if not used:
            return ["no judge model"]
        other = [label for label in used if not same_model(label, self.reference_judge)]
        if other or len(used) > 1:
            return [f"judge {', '.join(used)} is not the reference's {self.reference_judge}"]
        return []

    def describe(self) -> dict[str, Any]:
        reasons = self.comparable_reasons()
        return {
            **super().describe(),
            "protocol": self.protocol,
            "protocol_source": self.protocols[self.protocol],
            "reference_judge": self.reference_judge,
            "comparable": not reasons,
            **({"not_comparable_because": reasons} if reasons else {}),
        }
