"""``judge_agents``: a panel of judge agents scores each generated image against its creative brief.

A thin layer over :mod:`vision_eval.agents.panel_run`: every agent of the panel sees the brief, the
generation prompt, its retrieved guideline chunks and the image as pixels, through the run's scheduler;
the row score is the scoring-weighted mean of the agents' scores. Rankings, plateaus and optimization
feedback need every row of the run, so :meth:`JudgeAgents.finalize` rebuilds them once from the rows'
details (``details.panel`` keeps each row's group and iteration). Without a judge model the rows are
``skipped`` and carry each agent's request plan and retrieved chunks.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, ClassVar

import polars as pl

from vision_eval.agents.definitions import AgentDefinition, load_agents
from vision_eval.agents.panel_run import (
    AgentOutcome,
    AgentPanel,
    AgentRequest,
    JudgeAgentsSettings,
    assemble,
    tables_from_results,
)
from vision_eval.config import JudgeConfig
from vision_eval.evaluator import EvalContext, EvalOutput, Evaluator
from vision_eval.example import GRADED_NOTE, PHOTOS, Example
from vision_eval.images.media import ImageError
from vision_eval.images.policy import PreparedImage
from vision_eval.images.prepared import prepared_images_of
from vision_eval.images.provider_rules import rule_for
from vision_eval.images.roots import roots_of
from vision_eval.images.sent import sent_images_of
from vision_eval.llm.budget import NotAttempted
from vision_eval.llm.models import check_vision, resolve_judge
from vision_eval.llm.requests import PreparedCall, build_call, row_images
from vision_eval.llm.scheduler import SERVICE, get_scheduler
from vision_eval.llm.templates import TemplateError
from vision_eval.llm.transport import CallError, api_key_of
from vision_eval.results import ERROR, SKIPPED, rows_frame

TEMPLATE = "{{ agent_prompt }}"
"""The agent's prompt goes in as a value, so braces in a brief are never template syntax."""
NO_JUDGE_REASON = "no judge configured (judge.model is null): these are the requests a judge run would send"
DRY_RUN_REASON = "dry run (run.dry_run): these are the requests the run would send"
PANEL_SERVICE = "judge_agents_panel"


