"""``llm_judge``: a vision LLM grades each row against a judge file's weighted dimensions.

The judge sees the row's images as pixels (labels in the text, image parts in the same message);
the row score is the weighted mean of the dimension scores, computed here. Without a judge model
the rows are ``skipped`` and carry the request that would be sent and its estimated tokens.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import polars as pl
from pydantic import ValidationError

from vision_eval.config import JudgeConfig
from vision_eval.evaluator import EvalOutput, Evaluator, EvaluatorSettings
from vision_eval.images.media import ImageError
from vision_eval.llm.judges import JudgeSpec, ReplyError, load_judge, parse_verdict
from vision_eval.llm.requests import PreparedCall, build_call, row_images, row_variables
from vision_eval.llm.scheduler import SERVICE, get_scheduler
from vision_eval.llm.templates import IMAGE_VARIABLES, TemplateError, compile_template, template_variables
from vision_eval.llm.transport import CallError, import_litellm
from vision_eval.registry import register
from vision_eval.results import DIMENSION_ROW_SCHEMA, ERROR, PROCESSED, SKIPPED, empty, rows_frame

TEXT_VARIABLES = ("input", "output", "expected_output")
NO_JUDGE_REASON = "no judge configured (judge.model is null): this is the request a judge run would send"


class LLMJudgeSettings(EvaluatorSettings):
    """Settings of ``llm_judge``."""

    prompt: str
    """Judge file: a stem in ``evaluators/llm-judges/`` (``image-description-judge`` or ``image-description``)
    or a path to a Markdown file with YAML front matter."""
    weights: dict[str, float] | None = None
    """Override of some or all dimension weights (unknown dimensions and a zero total are config errors)."""
    images: list[str] = ["images"]
    """Columns whose images are attached, in order (labelled Image 1, Image 2, ...)."""
    judge: dict[str, Any] | None = None
    """Judge settings overriding the run's ``judge`` for this evaluator (e.g. ``{model: ..., temperature: 0.2}``)."""
    system: str | None = None
    """Optional system message (default: the judge file's ``system``, if any)."""
    chat_input_images: bool = True
    """When ``input`` holds chat messages, attach their images too (after the columns' images)."""


def check_vision(model: str) -> None:
    """Refuse a model litellm's model map knows and marks as not vision-capable (unknown models pass)."""
    litellm = import_litellm()
    try:
        info = litellm.get_model_info(model)
    except Exception:  # not in the map: cannot tell, so allow (local and proxy models)
        return
    if info.get("mode") in (None, "chat", "completion", "responses") and not info.get("supports_vision"):
        raise ValueError(
            f"judge model {model!r} is not vision-capable according to litellm's model map; "
            "a judge must see the images (use e.g. openai/gpt-4o-mini, anthropic/claude-3-5-sonnet, gemini/...)"
        )


