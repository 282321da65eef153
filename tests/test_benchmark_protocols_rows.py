"""The benchmark metrics as row rules: reference answer lists, ``details`` written as Polars writes JSON, readings of
awkward text, and a batch spread over the process pool scored exactly as in this process."""

from __future__ import annotations

import json
import random
import struct
from typing import Any

import polars as pl
import pytest

from vision_eval import rowwise
from vision_eval.config import RunConfig
from vision_eval.evaluator import EvalContext
from vision_eval.evaluators.benchmarks import lenient
from vision_eval.evaluators.benchmarks.anls import Anls
from vision_eval.evaluators.benchmarks.exact_count import ExactCount
from vision_eval.evaluators.benchmarks.pope import Pope, lenient_reading
from vision_eval.evaluators.benchmarks.protocols import answers_text
from vision_eval.evaluators.benchmarks.relaxed_accuracy import RelaxedAccuracy
from vision_eval.evaluators.benchmarks.text import (
    WHITE_SPACE,
    details_json,
    json_number,
    json_text,
    reference_answers,
)
from vision_eval.evaluators.benchmarks.vqa_accuracy import VqaAccuracy
from vision_eval.pool import process_pool
from vision_eval.prechecks import split
from vision_eval.rowwise import score_rows

CLASSES: dict[str, Any] = {
    "pope": Pope,
    "exact_count": ExactCount,
    "relaxed_accuracy": RelaxedAccuracy,
    "anls": Anls,
    "vqa_accuracy": VqaAccuracy,
}
LENIENT_ON_COLUMNS = {("relaxed_accuracy", "lenient"), ("anls", "lenient"), ("vqa_accuracy", "lenient")}
"""Protocols defined by Polars expressions (no row function)."""


def evaluator(metric: str, workers: int | None = None, **settings: Any) -> Any:
    cls = CLASSES[metric]
    return cls(metric, cls.settings_model(type=metric, **settings), EvalContext(run=RunConfig(workers=workers)))


# --- details: JSON as Polars writes it ---------------------------------------------------------------------------


def test_json_numbers_are_written_as_polars_writes_them() -> None:
    rng = random.Random(3)
    values = [float(f"{m}e{k}") for k in range(-330, 309) for m in (1, 1.5, -2.25, 9.999999)]
    values += [struct.unpack("d", rng.randbytes(8))[0] for _ in range(20_000)]
    values += [rng.random() * 10 ** rng.randint(-8, 3) for _ in range(20_000)]
    values += [0.0, -0.0, 5e-324, float("inf"), float("-inf"), float("nan")]
    polars = pl.DataFrame({"x": values}).select(pl.struct("x").struct.json_encode())["x"].to_list()
    assert [f'{{"x":{json_number(v)}}}' for v in values] == polars
    assert json_number(1e-5) == "0.00001" and json_number(2.5e-7) == "2.5e-7" and json_number(float("nan")) == "null"


def test_details_escape_every_character_as_polars_does() -> None:
    chars = [chr(i) for i in [*range(0x3000), *range(0xE000, 0x110000, 97)]]
    frame = pl.DataFrame({"t": chars, "l": [[c, None] for c in chars], "n": [len(c) for c in chars]})
    polars = frame.select(pl.struct("t", "l", "n").struct.json_encode())["t"].to_list()
    assert [details_json(t=c, l=[c, None], n=1) for c in chars] == polars


# --- reference answers ---------------------------------------------------------------------------------------------


def test_json_text_of_a_string_or_none() -> None:
    assert (json_text(None), json_text('a"b'), json_text("é")) == ("null", '"a\\"b"', '"é"')


