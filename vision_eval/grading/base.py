"""The base of the model-graded evaluators: images, calls, samples, panels and grader failures, once.

A subclass sets its templates and implements :meth:`GradedEvaluator.grade` (one judgement of one row by
one judge: ``await asker.ask(template, extra)`` returns the reply, a contract parser turns it into a
:class:`Grade` or raises :class:`GraderError`) and :meth:`GradedEvaluator.plan` (the requests a run would
send, for the skipped plan without a judge). The base runs ``samples`` judgements per judge and the
``panel`` of judges, aggregates them (:mod:`vision_eval.grading.reliability`), turns unreadable replies and
failed calls (:class:`~vision_eval.grading.outcomes.GradeFailure`) into ``error`` rows with the raw reply,
records tokens, cost, latency and cache hits, and writes per-model dimensions, the panel's agreement and the
calibration against human labels.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import polars as pl
from typing_extensions import TypeVar

from vision_eval.config import JudgeConfig
from vision_eval.evaluator import EvalContext, EvalOutput, Evaluator, EvaluatorSettings
from vision_eval.grading import reliability as rel
from vision_eval.grading.calls import Asker, Usage
from vision_eval.grading.outcomes import (
    GRADING_FAILURES,
    Grade,
    GradeFailure,
    JudgeFailure,
    JudgeResult,
    mean_by_key,
    quorum,
)
from vision_eval.grading.prompts import PROMPTFOO_ALIASES, TEXT_VARIABLES, load_prompt
from vision_eval.grading.settings import GradedSettings
from vision_eval.images.media import ImageError
from vision_eval.images.policy import PreparedImage
from vision_eval.images.prepared import prepared_images_of
from vision_eval.images.provider_rules import rule_for
from vision_eval.images.roots import roots_of
from vision_eval.images.sent import sent_images_of
from vision_eval.llm.budget import BUDGET
from vision_eval.llm.models import check_vision, resolve_judge
from vision_eval.llm.requests import build_call, row_images, row_variables
from vision_eval.llm.scheduler import SERVICE, get_scheduler
from vision_eval.llm.templates import (
    IMAGE_VARIABLES,
    TemplateError,
    compile_template,
    template_variables,
)
from vision_eval.llm.transport import CallResult
from vision_eval.results import DIMENSION_ROW_SCHEMA, ERROR, PROCESSED, SKIPPED, empty, rows_frame

NO_JUDGE_REASON = "no judge configured (judge.model is null): this is the request a judge run would send"
DRY_RUN_REASON = "dry run (run.dry_run): this is the request the run would send"


def shows_images(template: str) -> bool:
    """Whether a template renders an image label (``image_reference(s)``) other than under an
    ``{% if image_reference(s) %}`` guard or as the list a ``{% for %}`` loop walks (both render nothing without
    images)."""
    from jinja2 import Environment, nodes

    def image_names(node: nodes.Node) -> bool:
        return any(n.name in IMAGE_VARIABLES for n in [node, *node.find_all(nodes.Name)] if isinstance(n, nodes.Name))

    def visit(node: nodes.Node) -> bool:
        if isinstance(node, nodes.If) and image_names(node.test):
            return any(visit(child) for child in [*node.elif_, *node.else_])
        if isinstance(node, nodes.For) and image_names(node.iter):
            return any(visit(child) for child in [*node.body, *node.else_])
        if isinstance(node, nodes.Name) and node.name in IMAGE_VARIABLES:
            return True
        return any(visit(child) for child in node.iter_child_nodes())

    return visit(Environment().parse(template))


async def _all(coroutines: list[Any]) -> list[Any]:
    """``asyncio.gather``, without its task when there is a single coroutine (the usual one judge, one sample:
    a task per call is measurable CPU at hundreds of calls per second)."""
    if len(coroutines) == 1:
        return [await coroutines[0]]
    return list(await asyncio.gather(*coroutines))


GradedSettingsT = TypeVar("GradedSettingsT", bound=GradedSettings, default=GradedSettings, covariant=True)


class GradedEvaluator(Evaluator[GradedSettingsT]):
    """Base class of the model-graded assertions (see the module docstring)."""

    settings_model: ClassVar[type[EvaluatorSettings]] = GradedSettings
    default_threshold: ClassVar[float | None] = None
    is_async = True
    calls_models = True
    pass_from_score: ClassVar[bool] = False
    """True when ``passed`` is ``score >= threshold`` (else the grader's verdict decides)."""

    def __init__(self, name: str, settings: GradedSettingsT, context: EvalContext | None = None) -> None:
        super().__init__(name, settings, context)
        self.judges: list[tuple[str, JudgeConfig]] = []
        members: list[str | dict[str, Any] | None] = list(settings.panel) if settings.panel else [None]
        for member in members:
            override = {**(settings.judge or {}), **({"model": member} if isinstance(member, str) else member or {})}
            judge = resolve_judge(self.context.judge, override or None)
            if judge is not None:
                check_vision(str(judge.model))
                self.judges.append((str(judge.model), judge))
        labels = [label for label, _ in self.judges]
        if len(set(labels)) != len(labels):
            raise ValueError(f"panel: the same model appears twice ({labels})")
        if settings.samples < 1:
            raise ValueError("samples must be at least 1")
        if (settings.min_valid or 0) > settings.samples or (settings.panel_min_valid or 0) > len(members):
            raise ValueError("min_valid is at most samples, panel_min_valid at most the panel's size")
        for template in self.templates():
            try:
                compile_template(template)
            except TemplateError as exc:
                raise ValueError(f"prompt template error: {exc}") from None
        self.images_required = "images" in settings.model_fields_set or any(map(shows_images, self.templates()))
        """The image columns must exist (set explicitly, or a prompt shows image labels); otherwise the images of
        the columns the dataset has are attached and a dataset without them is graded on text."""
        self._calibration: dict[str, Any] | None = None

    # --- what a subclass provides -------------------------------------------------------------------
    default_prompt: ClassVar[str] = ""
    """The grading prompt template when the ``prompt:`` setting is not given."""
    row_setting: ClassVar[str | None] = None
    """A setting that is itself a template over the row (``rubric``, ``criteria``): rendered per row and passed to
    the prompt under its name."""

    def templates(self) -> list[str]:
        """Every template this evaluator renders over row variables (checked at start, columns derived)."""
        s = self.settings
        own = [getattr(s, self.row_setting)] if self.row_setting else []
        return [load_prompt(s.prompt, self.default_prompt), *own]

    def extra_variables(self) -> set[str]:
        """Template variables the evaluator supplies itself (not dataset columns)."""
        return {self.row_setting} if self.row_setting else set()

    async def grade(self, asker: Asker) -> Grade:
        """One judgement of one row by one judge."""
        raise NotImplementedError

    def passes(self, score: float) -> bool:
        """``score >= threshold``, the verdict of the evaluators whose ``pass_from_score`` (all have a threshold)."""
        return self.threshold is not None and score >= self.threshold

    async def ask_prompt(self, asker: Asker) -> CallResult:
        """The usual single call of a judgement: the prompt, with the row setting rendered over the row."""
        prompt, *own = self.templates()
        return await asker.ask(prompt, {self.row_setting: asker.render(own[0])} if self.row_setting else {})

    def plan(self, variables: dict[str, Any]) -> list[tuple[str, dict[str, Any], bool]]:
        """The calls of one judgement: (template, extra variables, with images)."""
        prompt, *own = self.templates()
        return [(prompt, {self.row_setting: own[0]} if self.row_setting else {}, True)]

    def prepare_variables(self, row: dict[str, Any], variables: dict[str, Any]) -> None:
        """Adjust a row's template variables in place (e.g. a context column); ``ValueError`` -> row error."""

    # --- columns and description ----------------------------------------------------------------------
    def models(self) -> list[Any]:
        return [judge for _, judge in self.judges]

    def columns_needed(self) -> tuple[str, ...]:
        s = self.settings
        used: set[str] = set()
        for template in self.templates():
            used |= template_variables(template)
        used -= set(IMAGE_VARIABLES) | set(TEXT_VARIABLES) | set(PROMPTFOO_ALIASES) | self.extra_variables()
        images = s.images if self.images_required else []
        return tuple(dict.fromkeys((*self.required_columns, *images, *sorted(used))))

    def describe(self) -> dict[str, Any]:
        s = self.settings
        return {
            **super().describe(),
            "models": [label for label, _ in self.judges],
            "samples": s.samples,
            "panel": bool(s.panel),
        }

    # --- running --------------------------------------------------------------------------------------
    def _variables(
        self, row: dict[str, Any], judge: JudgeConfig, label: str | None = None
    ) -> tuple[dict[str, Any], list[PreparedImage]]:
        """The row's template variables and its images prepared for ``judge`` (counted as sent to ``label``)."""
        s = self.settings
        variables = row_variables(row)
        columns = s.images if self.images_required else [c for c in s.images if c in row]
        images = row_images(
            row,
            columns,
            roots_of(self.context),
            judge.image,
            chat_input=s.chat_input_images,
            variables=variables,
            store=prepared_images_of(self.context),
            rule=rule_for(judge),
        )
        sent = sent_images_of(self.context)
        if sent is not None and label is not None:
            sent.add(self.name, label, images)
        for name in TEXT_VARIABLES:
            if variables[name] is None:
                variables[name] = ""
        self.prepare_variables(row, variables)
        for alias, source in PROMPTFOO_ALIASES.items():
            variables.setdefault(alias, variables[source])
        return variables, images

    async def aevaluate(self, batch: pl.DataFrame) -> EvalOutput:
        rows = batch.to_dicts()
        if not self.judges or self.context.dry_run:
            judge = self.judges[0][1] if self.judges else (self.context.judge or JudgeConfig())
            return EvalOutput(
                rows_frame(await asyncio.gather(*(asyncio.to_thread(self._plan_row, r, judge) for r in rows)))
            )
        scheduler = get_scheduler(self.context)
        gate = asyncio.Semaphore(scheduler.rows_in_flight(self.models()))  # bounds prepared images held in memory
        async with scheduler.session():
            graded = await asyncio.gather(*(self._grade_row(row, gate) for row in rows))
        dims = [d for _, ds in graded for d in ds]
        dimensions = pl.DataFrame(dims, schema=DIMENSION_ROW_SCHEMA) if dims else empty(DIMENSION_ROW_SCHEMA)
        return EvalOutput(rows_frame([r for r, _ in graded]), dimensions=dimensions)

    def _plan_row(self, row: dict[str, Any], judge: JudgeConfig) -> dict[str, Any]:
        s = self.settings
        model = self.judges[0][0] if self.judges else None
        rule = rule_for(judge)
        try:
            variables, images = self._variables(row, judge, model)
            calls = [
                build_call(
                    t, {**variables, **extra}, images if with_images else [], model, judge.image.detail, s.system, rule
                )
                for t, extra, with_images in self.plan(variables)
            ]
        except (ImageError, TemplateError, ValueError) as exc:
            return {"sample_id": row["id"], "status": ERROR, "error": str(exc)}
        tokens = sum(c.estimated_tokens for c in calls)
        details = {
            "reason": DRY_RUN_REASON if self.judges else NO_JUDGE_REASON,
            "type": self.type_name,
            "request": calls[0].plan(model),
            "calls": len(calls) * s.samples * max(1, len(s.panel or [])),
            "estimated_input_tokens": tokens * s.samples * max(1, len(s.panel or [])),
            "by_model": {
                label: {
                    "calls": len(calls) * s.samples,
                    "estimated_input_tokens": tokens * s.samples,
                    "image_tokens": sum(c.image_tokens for c in calls) * s.samples,
                    "image_tokens_sized_otherwise": sum(c.other_image_tokens for c in calls) * s.samples,
                    "sized_otherwise": calls[0].other_sizing,
                }
                for label, _ in self.judges
            },
        }
        return {"sample_id": row["id"], "status": SKIPPED, "details": details}

    async def _judge_row(self, row: dict[str, Any], judge: JudgeConfig, usage: Usage) -> JudgeResult | JudgeFailure:
        """All samples of one judge for one row."""
        s = self.settings
        chat = row.get("input")  # a chat-format input may carry images too: prepared off the event loop as well
        maybe_chat = isinstance(chat, list | dict) or (isinstance(chat, str) and chat.lstrip()[:1] in ("[", "{"))
        has_images = any(row.get(c) for c in s.images) or (s.chat_input_images and maybe_chat)
        label = next((name for name, j in self.judges if j is judge), str(judge.model))
        variables, images = (
            await asyncio.to_thread(self._variables, row, judge, label)
            if has_images
            else self._variables(row, judge, label)
        )
        outcomes = await _all([self._one(judge, variables, images, k, usage) for k in range(s.samples)])
        grades = [o for o in outcomes if isinstance(o, Grade)]
        failures = [o for o in outcomes if isinstance(o, GradeFailure)]
        records = [i.record() for i in images]
        needed = quorum(s.min_valid, s.samples)
        if len(grades) < needed:
            reason = failures[0].reason
            if s.samples > 1:
                reason = f"{len(grades)} valid judgement(s) of {s.samples}, {needed} needed; first error: {reason}"
            return JudgeFailure(reason, failures, records)
        scores, passes = [g.score for g in grades], [g.passed for g in grades]
        score, passed = rel.aggregate(scores, passes, s.aggregate, self.threshold, self.pass_from_score)
        return JudgeResult(score, passed, grades, failures, records)

    async def _one(
        self, judge: JudgeConfig, variables: dict[str, Any], images: list[PreparedImage], sample: int, usage: Usage
    ) -> Grade | GradeFailure:
        asker = Asker(self, judge, variables, images, sample, usage)
        try:
            return await self.grade(asker)
        except GRADING_FAILURES as exc:
            return GradeFailure.of(exc, asker.replies)

    async def _grade_row(self, row: dict[str, Any], gate: asyncio.Semaphore) -> tuple[dict[str, Any], list[Any]]:
        s = self.settings
        sample_id, usage = row["id"], Usage()
        async with gate:
            try:
                judged = await _all([self._judge_row(row, j, usage) for _, j in self.judges])
            except (ImageError, TemplateError, ValueError) as exc:
                return {"sample_id": sample_id, "status": ERROR, "error": str(exc)}, []
        labels = [label for label, _ in self.judges]
        valid = {label: j for label, j in zip(labels, judged, strict=True) if isinstance(j, JudgeResult)}
        base: dict[str, Any] = {"type": self.type_name, "images": judged[0].images}
        if not s.panel:
            base["model"] = labels[0]
        else:
            base["panel"] = {
                "models": {k: valid[k].score if k in valid else None for k in labels},
                "passed": {k: valid[k].passed if k in valid else None for k in labels},
                "errors": {k: j.reason for k, j in zip(labels, judged, strict=True) if isinstance(j, JudgeFailure)},
                "aggregate": s.panel_aggregate,
            }
        needed = quorum(s.panel_min_valid, len(labels))
        if len(valid) < needed:
            failed = next(j for j in judged if isinstance(j, JudgeFailure))
            reason = failed.reason
            if s.panel:
                reason = f"{len(valid)} valid panel judgement(s) of {len(labels)}, {needed} needed: {reason}"
            details = {**base, "errors": [f.details() for f in failed.failures]}
            if s.samples == 1:
                details.update(failed.failures[0].kept())
            refused = [f.not_attempted for j in judged for f in j.failures if f.not_attempted]
            if refused:
                details["not_attempted"] = BUDGET if BUDGET in refused else refused[0]
            return {"sample_id": sample_id, "status": ERROR, "error": reason, "details": details, **usage.columns()}, []
        method = "majority" if s.panel_aggregate == "majority" else "mean"
        scores, passes = [j.score for j in valid.values()], [j.passed for j in valid.values()]
        score, passed = rel.aggregate(scores, passes, method, self.threshold, self.pass_from_score)
        first = next(iter(valid.values()))
        details = {**base, **first.grades[0].details}
        pooled = [g.score for j in valid.values() for g in j.grades]
        score_std = None
        if s.samples > 1:
            details["samples"] = {
                "k": s.samples,
                "valid": len(first.grades) if len(valid) == 1 else {k: len(j.grades) for k, j in valid.items()},
                "aggregate": s.aggregate,
                "temperature": {label: j.temperature for label, j in self.judges if label in valid},
                "scores": pooled,
                "errors": [f.reason for j in valid.values() for f in j.failures],
                **rel.spread(pooled),
            }
            score_std = details["samples"]["std"]
        elif len(valid) > 1:
            score_std = rel.spread(scores)["std"]
        details.update(self._human(row))
        details["attempts"] = usage.attempts
        if usage.retried_failures:
            details["retried_failures"] = usage.retried_failures
        row_out = {
            "sample_id": sample_id,
            "status": PROCESSED,
            "score": score,
            "passed": passed,
            "details": details,
            "score_std": score_std,
            **usage.columns(),
        }
        return row_out, self._dimensions(sample_id, valid)

    def _dimensions(self, sample_id: str, valid: dict[str, JudgeResult]) -> list[dict[str, Any]]:
        s = self.settings
        weights = next(iter(valid.values())).grades[0].weights
        scores = [(f"model:{k}", j.score, 1.0) for k, j in valid.items()] if s.panel else []
        scores += [(k, v, weights.get(k, 1.0)) for k, v in mean_by_key(j.dims for j in valid.values()).items()]
        return [{"sample_id": sample_id, "dimension": k, "score": v, "weight": w} for k, v, w in scores]

    def _human(self, row: dict[str, Any]) -> dict[str, Any]:
        s = self.settings
        human: dict[str, Any] = {}
        if s.human_score and s.human_score in row:
            human["score"] = row[s.human_score]
        if s.human_pass and s.human_pass in row:
            human["pass"] = rel.label(row[s.human_pass])
        return {"human": human} if human else {}

    # --- dataset level ---------------------------------------------------------------------------------
    def finalize(self, results: pl.DataFrame, dimensions: pl.DataFrame) -> dict[str, pl.DataFrame]:
        from vision_eval.grading.calibration import calibration_table

        s = self.settings
        if not (s.human_score or s.human_pass):
            return {}
        table = calibration_table(results, dimensions, s)
        self._calibration = {"rows": table.to_dicts()}
        return {"calibration": table}

    def summarize(self, results: pl.DataFrame) -> dict[str, Any]:
        from vision_eval.grading.calibration import calibration_table, panel_alpha

        s = self.settings
        metrics: dict[str, Any] = {"cache_hits": int(results["cached"].fill_null(False).sum())}
        scheduler = self.context.services.get(SERVICE)
        if scheduler is not None:
            metrics["scheduler"] = scheduler.stats_for(self.name)
        skipped = results.filter(pl.col("status") == SKIPPED)
        if not self.judges and skipped.height:
            estimated = skipped["details"].str.json_path_match("$.estimated_input_tokens").cast(pl.Int64)
            metrics["planned_calls"] = int(skipped["details"].str.json_path_match("$.calls").cast(pl.Int64).sum() or 0)
            metrics["estimated_input_tokens"] = int(estimated.sum() or 0)
        if s.panel:
            metrics["panel"] = panel_alpha(results, [label for label, _ in self.judges])
        if s.human_score or s.human_pass:
            rows = self._calibration["rows"] if self._calibration else calibration_table(results, None, s).to_dicts()
            metrics["calibration"] = rows
            processed = results.filter(pl.col("status") == PROCESSED)
            if processed.height and not processed["details"].str.contains('"human": ').any():
                columns = ", ".join(c for c in (s.human_score, s.human_pass) if c)
                metrics["calibration_warning"] = f"no human values found: is {columns} a dataset column?"
        return metrics
