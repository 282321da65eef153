"""Model-graded assertions over a context and across candidates: ``context_recall``,
``context_faithfulness`` and ``select_best`` (promptfoo's contracts, images in view; default thresholds
in :mod:`vision_eval.evaluators.graded`)."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any, ClassVar

import polars as pl
from typing_extensions import TypeVar

from vision_eval.llm import grader_prompts as prompts
from vision_eval.llm.graded import GradedEvaluator
from vision_eval.llm.graders import parse_faithfulness, parse_recall, parse_select_best, parse_statements
from vision_eval.llm.grading import Asker, Grade, GradedSettings, TextList, load_prompt
from vision_eval.registry import register
from vision_eval.results import PROCESSED

IMAGES_ONLY = "(the attached images)"


def context_text(value: Any) -> str:
    """A context cell as text: a list of passages is joined with blank lines."""
    if value is None:
        return IMAGES_ONLY
    if isinstance(value, list | tuple):
        return "\n\n".join(str(v) for v in value if v is not None)
    return str(value)


class ContextSettings(GradedSettings):
    """Settings of the context assertions."""

    context: str | None = "context"
    """Column holding the context (text or a list of passages); ``null``: the images alone are the context."""


ContextSettingsT = TypeVar("ContextSettingsT", bound=ContextSettings, default=ContextSettings, covariant=True)


class _ContextEvaluator(GradedEvaluator[ContextSettingsT]):
    default_threshold = 0.5
    pass_from_score = True
    reads: ClassVar[tuple[str, ...]] = ("output",)

    def columns_needed(self) -> tuple[str, ...]:
        s = self.settings
        return tuple(dict.fromkeys((*super().columns_needed(), *self.reads, *([s.context] if s.context else []))))

    def extra_variables(self) -> set[str]:
        return {"context", "reference", "statements", "groundTruth"}

    def prepare_variables(self, row: dict[str, Any], variables: dict[str, Any]) -> None:
        s = self.settings
        variables["context"] = context_text(row.get(s.context) if s.context else None)

    def passes(self, score: float) -> bool:
        return score >= (self.threshold if self.threshold is not None else 0.0)


class ContextRecallSettings(ContextSettings):
    """Settings of ``context_recall``."""

    reference: str = "expected_output"
    """Column with the ground-truth answer whose sentences must be attributable to the context."""


@register
class ContextRecall(_ContextEvaluator[ContextRecallSettings]):
    """Share of the reference answer's sentences the grader attributes to the context (and images)."""

    type_name: ClassVar[str] = "context_recall"
    settings_model = ContextRecallSettings
    required_columns = ()

    @property
    def reads(self) -> tuple[str, ...]:  # type: ignore[override]
        return (self.settings.reference,)

    def templates(self) -> list[str]:
        return [load_prompt(self.settings.prompt, prompts.CONTEXT_RECALL)]

    def prepare_variables(self, row: dict[str, Any], variables: dict[str, Any]) -> None:
        super().prepare_variables(row, variables)
        variables["reference"] = str(row.get(self.settings.reference) or "")
        variables["expected_output"] = variables["groundTruth"] = variables["reference"]

    async def grade(self, asker: Asker) -> Grade:
        reply = await asker.ask(self.templates()[0])
        attributed, total = parse_recall(reply.text)
        score = attributed / total
        return Grade(score, self.passes(score), {"attributed": attributed, "sentences": total, "reply": reply.text})


@register
class ContextFaithfulness(_ContextEvaluator[ContextSettings]):
    """Share of the output's statements the context (and images) supports: statements, then verdicts."""

    type_name: ClassVar[str] = "context_faithfulness"
    settings_model = ContextSettings

    def templates(self) -> list[str]:
        return [prompts.FAITHFULNESS_STATEMENTS, load_prompt(self.settings.prompt, prompts.FAITHFULNESS_VERDICTS)]

    def plan(self, variables: dict[str, Any]) -> list[tuple[str, dict[str, Any], bool]]:
        statements = ["(statements extracted from the output in step 1)"]
        return [(self.templates()[0], {}, False), (self.templates()[1], {"statements": statements}, True)]

    async def grade(self, asker: Asker) -> Grade:
        first = await asker.ask(self.templates()[0], images=False)
        statements = parse_statements(first.text)
        second = await asker.ask(self.templates()[1], {"statements": TextList(statements)})
        unsupported, verdicts = parse_faithfulness(second.text, len(statements))
        score = min(1.0, max(0.0, 1.0 - unsupported / len(statements)))
        details = {"statements": statements, "unsupported": unsupported, "verdicts": verdicts, "reply": second.text}
        if verdicts != len(statements):
            details["warning"] = f"{verdicts} verdict(s) for {len(statements)} statement(s)"
        return Grade(score, self.passes(score), details)


