"""``mmmu``: MMMU (Yue et al., 2024), multiple-choice and open questions, per subject, per discipline and overall.

Protocols (what each reads, written from the references named in ``Mmmu.protocols``; no code copied):

- ``official`` (MMMU-Benchmark/MMMU ``mmmu/utils/eval_utils.py``, run by ``main_parse_and_eval.py``): the reply as
  given. A multiple-choice reply has ``, . ! ? ; : '`` stripped from its ends (one mark after the other), is padded
  with a space on each side and read as: a bracketed letter ``(B)``; else a letter between spaces `` B ``; else, when
  the reply has more than 5 words, an option's text inside it (case-insensitive). Several candidates: the one that
  occurs last. None: a random letter (see below). An open reply is cut into key parts (the text after the last of
  "could be", "so", "is", "thus", "therefore", "final", "answer", "result" — or ``=`` in the last line — whichever
  leaves the shortest tail, line by line), the numbers in them are added, and each is normalised (a number rounded
  to 2 decimals, else lowercased text; a one-letter text padded); it is right when a normalised number equals the
  answer's or the answer's text is inside a predicted text.
- ``lmms_eval`` (lmms-eval ``tasks/mmmu/utils.py`` and ``tasks/_task_utils/mmmu_mcq_utils.py``): the reply stripped
  first (``api/task.py``); multiple choice as above but the second reading is a letter followed by a space (``B ``,
  so ``DNA `` reads as A) and a third one a letter followed by a period (``B.``). Open questions: since lmms-eval
  commit 736454b (June 2025) ``mmmu_process_results`` keeps only the first of the predictions, as text, and
  ``eval_open`` then iterates that text's *characters*, so an open answer is right only when the reference answer is
  empty: every open question scores 0 under this protocol (reproduced, and said in docs/benchmarks.md).

A multiple-choice reply neither protocol can read gets a random letter, as the references draw it: Python's
``random.choice`` on one generator seeded once (``official``: 42, at the import of eval_utils.py, replies read
subject by subject in the script's subject order; ``lmms_eval``: 0, ``simple_evaluate``'s default seed, replies in
dataset order). The draw needs every earlier unread reply, so it is made over the whole run in the summary: the row
keeps score 0 with ``details.unparseable`` and its ``choices``; the summary's numbers include the draws and say how
many there were.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from typing import Any, ClassVar

import polars as pl
from pydantic import field_validator

from vision_eval.evaluators.benchmarks.choices import (
    OPTIONS_NOT_A_LIST,
    ChoiceMetric,
    ChoiceSettings,
    letters,
    option_list,
)
from vision_eval.evaluators.benchmarks.grouped import RandomPick, per_group, with_random_picks
from vision_eval.evaluators.benchmarks.protocols import RAW_CHARS, Protocol, check_protocol
from vision_eval.evaluators.benchmarks.text import details_json
from vision_eval.example import Example
from vision_eval.results import PROCESSED
from vision_eval.rowwise import RowResult

MULTIPLE_CHOICE = "multiple-choice"

DISCIPLINES: dict[str, list[str]] = {
    "Art & Design": ["Art", "Art_Theory", "Design", "Music"],
    "Business": ["Accounting", "Economics", "Finance", "Manage", "Marketing"],
    "Science": ["Biology", "Chemistry", "Geography", "Math", "Physics"],
    "Health & Medicine": [
        "Basic_Medical_Science",
        "Clinical_Medicine",
        "Diagnostics_and_Laboratory_Medicine",
        "Pharmacy",
        "Public_Health",
    ],
    "Humanities & Social Science": ["History", "Literature", "Sociology", "Psychology"],
    "Tech & Engineering": [
        "Agriculture",
        "Architecture_and_Engineering",
        "Computer_Science",
        "Electronics",
        "Energy_and_Power",
        "Materials",
        "Mechanical_Engineering",
    ],
}
"""The paper's six disciplines and their subjects (subjects as the dataset's ids name them)."""
SUBJECTS_READ_ORDER = sorted(subject for subjects in DISCIPLINES.values() for subject in subjects)
"""The order main_parse_and_eval.py reads the subjects in (its subject table, which is alphabetical)."""

# --- multiple choice -----------------------------------------------------------------------------------------

_EDGE_MARKS = ",.!?;:'"


def _padded(reply: str) -> str:
    for mark in _EDGE_MARKS:  # one mark after the other, as the references strip them
        reply = reply.strip(mark)
    return f" {reply} "


def read_choice(reply: str, options: list[str], protocol: str) -> str | None:
    """The letter ``protocol`` reads from a multiple-choice reply, or ``None`` when it finds none."""
    text = _padded(reply)
    choices = letters(len(options))
    found = [c for c in choices if f"({c})" in text]
    position: Callable[[str], int] = lambda c: text.rfind(f"({c})")  # noqa: E731
    if not found:
        shapes = ["{} "] if protocol == "lmms_eval" else [" {} "]
        shapes += ["{}."] if protocol == "lmms_eval" else []
        for shape in shapes:
            found = [c for c in choices if shape.format(c) in text]
            if found:
                break
        position = lambda c: text.rfind(f" {c} ")  # noqa: E731
    if not found and len(text.split()) > 5:
        lowered = text.lower()
        by_text = dict(zip(choices, options, strict=True))
        found = [c for c in choices if by_text[c].lower() in lowered]
        position = lambda c: lowered.rfind(by_text[c].lower())  # noqa: E731
    if not found:
        return None
    positions = [position(c) for c in found]
    return found[positions.index(max(positions))]  # the last one in the reply; the first on a tie


# --- open questions -------------------------------------------------------------------------------------------

_KEYS = ("could be ", "so ", "is ", "thus ", "therefore ", "final ", "answer ", "result ")
_TRIVIAL = frozenset(":,.!?;'")
_WITH_COMMAS = re.compile(r"-?\b\d{1,3}(?:,\d{3})+\b")
_SCIENTIFIC = re.compile(r"-?\d+(?:\.\d+)?[eE][+-]?\d+")
_PLAIN = re.compile(r"-?(?:\d+\.\d+|\.\d+|\d+\b)(?![eE][+-]?\d+)(?![,\d])")


def numbers_in(text: str) -> list[str]:
    """Numbers written with thousands commas, then in scientific notation, then plain ones (as found)."""
    return [*_WITH_COMMAS.findall(text), *_SCIENTIFIC.findall(text), *_PLAIN.findall(text)]


def normalized(text: str) -> list[str | float]:
    """A text as the references compare it: a number (commas removed, rounded to 2 decimals), else lowercased text
    (one character padded both ways, to avoid trivial matches)."""
    text = text.strip()
    try:
        return [round(float(text.replace(",", "")), 2)]
    except ValueError:
        text = text.lower()
        return [" " + text, text + " "] if len(text) == 1 else [text]


def _key_parts(reply: str) -> list[str]:
    reply = reply.strip().strip(".").lower()
    # The references split at ". " before a capital or at a new line; the text is lowercased first, so only new
    # lines split it.
    lines = reply.split("\n")
    parts = []
    for index, line in enumerate(lines):
        keys = (*_KEYS, "=") if index == len(lines) - 1 else _KEYS
        shortest: str | None = None
        for key in keys:
            if key in line:
                tail = line.split(key)[-1].strip()
                if not shortest or len(tail) < len(shortest):  # an empty tail found first gives way to any later one
                    shortest = tail
        if shortest and shortest.strip() not in _TRIVIAL:
            parts.append(shortest)
    return parts or [reply]


def open_predictions(reply: str) -> list[str | float]:
    """The distinct normalised predictions of an open reply (key parts and the numbers in them)."""
    parts = _key_parts(reply)
    found = parts + [number for part in parts for number in numbers_in(part)]
    return list(dict.fromkeys(value for text in found for value in normalized(text)))


def open_correct(answer: str, predictions: list[str | float]) -> bool:
    """The official reading of an open question: a predicted number equals the answer's, or the answer's text is
    inside a predicted text."""
    golds = normalized(answer)
    for prediction in predictions:
        if isinstance(prediction, str):
            if any(isinstance(g, str) and g in prediction for g in golds):
                return True
        elif prediction in golds:
            return True
    return False


def lmms_eval_open_correct(answer: str, reply: str) -> bool:
    """lmms-eval's reading: the first prediction as text, compared character by character, which only an empty
    reference answer (normalised to ``""``, inside any character) can match."""
    golds = normalized(answer)
    first = reply.strip().strip(".")  # the first prediction is empty exactly when the whole reply reads as empty
    return bool(first) and any(isinstance(g, str) and g == "" for g in golds)


# --- the row ----------------------------------------------------------------------------------------------------


def score_row(protocol: str, output: str, expected: str, options: Any, question_type: str | None) -> RowResult:
    """One MMMU row under ``protocol`` (see the module docstring)."""
    reply = output.strip() if protocol == "lmms_eval" else output
    if question_type != MULTIPLE_CHOICE:
        if protocol == "lmms_eval":
            right = lmms_eval_open_correct(expected, reply)
            details = details_json(protocol=protocol, question_type="open", expected=expected)
        else:
            predictions = open_predictions(reply)
            right = open_correct(expected, predictions)
            texts = [p if isinstance(p, str) else repr(p) for p in predictions]
            details = details_json(protocol=protocol, question_type="open", predictions=texts, expected=expected)
        return RowResult("processed", float(right), details)
    return choice_row(protocol, protocol, reply, output, expected, options, question_type=MULTIPLE_CHOICE)


def choice_row(
    protocol: str, reading: str, reply: str, raw: str, expected: str, options: Any, **shown: str
) -> RowResult:
    """A multiple-choice row read with ``reading`` (``official`` or ``lmms_eval``): the letter against ``expected``,
    or, when none is read, score 0 with ``unparseable`` and the ``choices`` the summary draws from. ``raw``: the
    reply as received (kept in ``details`` when unread); ``shown``: more ``details`` after the protocol."""
    choices = option_list(options)
    if choices is None:
        details = details_json(protocol=protocol, options=str(options)[:RAW_CHARS])
        return RowResult("error", details=details, error=OPTIONS_NOT_A_LIST)
    letter = read_choice(reply, choices, reading)
    if letter is None:
        details = details_json(
            protocol=protocol,
            **shown,
            prediction=None,
            expected=expected,
            unparseable=True,
            choices=letters(len(choices)),
            raw=raw[:RAW_CHARS],
        )
        return RowResult("processed", 0.0, details)
    details = details_json(protocol=protocol, **shown, prediction=letter, expected=expected)
    return RowResult("processed", float(letter == expected), details)


# --- the evaluator ----------------------------------------------------------------------------------------------


class MmmuSettings(ChoiceSettings):
    """Settings of ``mmmu``."""

    protocol: Protocol = "official"
    """``official`` (the MMMU authors' eval_utils.py, default) or ``lmms_eval`` (lmms-eval's mmmu task, whose open
    questions all score 0); see docs/benchmarks.md."""

    @field_validator("protocol")
    @classmethod
    def _offered(cls, value: str) -> str:
        return check_protocol(Mmmu, value)


def subject_of(sample_id: pl.Expr) -> pl.Expr:
    """The subject in an MMMU id (``validation_Art_Theory_12`` -> ``Art_Theory``), as the references read it."""
    return sample_id.str.extract(r"^[^_]*_(.+?)_\d+$", 1)


def subject_numbers(processed: pl.DataFrame) -> dict[str, Any]:
    """MMMU's numbers over the processed rows (``subject``, ``score``, ``picked``): ``Overall``, how many random
    picks were right, and the mean per discipline and per subject, in the paper's order."""
    discipline = {s: d for d, subjects in DISCIPLINES.items() for s in subjects}
    processed = processed.with_columns(
        pl.col("subject").replace_strict(discipline, default=None, return_dtype=pl.Utf8).alias("discipline")
    )
    return {
        "Overall": processed["score"].mean(),
        "random_picks_correct": int(processed.filter(pl.col("picked").is_not_null())["score"].sum()),
        "disciplines": per_group(processed, "discipline", order=list(DISCIPLINES)),
        "subjects": per_group(processed, "subject", order=[s for d in DISCIPLINES.values() for s in d]),
    }


