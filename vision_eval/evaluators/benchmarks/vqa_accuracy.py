"""``vqa_accuracy`` (TextVQA / VQAv2): the processed reply against the annotators' answers.

- ``official``: GT-Vision-Lab's ``vqaEval.py`` as of a013f00 (2021, "Fixed processing answers bug"; the authors
  confirmed the behaviour in their issue #14). The reply and every answer have newlines and tabs made spaces and are
  stripped; when the answers then disagree, the reply and every answer go through ``processPunctuation`` (each mark
  of :data:`PUNCT` is deleted when it touches a space or the text has a digit,digit comma, else it becomes a space;
  then periods not followed by a digit are removed, at most 32 of them: the script passes ``re.UNICODE`` as
  ``re.sub``'s count) and ``processDigitArticle`` (lowercase, split, number words zero..ten as digits, articles
  dropped, the contraction table); when they all agree, nothing more is done to either side. The script runs on
  Python 2.7 only, whose readings this protocol reproduces: ``\\d`` is an ASCII digit, ``lower()`` maps ``İ`` to
  ``i`` and has no final sigma.
- ``lmms_eval``: lmms-eval's ``EvalAIAnswerProcessor`` (mmf's; TextVQA's EvalAI evaluation) on the reply (stripped
  first, as lmms-eval strips every reply) and on every reference answer: lowercase, ``,`` and ``?`` removed, ``'s``
  split off as `` 's``, then the same punctuation and digit/article steps (Python 3: ``\\d`` is any decimal digit).
- ``lenient``: this project's reading (both sides fully normalized, typographic apostrophes, ``im``/``ive``, and
  with one reference answer an exact match), on columns.

With N answers of which M equal the processed reply, the score is the mean over the N leave-one-out subsets of
min(1, matches / 3) (so one reference answer scores 0 under the reference protocols).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache, partial
from json.encoder import encode_basestring
from typing import Any, ClassVar

import polars as pl
from pydantic import field_validator

from vision_eval.evaluator import EvalOutput
from vision_eval.evaluators.benchmarks import lenient
from vision_eval.evaluators.benchmarks.protocols import LENIENT, ReferenceMetric, ReferenceSettings, check_protocol
from vision_eval.evaluators.benchmarks.text import json_text, reference_answers
from vision_eval.example import Example
from vision_eval.results import PROCESSED
from vision_eval.rowwise import RowResult, failed

PUNCT = [";", "/", "[", "]", '"', "{", "}", "(", ")", "=", "+", "\\", "_", "-", ">", "<", "@", "`", ",", "?", "!"]
NUMBER_WORDS = {"none": "0", "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5"}
NUMBER_WORDS |= {"six": "6", "seven": "7", "eight": "8", "nine": "9", "ten": "10"}
ARTICLES = ("a", "an", "the")
# The published table, lowercased. Its "Im"/"Ive"/"Id've"/"I'dve" keys can never match (words are lowercased
# first), so the official protocols leave those out; its "somebody'd" -> "somebodyd" entry is as published.
_CONTRACTIONS_TEXT = """
aint ain't|arent aren't|cant can't|couldve could've|couldnt couldn't|couldn'tve couldn't've|couldnt've couldn't've
didnt didn't|doesnt doesn't|dont don't|hadnt hadn't|hadnt've hadn't've|hadn'tve hadn't've|hasnt hasn't
havent haven't|hed he'd|hed've he'd've|he'dve he'd've|hes he's|howd how'd|howll how'll|hows how's|isnt isn't
itd it'd|itd've it'd've|it'dve it'd've|itll it'll|maam ma'am|mightnt mightn't|mightnt've mightn't've
mightn'tve mightn't've|mightve might've|mustnt mustn't|mustve must've|neednt needn't|notve not've|oclock o'clock
oughtnt oughtn't|ow's'at 'ow's'at|'ows'at 'ow's'at|'ow'sat 'ow's'at|shant shan't|shed've she'd've|she'dve she'd've
shouldve should've|shouldnt shouldn't|shouldnt've shouldn't've|shouldn'tve shouldn't've|somebody'd somebodyd
somebodyd've somebody'd've|somebody'dve somebody'd've|somebodyll somebody'll|somebodys somebody's
someoned someone'd|someoned've someone'd've|someone'dve someone'd've|someonell someone'll|someones someone's
somethingd something'd|somethingd've something'd've|something'dve something'd've|somethingll something'll
thats that's|thered there'd|thered've there'd've|there'dve there'd've|therere there're|theres there's|theyd they'd
theyd've they'd've|they'dve they'd've|theyll they'll|theyre they're|theyve they've|twas 'twas|wasnt wasn't
wed've we'd've|we'dve we'd've|weve we've|werent weren't|whatll what'll|whatre what're|whats what's|whatve what've
whens when's|whered where'd|wheres where's|whereve where've|whod who'd|whod've who'd've|who'dve who'd've
wholl who'll|whos who's|whove who've|whyll why'll|whyre why're|whys why's|wont won't|wouldve would've
wouldnt wouldn't|wouldnt've wouldn't've|wouldn'tve wouldn't've|yall y'all|yall'll y'all'll|y'allll y'all'll
yall'd've y'all'd've|y'alld've y'all'd've|y'all'dve y'all'd've|youd you'd|youd've you'd've|you'dve you'd've
youll you'll|youre you're|youve you've
"""
CONTRACTIONS: dict[str, str] = dict(
    item.split(" ", 1) for item in _CONTRACTIONS_TEXT.replace("\n", "|").split("|") if item.strip()
)
"""The contraction table both reference protocols apply (keys that can match a lowercased word)."""
LENIENT_CONTRACTIONS: dict[str, str] = {
    **{k: v for k, v in CONTRACTIONS.items() if k != "somebody'd"},
    "somebodyd": "somebody'd",
    "id've": "i'd've",
    "i'dve": "i'd've",
    "im": "i'm",
    "ive": "i've",
}
"""The lenient protocol's table: the published one with its ``I…`` keys lowercased and its typo corrected."""
WORD_MAP = {**NUMBER_WORDS, **CONTRACTIONS}
LENIENT_WORD_MAP = {**NUMBER_WORDS, **LENIENT_CONTRACTIONS}
MAX_PERIODS = 32
"""The reference scripts remove at most this many periods (``re.UNICODE`` == 32 passed as ``re.sub``'s count)."""
CACHED_TEXTS = 1 << 16
"""Processed texts kept per process: annotators' answers repeat across questions ("yes", "2", "red")."""

