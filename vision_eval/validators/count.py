"""Object counts: (number, object) pairs extracted from text, matched by object.

"I count five red circles and 3 blue squares" -> circle: 5, square: 3. Number words ("five",
"a dozen", "twenty-one", "no") become digits, phrases are split at stop words, each noun is
singularized, and an expected object matches the output mentions whose phrase holds that noun.
Everything is Polars column operations over the whole frame.
"""

from __future__ import annotations

import polars as pl

_UNITS = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
_UNITS += "seventeen eighteen nineteen"
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
# Applied in order; compound phrases before single words.
NUMBER_WORDS: list[tuple[str, str]] = [
    (r"\bhalf (?:a )?dozen\b", "6"),
    (r"\b(?:a |one )?dozen\b", "12"),
    (r"\b(?:a )?(?:pair|couple) of\b", "2"),
    (r"\b(?:a single|single|an|a)\b", "1"),
    (r"\b(?:no|none)\b", "0"),
    *[(rf"\b{word}\b", str(i)) for i, word in enumerate(_UNITS.split())],
    *[(rf"\b{word}\b", str(value)) for word, value in _TENS.items()],
]
_ANY_NUMBER_WORD = (
    r"\b(?:" + "|".join(["dozen", "pair", "couple", "single", "an?", "no", "none", *_UNITS.split(), *_TENS]) + r")\b"
)
STOP_WORDS = [
    "and",
    "or",
    "plus",
    "with",
    "in",
    "on",
    "at",
    "of",
    "but",
    "the",
    "there",
    "are",
    "is",
    "was",
    "were",
    "i",
    "see",
    "can",
    "count",
    "counted",
    "total",
    "which",
    "that",
    "from",
    "to",
    "by",
    "for",
    "each",
    "also",
    "as",
    "than",
    "about",
    "approximately",
    "around",
    "exactly",
    "only",
    "just",
    "image",
    "picture",
    "photo",
    "shows",
    "show",
]
_STOP = r"\b(?:" + "|".join(STOP_WORDS) + r")\b"
_PAIR = r"\d+\s+[a-z][a-z'-]*(?:\s+[a-z][a-z'-]*){0,2}"
IRREGULAR = {
    "people": "person",
    "children": "child",
    "men": "man",
    "women": "woman",
    "mice": "mouse",
    "geese": "goose",
    "teeth": "tooth",
    "feet": "foot",
    "knives": "knife",
    "leaves": "leaf",
    "shelves": "shelf",
    "wolves": "wolf",
    "sheep": "sheep",
    "fish": "fish",
    "buses": "bus",
    "lenses": "lens",
    "gases": "gas",
}


def normalize_numbers(text: pl.Expr) -> pl.Expr:
    """Lowercased text with number words as digits and ``noun: N`` turned into ``N noun``."""
    expr = text.str.to_lowercase()
    for pattern, digits in NUMBER_WORDS:
        expr = expr.str.replace_all(pattern, digits)
    # "twenty-one" -> "20-1" -> "21"
    expr = expr.str.replace_all(r"\b(\d)0[- ](\d)\b", "${1}${2}")
    return expr.str.replace_all(r"([a-z][a-z-]*)\s*[:=]\s*(\d+)\b", "${2} ${1}")


def singular(word: pl.Expr) -> pl.Expr:
    """Singular form of lowercase English nouns (regular rules plus common irregulars)."""
    regular = (
        pl.when(word.str.contains(r"[^aeiou]ies$"))
        .then(word.str.replace(r"ies$", "y"))
        .when(word.str.contains(r"(?:ss|x|z|ch|sh)es$"))
        .then(word.str.replace(r"es$", ""))
        .when(word.str.contains(r"[^su]s$") & (word.str.len_chars() > 3))
        .then(word.str.replace(r"s$", ""))
        .otherwise(word)
    )
    return word.replace_strict(IRREGULAR, default=regular, return_dtype=pl.Utf8)


def _normalized(frame: pl.DataFrame, column: str) -> pl.Series:
    """``normalize_numbers`` of a column, run only on the rows that hold a number word (the chain is costly)."""
    lower = frame.get_column(column).cast(pl.Utf8).fill_null("").str.to_lowercase()
    mask = lower.str.contains(_ANY_NUMBER_WORD)
    if mask.any():
        converted = lower.filter(mask).to_frame("t").select(normalize_numbers(pl.col("t")))["t"]
        lower = lower.scatter(mask.arg_true(), converted)
    return lower.str.replace_all(r"([a-z][a-z-]*)\s*[:=]\s*(\d+)\b", "${2} ${1}")


def mentions(frame: pl.DataFrame, column: str) -> pl.DataFrame:
    """Long frame of count mentions: ``_row, _m (mention index), n, words (singular), last``."""
    text = _normalized(frame, column).str.replace_all(_STOP, ",").str.replace_all(r"\s+", " ")
    pairs = pl.DataFrame({"_row": pl.int_range(0, frame.height, eager=True, dtype=pl.UInt32), "p": text})
    pairs = pairs.with_columns(pl.col("p").str.extract_all(_PAIR)).explode("p").drop_nulls("p")
    pairs = pairs.with_row_index("_m").with_columns(
        pl.col("p").str.extract(r"^(\d+)").cast(pl.Int64).alias("n"),
        pl.col("p").str.replace(r"^\d+\s+", "").str.split(" ").list.eval(singular(pl.element())).alias("words"),
    )
    return pairs.with_columns(pl.col("words").list.last().alias("last")).drop("p")


