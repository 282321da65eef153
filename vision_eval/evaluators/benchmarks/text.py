"""Shared pieces of the benchmark metrics: reference-answer lists, Python's text rules on columns, number words.

Everything here works on whole columns. A protocol's row-wise definition is plain Python; a vectorized path reads
only the rows it reads exactly as that definition would (e.g. ASCII text, where Python's ``lower``/``split`` and
Polars' agree) and :func:`with_fallback` hands the rest to the definition.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import polars as pl

ROW = "_row"
"""Column holding a row's position in the batch (used to group exploded answers back)."""


def _python_lists(texts: list[str | None]) -> tuple[list[list[str] | None], list[str | None]]:
    """Row-wise JSON list decoding: used only when the vectorized decoder refuses a batch."""
    lists: list[list[str] | None] = []
    errors: list[str | None] = []
    for text in texts:
        if text is None:
            lists.append(None)
            errors.append(None)
            continue
        try:
            value = json.loads(text)
            if not isinstance(value, list) or any(isinstance(v, list | dict) for v in value):
                raise ValueError("not a flat JSON list")
            lists.append([v if isinstance(v, str) else json.dumps(v) for v in value if v is not None])
            errors.append(None)
        except ValueError as exc:
            lists.append(None)
            errors.append(f"reference answers look like a JSON list but do not parse ({exc}): {text[:200]}")
    return lists, errors


def reference_lists(batch: pl.DataFrame, column: str) -> pl.DataFrame:
    """Per row of ``batch``: ``_row``, ``golds`` (list of answers) and ``gold_error`` (null or why unusable).

    ``column`` is a list column, or text holding either one answer or a JSON list of answers.
    """
    series = batch[column]
    if isinstance(series.dtype, pl.List | pl.Array):
        golds = series.cast(pl.List(pl.Utf8)).list.drop_nulls()
        errors = pl.Series("gold_error", [None] * batch.height, dtype=pl.Utf8)
    else:
        text = series.cast(pl.Utf8)
        stripped = text.str.strip_chars()
        is_list = stripped.str.starts_with("[").fill_null(False)
        errors = pl.Series("gold_error", [None] * batch.height, dtype=pl.Utf8)
        if not is_list.any():
            golds = pl.DataFrame({"t": text}).select(pl.concat_list("t"))["t"]
        else:
            # Rows that are not lists decode as JSON null; a batch the vectorized decoder refuses (some row
            # is not valid JSON) is decoded row by row so that only the bad rows error.
            to_decode = stripped if is_list.all() else stripped.zip_with(is_list, pl.Series(["null"]))
            try:
                decoded = to_decode.str.json_decode(pl.List(pl.Utf8))
            except pl.exceptions.PolarsError:
                lists, reasons = _python_lists([s if flag else None for s, flag in zip(stripped, is_list, strict=True)])
                decoded = pl.Series("d", lists, dtype=pl.List(pl.Utf8))
                errors = pl.Series("gold_error", reasons, dtype=pl.Utf8)
            golds = pl.DataFrame({"t": text, "l": is_list, "d": decoded}).select(
                pl.when("l").then(pl.col("d").list.drop_nulls()).otherwise(pl.concat_list("t")).alias("golds")
            )["golds"]
    out = pl.DataFrame({ROW: pl.int_range(batch.height, eager=True, dtype=pl.UInt32), "golds": golds})
    empty = pl.col("golds").list.len().fill_null(0) == 0
    return out.with_columns(
        pl.coalesce(errors.alias("gold_error"), pl.when(empty).then(pl.lit(f"no reference answers in {column}"))).alias(
            "gold_error"
        )
    )


