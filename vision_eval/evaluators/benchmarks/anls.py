"""ANLS of each protocol, row-wise (the definition) and on columns.

``official`` and ``lmms_eval`` (lmms-eval's ``anls`` is the RRC script's computation): both texts are stripped,
lowercased and whitespace-collapsed for the edit distance, but the distance is divided by the longer of the *raw*
texts (their ``upper()`` lengths), so ``"i  a"`` against ``"a"`` scores 1 - 2/4 = 0.5; the row's value is
1 - the smallest normalized distance over the answers, 0 below the threshold. ``lenient`` divides by the
normalized lengths.
"""

from __future__ import annotations

import polars as pl

from vision_eval.evaluators.benchmarks.text import is_ascii, py_words_joined, with_fallback


def _levenshtein(a: str, b: str) -> int:
    from rapidfuzz.distance import Levenshtein

    return int(Levenshtein.distance(a, b))


def official_distance(prediction: str, answer: str) -> float:
    """The reference's normalized distance between a reply and one answer (0 when both are empty)."""
    gold = " ".join(answer.strip().lower().split())
    predicted = " ".join(prediction.strip().lower().split())
    length = max(len(answer.upper()), len(prediction.upper()))
    return 0.0 if length == 0 else _levenshtein(gold, predicted) / length


def normalized(text: pl.Expr) -> pl.Expr:
    """A text as the reference protocols compare it: stripped, lowercased, whitespace runs collapsed."""
    return py_words_joined(text.str.to_lowercase())


def official_row_columns() -> dict[str, pl.Expr]:
    """What :func:`official_distances` needs of each reply, computed once per row before answers are exploded."""
    output = pl.col("output")
    return {
        "a": py_words_joined(output.str.to_lowercase()),
        "olen": output.str.len_chars(),
        "oascii": is_ascii(output),
    }


def official_distances(pairs: pl.DataFrame, workers: int = 1) -> pl.Series:
    """:func:`official_distance` of every pair of ``pairs`` (``output``, ``gold`` and :func:`official_row_columns`)."""
    import numpy as np
    from rapidfuzz.distance import Levenshtein
    from rapidfuzz.process import cpdist

    if pairs.height == 0:
        return pl.Series("nl", [], dtype=pl.Float64)
    frame = pairs.select(
        py_words_joined(pl.col("gold").str.to_lowercase()).alias("b"),
        pl.max_horizontal(pl.col("olen"), pl.col("gold").str.len_chars()).alias("length"),
        (pl.col("oascii") & is_ascii(pl.col("gold"))).alias("exact"),
    )
    distance = cpdist(pairs["a"].to_list(), frame["b"].to_list(), scorer=Levenshtein.distance, workers=workers)
    frame = frame.with_columns(pl.Series("d", np.asarray(distance), dtype=pl.Float64))
    fast = frame.select(pl.when(pl.col("length") == 0).then(0.0).otherwise(pl.col("d") / pl.col("length")).alias("nl"))
    return with_fallback(fast["nl"], frame["exact"], [pairs["output"], pairs["gold"]], official_distance)