class SelectBestSettings(GradedSettings):
    """Settings of ``select_best``."""

    criteria: str
    """What "best" means (Jinja2 allowed)."""
    candidates: list[str] = ["output"]
    """Columns holding the candidates, in order (the first is the row's own output); a single column holding a
    list (e.g. a sweep's outputs gathered per sample) is expanded."""
    orders: int = 2
    """Orders the candidates are shown in (rotations, at most one per candidate); a winner that changes with the
    order is reported as a tie. 1 disables the swap."""


@register
class SelectBest(GradedEvaluator[SelectBestSettings]):
    """The grader picks the best candidate (first integer in its reply), in several orders against position bias.

    The row's score is the first candidate's share of the win (1 won, 0 lost, 1/k in a k-way tie) and it passes
    when that candidate won alone; every candidate's share is a dimension."""

    type_name: ClassVar[str] = "select_best"
    settings_model = SelectBestSettings
    required_columns = ()

    def __init__(self, name: str, settings: SelectBestSettings, context: Any = None) -> None:
        super().__init__(name, settings, context)
        if settings.orders < 1 or not settings.candidates:
            raise ValueError("select_best needs at least one candidate column and orders >= 1")

    def columns_needed(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys((*super().columns_needed(), *self.settings.candidates)))

    def templates(self) -> list[str]:
        s = self.settings
        return [load_prompt(s.prompt, prompts.SELECT_BEST), s.criteria]

    def extra_variables(self) -> set[str]:
        return {"criteria", "candidates", "outputs"}

    def prepare_variables(self, row: dict[str, Any], variables: dict[str, Any]) -> None:
        s = self.settings
        if len(s.candidates) == 1 and isinstance(row.get(s.candidates[0]), list | tuple):
            values = list(row[s.candidates[0]])
            names = [f"candidate_{i}" for i in range(len(values))]
        else:
            values, names = [row.get(c) for c in s.candidates], list(s.candidates)
        if len(values) < 2:
            raise ValueError(f"select_best needs at least two candidates, the row has {len(values)}")
        variables["_candidates"] = [("" if v is None else str(v)) for v in values]
        variables["_names"] = names

    def plan(self, variables: dict[str, Any]) -> list[tuple[str, dict[str, Any], bool]]:
        texts = variables["_candidates"]
        orders = self._orders(len(texts))
        criteria = self.templates()[1]
        shown = [[texts[i] for i in order] for order in orders]
        return [(self.templates()[0], {"criteria": criteria, "candidates": c, "outputs": c}, True) for c in shown]

    def _orders(self, n: int) -> list[list[int]]:
        count = min(self.settings.orders, n)
        return [[(start + i) % n for i in range(n)] for start in range(count)]

    async def grade(self, asker: Asker) -> Grade:
        texts, names = asker.variables["_candidates"], asker.variables["_names"]
        criteria = asker.render(self.templates()[1])
        orders = self._orders(len(texts))

        async def pick(order: list[int]) -> int:
            shown = [texts[i] for i in order]
            reply = await asker.ask(self.templates()[0], {"criteria": criteria, "candidates": shown, "outputs": shown})
            return order[parse_select_best(reply.text, len(order))]

        picks = await asyncio.gather(*(pick(order) for order in orders))
        chosen = sorted(set(picks))
        share = 1.0 / len(chosen)
        dims = {name: (share if i in chosen else 0.0) for i, name in enumerate(names)}
        winner = names[chosen[0]] if len(chosen) == 1 else None
        details = {
            "winner": winner,
            "tie": winner is None,
            "tied": [names[i] for i in chosen] if winner is None else [],
            "picks": [{"order": [names[i] for i in order], "picked": names[p]} for order, p in zip(orders, picks)],
        }
        return Grade(dims[names[0]], winner == names[0], details, dims)

    def summarize(self, results: pl.DataFrame) -> dict[str, Any]:
        processed = results.filter(pl.col("status") == PROCESSED)
        winners = processed["details"].str.json_path_match("$.winner")
        wins = {k: v for k, v in Counter(winners.drop_nulls().to_list()).most_common()}
        ties = int(winners.is_null().sum())
        share = ties / processed.height if processed.height else None
        return {**super().summarize(results), "wins": wins, "ties": ties, "tie_rate": share}
