"""Model-graded assertions on one output with promptfoo's grading contracts, graded with the images in view.

``llm_rubric``, ``g_eval``, ``factuality`` and ``closed_qa`` (the output against a rubric, criteria or a reference
answer) live here; ``context_recall`` and ``context_faithfulness`` in
:mod:`vision_eval.evaluators.graded.context_graders`, ``select_best`` in
:mod:`vision_eval.evaluators.graded.select_best`. All share
:class:`vision_eval.grading.base.GradedEvaluator` (images, samples, panel, calibration, grader errors).
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
import hashlib
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any, ClassVar

import polars as pl
from pydantic import field_validator

from vision_eval.evaluator import EvalOutput
from vision_eval.example import GRADED_NOTE, PHOTO_ROWS, PHOTOS, Example
from vision_eval.grading import prompts
from vision_eval.grading.base import GradedEvaluator
from vision_eval.grading.calls import Asker
from vision_eval.grading.outcomes import Grade
from vision_eval.grading.parsers import (
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
from vision_eval.grading.settings import GradedSettings
from vision_eval.llm.transport import uses_direct

LOGPROB_PREFIXES = ("openai/", "azure/", "hosted_vllm/")


class LLMRubricSettings(GradedSettings):
    """Settings of ``llm_rubric``."""

    rubric: str
    """What must be true of the output (Jinja2 over the row's columns allowed)."""
    scale: tuple[float, float] = (0.0, 1.0)
    """[min, max] of the grader's ``score``; the score column is mapped onto 0..1, ``threshold`` compares the raw
    score (as promptfoo does). A score outside the scale is a grader error."""


class LLMRubric(GradedEvaluator[LLMRubricSettings]):
    """The grader decides whether the rubric holds for the output: ``{"reason", "pass", "score"}``."""

    type_name: ClassVar[str] = "llm_rubric"
    example: ClassVar[Example] = Example(
        {"type": "llm_rubric", "rubric": "Describes only what is visible in the image."},
        PHOTO_ROWS,
        PHOTOS,
        note=GRADED_NOTE,
    )
    default_prompt = prompts.LLM_RUBRIC
    row_setting = "rubric"

    async def grade(self, asker: Asker) -> Grade:
        s = self.settings
        reply = await self.ask_prompt(asker)
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


class Factuality(GradedEvaluator[FactualitySettings]):
    """Facts of ``output`` against ``expected_output`` for the ``input``: category A-E."""

    type_name: ClassVar[str] = "factuality"
    example: ClassVar[Example] = Example({"type": "factuality"}, PHOTO_ROWS, PHOTOS, note=GRADED_NOTE)
    required_columns = ("output", "expected_output")
    default_prompt = prompts.FACTUALITY

    async def grade(self, asker: Asker) -> Grade:
        s = self.settings
        reply = await self.ask_prompt(asker)
        category, reason = parse_factuality(reply.text)
        score = {"A": 1.0, "B": 1.0, "C": 1.0, "D": 0.0, "E": 1.0, **s.scores}[category]
        passed = score > 0 and (self.threshold is None or score >= self.threshold)
        return Grade(score, passed, {"category": category, "reason": reason})


class ClosedQASettings(GradedSettings):
    """Settings of ``closed_qa``."""

    criteria: str
    """The question the grader answers about the output (Jinja2 allowed), e.g. "Does it name every colour?"."""


class ClosedQA(GradedEvaluator[ClosedQASettings]):
    """The grader reasons, then ends with Y (passes) or N (fails)."""

    type_name: ClassVar[str] = "closed_qa"
    example: ClassVar[Example] = Example(
        {"type": "closed_qa", "criteria": "Does the description mention the animal's count correctly?"},
        PHOTO_ROWS,
        PHOTOS,
        note=GRADED_NOTE,
    )
    default_prompt = prompts.CLOSED_QA
    row_setting = "criteria"

    async def grade(self, asker: Asker) -> Grade:
        reply = await self.ask_prompt(asker)
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


STEP_REQUESTS = "step_requests"
"""The metric input naming the step-1 requests a batch's rows needed: one row per (judge, criteria text)."""
STEP_REQUESTS_SCHEMA = {"model": pl.Utf8, "criteria_sha256": pl.Utf8}
_batch_step_requests: ContextVar[set[tuple[str, str]] | None] = ContextVar("g_eval_step_requests", default=None)
"""The step-1 requests of the batch being graded (the tasks grading its rows share the batch's context)."""


class GEval(GradedEvaluator[GEvalSettings]):
    """G-Eval: the grader writes evaluation steps per criterion (once, cached), then scores each row 0..10.

    The steps are a pure function of (judge, criteria text), so the instance keeps them for the run; what the
    run reports (``step_calls``) is counted from the requests every batch saved with its part
    (:data:`STEP_REQUESTS`), so a resumed run counts the batches it reused too."""

    type_name: ClassVar[str] = "g_eval"
    example: ClassVar[Example] = Example(
        {"type": "g_eval", "criteria": {"accuracy": "Every object mentioned is in the image."}},
        PHOTO_ROWS,
        PHOTOS,
        note=GRADED_NOTE,
    )
    default_threshold = 0.7
    pass_from_score = True
    default_prompt = prompts.GEVAL_SCORE

    def __init__(self, name: str, settings: GEvalSettings, context: Any = None) -> None:
        super().__init__(name, settings, context)
        if settings.n_samples < 1:
            raise ValueError("n_samples must be at least 1")
        self._steps: dict[tuple[str, str], asyncio.Future[list[str]]] = {}
        """Step-1 replies by (judge, criteria text): asked once, whichever batch needs them first."""

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
        return [*super().templates(), prompts.load_prompt(s.steps_prompt, prompts.GEVAL_STEPS), *self.criteria.values()]

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

    async def aevaluate(self, batch: pl.DataFrame) -> EvalOutput:
        """The base's grading, plus the step-1 requests this batch's rows needed (a metric input)."""
        requested: set[tuple[str, str]] = set()
        token = _batch_step_requests.set(requested)
        try:
            out = await super().aevaluate(batch)
        finally:
            _batch_step_requests.reset(token)
        requests = pl.DataFrame(sorted(requested), schema=STEP_REQUESTS_SCHEMA, orient="row")
        out.metric_inputs[STEP_REQUESTS] = requests
        return out

    def summarize(self, results: pl.DataFrame) -> dict[str, Any]:
        """Without metric inputs no batch reached the judge: no step-1 request was made."""
        return self.summarize_from(results, {})

    def summarize_from(self, results: pl.DataFrame, inputs: Mapping[str, pl.LazyFrame]) -> dict[str, Any]:
        """``step_calls``: the distinct step-1 requests (judge x criteria text) over every batch of the run."""
        requests = inputs.get(STEP_REQUESTS)
        calls = requests.unique().select(pl.len()).collect().item() if requests is not None else 0
        return {**super().summarize(results), "step_calls": calls}

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
        requested = _batch_step_requests.get()
        if requested is not None:
            requested.add((key[0], hashlib.sha256(criteria.encode()).hexdigest()))
        if key not in self._steps:
            self._steps[key] = asyncio.ensure_future(self._ask_steps(asker, criteria))
        return list(await asyncio.shield(self._steps[key]))

    async def _ask_steps(self, asker: Asker, criteria: str) -> list[str]:
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
        return Grade(mean, self.passes(mean), details, dims)

    async def _score(self, asker: Asker, criteria: str, steps: list[str]) -> dict[str, Any]:
        s = self.settings
        steps_text = prompts.TextList(steps, "\n- ")
        extra = {"criteria": criteria, "steps": steps_text, "max_score": GEVAL_MAX, "maxScore": GEVAL_MAX}
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