def test_reference_answers_one_answer_or_a_json_list() -> None:
    column = "expected_output"
    assert reference_answers(" walk ", column) == ([" walk "], None)  # one answer, kept as given
    assert reference_answers('\u3000 ["walk", null, 2, 1.0]\n', column) == (["walk", "2", "1.0"], None)
    # \x1c is not white space to Unicode: the text is one answer, not a list.
    assert reference_answers('\x1c["walk"]', column) == (['\x1c["walk"]'], None)
    assert reference_answers(' \x1c["walk"]', column) == ([' \x1c["walk"]'], None)  # after white space too
    assert reference_answers("[]", "answers") == (None, "no reference answers in answers")
    assert reference_answers("[null]", column) == (None, "no reference answers in expected_output")
    for bad in ('["walk", "go"', "[1, [2]]", '[{"a": 1}]', '["a"] x', '["\\ud800"]', "[" * 100_000):
        answers, error = reference_answers(bad, column)
        assert answers is None and error is not None
        assert error.startswith("reference answers look like a JSON list but do not parse (")
    assert reference_answers("[" * 300, column)[1].endswith("): " + "[" * 200)  # type: ignore[union-attr]
    assert reference_answers('[["a"], "b"]', column)[1] == (
        'reference answers look like a JSON list but do not parse (not a flat JSON list): [["a"], "b"]'
    )
    for bad in ('["walk", "go"', "  [1]  x", "[1]\t\tx", '["a"]]', "[tru]"):
        try:
            json.loads(bad.strip())
        except ValueError as exc:
            reason = f"{exc}): {bad.strip()}"
        assert (
            reference_answers(bad, column)[1] == f"reference answers look like a JSON list but do not parse ({reason}"
        )
    assert WHITE_SPACE.strip() == "" and not any(c in WHITE_SPACE for c in "\x1c\x1d\x1e\x1f")


def test_answer_lists_read_each_text_as_reference_answers_does() -> None:
    """The lenient column paths read plain JSON lists with Polars and the rest with reference_answers: the same
    answers (in order) and the same errors, text for text."""
    rng = random.Random(8)
    items = ['"walk"', '"a b"', '""', '"é"', '"İ"', '"\\u00e9"', '"q\\"x"', '"\x7f"', '"\u2028"', "1", "2.50", "null"]
    items += ["true", '"[x]"', '"\t"', "[1]", '"\\ud800"', '"ok"', "1e400", '","']
    plain = [item for item in items if item.startswith('"') and "\\" not in item and item[1:-1].isprintable()]
    texts = []
    for _ in range(4000):
        listed = "[" + rng.choice([",", ", ", " , "]).join(rng.sample(items, rng.randint(0, 4))) + "]"
        text = rng.choice([listed, listed.replace(" ", ""), rng.choice(items), fuzzed(rng, ["[", "]", '"a"'])])
        texts.append(rng.choice(["", " ", "\n", "\u3000", "\x1c"]) + text + rng.choice(["", " ", "x", "\t"]))
        texts.append("[" + ", ".join(rng.choices(plain, k=rng.randint(1, 3))) + "]")  # as json.dumps writes them
    lists, golds = lenient.answer_lists(pl.Series(texts), "expected_output")
    answers = golds.group_by("_answers", maintain_order=True).agg("gold")
    read = lists.join(answers, on="_answers", how="left")
    expected = [reference_answers(text, "expected_output") for text in read["answers"]]
    assert read["gold_error"].to_list() == [error for _, error in expected]
    assert [golds or None for golds in read["gold"].to_list()] == [answers for answers, _ in expected]
    assert read["gold_error"].null_count() > 1000 and read["gold_error"].drop_nulls().len() > 500
    assert lists["answers"].str.contains(lenient.PLAIN_LIST).sum() > 400  # read by Polars


def test_a_list_column_is_handed_to_the_rows_as_a_json_list() -> None:
    batch = pl.DataFrame(
        {"answers": [["a", None, 'b"c'], [], ["é\n"]], "numbers": [[1.5, None], [2.0], []]},
        schema={"answers": pl.List(pl.Utf8), "numbers": pl.List(pl.Float64)},
    )
    texts = batch.select(answers_text(batch, "answers"))["answers"].to_list()
    assert [json.loads(t) for t in texts] == [["a", 'b"c'], [], ["é\n"]]
    numbers = batch.select(answers_text(batch, "numbers"))["answers"].to_list()
    assert [reference_answers(t, "numbers")[0] for t in numbers] == [["1.5"], ["2.0"], None]


# --- readings ------------------------------------------------------------------------------------------------------


