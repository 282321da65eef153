"""Shared pieces of the benchmark metrics: reference-answer lists, answer normalization, number words.

Everything here works on whole columns. Normalizations that are expensive (the VQA answer
processing) run once per distinct string and are joined back, since benchmark answers repeat a lot.
"""

from __future__ import annotations

import json
from collections.abc import Callable

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


def pairs_frame(batch: pl.DataFrame, column: str, **row_columns: pl.Expr) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(``rows``: ``_row, sample_id, output, gold_error``; ``pairs``: ``_row, output, gold`` plus ``row_columns``
    (expressions computed once per row, before the answers are exploded) for the rows with usable answers)."""
    refs = reference_lists(batch, column)
    rows = pl.DataFrame(
        {ROW: refs[ROW], "sample_id": batch["id"], "output": batch["output"].cast(pl.Utf8)}
    ).with_columns(refs["gold_error"])
    pairs = (
        rows.with_columns(refs["golds"])
        .filter(pl.col("gold_error").is_null())
        .select(ROW, "output", *[expr.alias(name) for name, expr in row_columns.items()], pl.col("golds").alias("gold"))
        .explode("gold")
    )
    return rows, pairs


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


# --- VQA answer normalization (the official VQA / TextVQA evaluation) ---------------------------------------

_VQA_PUNCT = [";", "/", "[", "]", '"', "{", "}", "(", ")", "=", "+", "\\", "_", "-", ">", "<", "@", "`", ",", "?", "!"]
_VQA_NUMBERS = {
    "none": "0",
    "zero": "0",
    "one": "1",
    "two": "2",
    "three": "3",
    "four": "4",
    "five": "5",
    "six": "6",
    "seven": "7",
    "eight": "8",
    "nine": "9",
    "ten": "10",
}
_VQA_ARTICLES = ["a", "an", "the"]
# The official table, lowercased: its "Im"/"Ive"/"Id've" keys never matched after the official lowercasing,
# and its "somebody'd" -> "somebodyd" typo is corrected. Identity entries are dropped.
_CONTRACTIONS_TEXT = """
aint ain't|arent aren't|cant can't|couldve could've|couldnt couldn't|couldn'tve couldn't've|couldnt've couldn't've
didnt didn't|doesnt doesn't|dont don't|hadnt hadn't|hadnt've hadn't've|hadn'tve hadn't've|hasnt hasn't
havent haven't|hed he'd|hed've he'd've|he'dve he'd've|hes he's|howd how'd|howll how'll|hows how's|id've i'd've
i'dve i'd've|im i'm|ive i've|isnt isn't|itd it'd|itd've it'd've|it'dve it'd've|itll it'll|maam ma'am
mightnt mightn't|mightnt've mightn't've|mightn'tve mightn't've|mightve might've|mustnt mustn't|mustve must've
neednt needn't|notve not've|oclock o'clock|oughtnt oughtn't|ow's'at 'ow's'at|'ows'at 'ow's'at|'ow'sat 'ow's'at
shant shan't|shed've she'd've|she'dve she'd've|shouldve should've|shouldnt shouldn't|shouldnt've shouldn't've
shouldn'tve shouldn't've|somebodyd somebody'd|somebodyd've somebody'd've|somebody'dve somebody'd've
somebodyll somebody'll|somebodys somebody's|someoned someone'd|someoned've someone'd've|someone'dve someone'd've
someonell someone'll|someones someone's|somethingd something'd|somethingd've something'd've
something'dve something'd've|somethingll something'll|thats that's|thered there'd|thered've there'd've
there'dve there'd've|therere there're|theres there's|theyd they'd|theyd've they'd've|they'dve they'd've
theyll they'll|theyre they're|theyve they've|twas 'twas|wasnt wasn't|wed've we'd've|we'dve we'd've|weve we've
werent weren't|whatll what'll|whatre what're|whats what's|whatve what've|whens when's|whered where'd
wheres where's|whereve where've|whod who'd|whod've who'd've|who'dve who'd've|wholl who'll|whos who's
whove who've|whyll why'll|whyre why're|whys why's|wont won't|wouldve would've|wouldnt wouldn't
wouldnt've wouldn't've|wouldn'tve wouldn't've|yall y'all|yall'll y'all'll|y'allll y'all'll|yall'd've y'all'd've
y'alld've y'all'd've|y'all'dve y'all'd've|youd you'd|youd've you'd've|you'dve you'd've|youll you'll
youre you're|youve you've
"""
VQA_CONTRACTIONS: dict[str, str] = dict(
    item.split(" ", 1) for item in _CONTRACTIONS_TEXT.replace("\n", "|").split("|") if item.strip()
)
VQA_WORD_MAP: dict[str, str] = {**_VQA_NUMBERS, **VQA_CONTRACTIONS}
_ANY_PUNCT = "[" + "".join("\\" + p if p in "[]\\-^" else p for p in _VQA_PUNCT) + "]"


def _vqa_transform(frame: pl.DataFrame) -> pl.DataFrame:
    """Official processPunctuation + processDigitArticle over column ``v`` into ``n``."""
    text = pl.col("v").str.replace_all(r"[\n\t]", " ").str.replace_all("[’‘]", "'").str.strip_chars()
    frame = frame.with_columns(text.alias("t"))
    has_punct = frame["t"].str.contains(_ANY_PUNCT).fill_null(False)
    plain, punct = frame.filter(~has_punct), frame.filter(has_punct)
    if punct.height:
        digit_comma = pl.col("t").str.contains(r"\d,\d")
        punct = punct.with_columns(pl.col("t").alias("o"))
        for p in _VQA_PUNCT:
            # The official rule: a mark next to a space (or any text with a digit,digit comma) is deleted,
            # otherwise it becomes a space. It is decided on the original text, for each mark separately.
            drop = pl.col("t").str.contains(p + " ", literal=True) | pl.col("t").str.contains(" " + p, literal=True)
            punct = punct.with_columns(
                pl.when(drop | digit_comma)
                .then(pl.col("o").str.replace_all(p, "", literal=True))
                .otherwise(pl.col("o").str.replace_all(p, " ", literal=True))
                .alias("o")
            )
        punct = punct.with_columns(pl.col("o").alias("t")).drop("o")
    frame = pl.concat([plain, punct])
    # Official periodStrip: a period not followed by a digit is removed (runs of periods included).
    words = (
        pl.col("t")
        .str.replace_all(r"\.+(\D|$)", "${1}")
        .str.to_lowercase()
        .str.replace_all(r"\s{2,}|[^\S ]", " ")
        .str.strip_chars()
        .str.split(" ")
        .list.eval(pl.element().filter((pl.element().str.len_bytes() > 0) & ~pl.element().is_in(_VQA_ARTICLES)))
        .list.eval(pl.element().replace(VQA_WORD_MAP))
        .list.join(" ")
    )
    return frame.select("v", words.alias("n"))


def vqa_normalize(series: pl.Series) -> pl.Series:
    """The official VQA answer normalization of every string in ``series`` (nulls stay null)."""
    return map_unique(series, _vqa_transform)


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
    return pl.struct(**fields).struct.json_encode()
