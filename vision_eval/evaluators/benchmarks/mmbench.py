"""``mmbench``: MMBench (Liu et al., 2023), single-choice questions over 20 abilities, with circular evaluation.

Protocol ``lmms_eval`` (lmms-eval ``tasks/mmbench/mmbench_evals.py`` and ``en_utils.py`` @75571cf): the reply
stripped, then read by rules first (:func:`read_option`: a lone option letter among the reply's words, bare or
framed as ``A.``, ``(A)``, ``:A``...; else the one option whose text the lowercased reply contains). Only a reply the
rules cannot read goes to the judge, with the reference's option-matching prompt (text only, no image); the judge's
reply is read by the same rules, and a judge reply they cannot read is asked again, three times in all
(an empty reply is asked again at once, up to five times per attempt). When all three
fail, the reference draws a letter among A-E at random (``random.randint`` seeded 2680 once per evaluation, one draw
per such reply in the order it reaches them); the row keeps score 0 with ``unparseable: true`` and the draw is replayed
over the whole run in the summary. A judge call that fails outright is a row ``error`` (the reference would draw).

Circular evaluation (``circular: true``, the reference's): the dev set holds each question once per rotation of its
options, at ``index`` + k x 1,000,000; a question counts as right only when every copy is read as its answer.
``circular: false`` scores each question on its original copy alone (``index`` < 1,000,000): not the reference's
number, so marked ``comparable: false``.

Dataset-level numbers: ``Overall`` (share of questions right), per ability (``category``) and per ability group
(``L2-category``). The reference's judge is ``gpt-4o-2024-11-20`` (``en_utils.py``'s default); a run with another
judge model records it and is marked ``comparable: false`` in run.json and the leaderboard.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

import polars as pl

from vision_eval.evaluator import EvalOutput
from vision_eval.evaluators.benchmarks.grouped import GROUPS, per_group
from vision_eval.evaluators.benchmarks.judged import JudgedBenchmark, JudgedBenchmarkSettings
from vision_eval.example import GRADED_NOTE, Example
from vision_eval.grading.calls import Asker
from vision_eval.grading.outcomes import Grade
from vision_eval.grading.parsers import reply_text
from vision_eval.results import ERROR, PROCESSED

LETTERS = "ABCDE"
"""The letters the rules look for (the reference reads up to five)."""
OPTION_COLUMNS = ("A", "B", "C", "D")
"""The option columns the reference matches option texts against and shows the judge."""
JUDGE_ATTEMPTS = 3
POSTS_PER_ATTEMPT = 5
"""An attempt whose reply is empty is asked again, up to five times, before it counts as failed."""
RANDOM_SEED = 2680
ROTATION = 1_000_000
"""Circular copies of a question sit at its index plus a multiple of this."""
API_FAILURE = "Failed to obtain answer via API"
FRAMES = [
    ("", "."),
    ("", ","),
    ("", ":"),
    ("", ")"),
    ("", ")."),
    ("(", ")"),
    ("(", ")."),
    (":", ""),
    (":", ","),
    (":", "."),
    (":", ")"),
    (":", ")."),
]
"""How the rules accept a letter framed by punctuation, in the order they try them."""

# The judge prompt is part of the protocol: the reference's matching prompt, sent as it sends it (its wording,
# its typo and its trailing space), so that the judge is asked the same question.
MATCHING_PROMPT = (
    "You are an AI assistant who will help me to match an answer with several options of a single-choice question. "
    "You are provided with a question, several options, and an answer, and you need to find which option is most "
    "similar to the answer. If the meaning of all options are significantly different from the answer, output E. "
    "Your should output a single uppercase character in A, B, C, D (if they are valid options), and E. \n"
    "Example 1: \n"
    "Question: What is the main object in image?\nOptions: A. teddy bear B. rabbit C. cat D. dog\n"
    "Answer: a cute teddy bear\nYour output: A\n"
    "Example 2: \n"
    "Question: What is the main object in image?\nOptions: A. teddy bear B. rabbit C. cat D. dog\n"
    "Answer: Spider\nYour output: E\n"
    "Example 3: \n"
    "Question: {{ input }}?\nOptions: {{ mmbench_options }}\nAnswer: {{ mmbench_prediction }}\nYour output: "
)


def _framed_once(words: list[str], prefix: str, suffix: str) -> str | None:
    found = [letter for letter in LETTERS if prefix + letter + suffix in words]
    return found[0] if len(found) == 1 else None


def read_letter(reply: str) -> str | None:
    """The option letter the reply names, by the reference's rules (``None``: none, or more than one)."""
    if API_FAILURE in reply:
        return None
    words = [word.strip() for word in reply.split()]
    bare = _framed_once(words, "", "")
    # A lone "A" in a longer reply may be the article: the bare reading is then not trusted.
    if bare is not None and not ("A" in words and len(words) > 3):
        return bare
    for prefix, suffix in FRAMES:
        framed = _framed_once(words, prefix, suffix)
        if framed is not None:
            return framed
    return None


