"""The judge-agents pipeline without the model call: requests per row, canned replies, assembled output."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import polars as pl
import pytest

from vision_eval.agents.definitions import load_agents
from vision_eval.agents.panel_run import AgentPanel, JudgeAgentsSettings, assemble


def reply(
    score: int,
    severity: str = "major",
    problem: str = "p",
    instructions: list[str] | None = None,
    categories: dict | None = None,
) -> str:
    body = {
        "score": score,
        "TOP_ISSUE": {"problem": problem, "severity": severity, "fix": f"fix {problem}"},
        "promptInstructions": instructions or [],
        "categoryScores": categories or {},
    }
    return "```json\n" + json.dumps(body) + "\n```"


@pytest.fixture
def panel(tmp_path: Path) -> AgentPanel:
    (tmp_path / "guide.md").write_text("## Colour\nACME red is #D62828.\n\n## Lighting\nUse soft studio light.\n")
    agents = load_agents(
        [
            {
                "name": "brand",
                "system_prompt": "Brand judge.",
                "scoring_weight": 80,
                "optimization_weight": 90,
                "evaluation_categories": ["logo", "colour"],
                "documents": ["guide.md"],
            },
            {
                "name": "comp",
                "system_prompt": "Composition judge.\nOUTPUT FORMAT: JSON with score.",
                "scoring_weight": 20,
                "optimization_weight": 30,
            },
        ]
    )
    return asyncio.run(AgentPanel(agents, tmp_path, cache_dir=tmp_path / "cache").build())


def batch() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "id": ["b1-it1-a", "b1-it1-b", "b1-it2-a", "b1-it3-a", "b1-it4-a"],
            "brief_id": ["b1"] * 5,
            "brief": ["Red ACME can, #D62828"] * 5,
            "prompt": ["a red can"] * 5,
            "iteration": [1, 1, 2, 3, 4],
            "max_iterations": [10] * 5,
            "previous_scores": [[], [], [62], [62, 70], [62, 70, 71]],
        }
    )


def test_requests_carry_prompt_chunks_and_settings(panel: AgentPanel) -> None:
    row = batch().row(3, named=True)
    brand, comp = asyncio.run(panel.requests(row))
    assert brand.system == "Brand judge." and brand.temperature == 0.3
    assert "This is iteration 3 of 10. Previous scores: [62, 70]." in brand.text
    assert [c.chunk.section for c in brand.chunks] == ["Colour"]  # the lighting chunk shares no term
    assert "## Reference Guidelines" in brand.text and "#D62828" in brand.text.split("## Reference Guidelines")[1]
    assert "## Response Format" in brand.text and "## Response Format" not in comp.text
    assert comp.chunks == []


def test_assembled_results_tables_and_flags(panel: AgentPanel) -> None:
    replies = {
        ("b1-it1-a", "brand"): reply(60, "major", "label", ["Label reads ACME"], {"logo": 50, "colour": 70}),
        ("b1-it1-a", "comp"): reply(80, "critical", "crop", ["Centre the can"]),
        ("b1-it1-b", "brand"): reply(70),
        ("b1-it1-b", "comp"): "not json at all",
        ("b1-it2-a", "brand"): reply(70),
        ("b1-it2-a", "comp"): reply(70),
        ("b1-it3-a", "brand"): reply(71),
        ("b1-it3-a", "comp"): reply(71),
        ("b1-it4-a", "brand"): reply(71),
        ("b1-it4-a", "comp"): reply(72),
    }
    frame = batch()
    outcomes = []
    for row in frame.iter_rows(named=True):
        for request in asyncio.run(panel.requests(row)):
            call = {"input_tokens": 100, "output_tokens": 20, "cost_usd": None, "latency_s": 0.5, "cached": False}
            outcomes.append(request.outcome(replies[(row["id"], request.agent.name)], call))
    out = assemble(frame, panel.agents, outcomes, JudgeAgentsSettings(agents=["x"]))
    res = {r["sample_id"]: r for r in out.results.to_dicts()}
    # (60*80 + 80*20) / 100 = 64 -> 0.64
    assert res["b1-it1-a"]["score"] == pytest.approx(0.64)
    assert res["b1-it1-a"]["input_tokens"] == 200 and res["b1-it1-a"]["cost_usd"] is None
    # comp's reply is unparseable and no fallback: the row is an error, raw reply kept
    assert res["b1-it1-b"]["status"] == "error" and "comp: unparseable reply" in res["b1-it1-b"]["error"]
    details = json.loads(res["b1-it1-b"]["details"])
    assert details["agents"]["comp"]["raw"] == "not json at all"
    brand_details = json.loads(res["b1-it1-a"]["details"])["agents"]["brand"]
    assert brand_details["chunks"][0]["section"] == "Colour" and brand_details["top_issue"]["problem"] == "label"
    dims = {(r["sample_id"], r["dimension"]): r for r in out.dimensions.to_dicts()}
    assert dims[("b1-it1-a", "brand")]["weight"] == 80 and dims[("b1-it1-a", "brand/logo")]["score"] == 0.5
    ranked = out.tables["rankings"]
    assert ranked.filter(pl.col("winner"))["sample_id"].to_list() == ["b1-it1-a", "b1-it2-a", "b1-it3-a", "b1-it4-a"]
    # winners: .64, .70, .71, (71*80+72*20)/100=.712 -> window [.70,.71,.712] gains .012 < .02: detected at 4
    plateau = out.tables["plateaus"].to_dicts()[0]
    assert (plateau["plateaued"], plateau["plateau_iteration"], plateau["detected_at"]) == (True, 2, 4)
    first = out.tables["feedback"].filter(pl.col("iteration") == 1).to_dicts()[0]
    assert [i["agent"] for i in first["top_issues"]] == ["comp", "brand"]  # critical before major
    assert first["prompt_instructions"] == ["Centre the can", "Label reads ACME"]


def test_fallback_and_broken_documents(tmp_path: Path) -> None:
    agents = load_agents(
        [
            {"name": "a", "system_prompt": "p", "fallback_score": 50},
            {"name": "b", "system_prompt": "p", "documents": ["missing.pdf"]},
        ]
    )
    panel = asyncio.run(AgentPanel(agents, tmp_path).build())
    frame = batch().head(1)
    outcomes = []
    for item in asyncio.run(panel.requests(frame.row(0, named=True))):
        outcomes.append(item.outcome("garbage") if hasattr(item, "outcome") else item)
    a, b = outcomes
    assert a.verdict is not None and a.verdict.score == 0.5 and a.verdict.parse_failed and a.raw == "garbage"
    assert b.error is not None and "document not found: missing.pdf" in b.error
    relaxed = assemble(frame, agents, outcomes, JudgeAgentsSettings(agents=["x"], require_all_agents=False))
    row = relaxed.results.to_dicts()[0]
    assert row["status"] == "processed" and row["score"] == 0.5
    assert json.loads(row["details"])["parse_failed"] is True
    strict = assemble(frame, agents, outcomes, JudgeAgentsSettings(agents=["x"]))
    assert strict.results["status"][0] == "error" and "missing.pdf" in strict.results["error"][0]
