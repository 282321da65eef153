"""Settings and call plumbing of the model-graded evaluators: the shared settings, one judgement
(:class:`Grade`), the usage of a row's calls, and :class:`Asker`, which renders a template over a row
and sends it through the run's scheduler (distinct cache entries per sample)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from vision_eval.config import JudgeConfig
from vision_eval.evaluator import EvaluatorSettings
from vision_eval.images.policy import PreparedImage
from vision_eval.llm.requests import build_call
from vision_eval.llm.scheduler import get_scheduler
from vision_eval.llm.templates import render_text
from vision_eval.llm.transport import CallResult

if TYPE_CHECKING:
    from vision_eval.llm.graded import GradedEvaluator

TEXT_VARIABLES = ("input", "output", "expected_output")
NO_JUDGE_REASON = "no judge configured (judge.model is null): this is the request a judge run would send"
DRY_RUN_REASON = "dry run (run.dry_run): this is the request the run would send"
PROMPTFOO_ALIASES = {"completion": "output", "ideal": "expected_output", "question": "input", "answer": "output"}
"""promptfoo's grading-prompt variable names, so a promptfoo ``rubricPrompt`` renders unchanged."""


class TextList(list):
    """A list that renders as promptfoo renders it (``{{ steps }}`` -> lines), yet iterates in templates."""

    def __init__(self, items: list[str], separator: str = "\n") -> None:
        super().__init__(items)
        self.separator = separator

    def __str__(self) -> str:
        return self.separator.join(str(i) for i in self)


class GradedSettings(EvaluatorSettings):
    """Settings shared by every model-graded evaluator."""

    images: list[str] = ["images"]
    """Columns whose images are attached to the grading call, in order (labelled Image 1, Image 2, ...)."""
    judge: dict[str, Any] | None = None
    """Judge settings overriding the run's ``judge`` for this evaluator (e.g. ``{model: ..., temperature: 0.7}``)."""
    system: str | None = None
    """Optional system message for every grading call."""
    chat_input_images: bool = True
    """When ``input`` holds chat messages, attach their images too (after the columns' images)."""
    prompt: str | None = None
    """Grading prompt replacing the default (Jinja2 text or a path to a file); it must ask for the same reply."""
    samples: int = 1
    """Independent judgements per row and judge (at the judge's temperature), aggregated by ``aggregate``."""
    aggregate: Literal["mean", "median", "majority"] = "mean"
    """How ``samples`` judgements combine (see the table in the README)."""
    min_valid: int | None = None
    """Valid judgements a row needs, else it is ``error``; default: half of ``samples``, rounded up."""
    panel: list[str | dict[str, Any]] | None = None
    """Several judge models (litellm ids, or judge override mappings); per-model scores go to dimensions."""
    panel_aggregate: Literal["mean", "majority"] = "mean"
    """How the panel's judgements combine: mean score, or strict majority of the verdicts (median score)."""
    panel_min_valid: int | None = None
    """Panel members that must give a valid judgement; default: half of the panel, rounded up."""
    human_score: str | None = None
    """Column with a human score (or a pass/fail label) for calibration (Spearman, Kendall, weighted kappa)."""
    human_pass: str | None = None
    """Column with a human pass label (bool, 1/0, pass/fail, yes/no) for the accuracy of ``passed``."""
    human_scale: tuple[float, float] = (0.0, 1.0)
    """[min, max] of the human scores (mapped onto 0..1 for kappa categories)."""
    kappa_levels: int | None = None
    """Categories for the weighted kappa; default one per point of an integer scale (1..5 -> 5), else 5."""
    kappa_weights: Literal["linear", "quadratic"] = "quadratic"
    """Disagreement weights of Cohen's kappa."""


@dataclass
class Grade:
    """One judgement of one row."""

    score: float
    passed: bool
    details: dict[str, Any]
    dims: dict[str, float] = field(default_factory=dict)
    weights: dict[str, float] = field(default_factory=dict)
    """Weight of each dimension in ``dimensions.parquet`` (default 1)."""


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
        evaluator: GradedEvaluator,
        judge: JudgeConfig,
        variables: dict[str, Any],
        images: list[PreparedImage],
        sample: int,
        usage: Usage,
    ) -> None:
        self.evaluator, self.judge, self.variables, self.images = evaluator, judge, variables, images
        self.sample, self.usage = sample, usage
        self.replies: list[str] = []

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
        """Render ``template`` over the row's variables plus ``extra`` and call the judge."""
        call = build_call(
            template,
            {**self.variables, **(extra or {})},
            self.images if images else [],
            self.judge.model,
            self.judge.image.detail,
            self.evaluator.settings.system,
        )
        salt = self.sample if sample is None else sample
        result = await complete(
            self.evaluator.context, self.judge, call.messages, params, call.estimated_tokens, salt, self.evaluator.name
        )
        self.usage.add(result)
        self.replies.append(result.text)
        return result


async def complete(
    context: Any,
    judge: JudgeConfig,
    messages: list[dict[str, Any]],
    params: dict[str, Any] | None,
    estimated: int,
    salt: int,
    owner: str | None = None,
) -> CallResult:
    """A scheduler call; sample ``salt`` > 0 gets its own cache and journal entry, so k samples are k
    distinct judgements."""
    return await get_scheduler(context).complete(
        judge,
        messages,
        params=params,
        estimated_tokens=estimated,
        key_extra={"sample": salt} if salt else None,
        owner=owner,
    )


def load_prompt(text: str | None, default: str) -> str:
    """The ``prompt:`` setting (a file path or the template text), else ``default``."""
    if not text:
        return default
    path = Path(text).expanduser()
    if "\n" not in text and len(text) < 1024 and path.suffix and path.is_file():
        return path.read_text(encoding="utf-8")
    return text
