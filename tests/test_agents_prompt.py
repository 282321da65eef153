"""Prompt building: section order, iteration context, guidelines, the OUTPUT FORMAT rule."""

from __future__ import annotations

import json
import re

from vision_eval.agents.definitions import load_agent
from vision_eval.agents.prompt import NO_INFLATION, build_prompt, iteration_context

AGENT = load_agent(
    {"name": "brand", "system_prompt": "You check brands.", "evaluation_categories": ["logoAccuracy", "colorPalette"]}
)


def test_sections_in_order() -> None:
    text = build_prompt(
        AGENT,
        "Whisky ad, gold label RESERVE 18",
        "a bottle on marble",
        iteration=3,
        max_iterations=10,
        previous_scores=[62, 68, 70],
        guidelines=[{"text": "Gold is #C9A227.", "document": "brand.md"}, "Logo top-left."],
    )
    headers = re.findall(r"^## (.+)$", text, re.M)
    assert headers == [
        "Task",
        "Iteration Context",
        "Brief",
        "Generation Prompt",
        "Reference Guidelines",
        "Evaluation Categories",
        "Response Format",
    ]
    assert "This is iteration 3 of 10. Previous scores: [62, 68, 70].\n" + NO_INFLATION in text
    assert "[1] (from brand.md)\nGold is #C9A227." in text and "[2]\nLogo top-left." in text
    assert "- logoAccuracy\n- colorPalette" in text
    fenced = re.search(r"```json\n(.*?)```", text, re.S)
    assert fenced is not None
    example = json.loads(fenced.group(1))
    assert set(example["categoryScores"]) == {"logoAccuracy", "colorPalette"}
    assert {"score", "TOP_ISSUE", "whatWorked", "promptInstructions", "checklist", "feedback"} <= set(example)
    assert "Do not inflate scores" in NO_INFLATION


def test_optional_sections_left_out() -> None:
    bare = load_agent({"name": "b", "system_prompt": "p"})
    text = build_prompt(bare, "A brief")
    assert re.findall(r"^## (.+)$", text, re.M) == ["Task", "Brief", "Response Format"]
    assert "Iteration" not in text and "Reference Guidelines" not in text


def test_output_format_rule() -> None:
    own = load_agent(
        {"name": "own", "system_prompt": "Judge it.\nOUTPUT FORMAT: reply 'SCORE: n'", "evaluation_categories": "x"}
    )
    text = build_prompt(own, "A brief", "a prompt")
    assert "Response Format" not in text and "```json" not in text
    assert text.rstrip().endswith("x")
    lower = load_agent({"name": "l", "system_prompt": "output format is yours"})
    assert "## Response Format" in build_prompt(lower, "b")  # the rule is case-sensitive, as in the seed


def test_iteration_context_variants() -> None:
    assert iteration_context(None, 10, [1]) is None
    assert iteration_context(1, 5, []).splitlines()[1] == "This is iteration 1 of 5."
    assert (
        iteration_context(4, None, [61.5, 70.0]).splitlines()[1] == "This is iteration 4. Previous scores: [61.5, 70]."
    )