def read_option_text(reply: str, options: Mapping[str, str]) -> str | None:
    """The letter of the one option whose text the lowercased reply contains (``None``: none or several)."""
    lowered = reply.lower()
    found = [letter for letter, text in options.items() if text.lower() in lowered]
    return found[0] if len(found) == 1 else None


def read_option(reply: str, options: Mapping[str, str]) -> str | None:
    """The reference's rule reading of a reply: a named letter first, else an option's text."""
    return read_letter(reply) or read_option_text(reply, options)


def present_options(row: Mapping[str, Any]) -> dict[str, str]:
    """The options the row has (a missing one is null or NaN), as text."""
    out: dict[str, str] = {}
    for letter in OPTION_COLUMNS:
        value = row.get(letter)
        if value is None or (isinstance(value, float) and value != value):
            continue
        out[letter] = str(value)
    return out


def options_for_judge(row: Mapping[str, Any]) -> str:
    """The options as the reference lists them for the judge: from A, up to the first missing one."""
    text = "There are several options: \n"
    options = present_options(row)
    for letter in OPTION_COLUMNS:
        if letter not in options:
            break
        text += f"{letter}. {options[letter]}\n"
    return text


class MmbenchSettings(JudgedBenchmarkSettings):
    """Settings of ``mmbench``."""

    protocol: Literal["lmms_eval"] = "lmms_eval"
    """``lmms_eval`` (lmms-eval's mmbench_en_dev task); see docs/benchmarks.md."""
    circular: bool = True
    """Circular evaluation, as the reference: a question is right only when all its rotated copies are. ``false``
    scores each question's original copy alone (not comparable with published numbers)."""
    index_column: str = "index"
    """The column holding MMBench's ``index`` (rotated copies at index + k x 1,000,000)."""