# --- official / lmms_eval -------------------------------------------------------------------------------------

_DIGIT_COMMAS = re.compile(r"\d,+\d")  # EvalAI's comma rule (Python 3: any decimal digit)
_PERIOD_NOT_BEFORE_DIGIT = re.compile(r"\.(?!\d)")
_ASCII_DIGIT_COMMA = re.compile(r"[0-9],[0-9]")  # vqaEval.py's, on Python 2: ASCII digits
_PERIOD_NOT_BEFORE_ASCII_DIGIT = re.compile(r"\.(?![0-9])")
_ANY_MARK = re.compile("[" + re.escape("".join(PUNCT)) + "]")


def process_punctuation(text: str, digit_comma: re.Pattern[str], period: re.Pattern[str]) -> str:
    """``processPunctuation``: each mark deleted or made a space (decided on ``text``), then periods stripped."""
    out = text
    if _ANY_MARK.search(text):
        drop_all = digit_comma.search(text) is not None
        for mark in PUNCT:
            if mark in out:
                out = out.replace(mark, "" if drop_all or mark + " " in text or " " + mark in text else " ")
    return period.sub("", out, count=MAX_PERIODS) if "." in out else out


def process_digit_article(text: str, word_map: dict[str, str] = WORD_MAP) -> str:
    """``processDigitArticle`` of a lowercased text: split, number words as digits, articles dropped, contractions."""
    words = [NUMBER_WORDS.get(word, word) for word in text.split()]
    return " ".join(word_map.get(word, word) for word in words if word not in ARTICLES)


def python2_lower(text: str) -> str:
    """``unicode.lower()`` as Python 2.7 does it: simple case mapping, so ``İ`` is ``i`` (not ``i̇``) and a final
    ``Σ`` is ``σ`` (not ``ς``); the other mappings agree for the characters Unicode 5.2 has."""
    if "İ" in text or "Σ" in text:
        text = text.replace("İ", "i").replace("Σ", "σ")
    return text.lower()


def official_text(text: str) -> str:
    """What ``vqaEval.py`` does to the reply and to every answer first: newlines and tabs as spaces, stripped."""
    return text.replace("\n", " ").replace("\t", " ").strip()


@lru_cache(maxsize=CACHED_TEXTS)
def official_processed(text: str) -> str:
    """``processPunctuation`` then ``processDigitArticle`` as ``vqaEval.py`` applies them on Python 2."""
    punctuated = process_punctuation(text, _ASCII_DIGIT_COMMA, _PERIOD_NOT_BEFORE_ASCII_DIGIT)
    return process_digit_article(python2_lower(punctuated))


