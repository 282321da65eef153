"""ocr_validator's column path gives every row the verdict of its definition ``ocr_row``: seeded fuzzed and hostile
texts through ``OcrValidator.evaluate`` (all-ASCII rows on the column path, the others handed to ``ocr_row`` and put
back in order), under every scorer and normalization setting, with the keywords as lists, as comma text, configured
or absent."""

from __future__ import annotations

import itertools
import random
import string
from typing import Any

import polars as pl
import pytest

from tests import equivalence as eq
from vision_eval.config import RunConfig
from vision_eval.evaluator import EvalContext
from vision_eval.evaluators.code.ocr import SCORERS, OcrValidator, OcrValidatorSettings, column_readable

ASCII_PIECES = [
    *string.ascii_letters, *string.digits, *string.punctuation, " ", " ", " ", "  ", "\t", "\n", "\r", "\x0b", "\x0c",
    "\x1c", "\x1d", "\x1e", "\x1f", "\x00", "\x7f", "Hello", "WORLD", "Total", "due", "INV-2026", "a.b", "--", "...",
]  # fmt: skip
"""ASCII: mixed case, every ASCII punctuation mark (the PUNCTUATION class and the rest), whitespace, and the
separators ``\\x1c``-``\\x1f`` (whitespace to ``str.split``, not to the rule)."""
HOSTILE = [
    "“", "”", "‘", "’", "«", "»", "–", "—", "…", "•", "·", "\xa0", "\u2003", "\u3000", "\u2028", "\x85", "İ", "ı",
    "ß", "Σ", "ς", "ΑΣ", "\u212a", "ſ", "ﬁ", "Ａ", "ｂ", "Ｃ", "１", "é", "É",
    *"\ua7cb\u0264\u1c89\u1c8a\U00010d50\U00010d70",
]  # fmt: skip
"""Characters Python and Polars may read otherwise: typographic punctuation, non-ASCII whitespace, letters with odd
lowercase forms (dotted I, sharp s, final sigma, Kelvin, long s, ligatures), full-width ones, and capitals only newer
Unicode lowercases (U+A7CB, U+1C89, Garay: Polars does, Python 3.11 does not) with their lowercase forms."""
NEWER_CASE = str.maketrans(
    "\ua7cb\u0264\u1c89\u1c8a\U00010d50\U00010d70", "\u0264\ua7cb\u1c8a\u1c89\U00010d70\U00010d50"
)
"""Each of those capitals swapped with its lowercase form."""
KEYWORDS = ["total", "TOTAL", "due", "inv 2026", "a-b", "hello world", "", "  ", "!!!", '"q"', "back\\slash", "x"]


def text(rng: random.Random, hostile: bool) -> str | None:
    roll = rng.random()
    if roll < 0.04:
        return None
    if roll < 0.08:
        return rng.choice(["", " ", "\t\n", ".,;"])
    pieces = [rng.choice(ASCII_PIECES) for _ in range(rng.randint(0, 24))]
    if hostile:
        pieces.insert(rng.randint(0, len(pieces)), rng.choice(HOSTILE))
    return "".join(pieces)


def keywords(rng: random.Random, hostile: bool) -> list[str | None] | None:
    if rng.random() < 0.1:
        return None
    pool: list[str | None] = [*KEYWORDS, None, *(HOSTILE if hostile else [])]
    return [rng.choice(pool) for _ in range(rng.randint(0, 4))]