def resolve_judge(run_judge: JudgeConfig | None, override: dict[str, Any] | None) -> JudgeConfig | None:
    """The evaluator's judge: the run's, with ``override`` merged on top; ``None`` when no model is set."""
    if override:
        base = run_judge.model_dump() if run_judge is not None else {}
        try:
            merged = JudgeConfig.model_validate({**base, **override})
        except ValidationError as exc:
            problems = "; ".join(f"judge.{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            raise ValueError(problems) from None
    else:
        merged = run_judge
    return merged if merged is not None and merged.enabled else None


@register
class LLMJudge(Evaluator):
    """A vision LLM judge over the dimensions of a judge file."""

    type_name: ClassVar[str] = "llm_judge"
    settings_model = LLMJudgeSettings
    required_columns = ("output",)
    default_threshold = 0.7
    is_async = True

    def __init__(self, name: str, settings: LLMJudgeSettings, context: Any = None) -> None:
        super().__init__(name, settings, context)
        self.spec: JudgeSpec = load_judge(settings.prompt).with_weights(settings.weights)
        body = self.spec.body
        if "response_format" not in template_variables(body):
            body = body.rstrip() + "\n\n{{ response_format }}\n"
        try:
            compile_template(body)
        except TemplateError as exc:
            raise ValueError(f"prompt {self.spec.path}: template error: {exc}") from None
        self.template = body
        self.judge = resolve_judge(self.context.judge, settings.judge)
        if self.judge is not None:
            check_vision(str(self.judge.model))
        used = template_variables(body) - set(IMAGE_VARIABLES) - set(TEXT_VARIABLES) - {"response_format"}
        self._columns = ("output", *settings.images, *sorted(used))

    @property
    def threshold(self) -> float | None:
        s: LLMJudgeSettings = self.settings  # type: ignore[assignment]
        return s.threshold if s.threshold is not None else self.spec.threshold

    def columns_needed(self) -> tuple[str, ...]:
        return self._columns

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(),
            "judge": self.spec.name,
            "prompt": self.spec.path,
            "weights": self.spec.dimensions,
            "model": self.judge.model if self.judge else None,
        }

    def _prepare(self, row: dict[str, Any], policy: Any) -> PreparedCall:
        s: LLMJudgeSettings = self.settings  # type: ignore[assignment]
        variables = row_variables(row)
        images = row_images(
            row, s.images, self.context.dataset_root, policy, chat_input=s.chat_input_images, variables=variables
        )
        for name in TEXT_VARIABLES:
            if variables[name] is None:
                variables[name] = ""
        variables["response_format"] = self.spec.response_format()
        model = self.judge.model if self.judge else None
        return build_call(self.template, variables, images, model, policy.detail, s.system or self.spec.system)

    async def aevaluate(self, batch: pl.DataFrame) -> EvalOutput:
        rows = batch.to_dicts()
        if self.judge is None:
            policy = (self.context.judge or JudgeConfig()).image
            out = await asyncio.gather(*(asyncio.to_thread(self._plan_row, row, policy) for row in rows))
            return EvalOutput(rows_frame(out))
        scheduler = get_scheduler(self.context)
        gate = asyncio.Semaphore(scheduler.concurrency * 2)  # bounds prepared images held in memory
        async with scheduler.session():
            graded = await asyncio.gather(*(self._grade_row(row, gate) for row in rows))
        results = rows_frame([g[0] for g in graded])
        dims = [d for g in graded for d in g[1]]
        dimensions = pl.DataFrame(dims, schema=DIMENSION_ROW_SCHEMA) if dims else empty(DIMENSION_ROW_SCHEMA)
        return EvalOutput(results, dimensions=dimensions)

    def _plan_row(self, row: dict[str, Any], policy: Any) -> dict[str, Any]:
        try:
            call = self._prepare(row, policy)
        except (ImageError, TemplateError) as exc:
            return {"sample_id": row["id"], "status": ERROR, "error": str(exc)}
        details = {"reason": NO_JUDGE_REASON, "judge": self.spec.name, "request": call.plan(None)}
        return {"sample_id": row["id"], "status": SKIPPED, "details": details}

    async def _grade_row(self, row: dict[str, Any], gate: asyncio.Semaphore) -> tuple[dict[str, Any], list]:
        judge = self.judge
        assert judge is not None
        sample = row["id"]
        async with gate:
            try:
                has_images = any(row.get(c) for c in self.settings.images)  # type: ignore[attr-defined]
                call = (
                    await asyncio.to_thread(self._prepare, row, judge.image)
                    if has_images
                    else self._prepare(row, judge.image)
                )
            except (ImageError, TemplateError) as exc:
                return {"sample_id": sample, "status": ERROR, "error": str(exc)}, []
            images = [i.record() for i in call.images]
            try:
                result = await get_scheduler(self.context).complete(
                    judge, call.messages, estimated_tokens=call.estimated_tokens
                )
            except CallError as exc:
                failures = getattr(exc, "failures", [str(exc)])
                details = {"judge": self.spec.name, "model": judge.model, "attempts": getattr(exc, "attempts", 1)}
                details["failures"] = failures
                return {
                    "sample_id": sample,
                    "status": ERROR,
                    "error": f"judge call failed after {details['attempts']} attempt(s): {exc}",
                    "details": details,
                }, []
        usage = {
            "input_tokens": result.input_tokens,
            "output_tokens": result.output_tokens,
            "cost_usd": result.cost_usd,
            "latency_s": result.latency_s,
            "cached": result.cached,
        }
        base = {"judge": self.spec.name, "model": judge.model, "images": images, "attempts": result.attempts}
        if result.failures:
            base["retried_failures"] = result.failures
        try:
            verdict = parse_verdict(result.text, self.spec)
        except ReplyError as exc:
            details = {**base, "reply": result.text}
            return {
                "sample_id": sample,
                "status": ERROR,
                "error": f"unusable judge reply: {exc}",
                "details": details,
                **usage,
            }, []
        details = {
            **base,
            "scores": verdict.scores,
            "weights": self.spec.dimensions,
            "reasoning": verdict.reasoning,
            "details": verdict.details,
            "judge_total": verdict.judge_total,
        }
        dims = [
            {"sample_id": sample, "dimension": k, "score": v, "weight": self.spec.dimensions[k]}
            for k, v in verdict.scores.items()
        ]
        row_out = {"sample_id": sample, "status": PROCESSED, "score": verdict.score, "details": details, **usage}
        return row_out, dims

    def summarize(self, results: pl.DataFrame) -> dict[str, Any]:
        scheduler = self.context.services.get(SERVICE)
        metrics: dict[str, Any] = {"cache_hits": int(results["cached"].fill_null(False).sum())}
        if scheduler is not None:
            metrics["scheduler"] = scheduler.stats.as_dict()
        skipped = results.filter(pl.col("status") == SKIPPED)
        if self.judge is None and skipped.height:
            estimated = skipped["details"].str.json_path_match("$.request.estimated_input_tokens").cast(pl.Int64)
            metrics["planned_calls"] = int(estimated.is_not_null().sum())
            metrics["estimated_input_tokens"] = int(estimated.sum() or 0)
        return metrics