def official_compared(reply: str, answers: list[str]) -> tuple[str, list[str]]:
    """The reply and the answers as ``vqaEval.py`` compares them: processed only when the answers disagree."""
    prediction, golds = official_text(reply), [official_text(answer) for answer in answers]
    if len(set(golds)) > 1:
        return official_processed(prediction), [official_processed(gold) for gold in golds]
    return prediction, golds


@lru_cache(maxsize=CACHED_TEXTS)
def evalai_answer(text: str) -> str:
    """lmms-eval's (EvalAI's) processing of a reply or of a reference answer."""
    text = text.lower().replace(",", "").replace("?", "").replace("'s", " 's").strip()
    text = text.replace("\n", " ").replace("\t", " ").strip()
    return process_digit_article(process_punctuation(text, _DIGIT_COMMAS, _PERIOD_NOT_BEFORE_DIGIT).lower())


FULL_SCORE_ANSWERS = 4
"""Reference answers a row needs for a score of 1 under leave-one-out: each subset must still hold 3 matches."""


def leave_one_out(matches: int, answers: int) -> float:
    """Mean over the ``answers`` leave-one-out subsets of min(1, matching answers in the subset / 3)."""
    return (matches * min(1.0, (matches - 1) / 3) + (answers - matches) * min(1.0, matches / 3)) / answers


def score_row(protocol: str, column: str, output: str, answers: str) -> RowResult:
    """One row: the leave-one-out VQA accuracy of the processed reply, and every answer as compared with it."""
    golds, error = reference_answers(answers, column)
    if golds is None:
        return failed(str(error))
    if protocol == "official":
        prediction, compared = official_compared(output, golds)
    else:
        prediction = evalai_answer(output)
        compared = [evalai_answer(g) for g in golds]
    matches = compared.count(prediction)
    references = ",".join(map(encode_basestring, compared))
    details = (
        f'{{"protocol":"{protocol}","prediction":{json_text(prediction)},"matches":{matches},'
        f'"answers":{len(compared)},"references":[{references}]}}'
    )
    return RowResult("processed", leave_one_out(matches, len(compared)), details)


# --- lenient --------------------------------------------------------------------------------------------------

_MARK_CLASS = "[" + "".join("\\" + p if p in "[]\\-^" else p for p in PUNCT) + "]"


def _lenient_columns(frame: pl.DataFrame) -> pl.DataFrame:
    """The lenient normalization over column ``v`` into ``n``."""
    text = pl.col("v").str.replace_all(r"[\n\t]", " ").str.replace_all("[’‘]", "'").str.strip_chars()
    frame = frame.with_columns(text.alias("t"))
    has_punct = frame["t"].str.contains(_MARK_CLASS).fill_null(False)
    plain, punct = frame.filter(~has_punct), frame.filter(has_punct)
    if punct.height:
        digit_comma = pl.col("t").str.contains(r"\d,\d")
        punct = punct.with_columns(pl.col("t").alias("o"))
        for p in PUNCT:
            drop = pl.col("t").str.contains(p + " ", literal=True) | pl.col("t").str.contains(" " + p, literal=True)
            punct = punct.with_columns(
                pl.when(drop | digit_comma)
                .then(pl.col("o").str.replace_all(p, "", literal=True))
                .otherwise(pl.col("o").str.replace_all(p, " ", literal=True))
                .alias("o")
            )
        punct = punct.with_columns(pl.col("o").alias("t")).drop("o")
    frame = pl.concat([plain, punct])
    words = (
        pl.col("t")
        .str.replace_all(r"\.+(\D|$)", "${1}")
        .str.to_lowercase()
        .str.replace_all(r"\s{2,}|[^\S ]", " ")
        .str.strip_chars()
        .str.split(" ")
        .list.eval(pl.element().filter((pl.element().str.len_bytes() > 0) & ~pl.element().is_in(ARTICLES)))
        .list.eval(pl.element().replace(LENIENT_WORD_MAP))
        .list.join(" ")
    )
    return frame.select("v", words.alias("n"))


def lenient_answers(series: pl.Series) -> pl.Series:
    """The lenient VQA normalization of every string in ``series`` (each distinct one once; nulls stay null)."""
    values = pl.DataFrame({"v": series.cast(pl.Utf8)})
    mapped = _lenient_columns(values.unique())
    return values.join(mapped, on="v", how="left", maintain_order="left", nulls_equal=True)["n"].alias(series.name)


