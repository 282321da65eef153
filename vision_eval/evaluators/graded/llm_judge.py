"""``llm_judge``: a vision LLM grades each row against a judge file's weighted dimensions.

The judge files (:mod:`vision_eval.llm.judges`) declare dimensions, weights, threshold and a prompt; the
judge sees the row's images as pixels; the row score is the weighted mean of the dimension scores, computed
here (the judge's own total is kept in details, not trusted). Built on the model-graded base, so the
reliability options (``samples``, ``panel``, ``human_score`` / ``human_pass``) work here too. Without a judge
model the rows are ``skipped`` and carry the request that would be sent and its estimated tokens.
"""

from __future__ import annotations

from typing import Any, ClassVar

from vision_eval.evaluator import EvalContext
from vision_eval.example import GRADED_NOTE, PHOTO_ROWS, PHOTOS, Example
from vision_eval.grading.base import GradedEvaluator
from vision_eval.grading.calls import Asker
from vision_eval.grading.outcomes import Grade
from vision_eval.grading.parsers import GraderError
from vision_eval.grading.settings import GradedSettings
from vision_eval.llm.judges import JudgeSpec, ReplyError, load_judge, parse_verdict
from vision_eval.llm.templates import template_variables


class JudgeFileSettings(GradedSettings):
    """Settings of the judge-file grader (``llm_judge``'s, plus the reliability options)."""

    prompt: str
    """Judge file: a stem in ``evaluators/llm-judges/`` or a path (as for ``llm_judge``)."""
    weights: dict[str, float] | None = None
    """Override of some or all dimension weights."""


class LLMJudge(GradedEvaluator[JudgeFileSettings]):
    """A vision LLM judge over the dimensions of a judge file."""

    type_name: ClassVar[str] = "llm_judge"
    example: ClassVar[Example] = Example(
        {"type": "llm_judge", "prompt": "image-description-judge"},
        PHOTO_ROWS,
        PHOTOS,
        note=GRADED_NOTE + " `vision-eval list` shows the judge files.",
    )
    pass_from_score = True

    def __init__(self, name: str, settings: JudgeFileSettings, context: EvalContext | None = None) -> None:
        self.spec: JudgeSpec = load_judge(settings.prompt).with_weights(settings.weights)
        body = self.spec.body
        if "response_format" not in template_variables(body):
            body = body.rstrip() + "\n\n{{ response_format }}\n"
        self.template = body
        self.response_format = self.spec.response_format()
        if settings.system is None and self.spec.system:
            settings = settings.model_copy(update={"system": self.spec.system})
        super().__init__(name, settings, context)

    @property
    def threshold(self) -> float | None:
        return self.settings.threshold if self.settings.threshold is not None else self.spec.threshold

    def templates(self) -> list[str]:
        return [self.template]

    def extra_variables(self) -> set[str]:
        return {"response_format"}

    def plan(self, variables: dict[str, Any]) -> list[tuple[str, dict[str, Any], bool]]:
        return [(self.template, {"response_format": self.response_format}, True)]

    async def grade(self, asker: Asker) -> Grade:
        reply = await asker.ask(self.template, {"response_format": self.response_format})
        try:
            verdict = parse_verdict(reply.text, self.spec)
        except ReplyError as exc:
            raise GraderError(str(exc)) from None
        details = {
            "judge": self.spec.name,
            "scores": verdict.scores,
            "weights": self.spec.dimensions,
            "reasoning": verdict.reasoning,
            "details": verdict.details,
            "judge_total": verdict.judge_total,
        }
        score, weights = verdict.score, dict(self.spec.dimensions)
        return Grade(score, self.passes(score), details, dict(verdict.scores), weights)
