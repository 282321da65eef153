"""``mmmu_pro``: MMMU-Pro (Yue et al., 2024), the ten-option (``standard``) and screenshot (``vision``) settings.

Protocol ``lmms_eval`` (lmms-eval ``tasks/mmmu_pro/utils.py``), on the reply stripped by ``api/task.py``:

- ``standard``: the letter read by lmms-eval's MMMU reader (``mmmu_mcq_utils.py``, the ``lmms_eval`` reading of
  :func:`~vision_eval.evaluators.benchmarks.mmmu.read_choice`); a reply with no letter gets a random one, drawn as
  lmms-eval draws it (Python's ``random`` seeded 0 by ``simple_evaluate``, replies in dataset order; replayed over the
  whole run in the summary, the row keeping score 0 with ``details.unparseable``).
- ``vision``: the task keeps the whole reply as the prediction, so only a reply that *is* the answer's letter is
  right (nothing is drawn; any other reply is counted ``unparseable``).

Summary as lmms-eval computes it: ``Overall`` (every question), each discipline and each ``subject``. The paper's
MMMU-Pro score is the mean of the two settings' Overall, each a run of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, ClassVar, Literal

import polars as pl
from pydantic import field_validator

from vision_eval.evaluators.benchmarks.choices import ChoiceMetric, ChoiceSettings, letters
from vision_eval.evaluators.benchmarks.grouped import RandomPick, with_random_picks
from vision_eval.evaluators.benchmarks.mmmu import choice_row, subject_numbers
from vision_eval.evaluators.benchmarks.protocols import RAW_CHARS, Protocol, check_protocol
from vision_eval.evaluators.benchmarks.text import details_json
from vision_eval.example import Example
from vision_eval.results import PROCESSED
from vision_eval.rowwise import RowResult


def standard_row(protocol: str, output: str, expected: str, options: Any) -> RowResult:
    """A ten-option question: the letter lmms-eval's MMMU reader finds in the stripped reply."""
    return choice_row(protocol, "lmms_eval", output.strip(), output, expected, options)


def vision_row(protocol: str, output: str, expected: str) -> RowResult:
    """A screenshot question: the whole stripped reply must be the answer."""
    reply = output.strip()
    unread = {} if reply in letters(26) else {"unparseable": True}
    details = details_json(protocol=protocol, prediction=reply[:RAW_CHARS], expected=expected, **unread)
    return RowResult("processed", float(reply == expected), details)


class MmmuProSettings(ChoiceSettings):
    """Settings of ``mmmu_pro``."""

    protocol: Protocol = "lmms_eval"
    """``lmms_eval`` (lmms-eval's mmmu_pro tasks); see docs/benchmarks.md."""
    setting: Literal["standard", "vision"] = "standard"
    """``standard`` (ten options in text: the letter is read from the reply) or ``vision`` (the question is in the
    screenshot: the reply must be the letter)."""

    @field_validator("protocol")
    @classmethod
    def _offered(cls, value: str) -> str:
        return check_protocol(MmmuPro, value)


class MmmuPro(ChoiceMetric[MmmuProSettings]):
    """MMMU-Pro accuracy: the letter of ``output`` against ``expected_output``, per ``subject`` and discipline.

    ``setting: standard`` reads ``options`` (a list or MMMU's ``"['a', 'b']"`` text)."""

    type_name: ClassVar[str] = "mmmu_pro"
    protocols: ClassVar[dict[str, str]] = {
        "lmms_eval": "lmms-eval tasks/mmmu_pro/utils.py + tasks/_task_utils/mmmu_mcq_utils.py @75571cf"
    }
    random_pick: ClassVar[dict[str, RandomPick]] = {
        "lmms_eval": RandomPick(0, "simple_evaluate's default random_seed, replies in dataset order"),
    }
    group_columns = ("subject",)
    example: ClassVar[Example] = Example(
        {"type": "mmmu_pro"},
        [
            {
                "id": "test_Art_1",
                "output": "(B)",
                "expected_output": "B",
                "options": "['oil', 'fresco', 'ink']",
                "subject": "Art",
            },
            {
                "id": "test_Art_2",
                "output": "C",
                "expected_output": "A",
                "options": "['oil', 'fresco', 'ink']",
                "subject": "Art",
            },
        ],
    )

    row_columns = ("output", "expected_output", "options")

    def columns_needed(self) -> tuple[str, ...]:
        needed = super().columns_needed()
        return needed if self.settings.setting == "standard" else tuple(c for c in needed if c != "options")

    def row_inputs(self, batch: pl.DataFrame) -> pl.DataFrame:
        inputs = super().row_inputs(batch)
        return inputs if self.settings.setting == "standard" else inputs.drop("options")

    def row_function(self) -> Callable[..., RowResult]:
        rule = standard_row if self.settings.setting == "standard" else vision_row
        return partial(rule, self.protocol)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "setting": self.settings.setting}

    def benchmark(self, rows: pl.DataFrame) -> dict[str, Any]:
        processed = with_random_picks(rows, self.random_pick[self.protocol]).filter(pl.col("status") == PROCESSED)
        return {**self.counts(rows), "setting": self.settings.setting, **subject_numbers(processed)}
