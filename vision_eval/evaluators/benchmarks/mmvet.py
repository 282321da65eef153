"""``mmvet``: MM-Vet (Yu et al., 2023), open-ended questions graded 0..1 by a GPT-4-class judge against the answer.

Protocol ``lmms_eval`` (lmms-eval ``tasks/mmvet/utils.py`` @75571cf): the judge is shown the reference's few-shot
grading prompt (a table of worked examples) with a last row ``<question> | <answer> | <reply> |`` (the answer's
``<AND>`` / ``<OR>`` spaced out), text only, at temperature 0 and 128 tokens. Its reply's first space-separated
token, read as a number, is the score when it lies in 0..1. The reference's retries are replayed call for call:
an empty reply is asked again (three posts in all; still empty: score 0); a first token that is not a number raises
the temperature by 0.5 and spends one more call, until the temperature reaches 2 (score 0); a number outside 0..1
is asked again at the same temperature (the reference would ask forever: here at most ``max_out_of_range`` times,
then the row is an ``error``).

Dataset-level numbers as the reference computes them: ``Total`` (mean score), per capability (``rec``, ``ocr``,
``know``, ``gen``, ``spat``, ``math``: a question counts for each capability its ``capability`` text contains) and per
capability integration (the 16 combinations the reference lists, e.g. ``rec_gen_know``: questions with exactly those
capabilities). Scores are on 0..1 (the paper multiplies by 100); a group without questions is left out (the
reference prints 0).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

import polars as pl

from vision_eval.evaluator import EvalOutput
from vision_eval.evaluators.benchmarks.grouped import GROUPS
from vision_eval.evaluators.benchmarks.judged import JudgedBenchmark, JudgedBenchmarkSettings
from vision_eval.example import GRADED_NOTE, Example
from vision_eval.grading.calls import Asker
from vision_eval.grading.outcomes import Grade
from vision_eval.grading.parsers import GraderError, reply_text
from vision_eval.results import ERROR, PROCESSED

CAPABILITIES = ("rec", "ocr", "know", "gen", "spat", "math")
INTEGRATIONS = (
    "rec_gen_know",
    "rec",
    "spat_ocr",
    "spat_math_ocr",
    "rec_spat",
    "ocr",
    "math_ocr",
    "rec_know",
    "rec_spat_gen_ocr",
    "rec_gen_ocr_know",
    "rec_spat_ocr",
    "rec_ocr",
    "know_spat_ocr",
    "rec_spat_know",
    "spat_gen_ocr",
    "rec_spat_math_ocr",
)
"""The capability integrations the reference reports (capabilities joined by ``_``)."""
POSTS = 3
"""How many times the reference asks while the judge's reply is empty."""
TEMPERATURE_STEP = 0.5
MAX_TEMPERATURE = 2.0

# The grading prompt is part of the protocol: MM-Vet's few-shot grader prompt as the reference sends it.
GRADER_PROMPT = (
    "Compare the ground truth and prediction from AI models, to give a correctness score for the prediction. "
    "<AND> in the ground truth means it is totally right only when all elements in the ground truth are present in "
    "the prediction, and <OR> means it is totally right when any one element in the ground truth is present in the "
    "prediction. The correctness score is 0.0 (totally wrong), 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, or 1.0 "
    "(totally right). Just complete the last space of the correctness score.\n"
    "gpt_query_prompt | Ground truth | Prediction | Correctness\n"
    "--- | --- | --- | ---\n"
    "What is x in the equation? | -1 <AND> -5 | x = 3 | 0.0\n"
    "What is x in the equation? | -1 <AND> -5 | x = -1 | 0.5\n"
    "What is x in the equation? | -1 <AND> -5 | x = -5 | 0.5\n"
    "What is x in the equation? | -1 <AND> -5 | x = -5 or 5 | 0.5\n"
    "What is x in the equation? | -1 <AND> -5 | x = -1 or x = -5 | 1.0\n"
    "Can you explain this meme? | This meme is poking fun at the fact that the names of the countries Iceland and "
    "Greenland are misleading. Despite its name, Iceland is known for its beautiful green landscapes, while Greenland "
    "is mostly covered in ice and snow. The meme is saying that the person has trust issues because the names of "
    "these countries do not accurately represent their landscapes. | The meme talks about Iceland and Greenland. "
    "It's pointing out that despite their names, Iceland is not very icy and Greenland isn't very green. | 0.4\n"
    "Can you explain this meme? | This meme is poking fun at the fact that the names of the countries Iceland and "
    "Greenland are misleading. Despite its name, Iceland is known for its beautiful green landscapes, while Greenland "
    "is mostly covered in ice and snow. The meme is saying that the person has trust issues because the names of "
    "these countries do not accurately represent their landscapes. | The meme is using humor to point out the "
    "misleading nature of Iceland's and Greenland's names. Iceland, despite its name, has lush green landscapes while "
    "Greenland is mostly covered in ice and snow. The text 'This is why I have trust issues' is a playful way to "
    "suggest that these contradictions can lead to distrust or confusion. The humor in this meme is derived from the "
    "unexpected contrast between the names of the countries and their actual physical characteristics. | 1.0\n"
    "\n{{ input }} | {{ mmvet_answer }} | {{ mmvet_reply }} |"
)


def spaced_answer(answer: str) -> str:
    """The answer as the reference shows it to the judge: ``<AND>`` and ``<OR>`` with a space either side."""
    return answer.replace("<AND>", " <AND> ").replace("<OR>", " <OR> ")