def ocr_frame(n: int, seed: int) -> pl.DataFrame:
    """``n`` rows, about a third holding a character outside ASCII somewhere (text or keyword); some responses are
    the expected text, changed or not, and some expected texts and keyword lists repeat."""
    rng = random.Random(seed)
    rows: list[tuple[Any, ...]] = []
    for i in range(n):
        hostile = rng.random() < 0.35
        expected = text(rng, hostile and rng.random() < 0.5)
        output = text(rng, hostile)
        roll = rng.random()
        if expected is not None and roll < 0.3:
            changed = [
                expected.upper(),
                expected.swapcase(),
                expected.translate(NEWER_CASE),
                expected + " ",
                expected[:-1],
            ]
            output = rng.choice([expected, *changed])
        rows.append((f"r{i:05d}", output, expected, keywords(rng, hostile)))
    rows += [(f"d{i:05d}", *rng.choice(rows)[1:]) for i in range(n // 5)]
    return pl.DataFrame(
        rows,
        schema={"id": pl.String, "output": pl.String, "expected_output": pl.String, "keywords": pl.List(pl.String)},
        orient="row",
    )


def with_comma_keywords(frame: pl.DataFrame) -> pl.DataFrame:
    """The keywords as comma-separated text, some with whitespace around the commas."""
    separators = pl.Series([",", ", ", " ,\t", ",,"] * frame.height).head(frame.height)
    return frame.with_columns(pl.col("keywords").list.join(separators, ignore_nulls=True))


def check_against_the_definition(frame: pl.DataFrame, **settings: Any) -> pl.Series:
    """The evaluator's verdicts equal ``ocr_row``'s on every row (in row order, ids kept); returns which rows the
    column path read."""
    evaluator = OcrValidator("ocr", OcrValidatorSettings(**settings), EvalContext(run=RunConfig(workers=1)))
    results = evaluator.evaluate(frame).results
    inputs = evaluator.row_inputs(frame)
    definition = evaluator.row_function()
    eq.assert_same_verdicts(results, [definition(*row) for row in inputs.rows()], inputs.rows())
    assert results["sample_id"].equals(frame["id"], check_names=False)
    return column_readable(inputs, evaluator.options())


FLAGS = list(itertools.product([False, True], repeat=3))


@pytest.mark.parametrize("scorer", SCORERS)
@pytest.mark.parametrize(("case_sensitive", "normalize_whitespace", "strip_punctuation"), FLAGS)
def test_every_row_gets_the_definitions_verdict(
    scorer: str, case_sensitive: bool, normalize_whitespace: bool, strip_punctuation: bool
) -> None:
    flags = {
        "scorer": scorer,
        "case_sensitive": case_sensitive,
        "normalize_whitespace": normalize_whitespace,
        "strip_punctuation": strip_punctuation,
    }
    frame = ocr_frame(500, seed=len(SCORERS) * FLAGS.index((case_sensitive, normalize_whitespace, strip_punctuation)))
    readable = check_against_the_definition(frame, **flags)
    assert 0.4 * frame.height < readable.sum() < 0.9 * frame.height  # both paths were taken
    check_against_the_definition(with_comma_keywords(frame), **flags)
    check_against_the_definition(frame.drop("keywords"), similarity_weight=2.0, keyword_weight=1.0, **flags)


@pytest.mark.parametrize(
    "configured",
    [["total", "due", " ", "a-b"], ["Hello World", '"q"', "back\\slash"], ["straße", "total"], [], [""]],
)
def test_configured_keywords_get_the_definitions_verdict(configured: list[str]) -> None:
    frame = ocr_frame(400, seed=99)
    readable = check_against_the_definition(frame, keywords=configured)
    # A configured keyword outside ASCII sends every row to ocr_row.
    assert readable.any() == all(k.isascii() for k in configured)
    check_against_the_definition(frame, keywords=configured, similarity_weight=1.0, keyword_weight=0.0)


def test_all_ascii_and_no_ascii_batches_and_an_empty_one() -> None:
    frame = ocr_frame(600, seed=7)
    readable = check_against_the_definition(frame)
    assert check_against_the_definition(frame.filter(readable)).all()
    assert not check_against_the_definition(frame.filter(~readable)).any()
    assert check_against_the_definition(frame.head(0)).len() == 0


def test_the_equivalence_harness_rows() -> None:
    """The shared harness's OCR rows (odd spaces and letters everywhere), made ASCII in half of them."""
    rng = random.Random(5)
    rows = eq.ocr_rows(800, 11)

    def ascii_only(value: str | None) -> str | None:
        return None if value is None else "".join(c if c.isascii() else rng.choice(" .,\t\x1cAz") for c in value)

    rows = [tuple(ascii_only(v) for v in r[:2]) + r[2:] if rng.random() < 0.5 else r for r in rows]
    rows = [(o, e, [ascii_only(k) for k in kw] if kw is not None and rng.random() < 0.5 else kw) for o, e, kw in rows]
    frame = pl.DataFrame(
        [(f"r{i:05d}", *r) for i, r in enumerate(rows)],
        schema={"id": pl.String, "output": pl.String, "expected_output": pl.String, "keywords": pl.List(pl.String)},
        orient="row",
    )
    assert check_against_the_definition(frame, scorer="token_sort_ratio").any()
