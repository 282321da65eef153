"""Everything of a judge-agents run except the model call: settings, per-row requests, result assembly.

The ``judge_agents`` evaluator is a thin layer over this module::

    panel = AgentPanel(load_agents(settings.agents), context.dataset_root, cache_dir)
    await panel.build()                                         # documents chunked and indexed once per run
    for row in batch rows, for request in await panel.requests(row):
        reply = <scheduler call: request.system + request.text + the row's image as pixels>
        outcome = request.outcome(reply_text, call_meta)        # parse_reply, fallback flagging, errors
    return assemble(batch, panel.agents, outcomes, settings)    # results, dimensions, rankings/plateaus/feedback
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import polars as pl
from pydantic import Field

from vision_eval.agents.definitions import AgentDefinition, AgentDefinitionError
from vision_eval.agents.documents import DocumentError, load_chunks
from vision_eval.agents.panel import aggregate_scores, optimization_feedback, plateaus, rankings
from vision_eval.agents.prompt import build_prompt
from vision_eval.agents.replies import AgentVerdict, ReplyError, parse_reply
from vision_eval.agents.retrieval import EmbeddingCache, EmbeddingIndex, LexicalIndex, Retrieved
from vision_eval.evaluator import EvalOutput, EvaluatorSettings
from vision_eval.results import ERROR, PROCESSED, rows_frame


class JudgeAgentsSettings(EvaluatorSettings):
    """Settings of ``judge_agents``."""

    agents: list[str | dict[str, Any]]
    """The panel: names of agent files (``conf/agents/<name>.yaml`` or a YAML path) or inline definitions."""
    group: str | None = "brief_id"
    """Column grouping images for rankings, plateaus and feedback (``None``: one group)."""
    plateau_window: int = Field(3, ge=2)
    """Iterations in the plateau window."""
    plateau_threshold: float = Field(0.02, ge=0)
    """Gain (0..1 scale) below which a window counts as a plateau."""
    require_all_agents: bool = True
    """A row is an error when any agent failed on it; ``False`` re-weights over the agents that scored."""
    feedback_from: Literal["winner", "all"] = "winner"
    """Whose verdicts make the optimization feedback: each iteration's winning image, or every image."""
    fallback_score: float | None = Field(None, ge=0, le=100)
    """Panel-wide fallback score (0-100) for unparseable replies, unless an agent sets its own."""
    judge: dict[str, Any] | None = None
    """Overrides of the run's judge for every agent (an agent's own ``judge`` wins)."""
    images: list[str] = ["images"]
    """Image columns sent with each call."""


@dataclass
class AgentOutcome:
    """One agent's result on one row."""

    sample_id: str
    agent: str
    verdict: AgentVerdict | None = None
    error: str | None = None
    raw: str | None = None
    chunks: list[dict[str, Any]] = field(default_factory=list)
    call: dict[str, Any] = field(default_factory=dict)
    """Call metadata: input_tokens, output_tokens, cost_usd, latency_s, cached, model."""


@dataclass
class AgentRequest:
    """What one agent is asked about one row (the image goes along as pixels)."""

    sample_id: str
    agent: AgentDefinition
    system: str
    text: str
    chunks: list[Retrieved]
    fallback_score: float | None = None

    @property
    def temperature(self) -> float:
        return self.agent.temperature

    def outcome(self, reply: str, call: dict[str, Any] | None = None) -> AgentOutcome:
        """Parse ``reply``: a verdict (fallbacks flagged ``parse_failed`` and keep the raw reply), or an error
        that keeps the raw reply."""
        records = [c.record() for c in self.chunks]
        try:
            verdict = parse_reply(reply, self.fallback_score)
        except ReplyError as exc:
            return AgentOutcome(
                self.sample_id, self.agent.name, None, f"unparseable reply: {exc}", reply, records, dict(call or {})
            )
        raw = reply if verdict.parse_failed else None
        return AgentOutcome(self.sample_id, self.agent.name, verdict, None, raw, records, dict(call or {}))

    def failed(self, reason: str, call: dict[str, Any] | None = None) -> AgentOutcome:
        """An outcome for a call that failed (retries exhausted, bad image...)."""
        return AgentOutcome(
            self.sample_id, self.agent.name, None, reason, None, [c.record() for c in self.chunks], dict(call or {})
        )