class Mmmu(ChoiceMetric[MmmuSettings]):
    """MMMU accuracy: the choice (or open answer) read from ``output`` against ``expected_output``.

    Reads the columns ``options`` (the choices, a list or MMMU's ``"['a', 'b']"`` text) and ``question_type``
    (``multiple-choice`` or ``open``); the subject is read from the sample id, as the references do. The summary
    has ``Overall`` (accuracy over every question), each discipline's and each subject's accuracy and count, and
    how many multiple-choice replies could not be read (given a random letter as the reference draws it).
    """

    type_name: ClassVar[str] = "mmmu"
    protocols: ClassVar[dict[str, str]] = {
        "official": "MMMU-Benchmark/MMMU mmmu/utils/eval_utils.py + main_parse_and_eval.py @bb0b95a",
        "lmms_eval": "lmms-eval tasks/mmmu/utils.py + tasks/_task_utils/mmmu_mcq_utils.py @75571cf",
    }
    random_pick: ClassVar[dict[str, RandomPick]] = {
        "official": RandomPick(42, "eval_utils.py's random.seed(42), subjects in main_parse_and_eval.py's order"),
        "lmms_eval": RandomPick(0, "simple_evaluate's default random_seed, replies in dataset order"),
    }
    group_columns = ("question_type",)
    row_columns = ("output", "expected_output", "options", "question_type")
    example: ClassVar[Example] = Example(
        {"type": "mmmu"},
        [
            {
                "id": "validation_Art_1",
                "output": "The answer is (B).",
                "expected_output": "B",
                "options": "['oil', 'fresco', 'ink']",
                "question_type": "multiple-choice",
            },
            {
                "id": "validation_Math_2",
                "output": "So the area is 12.5",
                "expected_output": "13",
                "options": "[]",
                "question_type": "open",
            },
        ],
    )

    def row_function(self) -> Callable[..., RowResult]:
        return partial(score_row, self.protocol)

    def benchmark(self, rows: pl.DataFrame) -> dict[str, Any]:
        rows = rows.with_columns(subject_of(pl.col("sample_id")).alias("subject"))
        order = None
        if self.protocol == "official":
            rank = {subject: i for i, subject in enumerate(SUBJECTS_READ_ORDER)}
            order = pl.col("subject").replace_strict(rank, default=len(rank), return_dtype=pl.Int64)
        processed = with_random_picks(rows, self.random_pick[self.protocol], order).filter(
            pl.col("status") == PROCESSED
        )
        return {
            **self.counts(rows),
            **subject_numbers(processed),
            "open_questions": int(processed["question_type"].eq("open").sum()),
        }
