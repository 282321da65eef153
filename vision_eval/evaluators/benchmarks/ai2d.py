"""``ai2d``: AI2D (Kembhavi et al., 2016), protocol ``lmms_eval`` (lmms-eval ``tasks/ai2d/ai2d.yaml`` + ``utils.py``):
the task's filter keeps the letter of a reply that starts with ``X.`` (white space before it allowed), else the whole
reply; then lmms-eval's ``exact_match`` with ignore_case and ignore_punctuation: the stripped text lowercased, ASCII
punctuation removed, equal to the answer's letter (a text that is no option letter is counted as ``unparseable``)."""

from __future__ import annotations

import re
import string
from typing import Any, ClassVar

from vision_eval.evaluators.benchmarks.choices import LetterChoice, gold_letter, two_rows, verdict
from vision_eval.evaluators.benchmarks.text import details_json
from vision_eval.example import Example
from vision_eval.rowwise import RowResult

_LEADING_LETTER = re.compile(r"^\s*([A-Z])\.")
_ASCII_PUNCTUATION = str.maketrans("", "", string.punctuation)


def ai2d_row(protocol: str, output: str, expected: str, options: Any) -> RowResult:
    """AI2D: the task's letter filter, then exact match ignoring case and ASCII punctuation."""
    gold = gold_letter(expected, options)
    if isinstance(gold, str):
        return RowResult("error", details=details_json(protocol=protocol), error=gold)
    letter, choices = gold
    leading = _LEADING_LETTER.match(output)
    kept = (leading.group(1) if leading else output).strip()
    # numpy's fixed-width text, which exact_match compares in, ignores trailing NUL characters
    prediction = kept.lower().translate(_ASCII_PUNCTUATION).rstrip("\x00")
    read = prediction in {c.lower() for c in choices}
    return verdict(protocol, prediction, letter, prediction == letter.lower().translate(_ASCII_PUNCTUATION), read)


class Ai2d(LetterChoice):
    """AI2D: the letter of ``output`` (lmms-eval's filter and exact match) against the option index
    ``expected_output``; reads ``options``."""

    type_name: ClassVar[str] = "ai2d"
    protocols: ClassVar[dict[str, str]] = {"lmms_eval": "lmms-eval tasks/ai2d/ai2d.yaml + utils.py @75571cf"}
    rule = staticmethod(ai2d_row)
    row_columns = ("output", "expected_output", "options")
    example: ClassVar[Example] = two_rows(
        "ai2d",
        {"output": "B. the sun", "expected_output": "1", "options": ["moon", "sun"]},
        {"output": "sun", "expected_output": "1", "options": ["moon", "sun"]},
    )
