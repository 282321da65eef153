"""``mathvision``: MATH-Vision (Wang et al., 2024), 3,040 competition problems with images (testmini: 304), in 16
subjects and 5 levels; multiple choice (options A-E) or a free-form answer.

Protocol ``lmms_eval``: lmms-eval's standard evaluation (``tasks/mathvision/utils.py``
``mathvision_process_results`` with ``eval_utils.py``), rule-based, no judge. The reply, stripped, is read in steps:

1. a reply ending ``" X."`` or ``" (X)."``, or starting ``"X\\n"``, ``"(X)\\n"`` or ``"(X) X\\n"`` (X in A-E) is X;
   a reply whose text after its last ``"is "`` (final period dropped) is a number is that number;
2. without ``oxed{`` in it, the text after the last "the answer is", "the final answer is", "the correct answer
   is" or "the answer should be" (also capitalised), cut at its first line break and first ``". "``; with several
   ``oxed{``, the last box;
3. MathVision's ``find_math_answer``: lowercased, the last ``\\boxed{...}`` (first ``oxed{`` to last ``}``), the
   value after the last ``=`` and ``\\approx``, spaces, ``\\text``, ``\\left``/``\\right``, degrees and some units
   removed, then its ``_strip_string`` clean-up (dollar signs, ``\\%``, ``\\text{ `` units, leading ``.``, ``0.5``
   as ``\\frac{1}{2}``, ``a/b`` as ``\\frac{a}{b}``; ``\\frac12`` braced only where the text has a square root, as
   the reference does); then ``(a)``/``{a}`` (a-e) as the letter, the final period, a leading colon and white space
   removed.

The answer is right when MathVision's ``is_equal`` holds against the answer or, for a multiple-choice question, the
text of the right option: equal after lowercasing and stripping; or both lists ``(a,b)`` / ``[a,b]`` whose items
evaluate to the same numbers to two decimals; or both evaluate to the same number to two decimals
(:mod:`latex_value`). An empty answer is counted wrong and ``unparseable``.

Dataset-level numbers: **Overall** as lmms-eval reports it (the percentage right, rounded to two decimals), and, as
the MATH-Vision paper tabulates them, the accuracy (%) per ``subject`` and per ``level``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from typing import Any, ClassVar

import polars as pl
from pydantic import field_validator

from vision_eval.evaluators.benchmarks.choices import OPTIONS_NOT_A_LIST
from vision_eval.evaluators.benchmarks.grouped import GroupedMetric, per_group
from vision_eval.evaluators.benchmarks.latex_value import latex_value
from vision_eval.evaluators.benchmarks.protocols import Protocol, ProtocolSettings, check_protocol
from vision_eval.evaluators.benchmarks.text import details_json
from vision_eval.example import Example
from vision_eval.llm.templates import option_list
from vision_eval.results import PROCESSED
from vision_eval.rowwise import RowResult

NOT_AN_OPTION_LETTER = "expected_output is not the letter of one of the options"
_FLAGS = ("the final answer is", "the answer is", "the correct answer is", "the answer should be")
_BOXED = re.compile("oxed{(.*)}", flags=re.S)
_MATH_CLEANUP = (
    (" ", ""), ("\\,", ""), ("∞", "\\infty"), ("+\\infty", "\\infty"), ("\\\\", "\\"), ("\n", ""),
    ("\\text", ""), ("\\mbox", ""), ("bmatrix", "pmatrix"), ("\\left", ""), ("\\right", ""), ("^{\\circ}", ""),
    ("^\\circ", ""), ("{m}^3", ""), ("m^3", ""), ("{units}", ""), ("units", ""), ("{km}", ""), ("km", ""),
)  # fmt: skip
_STRIP_CLEANUP = (
    ("\n", ""), ("\\!", ""), ("\\\\", "\\"), ("tfrac", "frac"), ("dfrac", "frac"), ("\\left", ""), ("\\right", ""),
    ("^{\\circ}", ""), ("^\\circ", ""), ("\\$", ""), ("$", ""),
)  # fmt: skip
_CHOICE_MARKS = tuple((f"({c})", c) for c in "abcde") + tuple((f"{{{c}}}", c) for c in "abcde")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _replace_all(text: str, pairs: tuple[tuple[str, str], ...]) -> str:
    for old, new in pairs:
        text = text.replace(old, new)
    return text


def _braced_sqrt(text: str) -> str:
    """``\\sqrt2`` as ``\\sqrt{2}`` (one character braced)."""
    head, *parts = text.split("\\sqrt")
    return head + "".join(
        "\\sqrt{" + part[0] + "}" + part[1:] if part and part[0] != "{" else "\\sqrt" + part for part in parts
    )


def _braced_fracs(text: str) -> str:
    """``\\frac12`` as ``\\frac{1}{2}``; the text unchanged when a ``\\frac`` has fewer than two characters after."""
    head, *parts = text.split("\\frac")
    out = head
    for part in parts:
        out += "\\frac"
        if part and part[0] == "{":
            out += part
        elif len(part) < 2:
            return text
        elif part[1] != "{":
            out += "{" + part[0] + "}{" + part[1] + "}" + part[2:]
        else:
            out += "{" + part[0] + "}" + part[1:]
    return out


def _slash_as_frac(text: str) -> str:
    """``3/4`` (two integers written plainly) as ``\\frac{3}{4}``."""
    parts = text.split("/")
    if len(parts) != 2:
        return text
    try:
        top, bottom = int(parts[0]), int(parts[1])
    except ValueError:
        return text
    return f"\\frac{{{top}}}{{{bottom}}}" if text == f"{top}/{bottom}" else text


def _strip_math(text: str) -> str:
    """MathVision's ``_strip_string`` clean-up (see the module docstring)."""
    text = _replace_all(text, _STRIP_CLEANUP)
    text = text.split("\\text{ ")[0].replace("\\%", "")
    text = text.replace(" .", " 0.").replace("{.", "{0.")
    if not text:
        return text
    if text[0] == ".":
        text = "0" + text
    if text.count("=") == 1:
        text = text.split("=")[-1]
    if text.count("\\approx") == 1:
        text = text.split("\\approx")[-1]
    if "sqrt" in text:
        text = _braced_sqrt(text)
    text = text.replace(" ", "")
    if "sqrt" in text:
        text = _braced_fracs(text)
    if text == "0.5":
        text = "\\frac{1}{2}"
    return _slash_as_frac(text)


