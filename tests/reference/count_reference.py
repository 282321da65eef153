"""Frozen copy of the implementation before the chart-count fast paths (equivalence tests only).

Object counts: (number, object) pairs extracted from text, matched by object.

"I count five red circles and 3 blue squares" -> circle: 5, square: 3. Number words ("five",
"a dozen", "twenty-one", "no") become digits, phrases are split at stop words, each noun is
singularized, and an expected object matches the output mentions whose phrase holds that noun.
Everything is Polars column operations over the whole frame.
"""

from __future__ import annotations

import polars as pl

_UNITS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
# Words and phrases -> digits. Text is matched with every word padded by two spaces, so " five " never
# matches inside "fivefold"; phrases come first because the earliest listed pattern wins at a position.
NUMBER_WORDS: dict[str, int] = {
    "half a dozen": 6,
    "half dozen": 6,
    "a dozen": 12,
    "one dozen": 12,
    "dozen": 12,
    "a pair of": 2,
    "pair of": 2,
    "a couple of": 2,
    "couple of": 2,
    "a single": 1,
    **{
        f"{tens}{sep}{unit}": value + i
        for tens, value in _TENS.items()
        for i, unit in enumerate(_UNITS[1:10], 1)
        for sep in ("-", " ")
    },
    **{word: i for i, word in enumerate(_UNITS)},
    **_TENS,
    "single": 1,
    "an": 1,
    "a": 1,
    "no": 0,
    "none": 0,
}
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
_WORD_PATTERNS = [" " + w.replace(" ", "  ") + " " for w in NUMBER_WORDS]
_WORD_DIGITS = [f" {n} " for n in NUMBER_WORDS.values()]
_STOP_PATTERNS = [f" {w} " for w in STOP_WORDS]
_PAIR = r"\d+ +[a-z][a-z'-]*(?: +[a-z][a-z'-]*){0,2}"
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


_PAD = {",": "  ,  ", ".": "  .  ", ";": "  ;  ", ":": "  :  ", "!": "  !  ", "?": "  ?  ", "(": "  (  ", ")": "  )  "}
_PAD |= {'"': '  "  ', "/": "  /  ", "=": "  =  ", " ": "  ", "\n": "  ", "\t": "  ", "\r": "  "}


def normalize(text: pl.Expr) -> pl.Expr:
    """Lowercase text with number words as digits, ``noun: N`` as ``N noun`` and stop words as commas.

    Literal multi-pattern replacements (Aho-Corasick) over space-padded words instead of one regex
    per word: every word is surrounded by at least two spaces, so " five " never matches "fivefold".
    """
    padded = text.cast(pl.Utf8).fill_null("").str.to_lowercase().str.replace_many(_PAD, leftmost=True)
    padded = pl.concat_str(pl.lit("  "), padded, pl.lit("  "))
    digits = padded.str.replace_many(_WORD_PATTERNS, _WORD_DIGITS, leftmost=True)
    reordered = digits.str.replace_all(r"([a-z][a-z'-]*) +[:=] +(\d+)", "$2 $1")
    return reordered.str.replace_many(_STOP_PATTERNS, [" , "] * len(_STOP_PATTERNS))


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


def mentions(text: pl.Series) -> pl.DataFrame:
    """Long frame of the count mentions in normalized text: ``_row, _m (mention index), n, words, last``."""
    pairs = pl.DataFrame({"_row": pl.int_range(0, text.len(), eager=True, dtype=pl.UInt32), "p": text})
    pairs = pairs.with_columns(pl.col("p").str.extract_all(_PAIR)).explode("p").drop_nulls("p")
    pairs = pairs.with_row_index("_m").with_columns(
        pl.col("p").str.extract(r"^(\d+)").cast(pl.Int64).alias("n"),
        pl.col("p").str.extract_all(r"[a-z][a-z'-]*").alias("words"),
    )
    # Singularize the (few) distinct words once, then map.
    vocabulary = pairs["words"].explode().drop_nulls().unique()
    singulars = vocabulary.to_frame("w").select(singular(pl.col("w")))["w"]
    mapping = dict(zip(vocabulary.to_list(), singulars.to_list(), strict=True))
    pairs = pairs.with_columns(pl.col("words").list.eval(pl.element().replace_strict(mapping, default=pl.element())))
    return pairs.with_columns(pl.col("words").list.last().alias("last")).drop("p")


def _numbers(text: pl.Series) -> pl.Series:
    return text.str.extract_all(r"\d+").list.eval(pl.element().cast(pl.Int64))


def _braces(column: str) -> pl.Expr:
    return pl.concat_str(pl.lit("{"), pl.col(column), pl.lit("}")).alias(column)


def count_frame(frame: pl.DataFrame) -> pl.DataFrame:
    """Score ``output`` against ``expected_output`` counts; see the module docstring."""
    height = frame.height
    rows = pl.DataFrame({"_row": pl.int_range(0, height, eager=True, dtype=pl.UInt32)})
    texts = frame.select(normalize(pl.col("output")).alias("o"), normalize(pl.col("expected_output")).alias("e"))
    expected = mentions(texts["e"]).select("_row", "_m", pl.col("last").alias("object"), "n")
    # The same object named twice in the expected text keeps its first count.
    expected = expected.unique(["_row", "object"], keep="first", maintain_order=True)
    found = mentions(texts["o"])
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
    # JSON fragments are built on the long frame; the aggregations below only join strings (fast path).
    fragment = pl.format('"{}": {}', "object", "n")
    match = match.with_columns(
        fragment.alias("frag"),
        pl.when("ok").then(fragment).alias("mfrag"),
        pl.when(~pl.col("ok")).then("object").alias("wrong"),
    )
    by_row = match.group_by("_row").agg(
        pl.col("ok").mean().alias("score"),
        pl.col("ok").sum().alias("hits"),
        pl.len().alias("total_expected"),
        pl.col("frag").alias("expected"),
        pl.col("mfrag").alias("matched"),
        pl.col("wrong"),
    )
    # Aggregating to lists and joining them afterwards is much faster than str.join per group.
    by_row = by_row.with_columns(pl.col("expected", "matched", "wrong").list.drop_nulls().list.join(", "))
    found_json = per_object.with_columns(pl.format('"{}": {}', "object", "first").alias("frag"))
    found_json = found_json.group_by("_row").agg(pl.col("frag").alias("found"))
    found_json = found_json.with_columns(pl.col("found").list.join(", "))
    by_row = by_row.with_columns(_braces("expected"), _braces("matched"))
    found_json = found_json.with_columns(_braces("found"))

    # A bare expected number ("7") matches any count the output states, or the sum of its counts.
    bare = pl.DataFrame(
        {
            "_row": rows["_row"],
            "bare": _numbers(texts["e"]).list.first(),
            "out_numbers": _numbers(texts["o"]),
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