def _bare_numbers(frame: pl.DataFrame, column: str) -> pl.Series:
    return _normalized(frame, column).str.extract_all(r"\b\d+\b").list.eval(pl.element().cast(pl.Int64))


def _json_object(key: pl.Expr, value: pl.Expr) -> pl.Expr:
    """Aggregation: a JSON object text from key/value columns (keys are plain words, values numbers)."""
    return pl.concat_str(pl.lit("{"), pl.format('"{}": {}', key, value).str.join(", "), pl.lit("}"))


def count_frame(frame: pl.DataFrame) -> pl.DataFrame:
    """Score ``output`` against ``expected_output`` counts; see the module docstring."""
    height = frame.height
    rows = pl.DataFrame({"_row": pl.int_range(0, height, eager=True, dtype=pl.UInt32)})
    expected = mentions(frame, "expected_output").select("_row", "_m", pl.col("last").alias("object"), "n")
    # The same object named twice in the expected text keeps its first count.
    expected = expected.unique(["_row", "object"], keep="first", maintain_order=True)
    found = mentions(frame, "output")
    keyed = (
        found.explode("words")
        .join(expected.select("_row", pl.col("object").alias("words")), on=["_row", "words"], how="inner")
        .group_by("_m")
        .agg(pl.col("words").first().alias("key"))
    )
    found = found.join(keyed, on="_m", how="left").with_columns(pl.coalesce("key", "last").alias("object"))
    per_object = (
        found.sort("_m")
        .group_by("_row", "object", maintain_order=True)
        .agg(pl.col("n").first().alias("first"), pl.col("n").sum().alias("total"))
    )
    match = expected.join(per_object, on=["_row", "object"], how="left").with_columns(
        (
            (pl.col("first") == pl.col("n"))
            | (pl.col("total") == pl.col("n"))
            | (pl.col("first").is_null() & (pl.col("n") == 0))
        )
        .fill_null(False)
        .alias("ok")
    )
    match = match.with_columns(
        pl.when(pl.col("total") == pl.col("n")).then("total").otherwise("first").alias("got"),
    )
    by_row = match.group_by("_row").agg(
        pl.col("ok").mean().alias("score"),
        pl.col("ok").sum().alias("hits"),
        pl.len().alias("total_expected"),
        _json_object(pl.col("object"), pl.col("n")).alias("expected"),
        _json_object(pl.col("object").filter(pl.col("ok")), pl.col("n").filter(pl.col("ok"))).alias("matched"),
        pl.col("object").filter(~pl.col("ok")).str.join(", ").alias("wrong"),
    )
    found_json = per_object.group_by("_row").agg(_json_object(pl.col("object"), pl.col("first")).alias("found"))

    # A bare expected number ("7") matches any count the output states, or the sum of its counts.
    bare = pl.DataFrame(
        {
            "_row": rows["_row"],
            "bare": _bare_numbers(frame, "expected_output").list.first(),
            "out_numbers": _bare_numbers(frame, "output"),
        }
    )
    sums = found.group_by("_row").agg(pl.col("n").sum().alias("out_total"))
    out = (
        rows.join(by_row, on="_row", how="left")
        .join(found_json, on="_row", how="left")
        .join(bare, on="_row", how="left")
        .join(sums, on="_row", how="left")
        .sort("_row")
    )
    bare_ok = (pl.col("out_numbers").list.contains(pl.col("bare")) | (pl.col("out_total") == pl.col("bare"))).fill_null(
        False
    )
    is_bare = pl.col("score").is_null() & pl.col("bare").is_not_null()
    found_text = pl.col("found").fill_null("{}")
    reasoning = (
        pl.when(is_bare)
        .then(
            pl.when(bare_ok)
            .then(pl.format("the response states the expected count {}", pl.col("bare")))
            .otherwise(pl.format("the response never states the expected count {}", pl.col("bare")))
        )
        .otherwise(
            pl.format(
                "{} of {} expected counts match{}",
                pl.col("hits"),
                pl.col("total_expected"),
                pl.when(pl.col("wrong") != "").then(pl.format("; wrong or missing: {}", "wrong")).otherwise(pl.lit("")),
            )
        )
    )
    bare_json = pl.concat_str(pl.lit('{"*": '), pl.col("bare").cast(pl.Utf8), pl.lit("}"))
    details = pl.concat_str(
        pl.lit('{"expected": '),
        pl.when(is_bare).then(bare_json).otherwise(pl.col("expected")),
        pl.lit(', "found": '),
        found_text,
        pl.lit(', "matched": '),
        pl.when(is_bare).then(pl.when(bare_ok).then(bare_json).otherwise(pl.lit("{}"))).otherwise(pl.col("matched")),
        pl.lit(', "reasoning": '),
        pl.struct(reasoning.alias("r")).struct.json_encode().str.slice(5).str.head(-1),
        pl.lit("}"),
    )
    no_counts = pl.col("score").is_null() & pl.col("bare").is_null()
    return out.select(
        pl.when(no_counts).then(pl.lit("error")).otherwise(pl.lit("processed")).alias("status"),
        pl.when(is_bare).then(bare_ok.cast(pl.Float64)).otherwise(pl.col("score")).alias("score"),
        pl.when(~no_counts).then(details).alias("details"),
        pl.when(no_counts).then(pl.lit("expected_output states no counts")).alias("error"),
    )
