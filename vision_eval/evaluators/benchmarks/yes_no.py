"""POPE: reading yes/no from a reply under each protocol, and the dataset-level metrics each protocol reports.

- ``official`` (POPE's evaluate.py): only the first sentence counts (the text before the first ``.``); commas are
  removed and the text is split on spaces; a word ``No``, ``not`` or ``no`` makes the answer "no", anything else is
  "yes" ("NO", ``"No"``, "Nope" and an empty reply are "yes"; "Yes, no doubt." is "no"). A reply whose first
  sentence has none of the words No/no/not/Yes/yes is *unparseable*: it is counted as "yes", as the script does.
- ``lmms_eval``: the whole reply, lowercased and stripped, must be "yes" or "no"; anything else is *unparseable*
  and scored wrong (it then counts in accuracy, in neither precision's nor recall's denominator).
- ``lenient``: a leading yes/no word wins, else the reply must contain exactly one of the words; an unparseable
  reply is a row error, left out of every metric.
"""

from __future__ import annotations

import re
from typing import Any

import polars as pl

from vision_eval.evaluators.benchmarks.text import is_ascii, py_strip, with_fallback
from vision_eval.evaluators.code.text import char_class, holding_any, lowercase_disagreements, word_disagreements

NO_WORDS = ("No", "not", "no")
YES_WORDS = ("Yes", "yes")

# --- row-wise definitions -----------------------------------------------------------------------------------


def official_reading(reply: str) -> tuple[str, bool]:
    """(answer, unparseable) as POPE's evaluate.py reads the reply."""
    words = set(reply.split(".")[0].replace(",", "").split(" "))
    if words & set(NO_WORDS):
        return "no", False
    return "yes", not words & set(YES_WORDS)


def lmms_eval_reading(reply: str) -> str | None:
    """ "yes" / "no" when the lowercased, stripped reply is exactly that; ``None`` otherwise."""
    text = reply.lower().strip()
    return text if text in ("yes", "no") else None


_LEADING = re.compile(r"^[^a-z0-9]*(yes|no)\b")


def lenient_reading(reply: str) -> str | None:
    """The lenient reading (a leading yes/no word, else exactly one of the words), ``None`` when neither."""
    text = reply.lower()
    leading = _LEADING.match(text)
    if leading:
        return leading.group(1)
    has_yes, has_no = re.search(r"\byes\b", text) is not None, re.search(r"\bno\b", text) is not None
    return "yes" if has_yes and not has_no else "no" if has_no and not has_yes else None


# --- columns --------------------------------------------------------------------------------------------------


def official_readings(replies: pl.Series) -> pl.DataFrame:
    """``prediction`` and ``unparseable`` of every reply (pure substring work: exact for any text)."""
    first = replies.cast(pl.Utf8).str.splitn(".", 2).struct.field("field_0")
    spaced = pl.DataFrame({"w": " " + first.str.replace_all(",", "", literal=True) + " "})
    # A word is what lies between two spaces once the text is padded with one space on each side.
    words = spaced.select(
        pl.col("w").str.contains(" (?:" + "|".join(NO_WORDS) + ") ").alias("no"),
        pl.col("w").str.contains(" (?:" + "|".join(YES_WORDS) + ") ").alias("yes"),
    )
    return words.select(
        pl.when("no").then(pl.lit("no")).otherwise(pl.lit("yes")).alias("prediction"),
        (~pl.col("no") & ~pl.col("yes")).alias("unparseable"),
    )


def lmms_eval_readings(replies: pl.Series) -> pl.Series:
    """:func:`lmms_eval_reading` of every reply (Polars for ASCII text, Python for the rest)."""
    frame = pl.DataFrame({"r": replies.cast(pl.Utf8)})
    text = py_strip(pl.col("r").str.to_lowercase())
    frame = frame.select(
        pl.when(text.is_in(["yes", "no"])).then(text).alias("prediction"), is_ascii(pl.col("r")).alias("exact")
    )
    return with_fallback(frame["prediction"], frame["exact"], [replies], lmms_eval_reading)


def lenient_readings(replies: pl.Series) -> pl.Series:
    """:func:`lenient_reading` of every reply. Polars reads the rows it reads exactly as Python does; the definition
    reads the others: rows holding a character Polars lowercases otherwise, and rows where a yes/no touches a
    character that is a word character to only one of the two regex engines (``\\b`` differs there: a combining
    mark is one to Polars, not to Python, and "İ" lowercases to "i" and a combining dot)."""
    text = replies.cast(pl.Utf8)
    lower = text.str.to_lowercase()
    leading = lower.str.extract(r"^[^a-z0-9]*(yes|no)\b", 1)
    has_yes = lower.str.contains(r"\byes\b").fill_null(False)
    has_no = lower.str.contains(r"\bno\b").fill_null(False)
    single = pl.select(pl.when(has_yes & ~has_no).then(pl.lit("yes")).when(has_no & ~has_yes).then(pl.lit("no")))
    reading = leading.fill_null(single.to_series())
    odd = holding_any(text, lowercase_disagreements())
    non_ascii = (lower.str.len_bytes() != lower.str.len_chars()).fill_null(False)
    if non_ascii.any():
        differing = char_class(word_disagreements())
        odd |= non_ascii & lower.str.contains(f"{differing}(?:yes|no)|(?:yes|no){differing}").fill_null(False)
    return with_fallback(reading, ~odd, [text], lenient_reading)


def strict_answers(expected: pl.Series) -> pl.Series:
    """A reference answer read as the reference protocols need it: "yes"/"no" after lowercase and strip, else
    null (an error row)."""
    if expected.is_in(["yes", "no"]).all():  # benchmark answers almost always are bare already
        return expected
    return lmms_eval_readings(expected)


# --- dataset-level metrics ---------------------------------------------------------------------------------------


def _ratio(part: float, whole: float) -> float:
    # Both reference scripts give 0 (lmms-eval) or fail (POPE) for an empty denominator; 0 keeps the run going.
    return part / whole if whole else 0.0


def pope_metrics(protocol: str, prediction: pl.Series, expected: pl.Series, unparseable: int) -> dict[str, Any]:
    """Accuracy, precision, recall, F1 (``yes`` is the positive class) and yes-ratio as ``protocol`` computes them
    from the rows it scores (``prediction`` null = an unparseable reply under ``lmms_eval``)."""
    said_yes, said_no, gold_yes = prediction == "yes", prediction == "no", expected == "yes"
    tp = int((said_yes & gold_yes).sum())
    fp = int((said_yes & ~gold_yes).sum())
    fn = int((said_no & gold_yes).sum())
    tn = int((said_no & ~gold_yes).sum())
    n = expected.len()
    precision, recall = _ratio(tp, tp + fp), _ratio(tp, tp + fn)
    metrics: dict[str, Any] = {
        "protocol": protocol,
        "accuracy": _ratio(tp + tn, n),
        "precision": precision,
        "recall": recall,
        "f1": _ratio(2 * precision * recall, precision + recall),
        "yes_ratio": _ratio(tp + fp, n),
        "n": n,
        "unparseable": unparseable,
        "tp": tp,
        "fp": fp,
        "tn": tn,
        "fn": fn,
    }
    if protocol == "lmms_eval":
        # What lmms-eval prints as pope_yes_ratio: the share of *reference* answers that are yes.
        metrics["reference_yes_ratio"] = _ratio(int(gold_yes.sum()), n)
    return metrics
