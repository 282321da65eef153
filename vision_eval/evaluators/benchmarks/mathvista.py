"""``mathvista``: MathVista (Lu et al., 2024), testmini: math questions on images, multiple choice or free form.

Protocol ``lmms_eval`` (lmms-eval ``tasks/mathvista/utils.py`` + ``mathvista_evals.py`` @75571cf): the reply stripped,
then the answer extracted (:func:`quick_extraction`: an empty reply is ""; a multiple-choice reply that is one of the
choices is taken; an integer (float) question's reply that Python's ``int`` (``float``) reads is taken); otherwise the
judge is asked with the reference's extraction prompt (its five worked examples, the question's ``query``, the
reply), text only, and its stripped reply is the extraction (an empty reply is asked again, five times in all, then
the extraction is ""). The extraction is then normalised by type (:func:`normalize`) and compared as text with the
answer.

Normalisation as the reference: multiple choice: a letter in parentheses ``(b)`` is taken (upper-cased), a letter of
one of the choices becomes that choice, anything else becomes the choice nearest by Levenshtein distance (the first
of equals); integer: ``int(float(x))``; float: ``round(float(x), precision)`` with the dataset's precision *as it is*
(the hub column is float64, and Python's ``round`` refuses a float number of digits: the reference's float answers
then all normalise to None and score 0 — reproduced, see docs/benchmarks.md); list: the text. A value that does not
convert becomes None (wrong).

Dataset-level numbers as the reference aggregates them: ``average`` accuracy (``correct`` of ``n``), and accuracy
per ``question_type``, ``answer_type`` and each ``metadata`` field (language, source, category, task, context, grade,
skills).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

import polars as pl

from vision_eval.evaluator import EvalOutput
from vision_eval.evaluators.benchmarks.grouped import GROUPS
from vision_eval.evaluators.benchmarks.judged import JudgedBenchmark, JudgedBenchmarkSettings
from vision_eval.example import GRADED_NOTE, Example
from vision_eval.grading.calls import Asker
from vision_eval.grading.outcomes import Grade
from vision_eval.grading.parsers import reply_text
from vision_eval.results import ERROR, PROCESSED

POSTS = 5
"""How many times the reference asks when the judge's reply is empty."""
METADATA_KEYS = ("language", "source", "category", "task", "context", "grade", "skills")
"""The ``metadata`` fields the reference reports accuracy by (``skills`` is a list: a question counts in each)."""
TYPE_KEYS = ("question_type", "answer_type")

# The judge prompt is part of the protocol: the reference's extraction examples, sent as it sends them.
EXTRACTION_EXAMPLES = """Please read the following example. Then extract the answer from the model response and type it at the end of the prompt.

Hint: Please answer the question requiring an integer answer and provide the final value, e.g., 1, 2, 3, at the end.
Question: Which number is missing?

Model response: The number missing in the sequence is 14.

Extracted answer: 14

Hint: Please answer the question requiring a floating-point number with one decimal place and provide the final value, e.g., 1.2, 1.3, 1.4, at the end.
Question: What is the fraction of females facing the camera?

Model response: The fraction of females facing the camera is 0.6, which means that six out of ten females in the group are facing the camera.

Extracted answer: 0.6

Hint: Please answer the question requiring a floating-point number with two decimal places and provide the final value, e.g., 1.23, 1.34, 1.45, at the end.
Question: How much money does Luca need to buy a sour apple candy and a butterscotch candy? (Unit: $)

Model response: Luca needs $1.45 to buy a sour apple candy and a butterscotch candy.

Extracted answer: 1.45

Hint: Please answer the question requiring a Python list as an answer and provide the final list, e.g., [1, 2, 3], [1.2, 1.3, 1.4], at the end.
Question: Between which two years does the line  graph saw its maximum peak?

Model response: The line graph saw its maximum peak between 2007 and 2008.

Extracted answer: [2007, 2008]

Hint: Please answer the question and provide the correct option letter, e.g., A, B, C, D, at the end.
Question: What fraction of the shape is blue?\nChoices:\n(A) 3/11\n(B) 8/11\n(C) 6/11\n(D) 3/5

Model response: The correct answer is (B) 8/11.

Extracted answer: B"""  # noqa: E501
EXTRACTION_PROMPT = EXTRACTION_EXAMPLES + "\n\n{{ query }}\n\n{{ mathvista_response }}\n\nExtracted answer: "
_PARENTHESISED_LETTER = re.compile(r"\(([a-zA-Z])\)")


