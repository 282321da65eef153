"""Which model grades: the run's judge with an evaluator's override merged on top, checked to be vision-capable."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from vision_eval.config import JudgeConfig
from vision_eval.llm.prices import model_info


def check_vision(model: str) -> None:
    """Refuse a model litellm's model map knows and marks as not vision-capable (unknown models pass)."""
    info = model_info(model)
    if info is None:  # not in the map: cannot tell, so allow (local and proxy models)
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
            merged: JudgeConfig | None = JudgeConfig.model_validate({**base, **override})
        except ValidationError as exc:
            problems = "; ".join(f"judge.{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            raise ValueError(problems) from None
    else:
        merged = run_judge
    return merged if merged is not None and merged.enabled else None
