"""The judged presets' grading (MMBench, MathVista, MM-Vet), in process: no socket, no thread.

The judge is not what these tests test; the grading is: how each preset asks (which prompt, at which temperature,
as which sample), how often it asks again, how it reads the judge's replies, and the score, verdict and details it
makes of them; then the rows' group inputs and the dataset-level numbers. A :class:`ScriptedJudge` stands in for one
row's judge (it answers ``grade``'s calls from a script and records them) and a :class:`ScriptedScheduler` for the
run's LLM scheduler (the whole ``aevaluate`` of a batch, replies by the prompt's last line). The expected values are
worked out by hand in the comments from the reference's rules (lmms-eval @75571cf: tasks/mmvet/utils.py,
tasks/mathvista/utils.py + mathvista_evals.py, tasks/mmbench/mmbench_evals.py + en_utils.py).

tests/test_judged_presets.py runs the same presets end to end against fake judge servers; those tests cannot run
under the mutation run's fork server (docs/testing.md), these can. Their frames are built in the tests, never at
import: a Polars query while mutmut's fork server collects the tests starts Polars' thread pool there, and every
mutant's child, forked from it, then hangs in its first query.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml

from vision_eval.evaluator import EvalContext, EvalOutput, Evaluator
from vision_eval.evaluators.benchmarks.grouped import GROUPS
from vision_eval.grading.outcomes import Grade
from vision_eval.grading.parsers import GraderError
from vision_eval.llm.scheduler import SERVICE
from vision_eval.llm.transport import CallResult
from vision_eval.results import rows_frame
from vision_eval.stack import build_evaluator

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Call:
    """One call ``grade`` made."""

    template: str
    images: bool
    params: dict[str, Any] | None
    sample: int | None


class ScriptedJudge:
    """One row's judge: each call gets the script's next reply (the last one repeats); every call is recorded."""

    def __init__(self, variables: dict[str, Any], script: list[Any]) -> None:
        self.variables, self.script = variables, script
        self.calls: list[Call] = []

    async def ask(
        self,
        template: str,
        extra: dict[str, Any] | None = None,
        *,
        images: bool = True,
        params: dict[str, Any] | None = None,
        sample: int | None = None,
    ) -> CallResult:
        self.calls.append(Call(template, images, params, sample))
        return CallResult(text=self.script[min(len(self.calls), len(self.script)) - 1])

    @property
    def temperatures(self) -> list[Any]:
        return [(call.params or {}).get("temperature") for call in self.calls]

    @property
    def samples(self) -> list[int | None]:
        return [call.sample for call in self.calls]


class ScriptedScheduler:
    """The run's LLM scheduler (the context service a graded evaluator calls through): answers each request by
    ``answer(prompt_text)``, in process; every request is recorded."""

    def __init__(self, answer: Callable[[str], str]) -> None:
        self.answer = answer
        self.requests: list[tuple[str, dict[str, Any] | None, dict[str, Any] | None]] = []

    def rows_in_flight(self, judges: list[Any]) -> int:
        return 4

    @contextlib.asynccontextmanager
    async def session(self) -> AsyncIterator[ScriptedScheduler]:
        yield self

    async def complete(
        self, judge: Any, messages: list[dict[str, Any]], *, params: Any = None, key_extra: Any = None, **_: Any
    ) -> CallResult:
        content = messages[-1]["content"]
        text = content if isinstance(content, str) else "".join(p.get("text", "") for p in content)
        self.requests.append((text, params, key_extra))
        return CallResult(text=self.answer(text))

    def stats_for(self, owner: str) -> dict[str, Any]:
        return {}


def preset(name: str, answer: Callable[[str], str] | None = None, **settings: Any) -> Evaluator:
    """The preset's evaluator as conf/evaluators/<name>.yaml configures it (the reference's judge), its judge calls
    answered by ``answer``."""
    spec = yaml.safe_load((ROOT / "conf" / "evaluators" / f"{name}.yaml").read_text())[name]
    context = EvalContext()
    if answer is not None:
        context.services[SERVICE] = ScriptedScheduler(answer)
    return build_evaluator(name, {**spec, **settings}, context)


def scheduler(metric: Evaluator) -> ScriptedScheduler:
    found = metric.context.services[SERVICE]
    assert isinstance(found, ScriptedScheduler)
    return found


def grade(metric: Evaluator, variables: dict[str, Any], script: list[Any]) -> tuple[Grade, ScriptedJudge]:
    judge = ScriptedJudge(variables, script)
    return asyncio.run(metric.grade(judge)), judge  # type: ignore[attr-defined]


def evaluate(metric: Evaluator, batch: pl.DataFrame) -> EvalOutput:
    return asyncio.run(metric.aevaluate(batch))


def results(rows: list[dict[str, Any]]) -> pl.DataFrame:
    return rows_frame({"cached": False, **row} for row in rows)


# --- MM-Vet ---------------------------------------------------------------------------------------------------


def mmvet_grade(script: list[Any], **settings: Any) -> tuple[Grade, ScriptedJudge]:
    return grade(preset("mmvet", **settings), {}, script)


def test_mmvet_reads_the_first_token_of_one_reply_at_temperature_0() -> None:
    from vision_eval.evaluators.benchmarks.mmvet import GRADER_PROMPT

    graded, judge = mmvet_grade(["0.8 because it reads the sign"])
    assert (graded.score, graded.passed) == (0.8, False)  # passed: score >= the threshold 1.0
    assert graded.details == {"grade": 0.8, "graded_by": "graded", "judge_replies": ["0.8 because it reads the sign"]}
    assert judge.calls == [Call(GRADER_PROMPT, False, {"temperature": 0.0}, 0)]


@pytest.mark.parametrize(
    ("reply", "score", "passed"),
    [("1.0", 1.0, True), ("1", 1.0, True), ("0.0", 0.0, False), ("0", 0.0, False), ("  0.3  ", 0.3, False)],
)
def test_mmvet_takes_a_score_at_either_end_of_0_to_1(reply: str, score: float, passed: bool) -> None:
    graded, judge = mmvet_grade([reply])
    assert (graded.score, graded.passed, graded.details["graded_by"], len(judge.calls)) == (score, passed, "graded", 1)
    assert graded.details["judge_replies"] == [reply.strip()]


def test_mmvet_threshold_decides_the_verdict() -> None:
    graded, _ = mmvet_grade(["0.6"], threshold=0.6)
    assert graded.passed is True
    graded, _ = mmvet_grade(["0.5"], threshold=0.6)
    assert graded.passed is False


def test_mmvet_asks_again_on_an_empty_reply_three_posts_in_all() -> None:
    # get_chat_response: patience 3, an empty (or blank) reply is asked again at the same temperature.
    graded, judge = mmvet_grade(["", "   ", "0.4"])
    assert (graded.score, graded.details["graded_by"]) == (0.4, "graded")
    assert graded.details["judge_replies"] == ["", "", "0.4"]
    assert (judge.temperatures, judge.samples) == ([0.0, 0.0, 0.0], [0, 1, 2])
    # Three empty replies: score 0, no fourth post.
    graded, judge = mmvet_grade(["", "", "", "0.4"])
    assert (graded.score, graded.passed, graded.details["graded_by"], len(judge.calls)) == (0.0, False, "no reply", 3)
    assert graded.details["judge_replies"] == ["", "", ""]


def test_mmvet_no_number_raises_the_temperature_and_spends_a_call_not_read() -> None:
    # "Correctness:" is no number: the temperature goes to 0.5, the reference asks once and does not read the
    # reply (0.7), then asks again at 0.5 and reads 0.3.
    graded, judge = mmvet_grade(["Correctness: 1.0", "0.7", "0.3"])
    assert (graded.score, graded.details["graded_by"]) == (0.3, "graded")
    assert (judge.temperatures, judge.samples) == ([0.0, 0.5, 0.5], [0, 1, 2])
    assert graded.details["judge_replies"] == ["Correctness: 1.0", "0.7", "0.3"]


def test_mmvet_the_unread_call_asks_again_while_its_reply_is_empty() -> None:
    # The unread call is a get_chat_response too: its empty reply is asked again (the 0.7 ends it, unread).
    graded, judge = mmvet_grade(["no", "", "0.7", "0.2"])
    assert (graded.score, judge.temperatures) == (0.2, [0.0, 0.5, 0.5, 0.5])
    assert judge.samples == [0, 1, 2, 3]


def test_mmvet_gives_up_at_temperature_2_with_score_0() -> None:
    # Never a number: 0 -> 0.5 (+1 unread) -> 1.0 (+1) -> 1.5 (+1) -> 2.0 (+1 unread, then stop): 8 calls.
    graded, judge = mmvet_grade(["Correct."])
    assert (graded.score, graded.passed, graded.details["graded_by"]) == (0.0, False, "no number")
    assert judge.temperatures == [0.0, 0.5, 0.5, 1.0, 1.0, 1.5, 1.5, 2.0]
    assert judge.samples == list(range(8))
    assert graded.details["judge_replies"] == ["Correct."] * 8


def test_mmvet_a_number_then_words_on_the_next_line_is_no_number() -> None:
    # The reference splits on a space only: "0.5\nfine" is one token, not a number.
    graded, judge = mmvet_grade(["0.5\nfine", "x", "0.5 fine"])
    assert (graded.score, judge.temperatures) == (0.5, [0.0, 0.5, 0.5])


def test_mmvet_asks_again_at_the_same_temperature_when_out_of_range() -> None:
    graded, judge = mmvet_grade(["7", "-0.1", "1.01", "0.5"])
    assert (graded.score, graded.details["graded_by"]) == (0.5, "graded")
    assert (judge.temperatures, judge.samples) == ([0.0] * 4, [0, 1, 2, 3])


def test_mmvet_too_many_replies_out_of_range_are_a_grader_error() -> None:
    graded, judge = mmvet_grade(["5", "5", "0.2"], max_out_of_range=2)
    assert (graded.score, len(judge.calls)) == (0.2, 3)
    with pytest.raises(GraderError, match=r"^the judge replied out of 0\.\.1 3 times \(last: '5'\)$"):
        mmvet_grade(["5"], max_out_of_range=2)
    long = "5 is the score I give, since the answer names both roots"
    with pytest.raises(
        GraderError, match=r"out of 0\.\.1 3 times \(last: '5 is the score I give, since the answer '\)$"
    ):
        mmvet_grade([long], max_out_of_range=2)
    with pytest.raises(GraderError, match=r"out of 0\.\.1 11 times"):  # the default: 10 allowed
        mmvet_grade(["2"])
    graded, judge = mmvet_grade(["2"] * 10 + ["1"])
    assert (graded.score, len(judge.calls)) == (1.0, 11)


def test_mmvet_a_reply_that_is_not_text_is_a_grader_error() -> None:
    with pytest.raises(GraderError, match="not text"):
        mmvet_grade([{"score": 1}])


def test_mmvet_variables_are_the_answer_spaced_out_and_the_reply_stripped() -> None:
    metric = preset("mmvet")
    variables: dict[str, Any] = {}
    metric.prepare_variables({"expected_output": "-1<AND>-5<OR>7", "output": "  x = -1 \n"}, variables)
    assert variables == {"mmvet_answer": "-1 <AND> -5 <OR> 7", "mmvet_reply": "x = -1"}
    metric.prepare_variables({"expected_output": None, "output": None}, variables)
    assert variables == {"mmvet_answer": "", "mmvet_reply": ""}


def test_mmvet_plans_one_text_only_call_of_its_grader_prompt() -> None:
    from vision_eval.evaluators.benchmarks.mmvet import GRADER_PROMPT

    assert preset("mmvet").plan({"mmvet_reply": "anything"}) == [(GRADER_PROMPT, {}, False)]


def test_mmvet_needs_its_columns() -> None:
    assert preset("mmvet").columns_needed() == ("input", "output", "expected_output", "capability")


def mmvet_batch() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "id": [1, 2, 3],
            "input": ["What is x?", "Which city?", "What does it say?"],
            "output": [" x = -1 or x = -5 ", "Paris", "stop"],
            "expected_output": ["-1<AND>-5", "Rome", "stop"],
            "capability": ["ocr,math", "rec,know", None],
        }
    )


MMVET_JUDGE = {"x = -1 or x = -5": "1.0", "Paris": "0.0", "stop": "Correctness: 0.5"}
"""The judge's reply to each candidate reply (the prompt's last row); "Correctness" is never a number."""


def mmvet_answer(text: str) -> str:
    return MMVET_JUDGE[text.removesuffix(" |").rsplit(" | ", 1)[1]]


def test_mmvet_batch_grades_through_the_scheduler_and_hands_back_capabilities() -> None:
    metric = preset("mmvet", mmvet_answer)
    out = evaluate(metric, mmvet_batch())
    rows = {r["sample_id"]: r for r in out.results.iter_rows(named=True)}
    assert {k: (r["status"], r["score"], r["passed"]) for k, r in rows.items()} == {
        "1": ("processed", 1.0, True),
        "2": ("processed", 0.0, False),
        "3": ("processed", 0.0, False),
    }
    assert json.loads(rows["3"]["details"])["graded_by"] == "no number"
    asked = scheduler(metric).requests
    first = next(text for text, _, _ in asked if text.endswith("| x = -1 or x = -5 |"))
    assert first.endswith("| 1.0\n\nWhat is x? | -1 <AND> -5 | x = -1 or x = -5 |")
    assert [params for text, params, _ in asked if "| stop |" in text] == [
        {"temperature": t} for t in (0.0, 0.5, 0.5, 1.0, 1.0, 1.5, 1.5, 2.0)
    ]
    assert [extra for text, _, extra in asked if "| stop |" in text][:3] == [None, {"sample": 1}, {"sample": 2}]
    groups = out.metric_inputs[GROUPS]
    assert groups.schema == pl.Schema({"sample_id": pl.Utf8, "capability": pl.Utf8})
    assert groups.rows() == [("1", "ocr,math"), ("2", "rec,know"), ("3", None)]


def test_mmvet_summary_from_the_batch() -> None:
    metric = preset("mmvet", mmvet_answer)
    out = evaluate(metric, mmvet_batch())
    summary = metric.summarize_from(out.results, {GROUPS: out.metric_inputs[GROUPS].lazy()})
    # Total (1 + 0 + 0) / 3; ocr, math: question 1; rec, know: question 2; question 3 has no capability.
    assert (summary["n"], summary["errors"], summary["Total"]) == (3, 0, pytest.approx(1 / 3))
    assert summary["capabilities"] == {
        "rec": {"score": 0.0, "n": 1},
        "ocr": {"score": 1.0, "n": 1},
        "know": {"score": 0.0, "n": 1},
        "math": {"score": 1.0, "n": 1},
    }
    assert summary["capability_integrations"] == {
        "math_ocr": {"score": 1.0, "n": 1},
        "rec_know": {"score": 0.0, "n": 1},
    }
    assert summary["cache_hits"] == 0 and summary["protocol"] == "lmms_eval"


def test_mmvet_summary_reads_each_sample_capability_once_in_result_order() -> None:
    # The group inputs of a resumed run may hold a sample twice: the first is read. Results in any order.
    metric = preset("mmvet")
    rows = results(
        [
            {"sample_id": "b", "status": "processed", "score": 0.25},
            {"sample_id": "a", "status": "processed", "score": 1.0},
            {"sample_id": "c", "status": "error", "error": "judge down"},
            {"sample_id": "d", "status": "processed", "score": 0.5},  # no group input: counted, in no capability
        ]
    )
    groups = pl.DataFrame({"sample_id": ["a", "b", "a", "c"], "capability": ["ocr", "rec", "know", "ocr"]})
    summary = metric.summarize_from(rows, {GROUPS: groups.lazy()})
    assert (summary["n"], summary["errors"], summary["Total"]) == (3, 1, pytest.approx(1.75 / 3))
    assert summary["capabilities"] == {"rec": {"score": 0.25, "n": 1}, "ocr": {"score": 1.0, "n": 1}}
    assert summary["capability_integrations"] == {"rec": {"score": 0.25, "n": 1}, "ocr": {"score": 1.0, "n": 1}}


def test_mmvet_summary_of_no_graded_row() -> None:
    rows = results([{"sample_id": "a", "status": "error", "error": "judge down"}])
    summary = preset("mmvet").summarize_from(rows, {})
    assert (summary["n"], summary["errors"], summary["Total"]) == (0, 1, None)
    assert (summary["capabilities"], summary["capability_integrations"]) == ({}, {})


# --- MathVista ------------------------------------------------------------------------------------------------


def mathvista_variables(response: str, expected: str, kinds: str, choices: Any = None, precision: Any = None) -> Any:
    question_type, answer_type = kinds.split("/")
    return {
        "mathvista_response": response,
        "expected_output": expected,
        "question_type": question_type,
        "answer_type": answer_type,
        "choices": choices,
        "precision": precision,
    }


def mathvista_grade(variables: dict[str, Any], script: list[Any]) -> tuple[Grade, ScriptedJudge]:
    return grade(preset("mathvista"), variables, script)


def test_mathvista_a_reply_that_is_a_choice_needs_no_judge() -> None:
    graded, judge = mathvista_grade(mathvista_variables("8/11", "8/11", "multi_choice/text", ["3/11", "8/11"]), [])
    assert (graded.score, graded.passed, judge.calls) == (1.0, True, [])
    assert graded.details == {"extraction": "8/11", "prediction": "8/11", "expected": "8/11", "extracted_by": "rules"}


def test_mathvista_an_integer_reply_needs_no_judge_and_is_compared_as_text() -> None:
    graded, judge = mathvista_grade(mathvista_variables("14", "15", "free_form/integer"), [])
    assert (graded.score, graded.passed, graded.details["prediction"], judge.calls) == (0.0, False, "14", [])


def test_mathvista_asks_the_judge_text_only_and_again_on_an_empty_reply() -> None:
    from vision_eval.evaluators.benchmarks.mathvista import EXTRACTION_PROMPT

    variables = mathvista_variables("The answer is (B).", "blue", "multi_choice/text", ["red", "blue", "green"])
    graded, judge = mathvista_grade(variables, ["", "  B \n", "C"])
    # The judge's stripped reply B is the extraction; B names the second choice.
    assert (graded.score, graded.passed) == (1.0, True)
    assert graded.details == {"extraction": "B", "prediction": "blue", "expected": "blue", "extracted_by": "judge"}
    assert judge.calls == [Call(EXTRACTION_PROMPT, False, None, 0), Call(EXTRACTION_PROMPT, False, None, 1)]


def test_mathvista_five_empty_replies_are_an_empty_extraction() -> None:
    # Five posts, then "": the nearest choice of "" by Levenshtein distance is the shortest, the first of equals.
    variables = mathvista_variables("hmm", "cat", "multi_choice/text", ["mouse", "cat", "dog"])
    graded, judge = mathvista_grade(variables, ["", "", "", "", "", "dog"])
    assert judge.samples == [0, 1, 2, 3, 4]
    assert graded.details == {"extraction": "", "prediction": "cat", "expected": "cat", "extracted_by": "judge"}
    assert graded.score == 1.0
    graded, judge = mathvista_grade(mathvista_variables("hmm", "7", "free_form/integer"), [""])
    assert (graded.score, graded.details["prediction"], len(judge.calls)) == (0.0, None, 5)


def test_mathvista_float_answers_are_rounded_to_the_precision_as_the_dataset_holds_it() -> None:
    variables = mathvista_variables("about pi", "3.14", "free_form/float", precision=2)
    graded, _ = mathvista_grade(variables, ["3.14159"])
    assert (graded.score, graded.details["prediction"]) == (1.0, "3.14")
    # The hub's precision is a float64: Python's round refuses it, the prediction is None (the reference's result).
    graded, _ = mathvista_grade({**variables, "precision": 2.0}, ["3.14159"])
    assert (graded.score, graded.details["prediction"]) == (0.0, None)


def test_mathvista_a_list_answer_is_compared_as_text() -> None:
    variables = mathvista_variables("between 2007 and 2008", " [2007, 2008] ", "free_form/list")
    graded, _ = mathvista_grade(variables, ["[2007, 2008]"])
    assert (graded.score, graded.details["prediction"], graded.details["expected"]) == (
        1.0,
        "[2007, 2008]",
        " [2007, 2008] ",
    )


def test_mathvista_multi_choice_without_choices_is_a_row_error() -> None:
    with pytest.raises(ValueError, match=r"^a multi_choice question without choices$"):
        mathvista_grade(mathvista_variables("A", "x", "multi_choice/text", []), ["A"])


def test_mathvista_variables_and_plan() -> None:
    from vision_eval.evaluators.benchmarks.mathvista import EXTRACTION_PROMPT

    metric = preset("mathvista")
    variables: dict[str, Any] = {}
    metric.prepare_variables({"output": "  7 apples \n"}, variables)
    assert variables == {"mathvista_response": "7 apples"}
    metric.prepare_variables({"output": None}, variables)
    assert variables == {"mathvista_response": ""}
    call = [(EXTRACTION_PROMPT, {}, False)]
    # A choice held as a number is compared as text; "" and an integer are read by the rules.
    assert metric.plan(mathvista_variables("2", "2", "multi_choice/text", [1, 2])) == []
    assert metric.plan(mathvista_variables("", "2", "free_form/integer")) == []
    assert metric.plan(mathvista_variables("14", "2", "free_form/integer")) == []
    assert metric.plan(mathvista_variables("14.0", "2", "free_form/integer")) == call
    assert metric.plan(mathvista_variables("3", "2", "multi_choice/text", [1, 2])) == call


def test_mathvista_needs_its_columns_and_allows_null_choices_and_precision() -> None:
    metric = preset("mathvista")
    needed = ("output", "expected_output", "query", "choices", "question_type", "answer_type", "precision")
    assert (metric.columns_needed(), metric.nullable_columns()) == (needed, ("choices", "precision"))


def mathvista_batch() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "id": [1, 2, 3, 4],
            "output": ["The answer is (B).", " 14 ", "There are 7 apples", "0.6"],
            "expected_output": ["blue", "14", "8", "0.6"],
            "query": ["Which colour?", "How long?", "How many apples?", "What fraction?"],
            "choices": [["red", "blue", "green"], None, None, None],
            "question_type": ["multi_choice", "free_form", "free_form", "free_form"],
            "answer_type": ["text", "integer", "integer", "float"],
            "precision": [None, None, None, 1.0],
            "metadata": [
                {"language": "english", "category": "general-vqa", "skills": ["arithmetic"]},
                {"language": "english", "category": "math-targeted-vqa", "skills": ["arithmetic", "algebra"]},
                {"language": "chinese", "category": "general-vqa", "skills": ["algebra"]},
                {"language": "english", "category": "general-vqa", "skills": None},
            ],
        }
    )


MATHVISTA_JUDGE = {"The answer is (B).": "B", "There are 7 apples": "7"}


def mathvista_answer(text: str) -> str:
    return MATHVISTA_JUDGE[text.removesuffix("\n\nExtracted answer: ").rsplit("\n\n", 1)[1]]


def test_mathvista_batch_through_the_scheduler_and_its_summary() -> None:
    metric = preset("mathvista", mathvista_answer)
    out = evaluate(metric, mathvista_batch())
    details = {r["sample_id"]: json.loads(r["details"]) for r in out.results.iter_rows(named=True)}
    # 1: the judge extracts B -> blue, right; 2: " 14 " stripped is an integer, right; 3: the judge extracts 7, the
    # answer is 8; 4: "0.6" is a float, but round(0.6, 1.0) fails -> None, wrong.
    assert {k: (d["extracted_by"], d["prediction"]) for k, d in details.items()} == {
        "1": ("judge", "blue"),
        "2": ("rules", "14"),
        "3": ("judge", "7"),
        "4": ("rules", None),
    }
    assert out.results["score"].to_list() == [1.0, 1.0, 0.0, 0.0]
    asked = [text for text, _, _ in scheduler(metric).requests]
    assert len(asked) == 2 and asked[0].endswith(
        "Extracted answer: B\n\nWhich colour?\n\nThe answer is (B).\n\nExtracted answer: "
    )
    groups = out.metric_inputs[GROUPS]
    assert groups.columns == ["sample_id", "question_type", "answer_type", "language", "category", "skills"]
    assert groups["sample_id"].to_list() == ["1", "2", "3", "4"]
    assert groups["skills"].to_list() == [["arithmetic"], ["arithmetic", "algebra"], ["algebra"], None]
    summary = metric.summarize_from(out.results, {GROUPS: groups.lazy()})
    assert {k: summary[k] for k in ("n", "errors", "extracted_by_judge", "average", "correct")} == {
        "n": 4,
        "errors": 0,
        "extracted_by_judge": 2,
        "average": 0.5,
        "correct": 2,
    }
    assert summary["question_type"] == {
        "multi_choice": {"accuracy": 1.0, "correct": 1, "total": 1},
        "free_form": {"accuracy": 1 / 3, "correct": 1, "total": 3},
    }
    order = {key: list(summary[key]) for key in ("question_type", "answer_type", "language", "category", "skills")}
    assert order == {  # each table's groups in order of first appearance
        "question_type": ["multi_choice", "free_form"],
        "answer_type": ["text", "integer", "float"],
        "language": ["english", "chinese"],
        "category": ["general-vqa", "math-targeted-vqa"],
        "skills": ["arithmetic", "algebra"],
    }
    assert summary["answer_type"] == {
        "text": {"accuracy": 1.0, "correct": 1, "total": 1},
        "integer": {"accuracy": 0.5, "correct": 1, "total": 2},
        "float": {"accuracy": 0.0, "correct": 0, "total": 1},
    }
    assert summary["language"] == {
        "english": {"accuracy": 2 / 3, "correct": 2, "total": 3},
        "chinese": {"accuracy": 0.0, "correct": 0, "total": 1},
    }
    # skills is a list: a question counts in each of its skills; question 4 has none.
    assert summary["skills"] == {
        "arithmetic": {"accuracy": 1.0, "correct": 2, "total": 2},
        "algebra": {"accuracy": 0.5, "correct": 1, "total": 2},
    }
    assert summary["category"]["general-vqa"] == {"accuracy": 1 / 3, "correct": 1, "total": 3}
    assert "source" not in summary and summary["protocol"] == "lmms_eval" and summary["cache_hits"] == 0


def test_mathvista_metadata_as_json_text_is_decoded_for_the_summary() -> None:
    batch = mathvista_batch().with_columns(
        pl.Series("metadata", [json.dumps(m) for m in mathvista_batch()["metadata"].to_list()])
    )
    metric = preset("mathvista", mathvista_answer)
    groups = evaluate(metric, batch).metric_inputs[GROUPS]
    assert groups.columns == [
        "sample_id",
        "question_type",
        "answer_type",
        *("language", "source", "category", "task", "context", "grade", "skills"),
    ]
    assert groups["language"].to_list() == ["english", "english", "chinese", "english"]
    assert groups["source"].to_list() == [None] * 4
    assert groups["skills"].to_list()[1] == ["arithmetic", "algebra"]
    without = evaluate(preset("mathvista", mathvista_answer), batch.drop("metadata")).metric_inputs[GROUPS]
    assert without.columns == ["sample_id", "question_type", "answer_type"]


def test_mathvista_summary_counts_errors_and_reads_no_groups_it_was_not_given() -> None:
    rows = results(
        [
            {"sample_id": "a", "status": "processed", "score": 1.0, "details": {"extracted_by": "judge"}},
            {"sample_id": "b", "status": "processed", "score": 0.0, "details": {"extracted_by": "rules"}},
            {"sample_id": "c", "status": "processed", "score": 1.0, "details": {"extracted_by": "rules"}},
            {"sample_id": "d", "status": "error", "error": "judge down"},
        ]
    )
    summary = preset("mathvista").summarize_from(rows, {})
    assert {k: summary[k] for k in ("n", "errors", "extracted_by_judge", "average", "correct")} == {
        "n": 3,
        "errors": 1,
        "extracted_by_judge": 1,
        "average": 2 / 3,
        "correct": 2,
    }
    assert "question_type" not in summary and "skills" not in summary


def test_mathvista_summary_reads_each_sample_groups_once_and_keeps_a_sample_without_them() -> None:
    rows = results(
        [
            {"sample_id": "a", "status": "processed", "score": 1.0, "details": {"extracted_by": "judge"}},
            {"sample_id": "b", "status": "processed", "score": 0.0, "details": {"extracted_by": "rules"}},
            {"sample_id": "stray", "status": "processed", "score": 1.0, "details": {"extracted_by": "rules"}},
        ]
    )
    groups = pl.DataFrame(
        {
            "sample_id": ["a", "b", "a"],  # a again (a resumed run's group inputs): the first is read
            "question_type": ["multi_choice", "free_form", "free_form"],
            "answer_type": ["text", "integer", "float"],
        }
    )
    summary = preset("mathvista").summarize_from(rows, {GROUPS: groups.lazy()})
    # stray has no group input: counted in the average, in no group.
    assert (summary["n"], summary["average"], summary["correct"]) == (3, 2 / 3, 2)
    assert summary["question_type"] == {
        "multi_choice": {"accuracy": 1.0, "correct": 1, "total": 1},
        "free_form": {"accuracy": 0.0, "correct": 0, "total": 1},
    }
    assert summary["answer_type"] == {
        "text": {"accuracy": 1.0, "correct": 1, "total": 1},
        "integer": {"accuracy": 0.0, "correct": 0, "total": 1},
    }


def test_mathvista_accuracy_of_no_rows() -> None:
    from vision_eval.evaluators.benchmarks.mathvista import accuracy

    assert accuracy(pl.DataFrame({"score": []}, schema={"score": pl.Float64})) == {
        "accuracy": None,
        "correct": 0,
        "total": 0,
    }
    assert accuracy(pl.DataFrame({"score": [1.0, 0.0, 1.0]})) == {"accuracy": 2 / 3, "correct": 2, "total": 3}


# --- MMBench --------------------------------------------------------------------------------------------------

MMBENCH_ROW = {"A": "cat", "B": "dog", "C": "bird", "D": "fish", "input": "What is shown?"}


def mmbench_grade(output: str, expected: str, script: list[Any], **row: Any) -> tuple[Grade, ScriptedJudge]:
    metric = preset("mmbench")
    variables: dict[str, Any] = {}
    metric.prepare_variables({**MMBENCH_ROW, **row, "output": output, "expected_output": expected}, variables)
    return grade(metric, variables, script)


def test_mmbench_a_reply_the_rules_read_needs_no_judge() -> None:
    graded, judge = mmbench_grade("B. a dog", "B", [])
    assert (graded.score, graded.passed, judge.calls) == (1.0, True, [])
    assert graded.details == {"prediction": "B", "expected": "B", "matched_by": "rules"}
    graded, _ = mmbench_grade("I think it is a bird", " A ", [])  # an option's text; the answer stripped
    assert (graded.score, graded.passed, graded.details["prediction"], graded.details["expected"]) == (
        0.0,
        False,
        "C",
        "A",
    )


def test_mmbench_asks_the_judge_text_only_and_again_at_once_on_an_empty_reply() -> None:
    from vision_eval.evaluators.benchmarks.mmbench import MATCHING_PROMPT

    graded, judge = mmbench_grade("a small kitten", "A", ["", " C "])
    assert (graded.score, graded.passed) == (0.0, False)
    assert graded.details == {"prediction": "C", "expected": "A", "matched_by": "judge", "judge_replies": ["", "C"]}
    assert judge.calls == [Call(MATCHING_PROMPT, False, None, 0), Call(MATCHING_PROMPT, False, None, 1)]


def test_mmbench_a_judge_reply_the_rules_cannot_read_is_a_new_attempt() -> None:
    # Attempt k's posts are samples 5k..5k+4: the second attempt's first post is sample 5. Its reply names an
    # option's text (the rules read the judge's reply as they read the candidate's).
    graded, judge = mmbench_grade("a small kitten", "B", ["I cannot decide", "the dog"])
    assert (graded.score, graded.passed, judge.samples) == (1.0, True, [0, 5])
    assert graded.details == {
        "prediction": "B",
        "expected": "B",
        "matched_by": "judge",
        "judge_replies": ["I cannot decide", "the dog"],
    }
    graded, judge = mmbench_grade("a small kitten", "A", ["", "", "", "", "", "A"])  # five empty posts: a failed try
    assert (graded.score, judge.samples) == (1.0, [0, 1, 2, 3, 4, 5])


def test_mmbench_three_unreadable_attempts_are_unparseable() -> None:
    unparseable = {"prediction": None, "expected": "A", "unparseable": True, "choices": ["A", "B", "C", "D", "E"]}
    graded, judge = mmbench_grade("a small kitten", "A", ["I cannot decide", "no idea", "either", "A"])
    assert (graded.score, graded.passed, judge.samples) == (0.0, False, [0, 5, 10])
    assert graded.details == {
        **unparseable,
        "matched_by": "random",
        "judge_replies": ["I cannot decide", "no idea", "either"],
    }
    graded, judge = mmbench_grade("a small kitten", "A", [""])  # empty every time: five posts per attempt
    assert (graded.details, judge.samples) == (
        {**unparseable, "matched_by": "random", "judge_replies": [""] * 15},
        list(range(15)),
    )


def test_mmbench_an_empty_judge_reply_is_never_read() -> None:
    # Five empty posts are the reference's "Failed to obtain answer via API", which it does not read: not even as
    # the one option whose text is empty (an empty text is in every reply: "a cat or a dog" names A and B).
    graded, judge = mmbench_grade("a cat or a dog", "B", [""], B="")
    assert (graded.details["matched_by"], len(judge.calls)) == ("random", 15)


def test_mmbench_variables_list_the_options_up_to_the_first_missing_one() -> None:
    metric = preset("mmbench")
    variables: dict[str, Any] = {}
    row = {"A": "cat", "B": 2, "C": None, "D": "fish", "output": " The pet \n", "expected_output": " B "}
    metric.prepare_variables(row, variables)
    assert variables == {
        "mmbench_options": "There are several options: \nA. cat\nB. 2\n",
        "mmbench_prediction": "The pet",
        "_options": {"A": "cat", "B": "2", "D": "fish"},
        "_expected": "B",
    }
    metric.prepare_variables({"output": None, "expected_output": None}, variables)
    assert (variables["mmbench_prediction"], variables["_expected"], variables["_options"]) == ("", "", {})


def test_mmbench_plans_a_judge_call_only_for_a_reply_the_rules_cannot_read() -> None:
    from vision_eval.evaluators.benchmarks.mmbench import MATCHING_PROMPT

    metric = preset("mmbench")
    options = {"A": "cat", "B": "dog"}
    assert metric.plan({"mmbench_prediction": "(B)", "_options": options}) == []
    assert metric.plan({"mmbench_prediction": "a dog", "_options": options}) == []
    assert metric.plan({"mmbench_prediction": "a kitten", "_options": options}) == [(MATCHING_PROMPT, {}, False)]


def test_mmbench_columns_and_comparability() -> None:
    metric = preset("mmbench", index_column="qid")
    assert metric.columns_needed() == (
        *("input", "output", "expected_output", "A", "B", "C", "D", "qid", "category", "L2-category"),
    )
    assert metric.nullable_columns() == ("A", "B", "C", "D", "category", "L2-category")
    assert metric.describe()["comparable"] is True
    described = preset("mmbench", circular=False).describe()
    assert described["comparable"] is False
    assert described["not_comparable_because"] == ["circular: false (the reference evaluates circularly)"]


def mmbench_batch() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "id": [0, 1, 2],
            "qid": [0, 1_000_000, 1],
            "input": ["What is shown?", "What is shown?", "What colour?"],
            "output": ["B. a dog", "a small kitten", "hmm"],
            "expected_output": ["B", "D", "A"],
            "A": ["cat", "dog", "red"],
            "B": ["dog", "bird", "blue"],
            "C": ["bird", "fish", "green"],
            "D": ["fish", "cat", None],
            "category": ["scene", "scene", "colour"],
            "L2-category": ["coarse", "coarse", "fine"],
        }
    )


MMBENCH_JUDGE = {"a small kitten": "D", "hmm": "I cannot decide"}


def mmbench_answer(text: str) -> str:
    return MMBENCH_JUDGE[text.rsplit("\nAnswer: ", 1)[1].removesuffix("\nYour output: ")]


def test_mmbench_batch_through_the_scheduler_and_its_circular_summary() -> None:
    metric = preset("mmbench", mmbench_answer, index_column="qid")
    out = evaluate(metric, mmbench_batch())
    details = {r["sample_id"]: json.loads(r["details"]) for r in out.results.iter_rows(named=True)}
    assert {k: (d["matched_by"], d["prediction"]) for k, d in details.items()} == {
        "0": ("rules", "B"),
        "1": ("judge", "D"),
        "2": ("random", None),
    }
    asked = [text for text, _, _ in scheduler(metric).requests]
    assert len(asked) == 1 + 3
    assert asked[0].endswith(
        "Question: What is shown??\nOptions: There are several options: \nA. dog\nB. bird\nC. fish\nD. cat\n"
        "\nAnswer: a small kitten\nYour output: "
    )
    groups = out.metric_inputs[GROUPS]
    assert groups.schema == pl.Schema(
        {"sample_id": pl.Utf8, "_index": pl.Int64, "category": pl.Utf8, "L2-category": pl.Utf8}
    )
    assert groups.rows() == [
        ("0", 0, "scene", "coarse"),
        ("1", 1_000_000, "scene", "coarse"),
        ("2", 1, "colour", "fine"),
    ]
    summary = metric.summarize_from(out.results, {GROUPS: groups.lazy()})
    # Question 0 (index 0 and its copy 1,000,000) right on both copies; question 1 unparseable: the first draw of
    # random.Random(2680) is E (the answer is A), wrong.
    assert summary["Overall"] == 0.5 and summary["questions"] == 2
    assert (summary["n"], summary["unparseable"], summary["matched_by_judge"], summary["errors"]) == (3, 1, 1, 0)
    assert summary["categories"] == {"scene": {"accuracy": 1.0, "n": 1}, "colour": {"accuracy": 0.0, "n": 1}}
    assert metric.summarize_from(out.results, {}) == {"cache_hits": 0, "scheduler": {}}  # no group inputs: no numbers


def mmbench_result(sample_id: str, status: str, how: str = "", letter: str | None = None, gold: str = "") -> Any:
    if status == "error":
        return {"sample_id": sample_id, "status": "error", "error": "judge down"}
    details: dict[str, Any] = {"prediction": letter, "expected": gold, "matched_by": how}
    if how == "random":
        details |= {"unparseable": True, "choices": list("ABCDE")}
    return {"sample_id": sample_id, "status": status, "score": float(letter == gold), "details": details}


def mmbench_results() -> pl.DataFrame:
    return results(
        [
            mmbench_result("q0", "processed", "rules", "A", "A"),
            mmbench_result("q0r", "processed", "rules", "B", "B"),
            mmbench_result("q1", "processed", "rules", "A", "A"),
            mmbench_result("q1r", "processed", "rules", "C", "B"),
            mmbench_result("q2", "processed", "random", None, "C"),
            mmbench_result("q2r", "processed", "rules", "D", "A"),
            mmbench_result(
                "q4r", "processed", "judge", "A", "A"
            ),  # question 4 before question 3: the draws go by index
            mmbench_result("q4", "processed", "random", None, "D"),
            mmbench_result("q3", "processed", "random", None, "A"),
            mmbench_result("q5", "processed", "rules", "B", "B"),
            mmbench_result("q5r", "error"),
            mmbench_result("q6", "processed", "rules", "B", "B"),
            mmbench_result("q6r", "processed", "judge", "C", "B"),
            mmbench_result("q7", "error"),
            mmbench_result("q8", "processed", "random", None, "C"),
            mmbench_result("stray", "processed", "rules", "A", "A"),  # no group input: not a question of the run
        ]
    )


def mmbench_groups() -> pl.DataFrame:
    """The group inputs of :func:`mmbench_results` (question k at index k, its copy at 1,000,000 + k); the last row
    repeats q0 (a resumed run's group inputs): the first is read."""
    names = ["q0", "q0r", "q1", "q1r", "q2", "q2r", "q3", "q4", "q4r", "q5", "q5r", "q6", "q6r", "q7", "q8", "q0"]
    return pl.DataFrame(
        {
            "sample_id": names,
            "_index": [int(n[1]) + (1_000_000 if n.endswith("r") else 0) for n in names[:-1]] + [9],
            "category": ["scene"] * 4 + ["colour"] * 3 + ["count"] * 8 + ["other"],
            "L2-category": ["coarse"] * 4 + ["fine"] * 11 + ["other"],
        }
    )


def test_mmbench_circular_summary_replays_the_reference_draws_in_index_order() -> None:
    draws = random.Random(2680)
    assert ["ABCDE"[draws.randint(0, 4)] for _ in range(4)] == ["E", "D", "C", "E"]  # the reference's draws
    summary = preset("mmbench").summarize_from(mmbench_results(), {GROUPS: mmbench_groups().lazy()})
    # Q0 right on both copies; Q1 read wrong by the rules on its copy; Q2 read wrong by the rules on its copy 2, so
    # its unparseable copy draws nothing; Q3 draws first: E, its answer is A; Q4 draws second: D, right, and its
    # copy is right by the judge; Q5 and Q7 have a copy in error: left out; Q6 right by the rules, its copy wrong by
    # the judge; Q8 draws third: C, right. 3 of 7.
    assert summary["Overall"] == 3 / 7
    assert (summary["questions"], summary["questions_with_errors"], summary["errors"]) == (7, 2, 2)
    assert (summary["n"], summary["unparseable"], summary["matched_by_judge"]) == (13, 4, 2)
    assert summary["categories"] == {
        "scene": {"accuracy": 0.5, "n": 2},
        "colour": {"accuracy": 0.0, "n": 2},
        "count": {"accuracy": 2 / 3, "n": 3},
    }
    assert summary["l2_categories"] == {"coarse": {"accuracy": 0.5, "n": 2}, "fine": {"accuracy": 0.4, "n": 5}}
    assert (summary["circular"], summary["protocol"], summary["cache_hits"]) == (True, "lmms_eval", 0)


def test_mmbench_summary_not_circular_scores_the_original_copies_alone() -> None:
    summary = preset("mmbench", circular=False).summarize_from(mmbench_results(), {GROUPS: mmbench_groups().lazy()})
    # The copies below 1,000,000 only, the draws in index order: Q2 E (answer C), Q3 D (answer A), Q4 C (answer D),
    # Q8 E (answer C): wrong; Q0, Q1, Q5, Q6 right by the rules; Q7 in error. 4 of 8; the copies' errors (Q5's)
    # and judge readings (Q4's, Q6's) are not counted.
    assert summary["Overall"] == 0.5
    assert (summary["questions"], summary["questions_with_errors"], summary["errors"]) == (8, 1, 1)
    assert (summary["n"], summary["unparseable"], summary["matched_by_judge"]) == (8, 4, 0)
    assert summary["categories"] == {
        "scene": {"accuracy": 1.0, "n": 2},
        "colour": {"accuracy": 0.0, "n": 2},
        "count": {"accuracy": 0.5, "n": 4},
    }
    assert summary["l2_categories"] == {"coarse": {"accuracy": 1.0, "n": 2}, "fine": {"accuracy": 1 / 3, "n": 6}}
    assert summary["circular"] is False