def pairs_frame(
    batch: pl.DataFrame, column: str, **row_columns: pl.Expr | pl.Series
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(``rows``: ``_row, sample_id, output, gold_error``; ``pairs``: ``_row, output, gold`` plus ``row_columns``
    (expressions over the rows, or Series in row order, computed once per row before the answers are exploded)
    for the rows with usable answers)."""
    refs = reference_lists(batch, column)
    rows = pl.DataFrame(
        {ROW: refs[ROW], "sample_id": batch["id"], "output": batch["output"].cast(pl.Utf8)}
    ).with_columns(refs["gold_error"])
    pairs = (
        rows.with_columns(refs["golds"], *[value.alias(name) for name, value in row_columns.items()])
        .filter(pl.col("gold_error").is_null())
        .select(ROW, "output", *row_columns, pl.col("golds").alias("gold"))
        .explode("gold")
    )
    return rows, pairs


PY_ASCII_WHITESPACE = "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f "
"""The ASCII characters Python's ``str.split()`` / ``str.strip()`` treat as whitespace (``\\x1c``-``\\x1f`` too)."""
_PY_WS_RUN = r"[\t\n\x0B\x0C\r\x1C-\x1F ]+"


def is_ascii(expr: pl.Expr) -> pl.Expr:
    """True for text with only ASCII characters (null stays null)."""
    return ~expr.str.contains(r"[^\x00-\x7F]")


def py_words_joined(expr: pl.Expr) -> pl.Expr:
    """``" ".join(text.split())`` for ASCII text, exactly as Python does it."""
    return expr.str.replace_all(_PY_WS_RUN, " ").str.strip_chars(" ")


def py_strip(expr: pl.Expr) -> pl.Expr:
    """``text.strip()`` for ASCII text, exactly as Python does it."""
    return expr.str.strip_chars(PY_ASCII_WHITESPACE)


def with_fallback(
    fast: pl.Series, exact: pl.Series, inputs: list[pl.Series], definition: Callable[..., Any]
) -> pl.Series:
    """``fast`` where ``exact`` is true; elsewhere ``definition`` (the row-wise definition) of the row's ``inputs``."""
    slow = (~exact.fill_null(True)).arg_true()
    if slow.len() == 0:
        return fast
    values = [definition(*args) for args in zip(*(s.gather(slow).to_list() for s in inputs), strict=True)]
    return fast.clone().scatter(slow, pl.Series(values, dtype=fast.dtype))


def collapse_ws(expr: pl.Expr) -> pl.Expr:
    """Lowercased, trimmed, whitespace runs collapsed to one space."""
    # Only runs of 2+ or non-space whitespace are rewritten: several times faster than replacing every "\s+".
    return expr.str.to_lowercase().str.replace_all(r"\s{2,}|[^\S ]", " ").str.strip_chars()


def map_unique(series: pl.Series, transform: Callable[[pl.DataFrame], pl.DataFrame]) -> pl.Series:
    """``transform`` applied once per distinct value: it gets a frame of distinct strings ``v`` and returns
    ``v`` with the result ``n``, which is joined back onto every row."""
    values = pl.DataFrame({"v": series.cast(pl.Utf8)})
    distinct = values.unique()
    mapped = transform(distinct)
    return values.join(mapped, on="v", how="left", maintain_order="left", nulls_equal=True)["n"].alias(series.name)


# --- numbers written as words ---------------------------------------------------------------------------

_UNITS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"]
_TEENS = ["thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
_TENS = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]


def _number_words() -> dict[str, int]:
    words = {w: i for i, w in enumerate(_UNITS)}
    words.update({w: 13 + i for i, w in enumerate(_TEENS)})
    for t, tens in enumerate(_TENS):
        value = 20 + 10 * t
        words[tens] = value
        for u in range(1, 10):
            words[f"{tens}-{_UNITS[u]}"] = value + u
            words[f"{tens} {_UNITS[u]}"] = value + u
    words["none"] = 0
    words["a dozen"] = 12
    words["dozen"] = 12
    words["hundred"] = 100
    words["a hundred"] = 100
    words["one hundred"] = 100
    return words


NUMBER_WORDS: dict[str, int] = _number_words()
# Longest first: the regex alternation takes the first alternative that matches ("twenty-one" before "twenty").
_WORD_ALTERNATION = "|".join(sorted(NUMBER_WORDS, key=len, reverse=True)).replace(" ", r"\s+")
NUMBER_PATTERN = rf"\b(?:\d+(?:,\d{{3}})*(?:\.\d+)?|{_WORD_ALTERNATION})\b"
"""One number in text: digits (thousands commas, decimals) or an English number word up to 100."""


def number_token_value(token: pl.Expr) -> pl.Expr:
    """The numeric value of a token matched by ``NUMBER_PATTERN`` (Float64)."""
    word = token.str.replace_all(r"\s+", " ")
    as_word = word.replace_strict(NUMBER_WORDS, default=None, return_dtype=pl.Float64)
    as_digits = token.str.replace_all(",", "", literal=True).cast(pl.Float64, strict=False)
    return pl.coalesce(as_digits, as_word)


def details_json(**fields: pl.Expr) -> pl.Expr:
    """A ``details`` JSON object built from column expressions."""
    return pl.struct([expr.alias(name) for name, expr in fields.items()]).struct.json_encode()
