"""Model-graded assertions over a context: ``context_recall`` (the reference's sentences the context supports)
and ``context_faithfulness`` (the output's statements the context supports), promptfoo's contracts with the
images in view; default thresholds in :mod:`vision_eval.evaluators.graded.output_graders`."""

from __future__ import annotations

from typing import Any, ClassVar

from typing_extensions import TypeVar

from vision_eval.example import GRADED_NOTE, PHOTOS, Example
from vision_eval.grading import prompts
from vision_eval.grading.base import GradedEvaluator
from vision_eval.grading.calls import Asker
from vision_eval.grading.outcomes import Grade
from vision_eval.grading.parsers import parse_faithfulness, parse_recall, parse_statements
from vision_eval.grading.settings import GradedSettings

IMAGES_ONLY = "(the attached images)"


def context_text(value: Any) -> str:
    """A context cell as text: a list of passages is joined with blank lines."""
    if value is None:
        return IMAGES_ONLY
    if isinstance(value, list | tuple):
        return "\n\n".join(str(v) for v in value if v is not None)
    return str(value)


class ContextSettings(GradedSettings):
    """Settings of the context assertions."""

    context: str | None = "context"
    """Column holding the context (text or a list of passages); ``null``: the images alone are the context."""


ContextSettingsT = TypeVar("ContextSettingsT", bound=ContextSettings, default=ContextSettings, covariant=True)


class _ContextEvaluator(GradedEvaluator[ContextSettingsT]):
    default_threshold = 0.5
    pass_from_score = True

    def reads(self) -> tuple[str, ...]:
        """The column graded against the context."""
        return ("output",)

    def columns_needed(self) -> tuple[str, ...]:
        s = self.settings
        return tuple(dict.fromkeys((*super().columns_needed(), *self.reads(), *([s.context] if s.context else []))))

    def extra_variables(self) -> set[str]:
        return {"context", "reference", "statements", "groundTruth"}

    def prepare_variables(self, row: dict[str, Any], variables: dict[str, Any]) -> None:
        s = self.settings
        variables["context"] = context_text(row.get(s.context) if s.context else None)


class ContextRecallSettings(ContextSettings):
    """Settings of ``context_recall``."""

    reference: str = "expected_output"
    """Column with the ground-truth answer whose sentences must be attributable to the context."""


class ContextRecall(_ContextEvaluator[ContextRecallSettings]):
    """Share of the reference answer's sentences the grader attributes to the context (and images)."""

    type_name: ClassVar[str] = "context_recall"
    example: ClassVar[Example] = Example(
        {"type": "context_recall", "context": "context"},
        [
            {
                "id": "a",
                "images": ["images/cat.png"],
                "context": "The chart shows revenue of $2.4M in Q3 2024.",
                "expected_output": "Revenue was $2.4M in Q3 2024.",
            },
            {
                "id": "b",
                "images": ["images/dog.png"],
                "context": "The invoice total is $42.",
                "expected_output": "The total is $40.",
            },
        ],
        PHOTOS,
        note=GRADED_NOTE,
    )
    required_columns = ()
    default_prompt = prompts.CONTEXT_RECALL

    def reads(self) -> tuple[str, ...]:
        return (self.settings.reference,)

    def prepare_variables(self, row: dict[str, Any], variables: dict[str, Any]) -> None:
        super().prepare_variables(row, variables)
        variables["reference"] = str(row.get(self.settings.reference) or "")
        variables["expected_output"] = variables["groundTruth"] = variables["reference"]

    async def grade(self, asker: Asker) -> Grade:
        reply = await self.ask_prompt(asker)
        attributed, total = parse_recall(reply.text)
        score = attributed / total
        return Grade(score, self.passes(score), {"attributed": attributed, "sentences": total, "reply": reply.text})


class ContextFaithfulness(_ContextEvaluator[ContextSettings]):
    """Share of the output's statements the context (and images) supports: statements, then verdicts."""

    type_name: ClassVar[str] = "context_faithfulness"
    example: ClassVar[Example] = Example(
        {"type": "context_faithfulness", "context": "context"},
        [
            {
                "id": "a",
                "images": ["images/cat.png"],
                "context": "The chart shows revenue of $2.4M in Q3 2024.",
                "output": "Revenue was $2.4M in Q3.",
            },
            {
                "id": "b",
                "images": ["images/dog.png"],
                "context": "The invoice total is $42.",
                "output": "The total is $40, paid in cash.",
            },
        ],
        PHOTOS,
        note=GRADED_NOTE,
    )
    default_prompt = prompts.FAITHFULNESS_VERDICTS

    def templates(self) -> list[str]:
        return [prompts.FAITHFULNESS_STATEMENTS, *super().templates()]

    def plan(self, variables: dict[str, Any]) -> list[tuple[str, dict[str, Any], bool]]:
        statements = ["(statements extracted from the output in step 1)"]
        return [(self.templates()[0], {}, False), (self.templates()[1], {"statements": statements}, True)]

    async def grade(self, asker: Asker) -> Grade:
        first = await asker.ask(self.templates()[0], images=False)
        statements = parse_statements(first.text)
        second = await asker.ask(self.templates()[1], {"statements": prompts.TextList(statements)})
        unsupported, verdicts = parse_faithfulness(second.text, len(statements))
        score = min(1.0, max(0.0, 1.0 - unsupported / len(statements)))
        details = {"statements": statements, "unsupported": unsupported, "verdicts": verdicts, "reply": second.text}
        if verdicts != len(statements):
            details["warning"] = f"{verdicts} verdict(s) for {len(statements)} statement(s)"
        return Grade(score, self.passes(score), details)
