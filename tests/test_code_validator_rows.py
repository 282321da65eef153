"""The code validators as per-row rules: hand-checked verdicts (details byte for byte) on ordinary and hostile rows
through ``vision_eval.evaluate``, the same frame whether a batch is scored in the run's process or on the process
pool, and the exactness of the row functions' shortcuts (prefix-tree regexes, the strict-JSON scan, the compact
float spelling, details written from ``vars()``)."""

from __future__ import annotations

import dataclasses
import json
import random
import re
from functools import partial
from typing import Any

import polars as pl
import pytest

import vision_eval
from tests import equivalence as eq
from vision_eval import rowwise
from vision_eval.evaluators.code import chart, count, json_check, ocr


def verdicts(kind: str, rows: list[dict[str, Any]], **settings: Any) -> list[tuple[Any, ...]]:
    """(status, score, passed, details, error) of each row, in row order, through ``vision_eval.evaluate``."""
    data = [{"id": f"r{i:03d}", **row} for i, row in enumerate(rows)]
    result = vision_eval.evaluate(data, evaluators={"v": {"type": kind, **settings}}, run={"progress": False})
    return list(result.results.sort("sample_id").select("status", "score", "passed", "details", "error").iter_rows())


def processed(score: float, details: str, passed: bool) -> tuple[Any, ...]:
    return ("processed", score, passed, details, None)


def error(reason: str) -> tuple[Any, ...]:
    return ("error", None, None, None, reason)


def test_count_validator_rows() -> None:
    rows = [
        ("I count ٣ red circles and ５ squares", "3 circles, 5 squares"),  # digits of other scripts
        ("twenty one cats", "21 cats"),
        ("twenty  one cats", "21 cats"),  # two spaces: "twenty" and "one" are two numbers, "one cats" the count
        ("circles: 4; dogs = 2", "4 circles, 2 dogs"),
        ("a dozen eggs\tand no spoons", "12 eggs, 0 spoons"),
        ("9" * 4301 + " cats", "5 cats"),
        ("", "7"),
        ("lots", "many"),
    ]
    got = verdicts("count_validator", [{"output": o, "expected_output": e} for o, e in rows])
    both = '"circle": 3, "square": 5'
    assert got == [
        processed(1.0, f'{{"expected": {{{both}}}, "found": {{{both}}}, "matched": {{{both}}}, '
                  '"reasoning": "2 of 2 expected counts match"}', True),
        processed(1.0, '{"expected": {"cat": 21}, "found": {"cat": 21}, "matched": {"cat": 21}, '
                  '"reasoning": "1 of 1 expected counts match"}', True),
        processed(0.0, '{"expected": {"cat": 21}, "found": {"cat": 1}, "matched": {}, '
                  '"reasoning": "0 of 1 expected counts match; wrong or missing: cat"}', False),
        processed(1.0, '{"expected": {"circle": 4, "dog": 2}, "found": {"circle": 4, "dog": 2}, '
                  '"matched": {"circle": 4, "dog": 2}, "reasoning": "2 of 2 expected counts match"}', True),
        processed(1.0, '{"expected": {"egg": 12, "spoon": 0}, "found": {"egg": 12, "spoon": 0}, '
                  '"matched": {"egg": 12, "spoon": 0}, "reasoning": "2 of 2 expected counts match"}', True),
        error(f"output holds a number of more than {count.MAX_DIGITS} digits: too long to read as a count"),
        processed(0.0, '{"expected": {"*": 7}, "found": {}, "matched": {}, '
                  '"reasoning": "the response never states the expected count 7"}', False),
        error(count.NO_COUNTS),
    ]  # fmt: skip


