"""The grading calls of one row: :class:`Asker` renders a template over the row and sends it through the run's
scheduler (a distinct cache entry per sample); :class:`Usage` sums tokens, cost, latency and cache hits."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from vision_eval.config import JudgeConfig
from vision_eval.evaluator import EvalContext
from vision_eval.images.policy import PreparedImage
from vision_eval.images.provider_rules import rule_for
from vision_eval.llm.requests import build_call
from vision_eval.llm.scheduler import get_scheduler
from vision_eval.llm.templates import render_text
from vision_eval.llm.transport import CallResult


class _GradingSettings(Protocol):
    @property
    def system(self) -> str | None: ...


class Grader(Protocol):
    """What an :class:`Asker` reads of the evaluator it asks for (a ``GradedEvaluator``)."""

    @property
    def name(self) -> str: ...
    @property
    def context(self) -> EvalContext: ...
    @property
    def settings(self) -> _GradingSettings: ...


@dataclass
class Usage:
    """Tokens, cost, latency and cache hits summed over a row's calls."""

    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None
    latency: float = 0.0
    calls: int = 0
    cached: int = 0
    attempts: int = 0
    retried_failures: list[str] = field(default_factory=list)

    def add(self, result: CallResult) -> None:
        self.calls += 1
        self.attempts += result.attempts or 0
        self.retried_failures += list(result.failures or [])
        self.cached += bool(result.cached)
        self.input_tokens += result.input_tokens or 0
        self.output_tokens += result.output_tokens or 0
        self.latency += result.latency_s or 0.0
        if result.cost_usd is not None:
            self.cost = (self.cost or 0.0) + result.cost_usd

    def columns(self) -> dict[str, Any]:
        return {
            "input_tokens": self.input_tokens if self.calls else None,
            "output_tokens": self.output_tokens if self.calls else None,
            "cost_usd": self.cost,
            "latency_s": self.latency if self.calls else None,
            "cached": self.calls > 0 and self.cached == self.calls,
        }


class Asker:
    """Sends the grading calls of one row x judge x sample, keeping every reply and the usage."""

    def __init__(
        self,
        evaluator: Grader,
        judge: JudgeConfig,
        variables: dict[str, Any],
        images: list[PreparedImage],
        sample: int,
        usage: Usage,
    ) -> None:
        self.evaluator, self.judge, self.variables, self.images = evaluator, judge, variables, images
        self.sample, self.usage = sample, usage
        self.replies: list[Any] = []
        """The raw replies so far (text, or the object a server sent as content), the last one kept on a failure."""

    def render(self, text: str) -> str:
        """A setting that is itself a template (rubric, criteria), rendered over the row's variables."""
        return render_text(text, self.variables, len(self.images))

    async def ask(
        self,
        template: str,
        extra: dict[str, Any] | None = None,
        *,
        images: bool = True,
        params: dict[str, Any] | None = None,
        sample: int | None = None,
    ) -> CallResult:
        """Render ``template`` over the row's variables plus ``extra`` and call the judge; sample ``sample`` (default
        this asker's) > 0 gets its own cache and journal entry, so k samples are k distinct judgements."""
        evaluator = self.evaluator
        call = build_call(
            template,
            {**self.variables, **(extra or {})},
            self.images if images else [],
            self.judge.model,
            self.judge.image.detail,
            evaluator.settings.system,
            rule_for(self.judge),
        )
        salt = self.sample if sample is None else sample
        result = await get_scheduler(evaluator.context).complete(
            self.judge,
            call.messages,
            params=params,
            estimated_tokens=call.estimated_tokens,
            key_extra={"sample": salt} if salt else None,
            owner=evaluator.name,
        )
        self.usage.add(result)
        self.replies.append(result.text)
        return result