def test_lenient_yes_no_word_boundaries_are_pythons() -> None:
    # "İ" lowercases to "i" + U+0307 (a combining mark, not a word character to Python's re); "²" is one.
    replies = ["noanİNo.", "no\u0301", "\u0301yes", "yes²", "²no", "yes, no\u0301 doubt", "ΑΣ yes", "yes ก\u0e34"]
    assert [lenient_reading(r) for r in replies] == ["no", "no", "yes", None, "no", "yes", "yes", "yes"]


def test_anls_details_show_the_texts_as_compared() -> None:
    """Both texts stripped, lowercased and split on any white space, as the reference compares them."""
    batch = pl.DataFrame({"id": ["a"], "output": ["\u3000ACME\xa0 Corp\u2028"], "expected_output": ["acme  corp"]})
    row = evaluator("anls").evaluate(batch).results.row(0, named=True)
    assert json.loads(row["details"]) == {
        "protocol": "official",
        "prediction": "acme corp",
        "closest": "acme  corp",
        "closest_normalized": "acme corp",
        "similarity": pytest.approx(1 - 0 / 14),
    }


# --- the column paths give the rows of their definitions ------------------------------------------------------

HOSTILE = ["İ", "ß", "Σ", "ΑΣ", "ς", "１２", "３", "٣", "\u00a0", "\x1c", "\x1f", "\u3000", "\u2028", "\x85", "\u0301"]
HOSTILE += ["²", "é", "ſ", "\u212a", "\u200d", "ก\u0e34", "‿", "Ｙｅｓ", "Ｎｏ", "\ua7cb", "\ud7ff", "\U0001d7d9"]
"""Characters Python and Polars may read differently: case mappings, white space, digits and word characters."""


def fuzzed(rng: random.Random, pieces: list[str], most: int = 5) -> str:
    """A few of ``pieces`` (half the time with :data:`HOSTILE` ones among them), joined with or without spaces."""
    choices = pieces if rng.random() < 0.5 else pieces + HOSTILE
    return "".join(rng.choice(choices) + rng.choice(["", " ", ""]) for _ in range(rng.randint(0, most)))


def with_nulls(batch: pl.DataFrame, rng: random.Random) -> pl.DataFrame:
    """``batch`` with a few outputs and references left null."""

    def holes(column: str) -> pl.Series:
        return pl.Series(column, [None if rng.random() < 0.02 else v for v in batch[column]], dtype=pl.Utf8)

    return batch.with_columns(holes("output"), holes("expected_output"))


def assert_rows_of_the_definition(rated: Any, batch: pl.DataFrame) -> pl.DataFrame:
    """``evaluate`` gives, row for row, the verdicts of the row function (status, score, details, error). Null
    inputs never reach ``evaluate``: the engine's checks make them error rows first."""
    ready, _, held = split(rated, batch)
    assert (
        held.height
        and set(held["status"]) == {"error"}
        and set(held["error"])
        <= {
            "output is missing",
            "expected_output is missing",
        }
    )
    columns = rated.evaluate(ready).conformed().results
    rows = score_rows(ready["id"], rated.row_inputs(ready), rated.row_function(), workers=1).conformed().results
    assert columns.equals(rows)
    return columns


PIECES = ["yes", "Yes", "YES", "no", "No.", "not", "nope", "Yes, it is.", "no, ", " yes ", "y", "n", "No", "it's"]
PIECES += ["3.5", "...", "  ", "\t", "\n", "!", "?", ",", ".", '"No"', "yes_", "_no", "9no", "no9", "-", "yesno"]


def hostile_pope_rows(n: int, seed: int) -> pl.DataFrame:
    rng = random.Random(seed)
    golds = ["yes", "no", " Yes\x1c", "NO\u3000", "maybe", "", "\xa0no\n", "Ｎｏ", "no İ", "yes²"]
    expected = [rng.choice(golds) if rng.random() < 0.8 else fuzzed(rng, PIECES) for _ in range(n)]
    outputs = [fuzzed(rng, PIECES) for _ in range(n)]
    batch = pl.DataFrame({"id": [str(i) for i in range(n)], "output": outputs, "expected_output": expected})
    return with_nulls(batch, rng)


