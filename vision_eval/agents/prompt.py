"""The evaluation prompt of one agent for one image, built as the seed specifies (a pure function).

Sections, in order: task header; iteration context (when known); the brief; the generation prompt;
the retrieved guideline chunks as "Reference Guidelines"; the agent's evaluation categories; the
default response format, unless the system prompt contains ``OUTPUT FORMAT``. The image itself goes
with this text as pixels (an image part after it), never as text.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from vision_eval.agents.definitions import AgentDefinition

TASK_HEADER = (
    "## Task\n"
    "Evaluate the attached AI-generated image against the creative brief below, "
    "from your perspective as described in your instructions."
)

NO_INFLATION = (
    "Score the image on its absolute merits. If this iteration genuinely improved on previous issues, "
    "the score SHOULD increase. If the same problems persist, the score should NOT increase. "
    "Do not inflate scores just because this is a later iteration."
)


def _number(value: Any) -> str:
    number = float(value)
    if math.isfinite(number) and number == int(number):
        return str(int(number))
    return f"{number:g}"


def iteration_context(
    iteration: int | None, max_iterations: int | None = None, previous_scores: Sequence[float] | None = None
) -> str | None:
    """``This is iteration 3 of 10. Previous scores: [62, 68, 70].`` plus the no-inflation instruction;
    ``None`` when the iteration is unknown."""
    if iteration is None:
        return None
    line = f"This is iteration {int(iteration)}"
    line += f" of {int(max_iterations)}." if max_iterations is not None else "."
    scores = [s for s in (previous_scores or []) if s is not None]
    if scores:
        line += " Previous scores: [" + ", ".join(_number(s) for s in scores) + "]."
    return f"## Iteration Context\n{line}\n{NO_INFLATION}"


def _guideline_text(chunk: Any) -> tuple[str, str | None]:
    if isinstance(chunk, str):
        return chunk, None
    if isinstance(chunk, dict):
        return str(chunk.get("text", "")), chunk.get("document")
    return str(chunk.text), getattr(chunk, "document", None)


def guidelines_section(chunks: Sequence[Any]) -> str | None:
    """The retrieved chunks, numbered and attributed to their document."""
    if not chunks:
        return None
    lines = ["## Reference Guidelines", "Apply these guidelines when they are relevant to the image:"]
    for index, chunk in enumerate(chunks, start=1):
        text, document = _guideline_text(chunk)
        source = f" (from {document})" if document else ""
        lines.append(f"[{index}]{source}\n{text.strip()}")
    return "\n\n".join([lines[0] + "\n" + lines[1], *lines[2:]])


def categories_section(agent: AgentDefinition) -> str | None:
    """The agent's evaluation categories (its own text, or the list as bullets)."""
    value = agent.evaluation_categories
    if not value:
        return None
    body = value.strip() if isinstance(value, str) else "\n".join(f"- {c}" for c in agent.categories)
    return f"## Evaluation Categories\nScore each of these categories from 0 to 100:\n{body}"


def response_format(agent: AgentDefinition) -> str:
    """The default reply format (one JSON object), with the agent's categories as ``categoryScores`` keys."""
    keys = agent.categories or ["overall"]
    example = {
        "score": 75,
        "TOP_ISSUE": {
            "problem": "the single most important problem",
            "severity": "critical | major | moderate | minor",
            "fix": "an instruction the image generator can follow",
        },
        "categoryScores": {key: 0 for key in keys},
        "whatWorked": ["aspects to keep in the next iteration"],
        "promptInstructions": ["exact text to put verbatim in the next generation prompt"],
        "checklist": [{"item": "a requirement of the brief", "pass": True, "notes": "what you saw"}],
        "feedback": "detailed narrative feedback",
    }
    return (
        "## Response Format\n"
        "Reply with one JSON object and nothing else, in this shape (scores are integers from 0 to 100):\n"
        f"```json\n{json.dumps(example, indent=2)}\n```"
    )


def build_prompt(
    agent: AgentDefinition,
    brief: str,
    prompt: str | None = None,
    *,
    iteration: int | None = None,
    max_iterations: int | None = None,
    previous_scores: Sequence[float] | None = None,
    guidelines: Sequence[Any] = (),
) -> str:
    """The user-message text for ``agent`` judging one image (the system prompt is sent separately)."""
    sections = [
        TASK_HEADER,
        iteration_context(iteration, max_iterations, previous_scores),
        f"## Brief\n{brief.strip()}",
        f"## Generation Prompt\n{prompt.strip()}" if prompt else None,
        guidelines_section(guidelines),
        categories_section(agent),
        None if agent.own_output_format else response_format(agent),
    ]
    return "\n\n".join(s for s in sections if s)