def math_answer(text: str) -> str:
    """MathVision's ``find_math_answer``: the answer in a (pre-read) reply."""
    text = text.lower().replace("{}", "")
    boxed = _BOXED.findall(text)
    answer = boxed[-1] if boxed else text
    closing, opening = answer.find("}"), answer.find("{")
    if closing != -1 and (opening == -1 or closing < opening):
        answer = answer.split("}")[0]
    answer = answer.split("=")[-1].split("\\approx")[-1]
    return _strip_math(_replace_all(answer, _MATH_CLEANUP))


def _after_flags(answer: str) -> str:
    for flag in _FLAGS:
        for spelled in (flag, flag.replace("the", "The")):
            before = answer
            answer = answer.split(spelled)[-1].strip()
            if spelled in before:
                answer = answer.split("\n")[0].split(". ")[0]
    return answer


def read_answer(reply: str) -> str:
    """The answer the reference reads in a reply (steps 1-3 of the module docstring)."""
    answer = reply.strip()
    for letter in "ABCDE":
        if answer.endswith((f" {letter}.", f" ({letter}).")) or answer.startswith(
            (f"{letter}\n", f"({letter})\n", f"({letter}) {letter}\n")
        ):
            answer = letter
    last = answer.split("is ")[-1].rstrip(".")
    if _is_number(last):
        answer = last
    if "oxed{" not in answer:
        answer = _after_flags(answer)
    elif answer.count("oxed{") > 1:
        answer = "\\boxed{" + answer.split("oxed{")[-1]
    return _replace_all(math_answer(answer), _CHOICE_MARKS).rstrip(".").lstrip(":").strip()


def _listed(text: str) -> str:
    """MathVision's ``eval_tuple``: a list ``(a,b)`` / ``[a,b]`` with its items as rounded numbers (unchanged when an
    item has no value)."""
    items = text[1:-1].split(",")
    brackets = text[0] + text[-1]
    if brackets not in ("()", "[]") or len(items) < 2:
        return text
    shown = []
    for item in items:
        if "infty" in item or item in ("a", "-a"):
            shown.append(item)
            continue
        value = latex_value(item)
        if value is None:
            return text
        shown.append(str(round(value, 2)))
    return brackets[0] + ",".join(shown) + brackets[1]