@pytest.mark.parametrize("protocol", ["official", "lmms_eval", "lenient"])
def test_pope_column_path_gives_the_rows_of_its_definition(protocol: str) -> None:
    rated = evaluator("pope", protocol=protocol)
    for seed in (13, 14, 15):
        columns = assert_rows_of_the_definition(rated, hostile_pope_rows(3000, seed))
        assert set(columns["status"]) == {"processed", "error"}
        if protocol != "lenient":
            assert '"unparseable":true' in "".join(columns["details"].drop_nulls())


COUNT_PIECES = ["3", "03", "12", "1,000", "1,00", "2.5", ".5", "7.", "1" * 400, "twenty-one", "twenty  one", "a dozen"]
COUNT_PIECES += ["Seven", "NONE", "zero", "hundred", "one hundred", "two", "Two.", "there are", "cats", "-", "_4"]
COUNT_PIECES += ["twenty\x1cone", "forty\x1f", "\x1e7", "twenty", "one", "4x", "x4", " ", "\t", "\n", ",", "."]
COUNT_PIECES += ["e5", "1e5", "inf", "nan", "many", "twelve", "2nd"]


def hostile_count_rows(n: int, seed: int) -> pl.DataFrame:
    rng = random.Random(seed)
    golds = ["3", "12", "0", " 7\x1c", "Seven", "twenty", "2.5", "", "none", "٣", "１２", "1,000", "x"]
    expected = [rng.choice(golds) if rng.random() < 0.7 else fuzzed(rng, COUNT_PIECES, 3) for _ in range(n)]
    outputs = [fuzzed(rng, COUNT_PIECES, 4) for _ in range(n)]
    batch = pl.DataFrame({"id": [str(i) for i in range(n)], "output": outputs, "expected_output": expected})
    return with_nulls(batch, rng)


@pytest.mark.parametrize(
    "settings",
    [
        {"protocol": "lmms_eval"},
        {"protocol": "lenient"},
        {"protocol": "lenient", "pick": "last"},
        {"protocol": "lenient", "pick": "only"},
    ],
)
def test_exact_count_column_path_gives_the_rows_of_its_definition(settings: dict[str, str]) -> None:
    rated = evaluator("exact_count", **settings)
    for seed in (21, 22, 23):
        columns = assert_rows_of_the_definition(rated, hostile_count_rows(3000, seed))
        assert set(columns["status"]) == {"processed", "error"} and set(columns["score"].drop_nulls()) == {0.0, 1.0}


NUMBER_PIECES = [
    "12",
    "12.5",
    "12.6",
    "11.9",
    "20",
    "21",
    "19",
    "0.12",
    "-3",
    "+.5",
    "5.",
    "1e1",
    "1E-2",
    "0",
    "0.0",
    "-0",
    "1e999",
]
NUMBER_PIECES += ["12%", "12%%", "%", "nan", "inf", "-Infinity", "1_000", " 12", "12 ", "\x1c12", "1,000", "$12"]
NUMBER_PIECES += ["Canada", "canada", "CANADA", "Yes", "abc%", "1%2", "1" * 330, "e", "_", ".", "-"]


def hostile_relaxed_rows(n: int, seed: int) -> pl.DataFrame:
    rng = random.Random(seed)

    def text() -> str:  # half of them one piece: most of those are read by Polars
        return rng.choice(NUMBER_PIECES) if rng.random() < 0.5 else fuzzed(rng, NUMBER_PIECES, 2)

    def answers() -> str:
        if rng.random() < 0.4:
            return text()
        return json.dumps([text() for _ in range(rng.randint(0, 3))], ensure_ascii=rng.random() < 0.5)

    outputs = [text() for _ in range(n)]
    batch = pl.DataFrame(
        {"id": [str(i) for i in range(n)], "output": outputs, "expected_output": [answers() for _ in range(n)]}
    )
    return with_nulls(batch, rng)


