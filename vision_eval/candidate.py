"""Candidate generation: the model under test produces ``output`` for every row before evaluation.

It goes through the run's scheduler and call cache like a judge (same template variables and image
handling), so a re-run or a resume repeats no finished call. A failed generation is recorded in
``candidate_error``; the engine then reports that row's evaluators as ``skipped`` with the reason.
"""

from __future__ import annotations

import asyncio
from typing import Any

import polars as pl

from vision_eval.config import CandidateConfig
from vision_eval.evaluator import EvalContext
from vision_eval.images.media import ImageError
from vision_eval.images.roots import roots_of
from vision_eval.llm.requests import build_call, row_images, row_variables
from vision_eval.llm.scheduler import get_scheduler
from vision_eval.llm.templates import TemplateError, compile_template
from vision_eval.llm.transport import CallError

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


def check_candidate(candidate: CandidateConfig) -> None:
    """Raise ``ValueError`` for a prompt that does not compile (before any call)."""
    try:
        compile_template(candidate.prompt)
    except TemplateError as exc:
        raise ValueError(f"prompt: template error: {exc}") from None


async def _generate(row: dict[str, Any], candidate: CandidateConfig, context: EvalContext) -> dict[str, Any]:
    variables = row_variables(row)
    try:
        present = [c for c in candidate.images if c in row]
        images = await asyncio.to_thread(
            row_images, row, present, roots_of(context), candidate.image, variables=variables
        )
        for name in ("input", "expected_output"):
            variables[name] = variables[name] or ""
        call = build_call(
            candidate.prompt, variables, images, candidate.model, candidate.image.detail, candidate.system
        )
    except (ImageError, TemplateError) as exc:
        return {"candidate_error": f"cannot build the candidate request: {exc}"}
    try:
        result = await get_scheduler(context).complete(candidate, call.messages, estimated_tokens=call.estimated_tokens)
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


async def _generate_all(frame: pl.DataFrame, candidate: CandidateConfig, context: EvalContext) -> list[dict]:
    scheduler = get_scheduler(context)
    gate = asyncio.Semaphore(scheduler.concurrency * 2)  # bounds prepared images held in memory

    async def one(row: dict[str, Any]) -> dict[str, Any]:
        if row.get("_row_error"):
            return {"candidate_error": row["_row_error"]}
        async with gate:
            return await _generate(row, candidate, context)

    async with scheduler.session():
        return list(await asyncio.gather(*(one(row) for row in frame.to_dicts())))


def generate_outputs(frame: pl.DataFrame, candidate: CandidateConfig, context: EvalContext) -> pl.DataFrame:
    """``frame`` with ``output`` produced by the candidate and the ``candidate_*`` columns added."""
    from vision_eval.engine import run_coroutine

    produced = run_coroutine(lambda: _generate_all(frame, candidate, context))
    label = candidate.name or str(candidate.model)
    columns = pl.DataFrame(
        [{**row, "candidate_model": label} for row in produced], schema=CANDIDATE_COLUMNS, strict=False
    )
    if "output" in frame.columns:
        frame = frame.drop("output")
    return frame.with_columns(columns)