def equal_answers(first: str, second: str) -> bool:
    """MathVision's ``is_equal``: the same text (lowercased, stripped), the same list, or the same number to two
    decimals."""
    first, second = first.lower(), second.lower()
    if not first.replace(" ", "") or not second.replace(" ", ""):
        return False
    if first.strip() == second.strip():
        return True
    first, second = _listed(first), _listed(second)
    if first == second:
        return True
    first_value, second_value = latex_value(first), latex_value(second)
    if first_value is None or second_value is None:
        return False
    return round(first_value, 2) == round(second_value, 2)


def score_row(protocol: str, output: str, expected: str, options: Any) -> RowResult:
    """One MathVision problem: the reply's answer (:func:`read_answer`) against the answer and, for a multiple-choice
    problem, the right option's text."""
    choices = option_list(options) if options is not None else []
    if choices is None:
        return RowResult("error", details=details_json(protocol=protocol), error=OPTIONS_NOT_A_LIST)
    truth = str(expected)
    option_text = ""
    if choices:
        index = ord(truth) - ord("A") if len(truth) == 1 else -1
        if not 0 <= index < len(choices):
            return RowResult("error", details=details_json(protocol=protocol), error=NOT_AN_OPTION_LETTER)
        option_text = choices[index]
    answer = read_answer(output)
    right = equal_answers(truth, answer) or equal_answers(option_text, answer)
    unread = {} if answer else {"unparseable": True}
    details = details_json(protocol=protocol, prediction=answer, expected=truth, **unread)
    return RowResult("processed", float(right), details)


class MathVisionSettings(ProtocolSettings):
    """Settings of ``mathvision``."""

    protocol: Protocol = "lmms_eval"
    """``lmms_eval`` (lmms-eval's mathvision standard evaluation); see docs/benchmarks.md."""

    @field_validator("protocol")
    @classmethod
    def _offered(cls, value: str) -> str:
        return check_protocol(MathVision, value)


class MathVision(GroupedMetric[MathVisionSettings]):
    """MATH-Vision: the answer read from ``output`` against ``expected_output`` (a letter when ``options`` lists the
    choices, else the answer itself), by the reference's rules and numeric equality to two decimals.

    Reads ``options`` (a list, empty for free-form problems), ``subject`` and ``level``. The summary has
    ``Overall`` (%, as lmms-eval rounds it) and the accuracy (%) per subject and per level."""

    type_name: ClassVar[str] = "mathvision"
    protocols: ClassVar[dict[str, str]] = {
        "lmms_eval": "lmms-eval tasks/mathvision/utils.py mathvision_process_results + eval_utils.py @75571cf"
    }
    missing_protocols: ClassVar[dict[str, str]] = {
        "official": "the authors' evaluation (mathllm/MATH-V) reads answers with the same find_math_answer and "
        "is_equal; not reproduced separately, use lmms_eval",
    }
    row_columns = ("output", "expected_output", "options")
    group_columns = ("subject", "level")
    default_threshold = 1.0
    example: ClassVar[Example] = Example(
        {"type": "mathvision"},
        [
            {
                "id": "0",
                "output": "The two areas add up, so the answer is \\boxed{\\frac{1}{2}}.",
                "expected_output": "0.5",
                "options": [],
                "subject": "metric geometry - area",
                "level": 2,
            },
            {
                "id": "1",
                "output": "Counting the edges, the answer is (C).",
                "expected_output": "D",
                "options": ["3", "4", "5", "6", "7"],
                "subject": "combinatorics",
                "level": 3,
            },
        ],
    )

    def row_function(self) -> Callable[..., RowResult]:
        return partial(score_row, self.protocol)

    def benchmark(self, rows: pl.DataFrame) -> dict[str, Any]:
        processed = rows.filter(pl.col("status") == PROCESSED)
        overall = round(float(processed["score"].sum()) / processed.height * 100, 2) if processed.height else None
        percent = processed.with_columns(pl.col("score") * 100)
        return {
            **self.counts(rows),
            "Overall": overall,
            "subjects": per_group(percent, "subject"),
            "levels": per_group(percent, "level"),
        }