def _scores_list(value: Any) -> list[float]:
    if value is None:
        return []
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            value = [v for v in value.replace("[", "").replace("]", "").split(",") if v.strip()]
    if not isinstance(value, list | tuple):
        value = [value]
    return [float(v) for v in value if v is not None]


def _int(value: Any) -> int | None:
    return int(value) if value is not None else None


class AgentPanel:
    """A panel of agents with their document indexes, built once per run."""

    def __init__(
        self,
        agents: list[AgentDefinition],
        dataset_root: Path | None = None,
        cache_dir: Path | None = None,
        embedding_call: dict[str, Any] | None = None,
        fallback_score: float | None = None,
    ) -> None:
        self.agents = agents
        self.dataset_root = dataset_root
        self.cache_dir = cache_dir
        self.embedding_call = embedding_call or {}
        self.fallback_score = fallback_score
        self.indexes: dict[str, LexicalIndex | EmbeddingIndex | None] = {}
        self.broken: dict[str, str] = {}
        """Agents whose documents cannot be used -> reason (their rows are errors)."""

    async def build(self) -> AgentPanel:
        """Chunk and index every agent's documents (once; chunks are cached on disk by content)."""
        for agent in self.agents:
            if agent.name in self.indexes or agent.name in self.broken:
                continue
            try:
                paths = agent.document_paths(self.dataset_root)
                chunks = [c for p in paths for c in load_chunks(p, agent.rag.chunk_chars, self.cache_dir)]
                if not paths:
                    self.indexes[agent.name] = None
                elif agent.rag.embedding_model:
                    call = {**self.embedding_call, "cache": EmbeddingCache(self.cache_dir)}
                    self.indexes[agent.name] = await EmbeddingIndex(chunks, agent.rag.embedding_model, **call).build()
                else:
                    self.indexes[agent.name] = LexicalIndex(chunks)
            except (AgentDefinitionError, DocumentError) as exc:
                self.broken[agent.name] = str(exc)
            except Exception as exc:  # the embedding provider failed: this agent's rows fail, the run goes on
                self.broken[agent.name] = f"agent {agent.name!r}: embedding the documents failed: {exc}"
        return self

    async def retrieve(self, agent: AgentDefinition, query: str) -> list[Retrieved]:
        """The guideline chunks for ``query`` (none when the agent has no documents)."""
        index = self.indexes.get(agent.name)
        if index is None:
            return []
        if isinstance(index, EmbeddingIndex):
            return await index.search(query, agent.rag.top_k, agent.rag.similarity_threshold)
        return index.search(query, agent.rag.top_k, agent.rag.similarity_threshold)

    async def requests(self, row: dict[str, Any]) -> list[AgentRequest | AgentOutcome]:
        """Per agent: the request for this row, or an error outcome (broken documents, no brief)."""
        sample_id = str(row["id"])
        brief, prompt = row.get("brief"), row.get("prompt")
        out: list[AgentRequest | AgentOutcome] = []
        for agent in self.agents:
            if agent.name in self.broken:
                out.append(AgentOutcome(sample_id, agent.name, error=self.broken[agent.name]))
                continue
            if not brief:
                out.append(AgentOutcome(sample_id, agent.name, error="brief is missing"))
                continue
            query = f"{brief}\n{prompt or ''}".strip()
            try:
                chunks = await self.retrieve(agent, query)
            except Exception as exc:  # embedding the query failed (provider error): this agent fails on this row
                out.append(AgentOutcome(sample_id, agent.name, error=f"guideline retrieval failed: {exc}"))
                continue
            text = build_prompt(
                agent,
                str(brief),
                str(prompt) if prompt else None,
                iteration=_int(row.get("iteration")),
                max_iterations=_int(row.get("max_iterations")),
                previous_scores=_scores_list(row.get("previous_scores")),
                guidelines=chunks,
            )
            fallback = agent.fallback_score if agent.fallback_score is not None else self.fallback_score
            out.append(AgentRequest(sample_id, agent, agent.system_prompt, text, chunks, fallback))
        return out