def test_ocr_validator_rows() -> None:
    rows = [
        {"output": "HELLO,  world", "expected_output": "hello world"},
        # Typographic quotes are punctuation; \x1c is no whitespace here (not Unicode White_Space); keywords are
        # normalized as the texts are, blank ones left out.
        {"output": "“Total”\x1c due", "expected_output": "total due", "keywords": ["total", "DUE!", " ", None]},
        {"output": "Kelvin \u212a", "expected_output": "kelvin k", "keywords": ["k", "kelvin"]},
        {"output": "", "expected_output": "", "keywords": []},
    ]
    got = verdicts("ocr_validator", rows)
    none = (
        '"keyword_accuracy":null,"keywords_found":[],"keywords_missing":[],"weights":{"similarity":1.0,"keywords":0.0}'
    )
    weights = '"weights":{"similarity":0.7,"keywords":0.3},"scorer":"ratio"}'
    assert got == [
        processed(1.0, f'{{"similarity":1.0,{none},"scorer":"ratio"}}', True),
        processed(0.7 * 0.9 + 0.3, '{"similarity":0.9,"keyword_accuracy":1.0,"keywords_found":["total","DUE!"],'
                  f'"keywords_missing":[],{weights}', True),
        processed(1.0, '{"similarity":1.0,"keyword_accuracy":1.0,"keywords_found":["k","kelvin"],'
                  f'"keywords_missing":[],{weights}', True),
        processed(1.0, f'{{"similarity":1.0,{none},"scorer":"ratio"}}', True),
    ]  # fmt: skip
    # The keywords column as comma-separated text, and configured keywords for every row.
    as_text = verdicts("ocr_validator", [{"output": "a b", "expected_output": "a b", "keywords": "a, z"}])
    assert json.loads(as_text[0][3])["keywords_missing"] == ["z"]
    configured = verdicts("ocr_validator", [{"output": "a b", "expected_output": "a b"}] * 2, keywords=["b"])
    assert [json.loads(row[3])["keywords_found"] for row in configured] == [["b"], ["b"]]


def test_chart_validator_rows() -> None:
    rows = [
        ("Revenue $2.4M in Q4 2025", "$2.4M; Q4 2025"),
        ("up 58 PERCENT on March 5th, 2025", "58%; 2025-03-05"),
        ("3 \u212a", "$3K"),  # the Kelvin sign is no "k" (thousand)
        ("flat", "nothing"),
    ]
    got = verdicts("chart_validator", [{"output": o, "expected_output": e} for o, e in rows])
    tolerances = '"tolerances":{"currency":0.15,"percent":0.0,"zero":0.0}'
    assert got == [
        processed(1.0, '{"values":[{"kind":"money","expected":"$2.4M","value":2400000.0,"matched":true,'
                  '"actual":"$2.4M"},{"kind":"date","expected":"Q4 2025","value":null,"matched":true,'
                  f'"actual":"Q4 2025"}}],"matched":2,"expected":2,{tolerances},'
                  '"reasoning":"2 of 2 expected values found in the response"}', True),
        processed(1.0, '{"values":[{"kind":"percent","expected":"58%","value":58.0,"matched":true,'
                  '"actual":"58 PERCENT"},{"kind":"date","expected":"2025-03-05","value":null,"matched":true,'
                  f'"actual":"March 5th, 2025"}}],"matched":2,"expected":2,{tolerances},'
                  '"reasoning":"2 of 2 expected values found in the response"}', True),
        processed(0.0, '{"values":[{"kind":"money","expected":"$3K","value":3000.0,"matched":false,"actual":null}],'
                  f'"matched":0,"expected":1,{tolerances},'
                  '"reasoning":"0 of 1 expected values found in the response"}', False),
        error(chart.NO_VALUES),
    ]  # fmt: skip


def test_json_validator_rows() -> None:
    rows = [
        ('{"a": 1e16, "b": "é"}', '{"a": 2, "b": "e"}'),  # strict JSON: compact details, floats as 1e16
        ('{"a": 1e-5}', '{"a": 2}'),
        ('{"a": NaN}', '{"a": 1}'),  # not strict: json.dumps' spacing (and its NaN)
        ('{"a": "\\ud800"}', '{"a": "\\ud800"}'),  # a lone surrogate: not strict
        ('{"a": 1}', '{"a": 1, "b": 2}'),  # schema broken: passed is false whatever the threshold
        ("[[[[", "[1]"),
        ('{"a": ' + "7" * 5000 + "}", '{"a": 1}'),
        ("[" * 65 + "]" * 65, "[1]"),
    ]
    got = verdicts("json_validator", [{"output": o, "expected_output": e} for o, e in rows], threshold=0.0)
    empty = '"valid_json":true,"schema_valid":true,"schema_errors":[],"missing_keys":[],"extra_keys":[],'
    empty += '"type_errors":[]'
    spaced = (
        '"valid_json": true, "schema_valid": true, "schema_errors": [], "missing_keys": [], "extra_keys": [], '
        '"type_errors": []'
    )
    assert got[:5] == [
        processed(0.0, f'{{{empty},"value_mismatches":[{{"path":"a","expected":2,"actual":1e16}},'
                  '{"path":"b","expected":"e","actual":"é"}],"fields_matched":0,"fields_expected":2}', True),
        processed(0.0, f'{{{empty},"value_mismatches":[{{"path":"a","expected":2,"actual":0.00001}}],'
                  '"fields_matched":0,"fields_expected":1}', True),
        processed(0.0, f'{{{spaced}, "value_mismatches": [{{"path": "a", "expected": 1, "actual": NaN}}], '
                  '"fields_matched": 0, "fields_expected": 1}', True),
        processed(1.0, f'{{{spaced}, "value_mismatches": [], "fields_matched": 1, "fields_expected": 1}}', True),
        processed(0.5, '{"valid_json":true,"schema_valid":false,"schema_errors":["$: \'b\' is a required property"],'
                  '"missing_keys":["b"],"extra_keys":[],"type_errors":[],"value_mismatches":[],"fields_matched":1,'
                  '"fields_expected":2}', False),
    ]  # fmt: skip
    assert got[5][:3] == ("processed", 0.0, True) and json.loads(got[5][3])["reason"].startswith("invalid JSON")
    assert got[6] == error("output holds a number of more than 4300 digits (too long to read)")
    assert got[7] == error("output: JSON nested deeper than 64 levels")