class Mmbench(JudgedBenchmark[MmbenchSettings]):
    """MMBench: each reply matched to an option by the reference's rules, the judge only where they fail; scored
    per question (circular by default) into ``Overall``, per ``category`` and per ``L2-category``."""

    type_name: ClassVar[str] = "mmbench"
    protocols: ClassVar[dict[str, str]] = {
        "lmms_eval": "lmms-eval tasks/mmbench/mmbench_evals.py + en_utils.py @75571cf"
    }
    reference_judge: ClassVar[str] = "gpt-4o-2024-11-20"
    group_columns: ClassVar[tuple[str, ...]] = ("category", "L2-category")
    example: ClassVar[Example] = Example(
        {"type": "mmbench", "circular": False},
        [
            {"id": "0", "index": 0, "input": "What is shown?", "output": "B. a dog", "expected_output": "B"}
            | {"A": "cat", "B": "dog", "C": "bird", "D": "fish", "category": "image_scene", "L2-category": "coarse"},
            {"id": "1", "index": 1, "input": "What colour?", "output": "C", "expected_output": "A"}
            | {"A": "red", "B": "blue", "C": "green", "D": None, "category": "color", "L2-category": "fine"},
        ],
        note=GRADED_NOTE,
    )
    settings_model = MmbenchSettings

    def templates(self) -> list[str]:
        return [MATCHING_PROMPT]

    def columns_needed(self) -> tuple[str, ...]:
        s = self.settings
        return ("input", "output", "expected_output", *OPTION_COLUMNS, s.index_column, *self.group_columns)

    def nullable_columns(self) -> tuple[str, ...]:
        return (*OPTION_COLUMNS, *self.group_columns)

    def comparable_reasons(self) -> list[str]:
        reasons = super().comparable_reasons()
        if not self.settings.circular:
            reasons.append("circular: false (the reference evaluates circularly)")
        return reasons

    def prepare_variables(self, row: dict[str, Any], variables: dict[str, Any]) -> None:
        variables["mmbench_options"] = options_for_judge(row)
        variables["mmbench_prediction"] = str(row.get("output") or "").strip()
        variables["_options"] = present_options(row)
        variables["_expected"] = str(row.get("expected_output") or "").strip()

    def plan(self, variables: dict[str, Any]) -> list[tuple[str, dict[str, Any], bool]]:
        """The judge call of a row the rules cannot read (a row they read needs none)."""
        if read_option(variables["mmbench_prediction"], variables["_options"]) is not None:
            return []
        return [(MATCHING_PROMPT, {}, False)]

    async def grade(self, asker: Asker) -> Grade:
        variables = asker.variables
        prediction, options, gold = variables["mmbench_prediction"], variables["_options"], variables["_expected"]
        read = read_option(prediction, options)
        if read is not None:
            return self.reading(read, gold, "rules")
        replies: list[str] = []
        for attempt in range(JUDGE_ATTEMPTS):
            reply = ""
            for post in range(POSTS_PER_ATTEMPT):  # the reference asks again at once when a reply is empty
                sample = attempt * POSTS_PER_ATTEMPT + post
                reply = reply_text((await asker.ask(MATCHING_PROMPT, images=False, sample=sample)).text).strip()
                replies.append(reply)
                if reply:
                    break
            read = read_option(reply, options) if reply else None
            if read is not None:
                return self.reading(read, gold, "judge", judge_replies=replies)
        details = {"prediction": None, "expected": gold, "unparseable": True, "choices": list(LETTERS)}
        return Grade(0.0, False, {**details, "matched_by": "random", "judge_replies": replies})

    def reading(self, letter: str, gold: str, how: str, **more: Any) -> Grade:
        right = letter == gold
        return Grade(float(right), right, {"prediction": letter, "expected": gold, "matched_by": how, **more})

    async def aevaluate(self, batch: pl.DataFrame) -> EvalOutput:
        out = await super().aevaluate(batch)
        columns = (self.settings.index_column, *self.group_columns)
        out.metric_inputs[GROUPS] = batch.select(
            pl.col("id").cast(pl.Utf8).alias("sample_id"),
            pl.col(self.settings.index_column).cast(pl.Int64).alias("_index"),
            *(pl.col(c).cast(pl.Utf8) for c in columns[1:]),
        )
        return out

    def benchmark(self, rows: pl.DataFrame) -> dict[str, Any]:
        rows = rows.filter(pl.col("_index").is_not_null()).sort("_index", maintain_order=True)
        rows = rows.with_columns((pl.col("_index") % ROTATION).alias("_question"))
        if not self.settings.circular:
            rows = rows.filter(pl.col("_index") < ROTATION)
        generator = random.Random(RANDOM_SEED)
        copies = rows.partition_by("_question", as_dict=True, maintain_order=True)
        main = rows.filter(pl.col("_index") < ROTATION)
        hits: list[float | None] = []
        errors = 0
        for question in main["_question"]:
            group = copies[(question,)]
            if (group["status"] == ERROR).any():
                errors += 1
                hits.append(None)
                continue
            hits.append(question_hit(group.to_dicts(), generator))
        scored = main.with_columns(pl.Series("hit", hits, pl.Float64)).filter(pl.col("hit").is_not_null())
        processed = rows.filter(pl.col("status") == PROCESSED)
        by = {"L2-category": "l2_categories", "category": "categories"}
        return {
            "protocol": self.protocol,
            "circular": self.settings.circular,
            "n": processed.height,
            "errors": int((rows["status"] == ERROR).sum()),
            "unparseable": int(processed["unparseable"].sum()),
            "matched_by_judge": int((processed["matched_by"] == "judge").sum()),
            "questions": scored.height,
            "questions_with_errors": errors,
            "Overall": scored["hit"].mean() if scored.height else None,
            **{name: per_group(scored, column, "hit") for column, name in by.items()},
        }

    def summarize_from(self, results: pl.DataFrame, inputs: Mapping[str, pl.LazyFrame]) -> dict[str, Any]:
        if GROUPS not in inputs:
            return self.summarize(results)
        groups = inputs[GROUPS].collect().unique("sample_id", keep="first")
        read = results.select(
            "sample_id",
            "status",
            pl.col("details").str.json_path_match("$.prediction").alias("prediction"),
            pl.col("details").str.json_path_match("$.expected").alias("expected"),
            pl.col("details").str.json_path_match("$.matched_by").alias("matched_by"),
            (pl.col("details").str.json_path_match("$.unparseable") == "true").fill_null(False).alias("unparseable"),
        )
        rows = read.join(groups, on="sample_id", how="left", maintain_order="left")
        return {**super().summarize(results), **self.benchmark(rows)}


def question_hit(copies: list[dict[str, Any]], generator: random.Random) -> float:
    """1.0 when every copy of a question is read as its answer, replaying the reference's order: a rule reading
    that is wrong ends it at once (no draw); then the other copies in index order, a judge reading or a random draw
    (``unparseable``) each, until one is wrong."""
    if any(c["matched_by"] == "rules" and c["prediction"] != c["expected"] for c in copies):
        return 0.0
    for copy in copies:
        if copy["matched_by"] == "rules":
            continue
        letter = copy["prediction"] if not copy["unparseable"] else LETTERS[generator.randint(0, len(LETTERS) - 1)]
        if letter != copy["expected"]:
            return 0.0
    return 1.0
