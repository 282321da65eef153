"""``select_best``: the grader picks the best of a row's candidates, shown in several orders against position
bias (promptfoo's contract, images in view; default thresholds in
:mod:`vision_eval.evaluators.graded.output_graders`)."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any, ClassVar

import polars as pl

from vision_eval.example import GRADED_NOTE, PHOTO_ROWS, PHOTOS, Example
from vision_eval.grading import prompts
from vision_eval.grading.base import GradedEvaluator
from vision_eval.grading.calls import Asker
from vision_eval.grading.outcomes import Grade
from vision_eval.grading.parsers import parse_select_best
from vision_eval.grading.settings import GradedSettings
from vision_eval.results import PROCESSED


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


class SelectBest(GradedEvaluator[SelectBestSettings]):
    """The grader picks the best candidate (first integer in its reply), in several orders against position bias.

    The row's score is the first candidate's share of the win (1 won, 0 lost, 1/k in a k-way tie) and it passes
    when that candidate won alone; every candidate's share is a dimension."""

    type_name: ClassVar[str] = "select_best"
    example: ClassVar[Example] = Example(
        {"type": "select_best", "criteria": "The most accurate description", "candidates": ["output", "output_b"]},
        [
            {**PHOTO_ROWS[0], "output_b": "A cat on a sofa."},
            {**PHOTO_ROWS[1], "output_b": "A dog on a beach."},
        ],
        PHOTOS,
        note=GRADED_NOTE,
    )
    required_columns = ()
    default_prompt = prompts.SELECT_BEST
    row_setting = "criteria"

    def __init__(self, name: str, settings: SelectBestSettings, context: Any = None) -> None:
        super().__init__(name, settings, context)
        if settings.orders < 1 or not settings.candidates:
            raise ValueError("select_best needs at least one candidate column and orders >= 1")

    def columns_needed(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys((*super().columns_needed(), *self.settings.candidates)))

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
