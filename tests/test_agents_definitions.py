"""Agent definitions: shipped templates, inline agents, template merging, config errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from vision_eval.agents.definitions import AgentDefinitionError, agents_dir, load_agent, load_agents

SHIPPED = ("brand_compliance", "composition", "product_accuracy", "technical_quality")


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_templates_load(name: str) -> None:
    agent = load_agent(name)
    assert agent.name == name
    assert len(agent.system_prompt) > 300
    assert len(agent.categories) >= 3
    assert 0 < agent.scoring_weight <= 100
    assert agent.temperature == 0.3
    assert (agent.rag.top_k, agent.rag.similarity_threshold, agent.rag.embedding_model) == (5, 0.7, None)
    assert not agent.own_output_format


def test_shipped_folder_holds_exactly_the_four() -> None:
    assert sorted(p.stem for p in agents_dir().glob("*.yaml")) == sorted(SHIPPED)


def test_inline_agent_defaults() -> None:
    agent = load_agent({"name": "mine", "system_prompt": "Judge it."})
    assert agent.temperature == 0.3
    assert agent.rag.top_k == 5 and agent.rag.similarity_threshold == 0.7
    assert agent.documents == [] and agent.judge is None and agent.fallback_score is None


def test_template_merge_overrides_and_merges_rag() -> None:
    agent = load_agent({"template": "brand_compliance", "scoring_weight": 95, "rag": {"top_k": 2}})
    base = load_agent("brand_compliance")
    assert agent.name == "brand_compliance" and agent.template == "brand_compliance"
    assert agent.scoring_weight == 95
    assert agent.optimization_weight == base.optimization_weight
    assert agent.rag.top_k == 2 and agent.rag.similarity_threshold == 0.7
    assert agent.system_prompt == base.system_prompt


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"name": "x", "system_prompt": "p", "colour": "red"}, "colour"),
        ({"name": "x", "system_prompt": "p", "scoring_weight": 101}, "scoring_weight"),
        ({"name": "x", "system_prompt": "p", "optimization_weight": -1}, "optimization_weight"),
        ({"name": "x", "system_prompt": "p", "rag": {"topk": 3}}, "rag.topk"),
        ({"name": "x", "system_prompt": "p", "judge": {"modle": "a"}}, "modle"),
        ({"template": "composition", "sharpness": 1}, "sharpness"),
        ({"template": "nope"}, "unknown agent 'nope'"),
        ({"system_prompt": "p"}, "name"),
    ],
)
def test_config_errors_name_the_key(raw: dict, message: str) -> None:
    with pytest.raises(AgentDefinitionError, match=message):
        load_agent(raw)


def test_panel_rules() -> None:
    with pytest.raises(AgentDefinitionError, match="unique"):
        load_agents(["composition", {"template": "composition"}])
    with pytest.raises(AgentDefinitionError, match="scoring_weight above 0"):
        load_agents([{"name": "a", "system_prompt": "p", "scoring_weight": 0}])
    panel = load_agents(["composition", {"template": "composition", "name": "composition_strict"}])
    assert [a.name for a in panel] == ["composition", "composition_strict"]


def test_agent_files_templates_and_documents(tmp_path: Path) -> None:
    (tmp_path / "guide.md").write_text("# Guide\nUse gold.", encoding="utf-8")
    (tmp_path / "base.yaml").write_text("name: base\nsystem_prompt: Base.\ndocuments: [guide.md]\n", encoding="utf-8")
    (tmp_path / "child.yaml").write_text("template: base\nname: child\nscoring_weight: 10\n", encoding="utf-8")
    (tmp_path / "loop.yaml").write_text("template: loop\nname: loop\n", encoding="utf-8")
    child = load_agent("child", search=tmp_path)
    assert (child.name, child.system_prompt, child.scoring_weight) == ("child", "Base.", 10)
    assert child.document_paths() == [(tmp_path / "guide.md").resolve()]
    assert load_agent(str(tmp_path / "base.yaml")).name == "base"
    with pytest.raises(AgentDefinitionError, match="cycle"):
        load_agent("loop", search=tmp_path)
    missing = load_agent({"name": "m", "system_prompt": "p", "documents": ["absent.pdf"]})
    with pytest.raises(AgentDefinitionError, match=r"document not found: absent\.pdf"):
        missing.document_paths(tmp_path)
    inline = load_agent({"name": "i", "system_prompt": "p", "documents": ["guide.md"]})
    assert inline.document_paths(dataset_root=tmp_path) == [(tmp_path / "guide.md").resolve()]


def test_categories_from_text() -> None:
    agent = load_agent({"name": "x", "system_prompt": "p", "evaluation_categories": "- logo\n- colour, type"})
    assert agent.categories == ["logo", "colour", "type"]