VERDICT_SCHEMA: dict[str, pl.DataType] = {
    "sample_id": pl.Utf8(),
    "agent": pl.Utf8(),
    "score": pl.Float64(),
    "optimization_weight": pl.Float64(),
    "severity": pl.Utf8(),
    "problem": pl.Utf8(),
    "fix": pl.Utf8(),
    "prompt_instructions": pl.List(pl.Utf8()),
}
"""One row per (sample, agent) verdict: what the panel tables are computed from."""


def _agent_details(outcome: AgentOutcome) -> dict[str, Any]:
    details: dict[str, Any] = {"chunks": outcome.chunks}
    if outcome.verdict is not None:
        details.update(outcome.verdict.to_dict())
    if outcome.error is not None:
        details["error"] = outcome.error
    if outcome.raw is not None:
        details["raw"] = outcome.raw
    if outcome.call:
        details["call"] = outcome.call
    return details


def _sum(values: list[Any]) -> Any:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def assemble(
    batch: pl.DataFrame,
    agents: list[AgentDefinition],
    outcomes: list[AgentOutcome],
    settings: JudgeAgentsSettings,
    extra_details: dict[str, dict[str, Any]] | None = None,
    tables: bool = True,
) -> EvalOutput:
    """Results (weighted aggregate per row), dimensions (each agent, each agent/category) and the
    ``rankings``, ``plateaus`` and ``feedback`` tables from every agent's outcome on every row.

    ``extra_details`` (sample id -> mapping) is merged into each row's details; ``tables=False`` leaves
    the tables out (a run split into batches builds them once with :func:`tables_from_results`)."""
    by_name = {a.name: a for a in agents}
    verdicts = pl.DataFrame(
        [
            {
                "sample_id": o.sample_id,
                "agent": o.agent,
                "score": o.verdict.score if o.verdict else None,
                "optimization_weight": by_name[o.agent].optimization_weight,
                "severity": (o.verdict.top_issue or {}).get("severity") if o.verdict else None,
                "problem": (o.verdict.top_issue or {}).get("problem") if o.verdict else None,
                "fix": (o.verdict.top_issue or {}).get("fix") if o.verdict else None,
                "prompt_instructions": o.verdict.prompt_instructions if o.verdict else [],
            }
            for o in outcomes
        ],
        schema=VERDICT_SCHEMA,
    )
    weights = {a.name: a.scoring_weight for a in agents}
    aggregate = {r["sample_id"]: r for r in aggregate_scores(verdicts, weights, settings.require_all_agents).to_dicts()}
    grouped: dict[str, list[AgentOutcome]] = {}
    for outcome in outcomes:
        grouped.setdefault(outcome.sample_id, []).append(outcome)
    rows, dims = [], []
    for sample_id in batch["id"].cast(pl.Utf8).to_list():
        mine = grouped.get(sample_id, [])
        agg = aggregate.get(sample_id)
        details = {
            "agents": {o.agent: _agent_details(o) for o in mine},
            "weights": weights,
            "parse_failed": any(o.verdict is not None and o.verdict.parse_failed for o in mine),
            **(extra_details or {}).get(sample_id, {}),
        }
        calls = [o.call for o in mine]
        row = {
            "sample_id": sample_id,
            "details": details,
            "input_tokens": _sum([c.get("input_tokens") for c in calls]),
            "output_tokens": _sum([c.get("output_tokens") for c in calls]),
            "cost_usd": _sum([c.get("cost_usd") for c in calls]),
            "latency_s": max([c["latency_s"] for c in calls if c.get("latency_s") is not None], default=None),
            "cached": all(c.get("cached") for c in calls) if calls and all("cached" in c for c in calls) else None,
        }
        refused = [c["not_attempted"] for c in calls if c.get("not_attempted")]
        if refused:  # a panel missing an agent's verdict is not scored; a resume finishes it
            reasons = "; ".join(f"{o.agent}: {o.error}" for o in mine if o.call.get("not_attempted"))
            details["not_attempted"] = "budget" if "budget" in refused else refused[0]
            rows.append({**row, "status": ERROR, "error": reasons})
            continue
        if agg is None or agg["score"] is None:
            failures = [f"{o.agent}: {o.error}" for o in mine if o.error]
            reason = "; ".join(failures) or "no agent produced a score (all scoring weights are 0?)"
            rows.append({**row, "status": ERROR, "error": reason})
            continue
        rows.append({**row, "status": PROCESSED, "score": agg["score"]})
        for o in mine:
            if o.verdict is None:
                continue
            dims.append(
                {"sample_id": sample_id, "dimension": o.agent, "score": o.verdict.score, "weight": weights[o.agent]}
            )
            dims += [
                {"sample_id": sample_id, "dimension": f"{o.agent}/{k}", "score": v, "weight": None}
                for k, v in o.verdict.category_scores.items()
            ]
    results = rows_frame(rows)
    dimensions = pl.DataFrame(
        dims, schema={"sample_id": pl.Utf8, "dimension": pl.Utf8, "score": pl.Float64, "weight": pl.Float64}
    )
    return EvalOutput(
        results, dimensions=dimensions, tables=panel_tables(batch, results, verdicts, settings) if tables else {}
    )