class JudgeAgents(Evaluator[JudgeAgentsSettings]):
    """A weighted panel of judge agents over generated images (see the module docstring)."""

    type_name: ClassVar[str] = "judge_agents"
    example: ClassVar[Example] = Example(
        {"type": "judge_agents", "agents": ["composition"]},
        [
            {"id": "a", "brief_id": "cola", "brief": "A red soda can centred on white.", "images": ["images/cat.png"]},
            {"id": "b", "brief_id": "cola", "brief": "A red soda can centred on white.", "images": ["images/dog.png"]},
        ],
        PHOTOS,
        note=GRADED_NOTE + " Agents are names in conf/agents/ or inline definitions (docs/agents.md).",
    )
    required_columns = ("brief",)
    default_threshold = 0.7
    is_async = True
    calls_models = True

    def __init__(self, name: str, settings: JudgeAgentsSettings, context: EvalContext | None = None) -> None:
        super().__init__(name, settings, context)
        self.agents: list[AgentDefinition] = load_agents(settings.agents)  # AgentDefinitionError is a ValueError
        self.judges: dict[str, JudgeConfig | None] = {}
        for agent in self.agents:
            try:
                judge = resolve_judge(self.context.judge, {**(settings.judge or {}), **(agent.judge or {})})
            except ValueError as exc:
                raise ValueError(f"agent {agent.name!r}: {exc}") from None
            if judge is not None:
                check_vision(str(judge.model))
            self.judges[agent.name] = judge
        without = [name for name, judge in self.judges.items() if judge is None]
        if without and len(without) < len(self.agents):
            raise ValueError(
                f"agents {without} have no judge model while others do; set judge.model for the run, "
                "for the evaluator (judge:) or for every agent"
            )
        self.planning = bool(without)
        self._tables: dict[str, pl.DataFrame] | None = None

    def columns_needed(self) -> tuple[str, ...]:
        return ("brief", *self.settings.images)

    def models(self) -> list[JudgeConfig]:
        return [judge for judge in self.judges.values() if judge is not None]

    def describe(self) -> dict[str, Any]:
        agents = [
            {
                "name": a.name,
                "template": a.template,
                "scoring_weight": a.scoring_weight,
                "optimization_weight": a.optimization_weight,
                "temperature": a.temperature,
                "documents": a.documents,
                "model": j.model if (j := self.judges[a.name]) else None,
            }
            for a in self.agents
        ]
        return {**super().describe(), "agents": agents, "group": self.settings.group}

    # panel -----------------------------------------------------------------
    def _panel_judge(self) -> JudgeConfig | None:
        return next((j for j in self.judges.values() if j is not None), None)

    async def _panel(self) -> AgentPanel:
        """The panel with its document indexes, built once per run and shared by every batch."""
        key = f"{PANEL_SERVICE}:{self.name}"
        loop = asyncio.get_running_loop()
        task: asyncio.Future[AgentPanel] | None = self.context.services.get(key)
        if task is None or task.get_loop() is not loop:
            judge = self._panel_judge()
            call = {"api_base": judge.api_base, "api_key": api_key_of(judge)} if judge else {}
            cache_dir = Path(judge.cache_dir) if judge and judge.cache_dir else None
            panel = AgentPanel(
                self.agents,
                self.context.dataset_root,
                cache_dir,
                {k: v for k, v in call.items() if v},
                self.settings.fallback_score,
            )
            task = self.context.services[key] = asyncio.ensure_future(panel.build())
        return await task

    def _row_panel(self, row: dict[str, Any]) -> dict[str, Any]:
        """What :func:`tables_from_results` needs about the row: its group and iteration values."""
        group = self.settings.group
        panel = {group: row[group]} if group and group in row else {}
        if "iteration" in row:
            panel["iteration"] = row["iteration"]
        return {"panel": panel}

    def _images(self, row: dict[str, Any], judge: JudgeConfig, counted: bool = True) -> list[PreparedImage]:
        """The row's images prepared for ``judge`` (counted in run.json's ``images_sent`` when ``counted``)."""
        store = prepared_images_of(self.context)
        images = row_images(row, self.settings.images, roots_of(self.context), judge.image, chat_input=False,
                            store=store, rule=rule_for(judge))  # fmt: skip
        if not images:
            raise ImageError("row has no images: the agents judge the image itself")
        sent = sent_images_of(self.context)
        if sent is not None and counted:
            sent.add(self.name, str(judge.model), images)
        return images

    def _call(self, request: AgentRequest, images: list[PreparedImage], judge: JudgeConfig | None) -> PreparedCall:
        config = judge or self.context.judge or JudgeConfig()
        return build_call(TEMPLATE, {"agent_prompt": request.text}, images, config.model, config.image.detail,
                          system=request.system, rule=rule_for(config))  # fmt: skip

    # evaluation ------------------------------------------------------------
    async def aevaluate(self, batch: pl.DataFrame) -> EvalOutput:
        panel = await self._panel()
        rows = batch.to_dicts()
        if self.planning or self.context.dry_run:
            judge = self.context.judge or JudgeConfig()
            planned = await asyncio.gather(*(self._plan_row(panel, row, judge) for row in rows))
            return EvalOutput(rows_frame(planned))
        scheduler = get_scheduler(self.context)
        gate = asyncio.Semaphore(scheduler.rows_in_flight(self.models()))  # bounds prepared images held in memory
        async with scheduler.session():
            graded = await asyncio.gather(*(self._grade_row(panel, row, gate) for row in rows))
        outcomes = [o for found, _ in graded for o in found]
        extra = {str(row["id"]): details for row, (_, details) in zip(rows, graded, strict=True)}
        return assemble(batch, self.agents, outcomes, self.settings, extra_details=extra, tables=False)

    async def _grade_row(
        self, panel: AgentPanel, row: dict[str, Any], gate: asyncio.Semaphore
    ) -> tuple[list[AgentOutcome], dict[str, Any]]:
        extra = self._row_panel(row)
        async with gate:
            items = await panel.requests(row)
            prepared: dict[str, list[PreparedImage]] = {}  # one preparation per image policy and provider rule
            try:
                for item in items:
                    if isinstance(item, AgentRequest):
                        judge = self.judges[item.agent.name]
                        assert judge is not None  # outside planning every agent has a judge
                        key = _images_key(judge)
                        if key not in prepared:
                            prepared[key] = await asyncio.to_thread(self._images, row, judge)
            except ImageError as exc:
                failed = [i.failed(str(exc)) if isinstance(i, AgentRequest) else i for i in items]
                return failed, extra
            if prepared:
                extra["images"] = [i.record() for i in next(iter(prepared.values()))]
            outcomes = await asyncio.gather(
                *(self._ask(i, prepared) if isinstance(i, AgentRequest) else _done(i) for i in items)
            )
        return list(outcomes), extra

    async def _ask(self, request: AgentRequest, prepared: dict[str, list[PreparedImage]]) -> AgentOutcome:
        judge = self.judges[request.agent.name]
        assert judge is not None
        try:
            call = self._call(request, prepared[_images_key(judge)], judge)
        except TemplateError as exc:
            return request.failed(f"the agent's prompt could not be rendered: {exc}")
        try:
            result = await get_scheduler(self.context).complete(
                judge,
                call.messages,
                params={"temperature": request.temperature},
                estimated_tokens=call.estimated_tokens,
                owner=self.name,
            )
        except NotAttempted as exc:
            return request.failed(str(exc), {"model": judge.model, "attempts": 0, "not_attempted": exc.kind})
        except CallError as exc:
            attempts = getattr(exc, "attempts", 1)
            meta = {"model": judge.model, "attempts": attempts, "failures": getattr(exc, "failures", [str(exc)])}
            return request.failed(f"judge call failed after {attempts} attempt(s): {exc}", meta)
        meta = {
            "model": judge.model,
            "input_tokens": result.input_tokens,
            "output_tokens": result.output_tokens,
            "cost_usd": result.cost_usd,
            "latency_s": result.latency_s,
            "cached": result.cached,
            "attempts": result.attempts,
        }
        if result.failures:
            meta["retried_failures"] = result.failures
        return request.outcome(result.text, meta)

    async def _plan_row(self, panel: AgentPanel, row: dict[str, Any], judge: JudgeConfig) -> dict[str, Any]:
        sample = str(row["id"])
        items = await panel.requests(row)
        try:
            images = await asyncio.to_thread(self._images, row, judge, not self.planning)
        except ImageError as exc:
            return {"sample_id": sample, "status": ERROR, "error": str(exc), "details": self._row_panel(row)}
        agents: dict[str, Any] = {}
        by_model: dict[str, dict[str, Any]] = {}
        failures = []
        for item in items:
            if isinstance(item, AgentOutcome):
                agents[item.agent] = {"error": item.error}
                failures.append(f"{item.agent}: {item.error}")
                continue
            agent_judge = self.judges.get(item.agent.name)
            try:
                call = self._call(item, images, agent_judge)
            except TemplateError as exc:
                agents[item.agent.name] = {"error": str(exc)}
                failures.append(f"{item.agent.name}: {exc}")
                continue
            agents[item.agent.name] = {
                "system": item.system,
                "temperature": item.temperature,
                "chunks": [c.record() for c in item.chunks],
                "request": call.plan(agent_judge.model if agent_judge else None),
            }
            if agent_judge is not None:
                planned = by_model.setdefault(str(agent_judge.model), {})
                planned["calls"] = planned.get("calls", 0) + 1
                planned["estimated_input_tokens"] = planned.get("estimated_input_tokens", 0) + call.estimated_tokens
                planned["image_tokens"] = planned.get("image_tokens", 0) + call.image_tokens
                planned["image_tokens_sized_otherwise"] = (
                    planned.get("image_tokens_sized_otherwise", 0) + call.other_image_tokens
                )
                planned["sized_otherwise"] = call.other_sizing
        reason = DRY_RUN_REASON if not self.planning else NO_JUDGE_REASON
        details = {
            "reason": reason,
            "agents": agents,
            "calls": sum(1 for a in agents.values() if "request" in a),
            "estimated_input_tokens": sum(
                a["request"]["estimated_input_tokens"] for a in agents.values() if "request" in a
            ),
            "by_model": by_model,
            **self._row_panel(row),
        }
        if failures:
            return {"sample_id": sample, "status": ERROR, "error": "; ".join(failures), "details": details}
        return {"sample_id": sample, "status": SKIPPED, "details": details}

    # run-wide tables and metrics -------------------------------------------
    def finalize(self, results: pl.DataFrame, dimensions: pl.DataFrame) -> dict[str, pl.DataFrame]:
        """``rankings``, ``plateaus`` (datasets with ``iteration``) and ``feedback`` over every row."""
        planning = self.planning or self.context.dry_run
        self._tables = {} if planning else tables_from_results(results, self.agents, self.settings)
        return self._tables

    def summarize(self, results: pl.DataFrame) -> dict[str, Any]:
        metrics: dict[str, Any] = {"cache_hits": int(results["cached"].fill_null(False).sum())}
        scheduler = self.context.services.get(SERVICE)
        if scheduler is not None:
            metrics["scheduler"] = scheduler.stats_for(self.name)
        details = [json.loads(d) for d in results["details"].drop_nulls().to_list()]
        metrics["parse_failed"] = sum(1 for d in details if d.get("parse_failed"))
        if self.planning or self.context.dry_run:
            plans = [a["request"] for d in details for a in (d.get("agents") or {}).values() if "request" in a]
            metrics["planned_calls"] = len(plans)
            metrics["estimated_input_tokens"] = sum(p["estimated_input_tokens"] for p in plans)
            return metrics
        tables = self._tables if self._tables is not None else tables_from_results(results, self.agents, self.settings)
        metrics["groups"] = group_summary(tables, self.settings.group)
        metrics["plateaued_groups"] = sum(1 for g in metrics["groups"].values() if g.get("plateaued"))
        return metrics