@pytest.mark.parametrize("protocol", ["official", "lmms_eval"])
def test_relaxed_accuracy_column_path_gives_the_rows_of_its_definition(protocol: str) -> None:
    rated = evaluator("relaxed_accuracy", protocol=protocol)
    for seed in (31, 32, 33):
        columns = assert_rows_of_the_definition(rated, hostile_relaxed_rows(3000, seed))
        assert set(columns["status"]) == {"processed", "error"} and set(columns["score"].drop_nulls()) == {0.0, 1.0}
        assert '"numeric":true' in "".join(columns["details"].drop_nulls())


def test_only_ascii_letters_lowercase_to_yes_or_no_letters() -> None:
    """What makes the column reading of a strict yes/no exact: in Python and in Polars alike, no other character
    lowercases to text made of y, e, s, n, o."""
    chars = [chr(i) for i in range(0x110000) if not 0xD800 <= i < 0xE000]
    polars = pl.Series(chars).str.to_lowercase().to_list()
    letters = set("yesno")
    assert [c for c in chars if set(c.lower()) <= letters] == list("ENOSYenosy")
    assert [c for c, low in zip(chars, polars, strict=True) if low and set(low) <= letters] == list("ENOSYenosy")


# --- the pool ------------------------------------------------------------------------------------------------------


def _rows(metric: str, n: int) -> pl.DataFrame:
    rng = random.Random(5)
    pieces = ["Yes", "no", "2", "two", "1,000", "12%", "٣", "The Cat.", "don't", "\xa0", "İ", ".", "x" * 3]
    texts = [" ".join(rng.choice(pieces) for _ in range(rng.randint(0, 4))) for _ in range(n)]
    if metric in ("pope", "exact_count"):
        expected = [rng.choice(["yes", "no", "3", "2", "maybe"]) for _ in range(n)]
    else:
        expected = [json.dumps(rng.sample(texts, rng.randint(0, 4))) if i % 3 else texts[i - 1] for i in range(n)]
    return pl.DataFrame({"id": [f"s{i}" for i in range(n)], "output": texts, "expected_output": expected})


@pytest.mark.parametrize(
    ("metric", "settings"),
    [
        ("anls", {"protocol": "official"}),
        ("anls", {"protocol": "lmms_eval"}),
        ("vqa_accuracy", {"protocol": "official"}),
        ("vqa_accuracy", {"protocol": "lmms_eval"}),
        ("pope", {"protocol": "lenient"}),
        ("exact_count", {"protocol": "lmms_eval"}),
        ("exact_count", {"protocol": "lenient"}),
        ("relaxed_accuracy", {"protocol": "official"}),
    ],
)
def test_a_pool_sized_batch_is_scored_as_in_process(
    metric: str, settings: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    batch = _rows(metric, 600)
    alone = evaluator(metric, workers=1, **settings).evaluate(batch).conformed().results
    pools: list[int] = []
    monkeypatch.setattr(rowwise, "process_pool", lambda workers: pools.append(workers) or process_pool(workers))
    monkeypatch.setattr(rowwise, "POOL_MIN_ROWS", 50)
    pooled = evaluator(metric, workers=2, **settings).evaluate(batch).conformed().results
    assert pools == [2]
    assert pooled.equals(alone)
    assert alone["score"].n_unique() > 1


@pytest.mark.parametrize(
    ("metric", "protocol"),
    [(m, p) for m, cls in CLASSES.items() for p in cls.protocols if (m, p) not in LENIENT_ON_COLUMNS],
)
def test_every_row_function_gives_the_same_rows_on_the_pool(metric: str, protocol: str) -> None:
    """Each row function is picklable and gives in a worker what it gives here (whether or not its metric uses the
    pool)."""
    rated = evaluator(metric, protocol=protocol)
    batch = _rows(metric, 300)
    inputs, function = rated.row_inputs(batch), rated.row_function()
    alone = score_rows(batch["id"], inputs, function, workers=1)
    pooled = score_rows(batch["id"], inputs, function, workers=2, pool_min_rows=1)
    assert pooled.results.equals(alone.results)


@pytest.mark.parametrize(("metric", "protocol"), sorted(LENIENT_ON_COLUMNS))
def test_the_lenient_column_protocols_have_no_row_function(metric: str, protocol: str) -> None:
    with pytest.raises(NotImplementedError, match="defined on columns"):
        evaluator(metric, protocol=protocol).row_function()
