"""``scienceqa``: ScienceQA-IMG (Lu et al., 2022), protocol ``lmms_eval`` (lmms-eval ``tasks/scienceqa/utils.py``): the
stripped reply equal to the answer's letter (case-insensitive), or starting with an upper-case character and a
period, that character being the answer's letter (any other reply scores 0; one that is no letter counts as
``unparseable``). Summary: accuracy overall and per ``subject``."""

from __future__ import annotations

from typing import Any, ClassVar

from vision_eval.evaluators.benchmarks.choices import LetterChoice, gold_letter, two_rows, verdict
from vision_eval.evaluators.benchmarks.text import details_json
from vision_eval.example import Example
from vision_eval.rowwise import RowResult


def scienceqa_row(protocol: str, output: str, expected: str, options: Any) -> RowResult:
    """ScienceQA-IMG: the reply is the letter, or starts with ``X.`` where X is upper case."""
    gold = gold_letter(expected, options)
    if isinstance(gold, str):
        return RowResult("error", details=details_json(protocol=protocol), error=gold)
    letter, choices = gold
    target, reply = letter.lower(), output.strip()
    if reply.lower() == target:
        return verdict(protocol, reply, letter, True, True)
    if len(reply) >= 2 and reply[0].isupper() and reply[1] == ".":
        return verdict(protocol, reply[0], letter, reply[0].lower() == target, True)
    return verdict(protocol, reply[:1] or None, letter, False, reply.lower() in {c.lower() for c in choices})


class ScienceQa(LetterChoice):
    """ScienceQA-IMG: the letter of ``output`` against the option index ``expected_output``; reads ``choices``;
    accuracy overall and per ``subject``."""

    type_name: ClassVar[str] = "scienceqa"
    protocols: ClassVar[dict[str, str]] = {"lmms_eval": "lmms-eval tasks/scienceqa/utils.py @75571cf"}
    rule = staticmethod(scienceqa_row)
    row_columns = ("output", "expected_output", "choices")
    group_columns = ("subject",)
    example: ClassVar[Example] = two_rows(
        "scienceqa",
        {"output": "A. magnet", "expected_output": "0", "choices": ["magnet", "wood"], "subject": "natural science"},
        {"output": "wood", "expected_output": "0", "choices": ["magnet", "wood"], "subject": "natural science"},
    )