def quick_extraction(response: str, question_type: str, answer_type: str, choices: list[str]) -> str | None:
    """The extraction the reference makes without its judge (``None``: the judge is asked)."""
    if not response:
        return ""
    if question_type == "multi_choice" and response in choices:
        return response
    if answer_type == "integer":
        try:
            return str(int(response))
        except ValueError:
            pass
    if answer_type == "float":
        try:
            return str(float(response))
        except ValueError:
            pass
    return None


def nearest_choice(text: str, choices: list[str]) -> str:
    """The choice nearest to ``text`` by Levenshtein distance (the first of equals)."""
    from rapidfuzz.distance import Levenshtein

    distances = [Levenshtein.distance(text, choice) for choice in choices]
    return choices[distances.index(min(distances))]


def normalize(extraction: str, choices: list[str], question_type: str, answer_type: str, precision: Any) -> str | None:
    """The extraction normalised by the question's type, as the reference does (``None``: it does not convert)."""
    if question_type == "multi_choice":
        text = extraction.strip()
        letters = _PARENTHESISED_LETTER.findall(text)
        if letters:
            text = letters[0].upper()
        options = [chr(ord("A") + i) for i in range(len(choices))]
        return choices[options.index(text)] if text in options else nearest_choice(text, choices)
    try:
        if answer_type == "integer":
            return str(int(float(extraction)))
        if answer_type == "float":
            return str(round(float(extraction), precision))
    except (ValueError, TypeError, OverflowError):
        return None
    return str(extraction) if answer_type == "list" else extraction


def same_answer(prediction: str | None, answer: str) -> bool:
    """The reference's comparison: both as text, stripped (a ``None`` prediction is the text "None")."""
    return str(prediction).strip() == str(answer).strip()


class MathVistaSettings(JudgedBenchmarkSettings):
    """Settings of ``mathvista``."""

    protocol: Literal["lmms_eval"] = "lmms_eval"
    """``lmms_eval`` (lmms-eval's mathvista_testmini tasks); see docs/benchmarks.md."""