def panel_tables(
    batch: pl.DataFrame, results: pl.DataFrame, verdicts: pl.DataFrame, settings: JudgeAgentsSettings
) -> dict[str, pl.DataFrame]:
    """``rankings``, ``plateaus`` and ``feedback`` for the rows of ``batch``."""
    group = settings.group if settings.group and settings.group in batch.columns else None
    iteration = "iteration" if "iteration" in batch.columns else None
    keys = [c for c in (group, iteration) if c]
    meta = batch.select(pl.col("id").cast(pl.Utf8).alias("sample_id"), *keys)
    scores = meta.join(results.select("sample_id", "score"), on="sample_id", how="left")
    ranked = rankings(scores, group, iteration)
    tables = {"rankings": ranked}
    if iteration is not None:
        tables["plateaus"] = plateaus(ranked, group, iteration, settings.plateau_window, settings.plateau_threshold)
    chosen = verdicts.join(meta, on="sample_id", how="left")
    if settings.feedback_from == "winner":
        winners = ranked.filter(pl.col("winner")).select("sample_id")
        chosen = chosen.join(winners, on="sample_id", how="semi")
    tables["feedback"] = optimization_feedback(chosen, group, iteration)
    return tables


def tables_from_results(
    results: pl.DataFrame, agents: list[AgentDefinition], settings: JudgeAgentsSettings
) -> dict[str, pl.DataFrame]:
    """``rankings``, ``plateaus`` and ``feedback`` over every row a run assembled, rebuilt from the rows'
    details (``details.panel`` holds the row's group and iteration values): the same tables as
    :func:`assemble` gives for one batch holding every row, whatever the batches were."""
    weights = {a.name: a.optimization_weight for a in agents}
    meta, verdicts, scores = [], [], []
    columns = ("sample_id", "status", "score", "details")
    for sample_id, status, score, text in zip(*(results[c].to_list() for c in columns), strict=True):
        details = json.loads(text) if text and status in (PROCESSED, ERROR) else {}
        if not isinstance(details.get("panel"), dict) or not isinstance(details.get("agents"), dict):
            continue  # not assembled by the panel (skipped, or failed before any agent ran)
        meta.append({"id": sample_id, **details["panel"]})
        scores.append({"sample_id": sample_id, "score": score if status == PROCESSED else None})
        for name, mine in details["agents"].items():
            issue = mine.get("top_issue") or {}
            verdicts.append(
                {
                    "sample_id": sample_id,
                    "agent": name,
                    "score": mine.get("score"),
                    "optimization_weight": weights.get(name, 0.0),
                    "severity": issue.get("severity"),
                    "problem": issue.get("problem"),
                    "fix": issue.get("fix"),
                    "prompt_instructions": mine.get("prompt_instructions") or [],
                }
            )
    if not meta:
        return {}
    batch = pl.DataFrame(meta, infer_schema_length=None)
    frame = pl.DataFrame(verdicts, schema=VERDICT_SCHEMA)
    scored = pl.DataFrame(scores, schema={"sample_id": pl.Utf8, "score": pl.Float64})
    return panel_tables(batch, scored, frame, settings)