def lenient_scores(batch: pl.DataFrame, column: str) -> EvalOutput:
    """The ``lenient`` protocol on a batch (with one reference answer, an exact match)."""
    rows, pairs = lenient.pairs_frame(batch, column)
    predictions = rows.select(lenient.ROW, lenient_answers(rows["output"]).alias("pred"))
    pairs = pairs.with_columns(lenient_answers(pairs["gold"]).alias("g")).join(predictions, on=lenient.ROW)
    counts = pairs.group_by(lenient.ROW).agg(
        pl.len().cast(pl.Float64).alias("n"),
        (pl.col("g") == pl.col("pred")).fill_null(False).sum().cast(pl.Float64).alias("m"),
        pl.col("pred").first(),
        pl.col("g").alias("references"),
    )
    n, m = pl.col("n"), pl.col("m")
    # A subset that leaves out a matching answer has m - 1 matches; the other n - m subsets have m.
    loo = (m * pl.min_horizontal(1.0, (m - 1) / 3) + (n - m) * pl.min_horizontal(1.0, m / 3)) / n
    details = lenient.details(
        prediction=pl.col("pred"),
        matches=m.cast(pl.Int64),
        answers=n.cast(pl.Int64),
        references=pl.col("references"),  # each reference answer as compared with the prediction
    )
    score = pl.when(n == 1).then(m).otherwise(loo)
    return lenient.finish(rows, counts.select(lenient.ROW, score.alias("score"), details.alias("details")))


# --- the evaluator -------------------------------------------------------------------------------------------------


class VqaSettings(ReferenceSettings):
    """Settings of ``vqa_accuracy``."""

    @field_validator("protocol")
    @classmethod
    def _offered(cls, value: str) -> str:
        return check_protocol(VqaAccuracy, value)


class VqaAccuracy(ReferenceMetric[VqaSettings]):
    """VQA accuracy: with N reference answers of which M equal the processed reply, the mean over the N
    leave-one-out subsets of min(1, matches / 3) (so one reference answer scores 0).

    ``official``: the VQA script (a013f00): reply and answers compared as given (newlines and tabs as spaces,
    stripped) when the annotators agree, else all of them processed. ``lmms_eval``: lmms-eval's (EvalAI's)
    processing of the stripped reply and of every reference. ``lenient``: both fully normalized, typographic
    apostrophes, ``im``/``ive``, and with one reference answer an exact match. Default threshold 0.9: a prediction
    passes when at least 3 annotators gave it.
    """

    type_name: ClassVar[str] = "vqa_accuracy"
    protocols: ClassVar[dict[str, str]] = {
        "official": "GT-Vision-Lab/VQA PythonEvaluationTools/vqaEvaluation/vqaEval.py @a013f00 (VQA accuracy, on "
        "Python 2.7: the reply and answers processed only when the annotators disagree)",
        "lmms_eval": "EvolvingLMMs-Lab/lmms-eval v0.7.2 @cb45ac4 "
        "lmms_eval/tasks/textvqa/utils.py textvqa_process_results with "
        "_task_utils/vqa_eval_metric.py EvalAIAnswerProcessor (also TextVQA's EvalAI / mmf evaluation) "
        "on the reply stripped by lmms_eval/api/task.py ConfigurableTask.process_results",
        "lenient": LENIENT,
    }
    example: ClassVar[Example] = Example(
        {"type": "vqa_accuracy"},
        [
            {"id": "a", "output": "Red", "expected_output": '["red", "red", "red", "red", "dark red"]'},
            {"id": "b", "output": "two", "expected_output": '["2", "2", "two", "3"]'},
        ],
    )
    default_threshold = 0.9

    def row_function(self) -> Callable[..., RowResult]:
        if self.protocol == "lenient":
            raise NotImplementedError(f"{self.type_name}'s lenient protocol is defined on columns (lenient_scores)")
        return partial(score_row, self.protocol, self.reference_column)

    def evaluate(self, batch: pl.DataFrame) -> EvalOutput:
        if self.protocol == "lenient":
            return lenient_scores(batch, self.reference_column)
        return super().evaluate(batch)

    def summarize(self, results: pl.DataFrame) -> dict[str, Any]:
        """The protocol's summary, and (``official``, ``lmms_eval``) how many scored rows have fewer than
        :data:`FULL_SCORE_ANSWERS` reference answers, when any do: their score cannot reach 1 (one answer scores 0)."""
        summary = super().summarize(results)
        if self.protocol != "lenient":
            processed = results.filter(pl.col("status") == PROCESSED)
            answers = processed["details"].str.json_path_match("$.answers").cast(pl.Int64)
            few = int((answers < FULL_SCORE_ANSWERS).sum())
            if few:
                summary["rows_under_4_answers"] = few
        return summary