async def _done(outcome: AgentOutcome) -> AgentOutcome:
    return outcome


def _images_key(judge: JudgeConfig) -> str:
    """What decides how a judge's images are prepared: its image policy and its provider's rule."""
    return judge.image.model_dump_json() + rule_for(judge).key()


def _label(group: Any) -> str:
    return "all" if group is None else str(group)


def group_summary(tables: dict[str, pl.DataFrame], group: str | None) -> dict[str, Any]:
    """Per group: the winner of its last iteration and where its scores plateaued."""
    ranked = tables.get("rankings")
    if ranked is None or ranked.is_empty():
        return {}
    group_col = group if group and group in ranked.columns else "group"
    winners = ranked.filter(pl.col("winner")).sort([group_col, "iteration"], nulls_last=True)
    last = winners.group_by(group_col, maintain_order=True).last()
    summary: dict[str, Any] = {}
    for row in last.to_dicts():
        summary[_label(row[group_col])] = {
            "last_iteration": row["iteration"],
            "winner": row["sample_id"],
            "winner_score": row["score"],
        }
    plateaus = tables.get("plateaus")
    for row in plateaus.to_dicts() if plateaus is not None else []:
        entry = summary.setdefault(_label(row[group_col]), {})
        entry.update(
            {k: row[k] for k in ("plateaued", "plateau_iteration", "detected_at", "best_iteration", "best_score")}
        )
    return summary
