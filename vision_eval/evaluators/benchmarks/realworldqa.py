"""``realworldqa``: RealWorldQA (xAI, 2024), protocol ``lmms_eval`` (lmms-eval ``tasks/realworldqa/utils.py``): an
answer A-D is read with lmms-eval's shared letter reader (``tasks/_task_utils/mcq_extract.py``; no letter: scored 0
and counted ``unparseable``); any other answer must equal the stripped reply lowercased, without trailing periods."""

from __future__ import annotations

from typing import ClassVar

from vision_eval.evaluators.benchmarks.choices import LetterChoice, mcq_letter, two_rows, verdict
from vision_eval.example import Example
from vision_eval.rowwise import RowResult


def realworldqa_row(protocol: str, output: str, expected: str) -> RowResult:
    """RealWorldQA: a letter answer read by lmms-eval's shared reader, any other answer matched as text."""
    gold = expected.strip()
    if gold.upper() in ("A", "B", "C", "D"):
        letter = mcq_letter(output, ["A", "B", "C", "D"])
        return verdict(protocol, letter or None, gold.upper(), letter == gold.upper(), bool(letter))
    prediction = output.lower().strip().rstrip(".")
    return verdict(protocol, prediction, gold, prediction == gold.lower(), True)


class RealWorldQa(LetterChoice):
    """RealWorldQA: the letter (or the text, for answers that are not A-D) of ``output`` against
    ``expected_output``."""

    type_name: ClassVar[str] = "realworldqa"
    protocols: ClassVar[dict[str, str]] = {
        "lmms_eval": "lmms-eval tasks/realworldqa/utils.py + tasks/_task_utils/mcq_extract.py @75571cf"
    }
    rule = staticmethod(realworldqa_row)
    example: ClassVar[Example] = two_rows(
        "realworldqa", {"output": "B.", "expected_output": "B"}, {"output": "2 cars", "expected_output": "2"}
    )
