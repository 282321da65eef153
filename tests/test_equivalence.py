"""Every fast path gives, on every generated row, the verdict of its row-wise definition (the shared harness in
``tests/equivalence.py``): the code validators' column-wise paths against ``count_row``, ``ocr_row``, ``chart_row``
and ``json_row``, and the benchmark metrics' column functions against their row-wise definitions."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl
import pytest

from tests import equivalence as eq
from vision_eval.evaluators.benchmarks import anls as _anls
from vision_eval.evaluators.benchmarks import counts as _counts
from vision_eval.evaluators.benchmarks import relaxed as _relaxed
from vision_eval.evaluators.benchmarks import vqa_answers as _vqa_answers
from vision_eval.evaluators.benchmarks import yes_no as _yes_no
from vision_eval.validators import chart_columns, count_columns, json_columns, ocr_columns
from vision_eval.validators._distinct import codes
from vision_eval.validators.chart import ChartOptions, chart_row
from vision_eval.validators.count import count_row
from vision_eval.validators.json_check import JsonOptions, json_row
from vision_eval.validators.ocr import OcrOptions, ocr_row
from vision_eval.validators.rows import RowResult, joined, json_strings


def counted(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[int]:
    """Calls of the definition ``module.name`` from the fast path (the rows it handed over), counted."""
    calls = [0]
    definition = getattr(module, name)

    def counting(*args: Any) -> RowResult:
        calls[0] += 1
        return definition(*args)

    monkeypatch.setattr(module, name, counting)
    return calls


# count -----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_count_fast_path_is_count_row(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    pairs = eq.count_pairs(3000, seed)
    handed = counted(monkeypatch, count_columns, "count_row")
    eq.assert_same_verdicts(count_columns.count_frame(eq.frame(pairs)), eq.by_rows(count_row, pairs), pairs)
    # Both paths ran: the rows with huge numbers went to the definition, most rows stayed column-wise.
    assert 0 < handed[0] < len(pairs) / 5


def test_count_layouts() -> None:
    """Texts read once per distinct text and pairs scored once: few distinct rows, each row twice."""
    pairs = eq.count_pairs(1000, 4)
    definition = eq.by_rows(count_row, pairs)
    for order in (list(range(len(pairs))), [i % 40 for i in range(2000)], [i // 2 for i in range(2 * len(pairs))]):
        chosen = [pairs[i] for i in order]
        fast = count_columns.count_frame(eq.frame(chosen))
        eq.assert_same_verdicts(fast, [definition[i] for i in order], chosen)
    assert count_columns.count_frame(eq.frame([])).height == 0


# ocr -------------------------------------------------------------------------------------------------------------

OCR_OPTIONS = [
    OcrOptions(),
    OcrOptions(case_sensitive=True),
    OcrOptions(strip_punctuation=False),
    OcrOptions(normalize_whitespace=False),
    OcrOptions(case_sensitive=True, strip_punctuation=False, normalize_whitespace=False),
    OcrOptions(scorer="token_set_ratio", similarity_weight=0.0, keyword_weight=0.0),
    OcrOptions(scorer="token_sort_ratio", similarity_weight=2.0, keyword_weight=1.0, keywords=("abc", " ", "é!")),
    OcrOptions(similarity_weight=-1.0, keyword_weight=3.0, keywords=("\ua7cb",)),
]


@pytest.mark.parametrize("opts", OCR_OPTIONS)
def test_ocr_fast_path_is_ocr_row(opts: OcrOptions) -> None:
    rows = eq.ocr_rows(1200, 7)
    schema = {"output": pl.Utf8, "expected_output": pl.Utf8, "keywords": pl.List(pl.Utf8)}
    frame = pl.DataFrame([list(r) for r in rows], schema=schema, orient="row")
    # Keywords as lists, as comma-separated text, or none.
    as_text = frame.with_columns(pl.col("keywords").list.join(","))
    for layout, keywords in (
        (frame, frame["keywords"]),
        (as_text, as_text["keywords"]),
        (frame.drop("keywords"), None),
    ):
        listed = [None] * len(rows) if keywords is None else keywords.to_list()
        inputs = [(o, e, k, opts) for (o, e, _), k in zip(rows, listed, strict=True)]
        eq.assert_same_verdicts(ocr_columns.ocr_frame(layout, opts), eq.by_rows(ocr_row, inputs), inputs)


def test_ocr_hands_over_the_rows_polars_lowercases_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = eq.ocr_rows(1200, 8)
    frame = pl.DataFrame([list(r) for r in rows], schema=["output", "expected_output", "keywords"], orient="row")
    handed = counted(monkeypatch, ocr_columns, "ocr_row")
    fast = ocr_columns.ocr_frame(frame, OcrOptions())
    assert 0 < handed[0] < len(rows) * 0.75
    # Without the hand-over, the rows with letters only Polars' newer tables lowercase would differ.
    monkeypatch.setattr(ocr_columns, "lowercase_disagreements", lambda: "")
    unguarded = ocr_columns.ocr_frame(frame, OcrOptions())
    assert eq.verdicts(unguarded) != eq.verdicts(fast)


def test_ocr_empty_and_single_rows() -> None:
    schema = {"output": pl.Utf8, "expected_output": pl.Utf8, "keywords": pl.List(pl.Utf8)}
    for rows in ([], [("", "", [])], [(None, None, None)], [("A b", "a  B!", ["b", "q"])]):
        frame = pl.DataFrame(rows, schema=schema, orient="row")
        inputs = [(*r, OcrOptions()) for r in rows]
        eq.assert_same_verdicts(ocr_columns.ocr_frame(frame, OcrOptions()), eq.by_rows(ocr_row, inputs), inputs)


# chart -----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("opts", [ChartOptions(), ChartOptions(0.0, 0.0, 0.0), ChartOptions(0.5, 1.0, 1e6)])
def test_chart_fast_path_is_chart_row(opts: ChartOptions, monkeypatch: pytest.MonkeyPatch) -> None:
    pairs = eq.chart_pairs(2000, 11)
    inputs = [(o, e, opts) for o, e in pairs]
    definition = eq.by_rows(chart_row, inputs)
    handed = counted(monkeypatch, chart_columns, "chart_row")
    eq.assert_same_verdicts(chart_columns.chart_frame(eq.frame(pairs), opts), definition, inputs)
    assert 0 < handed[0] < len(pairs) / 4  # the rows holding K (Kelvin) or ſ
    monkeypatch.setattr(chart_columns, "SLICE_ROWS", 97)  # large frames are scored in slices, with the same results
    eq.assert_same_verdicts(chart_columns.chart_frame(eq.frame(pairs), opts), definition, inputs)
    assert chart_columns.chart_frame(eq.frame([]), opts).height == 0


# json ------------------------------------------------------------------------------------------------------------

JSON_OPTIONS = [
    JsonOptions(),
    JsonOptions(compare_values=False),
    JsonOptions(number_tolerance=0.01, case_sensitive=True),
    JsonOptions(require_valid_schema=False),
    JsonOptions(schema=json.dumps({"type": "object", "required": ["a"], "properties": {"a": {"type": "number"}}})),
]


@pytest.mark.parametrize("opts", JSON_OPTIONS)
def test_json_fast_path_is_json_row(opts: JsonOptions, monkeypatch: pytest.MonkeyPatch) -> None:
    """Random documents (mostly row-wise) and documents of a few shapes (mostly column-wise, groups of 20+ rows)."""
    monkeypatch.setattr(json_columns, "MIN_GROUP_ROWS", 20)
    for pairs in (eq.json_pairs(800, 5), eq.json_shaped_pairs(1500, 6)):
        inputs = [(o, e, opts) for o, e in pairs]
        eq.assert_same_verdicts(json_columns.json_frame(eq.frame(pairs), opts), eq.by_rows(json_row, inputs), inputs)
    if opts.schema is None:
        decided = json_columns.score_columns(json_columns.prepared(eq.frame(pairs)), opts)
        assert decided.height > len(pairs) / 4
    else:  # validation against the configured schema alone
        alone = eq.frame(pairs).drop("expected_output")
        inputs = [(o, None, opts) for o, _ in pairs]
        eq.assert_same_verdicts(json_columns.json_frame(alone, opts), eq.by_rows(json_row, inputs), inputs)


# benchmark metrics -------------------------------------------------------------------------------------------------

ANSWER_PIECES = [
    *["yes", "Yes", "YES", "no", "No.", "not", "nope", "Yes, it is.", "no, ", " yes ", "y", "n", "1", "one", "two"],
    *["3.5", "1,000", "12%", "$12", "-0", "0.0", "1e3", "nan", "inf", "Infinity", "٣", "３", "a", "an", "the", "it's"],
    *[
        "won't",
        "Dr.",
        "3.14.",
        "...",
        "  ",
        "\t",
        "\n",
        "\x1c",
        "\xa0",
        "\u2028",
        "İ",
        "ß",
        "K",
        "ΑΣ",
        "é",
        "\u0301",  # a combining mark, "²" an other number, "‿" connector punctuation, "\u200d" a joiner: word
        "²",  # characters to only one of Python's re and Polars' regex
        "‿",
        "\u200d",
        "ก\u0e34",
        "!",
        "?",
        ",",
    ],
]


def answers(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [
        "".join(rng.choice(ANSWER_PIECES) + rng.choice(["", " ", ""]) for _ in range(rng.randint(0, 5)))
        for _ in range(n)
    ]


TEXT_METRICS: list[tuple[Callable[[str], Any], Callable[[pl.Series], Any]]] = [
    (_vqa_answers.official_answer, _vqa_answers.official_answers),
    (_vqa_answers.evalai_answer, _vqa_answers.evalai_answers),
    (_vqa_answers.process_punctuation, _vqa_answers.official_punctuations),
    (_relaxed.python_float, _relaxed.python_floats),
    (_yes_no.lmms_eval_reading, _yes_no.lmms_eval_readings),
    (_yes_no.official_reading, lambda s: list(_yes_no.official_readings(s).iter_rows())),
]


@pytest.mark.parametrize("definition, columns", TEXT_METRICS, ids=lambda f: getattr(f, "__name__", "columns"))
def test_benchmark_text_metrics_are_their_definitions(definition: Callable[[str], Any], columns: Any) -> None:
    texts = answers(3000, 13)
    got = columns(pl.Series(texts, dtype=pl.Utf8))
    got = got.to_list() if isinstance(got, pl.Series) else got
    for text, fast in zip(texts, got, strict=True):
        want = definition(text)
        assert fast == want or (fast != fast and want != want), f"{text!r}: {fast!r} != {want!r}"  # NaN is NaN


def test_benchmark_lenient_yes_no_reading_is_its_definition(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = answers(3000, 13)
    definition = [_yes_no.lenient_reading(t) for t in texts]
    calls = counted(monkeypatch, _yes_no, "lenient_reading")
    assert _yes_no.lenient_readings(pl.Series(texts)).to_list() == definition
    assert 0 < calls[0] < len(texts) / 10  # the rows where the regex engines' \b may differ, and only those


def test_benchmark_lenient_yes_no_hands_over_where_word_boundaries_differ(monkeypatch: pytest.MonkeyPatch) -> None:
    # "İ" lowercases to "i" + U+0307 (a combining mark: a word character to Polars only); "²" is one to Python only.
    differing = ["noanİNo.", "no\u0301", "\u0301yes", "yes²", "²no", "yes, no\u0301 doubt"]
    texts = [*differing, "ΑΣ yes", "yes ก\u0e34", "yes", None]
    definition = [None if t is None else _yes_no.lenient_reading(t) for t in texts]
    calls = counted(monkeypatch, _yes_no, "lenient_reading")
    assert _yes_no.lenient_readings(pl.Series(texts, dtype=pl.Utf8)).to_list() == definition
    assert definition[: len(differing)] == ["no", "no", "yes", None, "no", "yes"]
    assert calls[0] == len(differing)


@pytest.mark.parametrize("pick", ["first", "last", "only"])
@pytest.mark.parametrize("references", ["texts", "bare"])
def test_benchmark_lenient_count_is_its_definition(
    pick: _counts.Pick, references: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """exact_count's lenient protocol: every row's numbers, answer, expected count and error are those of
    ``lenient_count``; the rows Polars may read otherwise (other scripts, odd spaces) are handed to it."""
    pairs = [(o or "", e or "") for o, e in eq.count_pairs(3000, 5)]
    if references == "bare":  # every reference a plain number: the column path skips reading them
        pairs = [(o, f"{i % 13}" if i % 3 else f"{i % 7}.5") for i, (o, _) in enumerate(pairs)]
    definition = [_counts.lenient_count(o, e, pick) for o, e in pairs]
    handed = counted(monkeypatch, _counts, "lenient_count")
    outputs, expected = (pl.Series([p[k] for p in pairs], dtype=pl.Utf8) for k in (0, 1))
    fast = _counts.lenient_counts(outputs, expected, pick)
    for given, row, want in zip(pairs, fast.iter_rows(), definition, strict=True):
        assert row == (want.found, want.predicted, want.expected, want.error), given
    assert 0 < handed[0] < len(pairs) / 2
    assert {w.error for w in definition} >= {None, _counts.NO_COUNT} and any(
        w.predicted == w.expected for w in definition
    )


def test_benchmark_pair_metrics_are_their_definitions() -> None:
    texts = answers(3000, 14)
    pairs = pl.DataFrame({"output": texts, "gold": texts[1:] + texts[:1]})
    equal = _relaxed.lower_equal(pairs["output"], pairs["gold"]).to_list()
    assert equal == [a.lower() == b.lower() for a, b in zip(pairs["output"], pairs["gold"], strict=True)]
    relaxed = _relaxed.relaxed_pairs(pairs.with_columns(p=_relaxed.python_floats(pairs["output"])), 0.05)
    definition = [float(_relaxed.relaxed_correct(a, b)) for a, b in zip(pairs["output"], pairs["gold"], strict=True)]
    assert relaxed["score"].to_list() == definition
    with_rows = pairs.with_columns(**_anls.official_row_columns())
    distances = _anls.official_distances(with_rows).to_list()
    assert distances == [_anls.official_distance(a, b) for a, b in zip(pairs["output"], pairs["gold"], strict=True)]


# building blocks -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("distinct", [3, 400, 990])
@pytest.mark.parametrize("repeats_ok", [False, True])
def test_codes_index_the_distinct_values(distinct: int, repeats_ok: bool) -> None:
    rng = random.Random(distinct)
    values = pl.Series([None if rng.random() < 0.02 else f"v{rng.randrange(distinct)}" for _ in range(1000)])
    for series in (values, values.fill_null("")):
        table, code = codes(series, repeats_ok=repeats_ok)
        assert table.null_count() == 0
        assert [None if c < 0 else table[int(c)] for c in code] == series.to_list()
        if not repeats_ok:  # equal values, equal codes
            assert table.n_unique() == len(table)


def test_json_strings_escape_every_character_as_python_does() -> None:
    chars = [chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    assert json_strings(pl.Series(chars)).to_list() == [json.dumps(c, ensure_ascii=False) for c in chars]


def test_joined_keeps_owners_without_texts() -> None:
    texts = pl.Series(["a", "b", "c", "d"])
    assert joined(texts, np.array([1, 1, 3, 3]), 5, ", ").to_list() == ["", "a, b", "", "c, d", ""]
    assert joined(texts.head(0), np.array([], dtype=np.int64), 2, ",").to_list() == ["", ""]


def test_joined_concatenates_several_texts_and_leads_each_owner() -> None:
    keys, values = pl.Series(['"a": ', '"b": ', '"c": ']), pl.Series(["1", "2", "3"])
    owner = np.array([0, 0, 2])
    assert joined([keys, values], owner, 3, ", ").to_list() == ['"a": 1, "b": 2', "", '"c": 3']
    assert joined(values, owner, 4, "|", lead="; ").to_list() == ["; 1|2", "", "; 3", ""]
