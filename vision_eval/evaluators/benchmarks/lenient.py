"""Column pieces of the ``lenient`` protocol of ``relaxed_accuracy``, ``anls`` and ``vqa_accuracy``.

``lenient`` is this project's own reading (no reference script to reproduce), defined by Polars expressions: each
row's reference answers (read by :func:`~vision_eval.evaluators.benchmarks.text.reference_answers`, the rule the
other protocols' row functions use, once per distinct text) are exploded to one row per (sample, answer), scored as
columns and grouped back.
"""

from __future__ import annotations

import polars as pl

from vision_eval.evaluator import EvalOutput
from vision_eval.evaluators.benchmarks.protocols import answers_text
from vision_eval.evaluators.benchmarks.text import WHITE_SPACE, reference_answers
from vision_eval.results import ERROR, PROCESSED, RESULT_ROW_SCHEMA, conform

ROW = "_row"
"""Column holding a row's position in the batch (used to group exploded answers back)."""


_STARTS_A_LIST = "^[\\[" + "".join(f"\\x{{{ord(c):X}}}" for c in WHITE_SPACE) + "]"
"""Text ``reference_answers`` may read as a list: it starts with ``[`` or white space (anything else is one answer)."""
_PLAIN_TEXT = r'"[^"\\\x00-\x1f]*"'
PLAIN_LIST = rf"^\[ *{_PLAIN_TEXT}(?: *, *{_PLAIN_TEXT})* *\]$"
"""A JSON list of texts without escapes (as ``json.dumps`` writes most answer lists): Polars decodes it as Python's
``json.loads`` does."""


def answer_lists(texts: pl.Series, column: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(``lists``: each distinct text of ``texts`` with its index ``_answers`` and ``gold_error``; ``golds``:
    ``_answers, gold``, each text's answers in order), as ``reference_answers`` reads them. One answer and plain
    JSON lists are read by Polars, the other texts by ``reference_answers`` itself."""
    lists = pl.DataFrame({"answers": texts.unique(maintain_order=True)}).with_row_index("_answers")
    one = ~pl.col("answers").str.contains(_STARTS_A_LIST)
    plain = pl.col("answers").str.contains(PLAIN_LIST)
    others = lists.filter(~one & ~plain)
    read = [reference_answers(text, column) for text in others["answers"].to_list()]
    golds = [
        lists.filter(one).select("_answers", pl.col("answers").alias("gold")),
        lists.filter(plain).select("_answers", pl.col("answers").str.json_decode(pl.List(pl.Utf8)).alias("gold")),
        pl.DataFrame(
            {
                "_answers": [i for i, (answers, _) in zip(others["_answers"], read) for _ in answers or ()],
                "gold": [gold for answers, _ in read for gold in answers or ()],
            },
            schema={"_answers": pl.UInt32, "gold": pl.Utf8},
        ),
    ]
    golds[1] = golds[1].explode("gold")
    errors = pl.DataFrame(
        {"_answers": others["_answers"], "gold_error": [error for _, error in read]},
        schema={"_answers": pl.UInt32, "gold_error": pl.Utf8},
    )
    return lists.join(errors, on="_answers", how="left", maintain_order="left"), pl.concat(golds)


def pairs_frame(
    batch: pl.DataFrame, column: str, **row_columns: pl.Expr | pl.Series
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(``rows``: ``_row, sample_id, output, answers, gold_error``; ``pairs``: ``_row, output, gold`` plus
    ``row_columns`` (expressions over the rows, or Series in row order, computed once per row before the answers are
    exploded) for the rows with usable answers, in row order and each row's answers in their order)."""
    texts = batch.select(answers_text(batch, column))["answers"]
    lists, golds = answer_lists(texts, column)
    rows = (
        pl.DataFrame({"sample_id": batch["id"], "output": batch["output"].cast(pl.Utf8), "answers": texts})
        .with_row_index(ROW)
        .join(lists, on="answers", how="left", maintain_order="left", nulls_equal=True)
        .with_columns(*[value.alias(name) for name, value in row_columns.items()])
    )
    pairs = (
        rows.filter(pl.col("gold_error").is_null())
        .select(ROW, "output", *row_columns, "_answers")
        .join(golds, on="_answers", how="inner", maintain_order="left_right")
        .drop("_answers")
    )
    return rows.select(ROW, "sample_id", "output", "answers", "gold_error"), pairs


def best_answer(pairs: pl.DataFrame, score: str = "score", *carried: str) -> pl.DataFrame:
    """Per ``_row``: the highest ``score``, the reference answer (``best``) that reached it and ``carried``."""
    at_best = pl.col(score).arg_max()
    return pairs.group_by(ROW).agg(
        pl.col(score).max().alias(score),
        pl.col("gold").get(at_best).alias("best"),
        *(pl.col(c).get(at_best) for c in carried),
    )


def collapse_ws(expr: pl.Expr) -> pl.Expr:
    """Lowercased, trimmed, whitespace runs collapsed to one space."""
    # Only runs of 2+ or non-space whitespace are rewritten: several times faster than replacing every "\s+".
    return expr.str.to_lowercase().str.replace_all(r"\s{2,}|[^\S ]", " ").str.strip_chars()


def details(**fields: pl.Expr) -> pl.Expr:
    """A ``details`` JSON object (``protocol: lenient`` first) built from column expressions."""
    return pl.struct(pl.lit("lenient").alias("protocol"), *[e.alias(n) for n, e in fields.items()]).struct.json_encode()


def finish(rows: pl.DataFrame, scored: pl.DataFrame, handed_over: pl.DataFrame | None = None) -> EvalOutput:
    """Result rows: ``rows`` (``_row, sample_id, gold_error``) joined with ``scored`` (``_row, score, details``),
    and the result rows ``handed_over`` to a row function (with their ``_row``; not in ``rows``), in row order."""
    out = rows.join(scored, on=ROW, how="left")
    failed = pl.col("gold_error").is_not_null()
    results = out.select(
        "sample_id",
        pl.when(failed).then(pl.lit(ERROR)).otherwise(pl.lit(PROCESSED)).alias("status"),
        pl.when(~failed).then(pl.col("score")).alias("score"),
        pl.when(~failed).then(pl.col("details")).alias("details"),
        pl.col("gold_error").alias("error"),
        ROW,
    )
    if handed_over is not None:
        results = pl.concat([results, handed_over], how="diagonal_relaxed")
    return EvalOutput(conform(results.sort(ROW).drop(ROW), RESULT_ROW_SCHEMA))