def _batches() -> dict[str, tuple[pl.DataFrame, dict[str, Any]]]:
    ocr_rows = eq.ocr_rows(600, 3)
    ocr_frame = pl.DataFrame(
        [list(r) for r in ocr_rows],
        schema={"output": pl.Utf8, "expected_output": pl.Utf8, "keywords": pl.List(pl.Utf8)},
        orient="row",
    )
    return {
        "count_validator": (eq.frame(eq.count_pairs(800, 1)), {}),
        "ocr_validator": (ocr_frame, {"scorer": "token_sort_ratio"}),
        "chart_validator": (eq.frame(eq.chart_pairs(600, 2)), {"currency_tolerance": 0.05}),
        "json_validator": (eq.frame(eq.json_pairs(400, 4) + eq.json_shaped_pairs(400, 5)), {"number_tolerance": 0.01}),
    }


def test_the_process_pool_gives_the_frame_of_the_run_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every validator on ~1,000 generated rows (hostile ones among them): with ``run.workers=2`` and the pool used
    from 50 distinct rows, the results frame is the one scored in the run's own process."""
    pools: list[int] = []
    make_pool = rowwise.process_pool

    def counted_pool(workers: int) -> Any:
        pools.append(workers)
        return make_pool(workers)

    monkeypatch.setattr(rowwise, "process_pool", counted_pool)
    # RowRule.evaluate calls score_rows with its default pool_min_rows (bound when rowwise was imported).
    monkeypatch.setattr(rowwise, "score_rows", partial(rowwise.score_rows, pool_min_rows=50))
    for kind, (frame, settings) in _batches().items():
        data = frame.with_columns(pl.Series("id", [f"r{i:05d}" for i in range(frame.height)]))
        runs = {}
        for workers in (1, 2):
            result = vision_eval.evaluate(
                data, evaluators={"v": {"type": kind, **settings}}, run={"workers": workers, "progress": False}
            )
            runs[workers] = result.results.sort("sample_id").select("sample_id", "status", "score", "passed",
                                                                     "details", "error")  # fmt: skip
        assert runs[2].equals(runs[1]), kind
        assert runs[1]["status"].n_unique() > 1 or kind == "ocr_validator", kind  # errors among them
    assert pools == [2] * 4


# The shortcuts the row functions take are exact -------------------------------------------------------------------


def test_prefix_trees_match_as_the_plain_alternations() -> None:
    """The number and stop words are matched by a tree of their prefixes; the plain alternation, in the order the
    words are listed, makes the same substitutions on count texts (hostile ones too)."""
    plain_words = re.compile("|".join(map(re.escape, count.WORD_PATTERNS)))
    plain_stops = re.compile("|".join(map(re.escape, count.STOP_PATTERNS)))
    texts = [t for pair in eq.count_pairs(3000, 7) for t in pair if t is not None]
    texts += [" ".join(count.NUMBER_WORDS), "  ".join(count.NUMBER_WORDS), " ".join(count.STOP_WORDS)]
    for text in texts:
        padded = "  " + text.lower().replace(" ", "  ") + "  "
        assert count._NUMBER_WORD.sub(count._digits, padded) == plain_words.sub(count._digits, padded), text
        assert count._STOP_WORD.sub(" , ", padded) == plain_stops.sub(" , ", padded), text


