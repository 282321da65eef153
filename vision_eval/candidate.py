"""Candidate generation: the model under test produces ``output`` for every row before evaluation.

It goes through the run's scheduler and call cache like a judge (same template variables and image
handling), so a re-run or a resume repeats no finished call. A failed generation is recorded in
``candidate_error``; the engine then reports that row's evaluators as ``skipped`` with the reason.
"""

from __future__ import annotations

import asyncio
from typing import Any

import polars as pl

from vision_eval.config import DEFAULT_CANDIDATE_PROMPT, CandidateConfig
from vision_eval.evaluator import EvalContext
from vision_eval.images.media import ImageError
from vision_eval.images.prepared import prepared_images_of
from vision_eval.images.provider_rules import rule_for
from vision_eval.images.roots import roots_of
from vision_eval.images.sent import sent_images_of
from vision_eval.llm.budget import NotAttempted
from vision_eval.llm.requests import PreparedCall, build_call, row_images, row_variables
from vision_eval.llm.scheduler import get_scheduler
from vision_eval.llm.templates import TemplateError, compile_template
from vision_eval.llm.transport import CallError

CANDIDATE = "candidate"
"""The candidate's name in the scheduler's per-caller counters and in gates."""
CANDIDATE_COLUMNS: dict[str, pl.DataType] = {
    "output": pl.Utf8(),
    "candidate_model": pl.Utf8(),
    "candidate_error": pl.Utf8(),
    "candidate_input_tokens": pl.Int64(),
    "candidate_output_tokens": pl.Int64(),
    "candidate_cost_usd": pl.Float64(),
    "candidate_latency_s": pl.Float64(),
    "candidate_cached": pl.Boolean(),
}


def request_prompt(candidate: CandidateConfig) -> str:
    """The template the candidate renders (its own prompt; the app config fills in the dataset's)."""
    return candidate.prompt if candidate.prompt is not None else DEFAULT_CANDIDATE_PROMPT


def check_candidate(candidate: CandidateConfig) -> None:
    """Raise ``ValueError`` for a prompt that does not compile (before any call)."""
    try:
        compile_template(request_prompt(candidate))
    except TemplateError as exc:
        raise ValueError(f"prompt: template error: {exc}") from None


def _request(row: dict[str, Any], candidate: CandidateConfig, context: EvalContext) -> PreparedCall:
    """The candidate's request for one row (``ImageError`` / ``TemplateError`` when it cannot be built). Its images
    go as the dataset holds them, at the largest size the model's provider uses (:mod:`~vision_eval.images.
    provider_rules`), unless ``candidate.image`` caps them."""
    variables = row_variables(row)
    present = [c for c in candidate.images if c in row]
    store, rule = prepared_images_of(context), rule_for(candidate)
    images = row_images(row, present, roots_of(context), candidate.image, variables=variables, store=store, rule=rule)
    sent = sent_images_of(context)
    if sent is not None:
        sent.add(CANDIDATE, candidate.name or str(candidate.model), images)
    for name in ("input", "expected_output"):
        variables[name] = variables[name] or ""
    return build_call(
        request_prompt(candidate), variables, images, candidate.model, candidate.image.detail, candidate.system, rule
    )


async def _generate(row: dict[str, Any], candidate: CandidateConfig, context: EvalContext) -> dict[str, Any]:
    try:
        call = await asyncio.to_thread(_request, row, candidate, context)
    except (ImageError, TemplateError) as exc:
        return {"candidate_error": f"cannot build the candidate request: {exc}"}
    try:
        result = await get_scheduler(context).complete(
            candidate, call.messages, estimated_tokens=call.estimated_tokens, owner=CANDIDATE
        )
    except NotAttempted as exc:
        return {"candidate_error": str(exc)}
    except CallError as exc:
        return {"candidate_error": f"candidate call failed after {getattr(exc, 'attempts', 1)} attempt(s): {exc}"}
    return {
        "output": result.text,
        "candidate_input_tokens": result.input_tokens,
        "candidate_output_tokens": result.output_tokens,
        "candidate_cost_usd": result.cost_usd,
        "candidate_latency_s": result.latency_s,
        "candidate_cached": result.cached,
    }


class Generator:
    """Writes ``output`` for one batch at a time (``await generator(frame)``), with one bound on the rows in flight
    across every batch (it bounds the prepared images held in memory)."""

    def __init__(self, candidate: CandidateConfig, context: EvalContext, progress: Any = None) -> None:
        self.candidate, self.context, self.progress = candidate, context, progress
        self._gate: asyncio.Semaphore | None = None

    async def _one(self, row: dict[str, Any]) -> dict[str, Any]:
        if row.get("_row_error"):
            produced = {"candidate_error": row["_row_error"]}
        else:
            assert self._gate is not None
            async with self._gate:
                produced = await _generate(row, self.candidate, self.context)
        if self.progress is not None:
            tokens = (produced.get("candidate_input_tokens") or 0) + (produced.get("candidate_output_tokens") or 0)
            failed = int("candidate_error" in produced)
            self.progress.advance(CANDIDATE, 1, failed, tokens, produced.get("candidate_cost_usd"))
        return produced

    async def __call__(self, frame: pl.DataFrame) -> pl.DataFrame:
        """``frame`` with ``output`` produced by the candidate and the ``candidate_*`` columns added."""
        scheduler = get_scheduler(self.context)
        if self._gate is None:
            self._gate = asyncio.Semaphore(scheduler.rows_in_flight([self.candidate]))
        async with scheduler.session():
            produced = await asyncio.gather(*(self._one(row) for row in frame.to_dicts()))
        label = self.candidate.name or str(self.candidate.model)
        columns = pl.DataFrame(
            [{**row, "candidate_model": label} for row in produced], schema=CANDIDATE_COLUMNS, strict=False
        )
        if "output" in frame.columns:
            frame = frame.drop("output")
        return frame.with_columns(columns)


def plan_outputs(frame: pl.DataFrame, candidate: CandidateConfig, context: EvalContext) -> dict[str, Any]:
    """What generating ``output`` would send: calls, estimated prompt tokens (the images' share, and what they would
    cost sized otherwise), rows whose request fails."""
    calls = tokens = image_tokens = other = 0
    sized_otherwise = ""
    errors: list[str] = []
    for row in frame.to_dicts():
        if row.get("_row_error"):
            continue
        try:
            call = _request(row, candidate, context)
        except (ImageError, TemplateError) as exc:
            errors.append(f"{row['id']}: {exc}")
            continue
        calls += 1
        tokens += call.estimated_tokens
        image_tokens, other = image_tokens + call.image_tokens, other + call.other_image_tokens
        sized_otherwise = call.other_sizing or sized_otherwise
    return {"model": str(candidate.model), "calls": calls, "estimated_input_tokens": tokens, "errors": errors,
            "image_tokens": image_tokens, "image_tokens_sized_otherwise": other,
            "sized_otherwise": sized_otherwise}  # fmt: skip


def generate_outputs(
    frame: pl.DataFrame, candidate: CandidateConfig, context: EvalContext, progress: Any = None
) -> pl.DataFrame:
    """``frame`` (rows in memory) with ``output`` produced by the candidate and the ``candidate_*`` columns added;
    a run generates a batch at a time with :class:`Generator`."""
    from vision_eval.asyncio_runner import run_coroutine

    if progress is not None:
        progress.add(CANDIDATE, frame.height)
        progress.begin(CANDIDATE)
    generator = Generator(candidate, context, progress)
    out: pl.DataFrame = run_coroutine(lambda: generator(frame))
    if progress is not None:
        progress.end(CANDIDATE)
    return out