def first_number(content: str) -> float | None:
    """The reply's first space-separated token as a number, as the reference reads it (``None``: not a number)."""
    try:
        return float(content.split(" ")[0].strip())
    except ValueError:
        return None


class MmVetSettings(JudgedBenchmarkSettings):
    """Settings of ``mmvet``."""

    protocol: Literal["lmms_eval"] = "lmms_eval"
    """``lmms_eval`` (lmms-eval's mmvet task); see docs/benchmarks.md."""
    max_out_of_range: int = 10
    """How many judge replies outside 0..1 a row may get before it is an ``error`` (the reference asks forever)."""


class MmVet(JudgedBenchmark[MmVetSettings]):
    """MM-Vet: the judge grades ``output`` against ``expected_output`` on 0..1 with MM-Vet's few-shot prompt;
    ``Total``, per capability and per capability integration (read from ``capability``)."""

    type_name: ClassVar[str] = "mmvet"
    protocols: ClassVar[dict[str, str]] = {"lmms_eval": "lmms-eval tasks/mmvet/utils.py @75571cf"}
    reference_judge: ClassVar[str] = "gpt-4o-2024-11-20"
    settings_model = MmVetSettings
    example: ClassVar[Example] = Example(
        {"type": "mmvet"},
        [
            {"id": "v1", "input": "What is x?", "output": "x = -1 or x = -5", "expected_output": "-1<AND>-5"}
            | {"capability": "ocr,math"},
            {"id": "v2", "input": "Which city?", "output": "Paris", "expected_output": "Rome"}
            | {"capability": "rec,know"},
        ],
        note=GRADED_NOTE,
    )

    def templates(self) -> list[str]:
        return [GRADER_PROMPT]

    def columns_needed(self) -> tuple[str, ...]:
        return ("input", "output", "expected_output", "capability")

    def prepare_variables(self, row: dict[str, Any], variables: dict[str, Any]) -> None:
        variables["mmvet_answer"] = spaced_answer(str(row.get("expected_output") or ""))
        variables["mmvet_reply"] = str(row.get("output") or "").strip()

    def plan(self, variables: dict[str, Any]) -> list[tuple[str, dict[str, Any], bool]]:
        return [(GRADER_PROMPT, {}, False)]

    async def grade(self, asker: Asker) -> Grade:
        calls = 0
        replies: list[str] = []

        async def ask(temperature: float) -> str:
            """One ``get_chat_response`` of the reference: up to three posts while the reply is empty."""
            nonlocal calls
            for _ in range(POSTS):
                params = {"temperature": temperature}
                result = await asker.ask(GRADER_PROMPT, images=False, params=params, sample=calls)
                calls += 1
                content = reply_text(result.text).strip()
                replies.append(content)
                if content:
                    return content
            return ""

        temperature, out_of_range = 0.0, 0
        while True:
            content = await ask(temperature)
            if not content:
                return self.graded(0.0, "no reply", replies)
            score = first_number(content)
            if score is not None and 0.0 <= score <= 1.0:
                return self.graded(score, "graded", replies)
            if score is not None:
                out_of_range += 1
                if out_of_range > self.settings.max_out_of_range:
                    raise GraderError(f"the judge replied out of 0..1 {out_of_range} times (last: {content[:40]!r})")
                continue
            temperature += TEMPERATURE_STEP
            await ask(temperature)  # the reference asks once more here and does not read the reply
            if temperature >= MAX_TEMPERATURE:
                return self.graded(0.0, "no number", replies)

    def graded(self, score: float, how: str, replies: list[str]) -> Grade:
        passed = self.threshold is not None and score >= self.threshold
        return Grade(score, passed, {"grade": score, "graded_by": how, "judge_replies": replies})

    async def aevaluate(self, batch: pl.DataFrame) -> EvalOutput:
        out = await super().aevaluate(batch)
        out.metric_inputs[GROUPS] = batch.select(
            pl.col("id").cast(pl.Utf8).alias("sample_id"), pl.col("capability").cast(pl.Utf8)
        )
        return out

    def summarize_from(self, results: pl.DataFrame, inputs: Mapping[str, pl.LazyFrame]) -> dict[str, Any]:
        rows = results.select("sample_id", "status", "score")
        if GROUPS in inputs:
            groups = inputs[GROUPS].collect().unique("sample_id", keep="first")
            rows = rows.join(groups, on="sample_id", how="left", maintain_order="left")
        else:
            rows = rows.with_columns(pl.lit(None, pl.Utf8).alias("capability"))
        return {**super().summarize(results), **self.benchmark(rows)}

    def benchmark(self, rows: pl.DataFrame) -> dict[str, Any]:
        scored = rows.filter(pl.col("status") == PROCESSED)
        capability = pl.col("capability").fill_null("")
        owned = capability.str.split(",").list.unique().list.sort()

        def mean_where(condition: pl.Expr) -> dict[str, Any] | None:
            part = scored.filter(condition)
            return {"score": part["score"].mean(), "n": part.height} if part.height else None

        capabilities = {cap: mean_where(capability.str.contains(cap, literal=True)) for cap in CAPABILITIES}
        integrations = {
            name: mean_where(owned == pl.lit(sorted(set(name.split("_"))), pl.List(pl.Utf8))) for name in INTEGRATIONS
        }
        return {
            "protocol": self.protocol,
            "n": scored.height,
            "errors": int((rows["status"] == ERROR).sum()),
            "Total": scored["score"].mean() if scored.height else None,
            "capabilities": {k: v for k, v in capabilities.items() if v is not None},
            "capability_integrations": {k: v for k, v in integrations.items() if v is not None},
        }
