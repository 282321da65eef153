"""VQA answer processing of each protocol, row-wise (the definitions) and on columns.

- ``official``: GT-Vision-Lab's ``vqaEval.py``. The reply is stripped, then ``processPunctuation`` (each mark of
  :data:`PUNCT` is deleted when it touches a space or the text has a digit,digit comma, else it becomes a space;
  then periods not followed by a digit are removed, at most 32 of them: the script passes ``re.UNICODE`` as
  ``re.sub``'s count) and ``processDigitArticle`` (lowercase, split, number words zero..ten as digits, articles
  dropped, the contraction table). Reference answers are compared raw, or after ``processPunctuation`` alone when
  the annotators disagree.
- ``lmms_eval``: lmms-eval's ``EvalAIAnswerProcessor`` (mmf's; TextVQA's EvalAI evaluation) on the reply and on
  every reference answer: lowercase, ``,`` and ``?`` removed, ``'s`` split off as `` 's``, then the same
  punctuation and digit/article steps.
- ``lenient``: this project's reading (both sides fully normalized, typographic apostrophes, ``im``/``ive``).

The column versions read ASCII text with at most 32 periods themselves and hand any other text to the row-wise
definition, so both always agree.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import polars as pl

from vision_eval.evaluators.benchmarks.text import is_ascii, map_unique, py_strip, py_words_joined, with_fallback

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

# --- row-wise definitions ----------------------------------------------------------------------------------

_DIGIT_COMMA = re.compile(r"\d,\d")
_DIGIT_COMMAS = re.compile(r"\d,+\d")
_PERIOD_NOT_BEFORE_DIGIT = re.compile(r"\.(?!\d)")


def process_punctuation(text: str, digit_comma: re.Pattern[str] = _DIGIT_COMMA) -> str:
    """``processPunctuation``: each mark deleted or made a space (decided on ``text``), then periods stripped."""
    out = text
    drop_all = digit_comma.search(text) is not None
    for mark in PUNCT:
        out = out.replace(mark, "" if drop_all or mark + " " in text or " " + mark in text else " ")
    return _PERIOD_NOT_BEFORE_DIGIT.sub("", out, count=MAX_PERIODS)


def process_digit_article(text: str, word_map: dict[str, str] = WORD_MAP) -> str:
    """``processDigitArticle``: lowercase, split, number words as digits, articles dropped, contractions."""
    words = [NUMBER_WORDS.get(word, word) for word in text.lower().split()]
    return " ".join(word_map.get(word, word) for word in words if word not in ARTICLES)


def official_answer(reply: str) -> str:
    """The official VQA script's processing of a reply."""
    text = reply.replace("\n", " ").replace("\t", " ").strip()
    return process_digit_article(process_punctuation(text))


def evalai_answer(text: str) -> str:
    """lmms-eval's (EvalAI's) processing of a reply or of a reference answer."""
    text = text.lower().replace(",", "").replace("?", "").replace("'s", " 's").strip()
    text = text.replace("\n", " ").replace("\t", " ").strip()
    return process_digit_article(process_punctuation(text, _DIGIT_COMMAS))


def official_golds(answers: list[str]) -> list[str]:
    """The official script's reference answers: raw when all agree, else each after ``processPunctuation``."""
    return [process_punctuation(a) for a in answers] if len(set(answers)) > 1 else list(answers)


def leave_one_out(matches: int, answers: int) -> float:
    """Mean over the ``answers`` leave-one-out subsets of min(1, matching answers in the subset / 3)."""
    if answers == 0:
        raise ValueError("no reference answers")
    return (matches * min(1.0, (matches - 1) / 3) + (answers - matches) * min(1.0, matches / 3)) / answers


# --- columns --------------------------------------------------------------------------------------------------


def _digit_article(text: pl.Expr, word_map: dict[str, str]) -> pl.Expr:
    return (
        py_words_joined(text.str.to_lowercase())
        .str.split(" ")
        .list.eval(pl.element().filter((pl.element() != "") & ~pl.element().is_in(ARTICLES)).replace(word_map))
        .list.join(" ")
    )


_ANY_MARK = "[" + "".join("\\" + p if p in "[]\\-^" else p for p in PUNCT) + "]"