class MathVista(JudgedBenchmark[MathVistaSettings]):
    """MathVista: the answer extracted from the reply (by rules, else the judge), normalised by answer type and
    precision, compared with ``expected_output``; accuracy overall, per question and answer type and per
    ``metadata`` field."""

    type_name: ClassVar[str] = "mathvista"
    protocols: ClassVar[dict[str, str]] = {
        "lmms_eval": "lmms-eval tasks/mathvista/utils.py + mathvista_evals.py @75571cf"
    }
    reference_judge: ClassVar[str] = "gpt-4o-2024-11-20"
    settings_model = MathVistaSettings
    example: ClassVar[Example] = Example(
        {"type": "mathvista"},
        [
            {"id": "1", "output": "7", "expected_output": "7", "query": "How many?", "choices": None}
            | {"question_type": "free_form", "answer_type": "integer", "precision": None},
            {"id": "2", "output": "(B) red", "expected_output": "blue", "query": "Colour?", "choices": ["blue", "red"]}
            | {"question_type": "multi_choice", "answer_type": "text", "precision": None},
        ],
        note=GRADED_NOTE,
    )

    def templates(self) -> list[str]:
        return [EXTRACTION_PROMPT]

    def columns_needed(self) -> tuple[str, ...]:
        return ("output", "expected_output", "query", "choices", "question_type", "answer_type", "precision")

    def nullable_columns(self) -> tuple[str, ...]:
        return ("choices", "precision")

    def prepare_variables(self, row: dict[str, Any], variables: dict[str, Any]) -> None:
        variables["mathvista_response"] = str(row.get("output") or "").strip()

    def plan(self, variables: dict[str, Any]) -> list[tuple[str, dict[str, Any], bool]]:
        """The judge call of a row the quick rules cannot extract (a row they extract needs none)."""
        choices = [str(c) for c in variables.get("choices") or []]
        kinds = str(variables["question_type"]), str(variables["answer_type"])
        if quick_extraction(variables["mathvista_response"], *kinds, choices) is not None:
            return []
        return [(EXTRACTION_PROMPT, {}, False)]

    async def grade(self, asker: Asker) -> Grade:
        v = asker.variables
        response, choices = v["mathvista_response"], [str(c) for c in v.get("choices") or []]
        question_type, answer_type = str(v["question_type"]), str(v["answer_type"])
        if question_type == "multi_choice" and not choices:
            raise ValueError("a multi_choice question without choices")
        extraction = quick_extraction(response, question_type, answer_type, choices)
        how = "rules"
        if extraction is None:
            how, extraction = "judge", ""
            for post in range(POSTS):
                reply = reply_text((await asker.ask(EXTRACTION_PROMPT, images=False, sample=post)).text).strip()
                if reply:
                    extraction = reply
                    break
        # the precision as the dataset holds it (see the module docstring)
        prediction = normalize(extraction, choices, question_type, answer_type, v.get("precision"))
        right = same_answer(prediction, str(v["expected_output"]))
        details = {"extraction": extraction, "prediction": prediction, "expected": v["expected_output"]}
        return Grade(float(right), right, {**details, "extracted_by": how})

    async def aevaluate(self, batch: pl.DataFrame) -> EvalOutput:
        out = await super().aevaluate(batch)
        columns = [*(pl.col(c).cast(pl.Utf8) for c in TYPE_KEYS), *metadata_fields(batch)]
        out.metric_inputs[GROUPS] = batch.select(pl.col("id").cast(pl.Utf8).alias("sample_id"), *columns)
        return out

    def summarize_from(self, results: pl.DataFrame, inputs: Mapping[str, pl.LazyFrame]) -> dict[str, Any]:
        base = super().summarize(results)
        rows = results.select(
            "sample_id", "status", "score", extracted_by=pl.col("details").str.json_path_match("$.extracted_by")
        )
        if GROUPS in inputs:
            groups = inputs[GROUPS].collect().unique("sample_id", keep="first")
            rows = rows.join(groups, on="sample_id", how="left", maintain_order="left")
        return {**base, **self.benchmark(rows)}

    def benchmark(self, rows: pl.DataFrame) -> dict[str, Any]:
        processed = rows.filter(pl.col("status") == PROCESSED)
        numbers: dict[str, Any] = {
            "protocol": self.protocol,
            "n": processed.height,
            "errors": int((rows["status"] == ERROR).sum()),
            "extracted_by_judge": int((processed["extracted_by"] == "judge").sum()),
            "average": accuracy(processed)["accuracy"],
            "correct": accuracy(processed)["correct"],
        }
        for key in (*TYPE_KEYS, *METADATA_KEYS):
            if key not in processed.columns:
                continue
            frame = processed.explode(key) if key == "skills" else processed
            numbers[key] = {
                str(value): accuracy(part)
                for (value,), part in frame.filter(pl.col(key).is_not_null()).group_by(key, maintain_order=True)
            }
        return numbers


METADATA = pl.Struct({key: pl.List(pl.Utf8) if key == "skills" else pl.Utf8 for key in METADATA_KEYS})


def metadata_fields(batch: pl.DataFrame) -> list[pl.Expr]:
    """The ``metadata`` fields the summary groups by: from the hub's struct, or from its JSON text (rows handed in
    from Python)."""
    dtype = batch.schema.get("metadata")
    if isinstance(dtype, pl.Struct):
        present = {field.name for field in dtype.fields}
        return [
            pl.col("metadata").struct.field(key).cast(METADATA.to_schema()[key]).alias(key)
            for key in METADATA_KEYS
            if key in present
        ]
    if dtype == pl.Utf8:
        decoded = pl.col("metadata").str.json_decode(METADATA)
        return [decoded.struct.field(key).alias(key) for key in METADATA_KEYS]
    return []


def accuracy(rows: pl.DataFrame) -> dict[str, Any]:
    """``{accuracy, correct, total}`` of scored rows (accuracy a share, not a percentage)."""
    correct = int(rows["score"].sum()) if rows.height else 0
    return {"accuracy": correct / rows.height if rows.height else None, "correct": correct, "total": rows.height}