def test_chart_values_are_the_matches_of_the_case_insensitive_pattern() -> None:
    """Matches are looked for on ASCII-lowercased text, only where a value can start: the texts of every match of
    ``ANY`` (``(?ai)``) on the text itself, in order."""
    rng = random.Random(5)
    texts = [t for pair in eq.chart_pairs(2000, 6) for t in pair if t is not None]
    texts += [eq.other_script(t, rng) or "" for t in texts[:500]] + ["MİLLİON $5 ſ 3 \u212a", "USD5 Q4'25 -3 PCT"]
    full = re.compile(chart.ANY)
    for text in texts:
        digits = chart.ascii_digit_text(text)
        expected = [v for m in full.finditer(digits) if (v := chart.parse.__wrapped__(m[0])) is not None]
        assert chart.values(text) == expected, text


@pytest.mark.parametrize(
    ("text", "strict"),
    [
        ('{"a": 1.5, "b": [1e308, -2.5e-7], "c": "x"}', True),
        ('{"a": 123456789012345678901234567890}', True),
        ('{"a": 1e-400}', True),  # underflows to 0.0: a float all the same
        ('"\\ud83d\\ude00"', True),  # a surrogate pair is one character
        ('{"a": "1e400 NaN Infinity \\\\ud800"}', True),  # in a string, or escaped backslashes: text
        ('{"a": NaN}', False),
        ('{"a": -Infinity}', False),
        ('{"a": 1e400}', False),
        ('{"a": 1' + "0" * 250 + "e99}", False),
        ('{"\\ud800": 1}', False),
        ('["\\uDC00x"]', False),
    ],
)
def test_strict_json(text: str, strict: bool) -> None:
    assert json_check.strict(text, json.loads(text)) is strict


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1e16, "1e16"), (-1e16, "-1e16"), (2.5e-07, "2.5e-7"), (1e-05, "0.00001"), (-1.5e-05, "-0.000015"),
        (9.999999999999999e-06, "9.999999999999999e-6"), (0.0001, "0.0001"), (1e15, "1000000000000000.0"),
        (1.7976931348623157e308, "1.7976931348623157e308"), (5e-324, "5e-324"), (-0.0, "-0.0"), (960.0, "960.0"),
    ],
)  # fmt: skip
def test_compact_details_spell_floats_as_they_always_have(value: float, text: str) -> None:
    assert json_check._float_text(value) == text
    details = json_check.JsonDetails(True, True, [], [], [], [], [{"path": "a", "expected": 1, "actual": value}], 0, 1)
    written = json_check.compact_text(details)
    assert f'"actual":{text}}}' in written and json.loads(written)["value_mismatches"][0]["actual"] == value


def test_details_are_written_in_declared_order() -> None:
    """Details are written from ``vars()``: the generated ``__init__`` sets the members in declared order."""
    samples = [
        count.CountDetails({}, {}, {}, "r"),
        ocr.OcrDetails(1.0, None, [], [], {}, "ratio"),
        chart.ChartValue("money", "$1", 1.0, True, None),
        chart.ChartDetails([], 0, 0, {}, "r"),
        json_check.JsonDetails(True, True, [], [], [], [], [], 0, 0),
        json_check.InvalidJson([], [], [], [], False, "r", "raw"),
    ]
    for details in samples:
        assert list(vars(details)) == [f.name for f in dataclasses.fields(details)], type(details).__name__


def test_the_json_candidate_is_found_as_the_patterns_find_it() -> None:
    """The first fenced block (``FENCE``), else from the first ``{``/``[`` to the last ``}``/``]``, else the stripped
    text: found by string search, the same candidates as the patterns find on random texts of fences, tags, brackets
    and whitespace."""
    fence, embedded = re.compile(json_check.FENCE), re.compile(r"([\{\[][\s\S]*[\}\]])")

    def reference(text: str) -> str:
        if found := fence.search(text):
            return json_check.strip(found[1])
        if found := embedded.search(text):
            return found[1]
        return json_check.strip(text)

    rng = random.Random(9)
    pieces = ["```", "`", "``", "json", "JSON", "Json", " ", "\n", "\t", "\xa0", "\u2003", "{", "}", "[", "]", "a", "é"]
    pieces += ['"x"', ":", ",", "\x1c", "json\n", "```json", "```JSON  ", "\x1f", "\x85", "\u2028", "\u3000"]
    texts = ["", "   ", "``````", "```json```", "````", "```jsonx {}```"]
    texts += ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 12))) for _ in range(20_000)]
    for text in texts:
        assert json_check.candidate_of(text) == reference(text), text
    assert json_check.candidate_of(None) is None
