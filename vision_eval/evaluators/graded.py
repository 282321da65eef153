"""Model-graded assertions with promptfoo's grading contracts, graded with the images in view.

``llm_rubric``, ``g_eval``, ``factuality`` and ``closed_qa`` live here; ``context_recall``,
``context_faithfulness`` and ``select_best`` in :mod:`vision_eval.evaluators.graded_context`. All share
:class:`vision_eval.llm.graded.GradedEvaluator` (images, samples, panel, calibration, grader errors).
A reply that breaks the contract, or a call that fails after its retries, is an ``error`` row (raw reply
in ``details.reply``), never ``passed: false``.

Default thresholds (``threshold:`` overrides):

==========================  =========  ==================================================================
type                        default    passed when
==========================  =========  ==================================================================
llm_rubric                  none       grader's ``pass`` (missing or null: true; with a threshold, raw score >= it)
g_eval                      0.7        mean over criteria of score/10 >= threshold
factuality                  none       the category's score > 0 (and >= threshold when one is set)
closed_qa                   none       the reply ends with Y
context_recall              0.5        attributed / classified sentences >= threshold
context_faithfulness        0.5        1 - unsupported / statements >= threshold
select_best                 none       the row's first candidate wins in every order
==========================  =========  ==================================================================
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import polars as pl
from pydantic import field_validator

from vision_eval.llm import grader_prompts as prompts
from vision_eval.llm.graded import GradedEvaluator
from vision_eval.llm.graders import (
    FACTUALITY_ALIASES,
    FACTUALITY_CATEGORIES,
    GEVAL_MAX,
    GraderError,
    parse_closed_qa,
    parse_factuality,
    parse_geval,
    parse_rubric,
    parse_steps,
    weighted_score,
)
from vision_eval.llm.grading import Asker, Grade, GradedSettings, TextList, load_prompt
from vision_eval.llm.transport import uses_direct
from vision_eval.registry import register

LOGPROB_PREFIXES = ("openai/", "azure/", "hosted_vllm/")


class LLMRubricSettings(GradedSettings):
    """Settings of ``llm_rubric``."""

    rubric: str
    """What must be true of the output (Jinja2 over the row's columns allowed)."""
    scale: tuple[float, float] = (0.0, 1.0)
    """[min, max] of the grader's ``score``; the score column is mapped onto 0..1, ``threshold`` compares the raw
    score (as promptfoo does). A score outside the scale is a grader error."""


@register
class LLMRubric(GradedEvaluator[LLMRubricSettings]):
    """The grader decides whether the rubric holds for the output: ``{"reason", "pass", "score"}``."""

    type_name: ClassVar[str] = "llm_rubric"
    settings_model = LLMRubricSettings

    def templates(self) -> list[str]:
        s = self.settings
        return [load_prompt(s.prompt, prompts.LLM_RUBRIC), s.rubric]

    def extra_variables(self) -> set[str]:
        return {"rubric"}

    def plan(self, variables: dict[str, Any]) -> list[tuple[str, dict[str, Any], bool]]:
        s = self.settings
        return [(self.templates()[0], {"rubric": s.rubric}, True)]

    async def grade(self, asker: Asker) -> Grade:
        s = self.settings
        reply = await asker.ask(self.templates()[0], {"rubric": asker.render(s.rubric)})
        verdict = parse_rubric(reply.text)
        low, high = s.scale
        if not low <= verdict.score <= high:
            raise GraderError(f"score {verdict.score:g} is outside {low:g}..{high:g}")
        passed = verdict.passed and (self.threshold is None or verdict.score >= self.threshold)
        details = {"reason": verdict.reason, "grader_pass": verdict.passed, "grader_score": verdict.score}
        return Grade((verdict.score - low) / (high - low), passed, details)


class FactualitySettings(GradedSettings):
    """Settings of ``factuality``."""

    scores: dict[str, float] = {}
    """Score per category (``A``..``E`` or promptfoo's names ``subset``, ``superset``, ``agree``, ``disagree``,
    ``differButFactual``); defaults A, B, C, E = 1 and D = 0. A category scored 0 fails."""

    @field_validator("scores")
    @classmethod
    def _check(cls, value: dict[str, float]) -> dict[str, float]:
        out = {}
        for key, score in value.items():
            category = FACTUALITY_ALIASES.get(key, key.upper())
            if category not in FACTUALITY_CATEGORIES:
                raise ValueError(f"unknown factuality category {key!r} (A-E or {', '.join(FACTUALITY_ALIASES)})")
            if not 0 <= score <= 1:
                raise ValueError(f"category {key!r}: score must be in 0..1")
            out[category] = float(score)
        return out


@register
class Factuality(GradedEvaluator[FactualitySettings]):
    """Facts of ``output`` against ``expected_output`` for the ``input``: category A-E."""

    type_name: ClassVar[str] = "factuality"
    settings_model = FactualitySettings
    required_columns = ("output", "expected_output")

    def templates(self) -> list[str]:
        return [load_prompt(self.settings.prompt, prompts.FACTUALITY)]

    async def grade(self, asker: Asker) -> Grade:
        s = self.settings
        reply = await asker.ask(self.templates()[0])
        category, reason = parse_factuality(reply.text)
        score = {"A": 1.0, "B": 1.0, "C": 1.0, "D": 0.0, "E": 1.0, **s.scores}[category]
        passed = score > 0 and (self.threshold is None or score >= self.threshold)
        return Grade(score, passed, {"category": category, "reason": reason})


class ClosedQASettings(GradedSettings):
    """Settings of ``closed_qa``."""

    criteria: str
    """The question the grader answers about the output (Jinja2 allowed), e.g. "Does it name every colour?"."""


@register
class ClosedQA(GradedEvaluator[ClosedQASettings]):
    """The grader reasons, then ends with Y (passes) or N (fails)."""

    type_name: ClassVar[str] = "closed_qa"
    settings_model = ClosedQASettings

    def templates(self) -> list[str]:
        s = self.settings
        return [load_prompt(s.prompt, prompts.CLOSED_QA), s.criteria]

    def extra_variables(self) -> set[str]:
        return {"criteria"}

    def plan(self, variables: dict[str, Any]) -> list[tuple[str, dict[str, Any], bool]]:
        return [(self.templates()[0], {"criteria": self.templates()[1]}, True)]

    async def grade(self, asker: Asker) -> Grade:
        reply = await asker.ask(self.templates()[0], {"criteria": asker.render(self.templates()[1])})
        passed = parse_closed_qa(reply.text)
        return Grade(float(passed), passed, {"reason": reply.text.strip()[-2000:]})


class GEvalSettings(GradedSettings):
    """Settings of ``g_eval``."""

    criteria: str | list[str] | dict[str, str]
    """One criterion, a list, or name -> criterion; several are graded one by one and averaged (each is a
    dimension)."""
    steps: list[str] | None = None
    """Evaluation steps to use instead of asking the grader for them (step 1 is then skipped)."""
    steps_prompt: str | None = None
    """Template replacing the default step-1 prompt (variable ``criteria``; must ask for ``{"steps": [...]}``)."""
    logprobs: bool | None = None
    """Ask for top logprobs and weight the score by them; default: for OpenAI-compatible judges only."""
    n_samples: int = 1
    """Without logprobs, average this many step-2 scores (the G-Eval paper's sampling); 1 = one reply."""


@register
class GEval(GradedEvaluator[GEvalSettings]):
    """G-Eval: the grader writes evaluation steps per criterion (once, cached), then scores each row 0..10."""

    type_name: ClassVar[str] = "g_eval"
    settings_model = GEvalSettings
    default_threshold = 0.7
    pass_from_score = True

    def __init__(self, name: str, settings: GEvalSettings, context: Any = None) -> None:
        super().__init__(name, settings, context)
        if settings.n_samples < 1:
            raise ValueError("n_samples must be at least 1")
        self._steps: dict[tuple[str, str], asyncio.Future[list[str]]] = {}
        self.step_calls = 0

    @property
    def criteria(self) -> dict[str, str]:
        c = self.settings.criteria
        if isinstance(c, str):
            return {"criteria": c}
        if isinstance(c, list):
            return {f"criterion_{i}": text for i, text in enumerate(c, start=1)}
        return dict(c)

    def templates(self) -> list[str]:
        s = self.settings
        return [
            load_prompt(s.prompt, prompts.GEVAL_SCORE),
            load_prompt(s.steps_prompt, prompts.GEVAL_STEPS),
            *self.criteria.values(),
        ]

    def extra_variables(self) -> set[str]:
        return {"criteria", "steps", "max_score", "maxScore"}

    def plan(self, variables: dict[str, Any]) -> list[tuple[str, dict[str, Any], bool]]:
        s = self.settings
        score, step = self.templates()[:2]
        calls = []
        for text in self.criteria.values():
            steps = s.steps or ["(steps proposed by the grader in step 1, once per criteria text)"]
            calls.append((score, {"criteria": text, "steps": steps, "max_score": GEVAL_MAX}, True))
        if s.steps is None:
            calls += [(step, {"criteria": text}, False) for text in self.criteria.values()]
        return calls

    def summarize(self, results: pl.DataFrame) -> dict[str, Any]:
        return {**super().summarize(results), "step_calls": self.step_calls}

    def _logprobs(self, asker: Asker) -> bool:
        s = self.settings
        if s.logprobs is not None:
            return s.logprobs
        return uses_direct(asker.judge) or str(asker.judge.model).startswith(LOGPROB_PREFIXES)

    async def steps_for(self, asker: Asker, criteria: str) -> list[str]:
        """Step 1, once per (judge, criteria text) for the whole run; concurrent rows share one call."""
        s = self.settings
        if s.steps:
            return s.steps
        key = (str(asker.judge.model), criteria)
        if key not in self._steps:
            self._steps[key] = asyncio.ensure_future(self._ask_steps(asker, criteria))
        return list(await asyncio.shield(self._steps[key]))

    async def _ask_steps(self, asker: Asker, criteria: str) -> list[str]:
        self.step_calls += 1
        reply = await asker.ask(self.templates()[1], {"criteria": criteria}, images=False, sample=0)
        return parse_steps(reply.text)

    async def grade(self, asker: Asker) -> Grade:
        per: dict[str, dict[str, Any]] = {}
        for name, template in self.criteria.items():
            criteria = asker.render(template)
            steps = await self.steps_for(asker, criteria)
            per[name] = await self._score(asker, criteria, steps)
            per[name]["steps"] = steps
        mean = sum(p["score"] for p in per.values()) / len(per)
        details: dict[str, Any] = {"max_score": GEVAL_MAX}
        if len(per) == 1:
            details.update(next(iter(per.values())))
            dims: dict[str, float] = {}
        else:
            details["criteria"] = per
            dims = {k: p["score"] for k, p in per.items()}
        return Grade(mean, mean >= (self.threshold if self.threshold is not None else 0.7), details, dims)

    async def _score(self, asker: Asker, criteria: str, steps: list[str]) -> dict[str, Any]:
        s = self.settings
        extra = {"criteria": criteria, "steps": TextList(steps, "\n- "), "max_score": GEVAL_MAX, "maxScore": GEVAL_MAX}
        want = self._logprobs(asker)
        params = {"logprobs": True, "top_logprobs": 20} if want else None
        first = asker.sample * s.n_samples  # salts sample*n .. sample*n+n-1 never collide across samples
        reply = await asker.ask(self.templates()[0], extra, params=params, sample=first)
        raw, reason = parse_geval(reply.text)
        weighted = weighted_score(reply.logprobs) if want else None
        if weighted is not None:
            value, distribution = weighted
            return {
                "score": value / GEVAL_MAX,
                "raw_score": raw,
                "reason": reason,
                "mode": "logprobs",
                "distribution": distribution,
            }
        if s.n_samples == 1:
            return {"score": raw / GEVAL_MAX, "raw_score": raw, "reason": reason, "mode": "single"}
        raws = [raw]
        for j in range(1, s.n_samples):
            more = await asker.ask(self.templates()[0], extra, params=params, sample=first + j)
            raws.append(parse_geval(more.text)[0])
        return {
            "score": sum(raws) / len(raws) / GEVAL_MAX,
            "raw_scores": raws,
            "reason": reason,
            "mode": "n_samples",
            "n": len(raws),
        }
