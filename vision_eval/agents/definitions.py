"""Judge agent definitions: pydantic models, loading from ``conf/agents/*.yaml`` or inline dicts, templates.

An agent is a named judge with its own system prompt, weights, guideline documents and retrieval
settings. ``template: <name>`` starts from a shipped agent (``conf/agents/<name>.yaml``) and the
agent's own keys override it (``rag`` and ``judge`` are merged key by key).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

AGENTS_DIR = "agents"
"""Folder of shipped agent files inside the config tree."""


class AgentDefinitionError(ValueError):
    """An agent definition that cannot be used; the message names the agent and the key."""


class RagSettings(BaseModel):
    """How an agent retrieves chunks of its guideline documents."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    top_k: int = Field(5, ge=1)
    """Chunks retrieved at most per call."""
    similarity_threshold: float = Field(0.7, ge=-1.0, le=1.0)
    """Minimum normalized similarity of a chunk (BM25 relative to the best chunk, or cosine)."""
    embedding_model: str | None = None
    """litellm embedding model; unset uses offline lexical retrieval (BM25)."""
    chunk_chars: int = Field(800, ge=100)
    """Target chunk size in characters when documents are split."""


class AgentDefinition(BaseModel):
    """One judge agent of a panel."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    name: str = Field(min_length=1)
    """Identifier of the agent; its score is the dimension of that name."""
    system_prompt: str = Field(min_length=1)
    """The agent's instructions. Containing ``OUTPUT FORMAT`` means it defines its own reply format."""
    evaluation_categories: str | list[str] | None = None
    """Categories the agent scores (text or a list); listed in the prompt and expected in ``categoryScores``."""
    scoring_weight: float = Field(50.0, ge=0, le=100)
    """Influence (0-100) of this agent's score on the panel's weighted aggregate."""
    optimization_weight: float = Field(50.0, ge=0, le=100)
    """Influence (0-100) of this agent's TOP_ISSUE and instructions on the optimization feedback order."""
    rag: RagSettings = RagSettings()
    """Retrieval settings for the guideline documents."""
    documents: list[str] = []
    """Guideline documents (PDF, DOCX, Markdown, text); relative paths resolve against the agent file's
    folder, then the dataset root, then the working directory."""
    template: str | None = None
    """The shipped agent this one started from (already merged in)."""
    judge: dict[str, Any] | None = None
    """Overrides of the run's judge settings for this agent (``model``, ``api_base``...)."""
    temperature: float = Field(0.3, ge=0, le=2)
    """Sampling temperature of this agent's calls."""
    fallback_score: float | None = Field(None, ge=0, le=100)
    """Score (0-100) used when the reply cannot be parsed (flagged ``parse_failed``); unset: row error."""
    _source: str | None = PrivateAttr(None)

    @field_validator("judge")
    @classmethod
    def _check_judge(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is None:
            return value
        from vision_eval.config import JudgeConfig

        unknown = sorted(set(value) - set(JudgeConfig.model_fields))
        if unknown:
            raise ValueError(f"unknown judge keys {unknown}; known: {sorted(JudgeConfig.model_fields)}")
        return value

    @property
    def categories(self) -> list[str]:
        """Evaluation categories as a list (text is split on lines and commas)."""
        value = self.evaluation_categories
        if value is None:
            return []
        if isinstance(value, str):
            items = [part.strip(" -*\t") for line in value.splitlines() for part in line.split(",")]
            return [item for item in items if item]
        return [str(item).strip() for item in value if str(item).strip()]

    @property
    def own_output_format(self) -> bool:
        """True when the system prompt defines its own reply format."""
        return "OUTPUT FORMAT" in self.system_prompt

    def document_paths(self, dataset_root: Path | None = None) -> list[Path]:
        """The documents as existing paths; raises ``AgentDefinitionError`` for a missing one.

        Relative paths resolve against the folder of the file the agent (or its template) came
        from, then ``dataset_root``, then the working directory."""
        bases = [Path(self._source).parent] if self._source else []
        bases += [dataset_root] if dataset_root is not None else []
        bases.append(Path.cwd())
        found = []
        for document in self.documents:
            candidate = Path(document).expanduser()
            options = [candidate] if candidate.is_absolute() else [base / candidate for base in bases]
            match = next((p for p in options if p.is_file()), None)
            if match is None:
                raise AgentDefinitionError(f"agent {self.name!r}: document not found: {document}")
            found.append(match.resolve())
        return found


def agents_dir() -> Path:
    """The shipped agent files (``conf/agents``)."""
    from vision_eval._resources import conf_dir

    return conf_dir() / AGENTS_DIR


def _yaml(path: Path) -> dict[str, Any]:
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise AgentDefinitionError(f"cannot read agent file {path}: {exc}") from None
    if not isinstance(data, dict):
        raise AgentDefinitionError(f"agent file {path} must hold a mapping")
    return data


def agent_file(ref: str, search: Path | None = None) -> Path:
    """The file of an agent named ``ref`` (a stem in ``conf/agents`` or a path to a YAML file)."""
    candidate = Path(ref).expanduser()
    if candidate.suffix in (".yaml", ".yml") and candidate.is_file():
        return candidate.resolve()
    folder = search or agents_dir()
    for suffix in (".yaml", ".yml"):
        path = folder / f"{ref}{suffix}"
        if path.is_file():
            return path
    known = sorted(p.stem for p in folder.glob("*.y*ml")) if folder.is_dir() else []
    raise AgentDefinitionError(f"unknown agent {ref!r}: no file {folder}/{ref}.yaml (known: {', '.join(known)})")


def _merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if key in ("rag", "judge") and isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged


def _resolve(raw: Mapping[str, Any], search: Path | None, seen: tuple[str, ...]) -> tuple[dict[str, Any], str | None]:
    """``raw`` with its template chain merged in, and the file the documents are relative to."""
    template = raw.get("template")
    if not template:
        return dict(raw), None
    if template in seen:
        raise AgentDefinitionError(f"agent template cycle: {' -> '.join([*seen, str(template)])}")
    path = agent_file(str(template), search)
    base_raw = _yaml(path)
    base, base_source = _resolve(base_raw, search, (*seen, str(template)))
    merged = _merge(base, raw)
    merged["template"] = template
    return merged, base_source or str(path)


def build_agent(raw: Mapping[str, Any], source: str | None = None, search: Path | None = None) -> AgentDefinition:
    """An agent from a mapping (``template`` merged in); errors name the agent and the key."""
    if not isinstance(raw, Mapping):
        raise AgentDefinitionError(f"an agent must be a mapping or a name, got {type(raw).__name__}")
    merged, template_source = _resolve(raw, search, ())
    label = merged.get("name") or raw.get("template") or "<unnamed>"
    try:
        agent = AgentDefinition.model_validate(merged)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(agent)'}: {err['msg']}" for err in exc.errors()
        )
        raise AgentDefinitionError(f"agent {label!r}: {problems}") from None
    agent._source = source or template_source
    return agent


def load_agent(ref: str | Mapping[str, Any], search: Path | None = None) -> AgentDefinition:
    """An agent from a name in ``conf/agents``, a YAML path, or an inline mapping."""
    if isinstance(ref, str):
        path = agent_file(ref, search)
        return build_agent(_yaml(path), source=str(path), search=search)
    return build_agent(ref, search=search)


def load_agents(refs: Sequence[str | Mapping[str, Any]], search: Path | None = None) -> list[AgentDefinition]:
    """A panel of agents; names must be unique and at least one agent must have a scoring weight."""
    if not refs:
        raise AgentDefinitionError("a panel needs at least one agent")
    agents = [load_agent(ref, search) for ref in refs]
    names = [a.name for a in agents]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise AgentDefinitionError(f"agent names must be unique in a panel; repeated: {duplicates}")
    if not any(a.scoring_weight > 0 for a in agents):
        raise AgentDefinitionError("at least one agent needs a scoring_weight above 0")
    return agents