def _with_punctuation(frame: pl.DataFrame, text: str, decide_on: str, drop_all: pl.Expr) -> pl.DataFrame:
    """``frame`` with column ``text`` through the punctuation step, each mark decided on column ``decide_on`` (only
    rows holding a mark pay for the marks, one pass per mark that occurs)."""
    marked = frame[decide_on].str.contains(_ANY_MARK).fill_null(False)
    # The decisions read the text as it was before any mark was replaced.
    done = frame.filter(marked).with_columns(drop_all.alias("_drop"), pl.col(decide_on).alias("_decide"))
    rest = frame.filter(~marked)
    for mark in PUNCT:
        if not done[text].str.contains(mark, literal=True).any():
            continue
        touches_space = pl.col("_decide").str.contains(mark + " ", literal=True) | pl.col("_decide").str.contains(
            " " + mark, literal=True
        )
        done = done.with_columns(
            pl.when(pl.col("_drop") | touches_space)
            .then(pl.col(text).str.replace_all(mark, "", literal=True))
            .otherwise(pl.col(text).str.replace_all(mark, " ", literal=True))
            .alias(text)
        )
    # A run of periods and the character after it become that character, unless it is a digit: this removes
    # exactly the periods not followed by a digit (the gate keeps texts with more than 32 periods out).
    return pl.concat([done.drop("_drop", "_decide"), rest]).with_columns(
        pl.col(text).str.replace_all(r"\.+([^0-9]|$)", "${1}")
    )


def _gated(
    series: pl.Series, columnar: Callable[[pl.DataFrame], pl.Series], definition: Callable[[str], str]
) -> pl.Series:
    """Per distinct value: ``columnar`` for ASCII text with at most 32 periods, ``definition`` for the rest."""

    def transform(distinct: pl.DataFrame) -> pl.DataFrame:
        exact = distinct.select(
            is_ascii(pl.col("v")) & (pl.col("v").str.count_matches(r"\.", literal=False) <= MAX_PERIODS)
        )
        fast = columnar(distinct).alias("n")
        return distinct.with_columns(with_fallback(fast, exact.to_series(), [distinct["v"]], definition))

    return map_unique(series, transform)


def _official_columns(distinct: pl.DataFrame) -> pl.Series:
    frame = distinct.with_row_index("_i").with_columns(
        py_strip(pl.col("v").str.replace_all("\n", " ", literal=True).str.replace_all("\t", " ", literal=True)).alias(
            "t"
        )
    )
    frame = _with_punctuation(frame, "t", "t", pl.col("t").str.contains(r"[0-9],[0-9]"))
    return frame.sort("_i").select(_digit_article(pl.col("t"), WORD_MAP))["t"]


def _evalai_columns(distinct: pl.DataFrame) -> pl.Series:
    first = pl.col("v").str.to_lowercase().str.replace_all(",", "", literal=True).str.replace_all("?", "", literal=True)
    first = py_strip(first.str.replace_all("'s", " 's", literal=True))
    second = py_strip(first.str.replace_all("\n", " ", literal=True).str.replace_all("\t", " ", literal=True))
    frame = distinct.with_row_index("_i").with_columns(second.alias("t"))
    frame = _with_punctuation(frame, "t", "t", pl.lit(False))  # no comma is left for the digit,digit rule
    return frame.sort("_i").select(_digit_article(pl.col("t"), WORD_MAP))["t"]


def _official_punctuation_columns(distinct: pl.DataFrame) -> pl.Series:
    frame = distinct.with_row_index("_i").with_columns(pl.col("v").alias("t"))
    frame = _with_punctuation(frame, "t", "v", pl.col("v").str.contains(r"[0-9],[0-9]"))
    return frame.sort("_i")["t"]


def official_answers(series: pl.Series) -> pl.Series:
    """:func:`official_answer` of every string (nulls stay null)."""
    return _gated(series, _official_columns, official_answer)


def evalai_answers(series: pl.Series) -> pl.Series:
    """:func:`evalai_answer` of every string (nulls stay null)."""
    return _gated(series, _evalai_columns, evalai_answer)


def official_punctuations(series: pl.Series) -> pl.Series:
    """:func:`process_punctuation` of every string (nulls stay null)."""
    return _gated(series, _official_punctuation_columns, process_punctuation)


# --- lenient ----------------------------------------------------------------------------------------------------


def _lenient_columns(frame: pl.DataFrame) -> pl.DataFrame:
    """The lenient normalization over column ``v`` into ``n``."""
    text = pl.col("v").str.replace_all(r"[\n\t]", " ").str.replace_all("[’‘]", "'").str.strip_chars()
    frame = frame.with_columns(text.alias("t"))
    has_punct = frame["t"].str.contains(_ANY_MARK).fill_null(False)
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
    """The lenient VQA normalization of every string in ``series`` (nulls stay null)."""
    return map_unique(series, _lenient_columns)
