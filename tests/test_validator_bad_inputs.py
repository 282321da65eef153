"""The code validators give real verdicts on hostile inputs (numbers of any length, digits of any script, JSON nested
thousands deep, integers of thousands of digits), and a few bad rows never change the verdicts of the good rows beside
them. Batches are scored by the evaluators (each distinct row once), single rows by the row functions."""

from __future__ import annotations

import json
import random
import re

import polars as pl
import pytest

from tests import equivalence as eq
from vision_eval.evaluator import Evaluator
from vision_eval.evaluators.code.chart import ChartValidator, ChartValidatorSettings
from vision_eval.evaluators.code.count import MAX_DIGITS, CountValidator, CountValidatorSettings
from vision_eval.evaluators.code.json_check import (
    JsonOptions,
    JsonValidator,
    JsonValidatorSettings,
    check_one,
    json_row,
)
from vision_eval.evaluators.code.json_depth import MAX_DEPTH

SCHEMA = {"output": pl.Utf8, "expected_output": pl.Utf8}
# Zero to nine in Arabic-Indic, Extended Arabic-Indic, Devanagari, Bengali, fullwidth, mathematical bold, Thai.
SCRIPTS = ["٠", "۰", "०", "০", "０", "\U0001d7ce", "๐"]


_frame = eq.frame


def _scored(evaluator: Evaluator, frame: pl.DataFrame) -> pl.DataFrame:
    batch = frame.with_columns(pl.Series("id", [str(i) for i in range(frame.height)], dtype=pl.Utf8))
    return evaluator.evaluate(batch).results.drop("sample_id")


def count_frame(frame: pl.DataFrame) -> pl.DataFrame:
    return _scored(CountValidator("count", CountValidatorSettings()), frame)


def chart_frame(frame: pl.DataFrame) -> pl.DataFrame:
    return _scored(ChartValidator("chart", ChartValidatorSettings()), frame)


def json_frame(frame: pl.DataFrame, compare_values: bool = True) -> pl.DataFrame:
    return _scored(JsonValidator("json", JsonValidatorSettings(compare_values=compare_values)), frame)


def _same(new: pl.DataFrame, old: pl.DataFrame) -> None:
    assert eq.verdicts(new) == eq.verdicts(old)


def _count_pairs(n: int, seed: int = 3) -> list[tuple[str | None, str | None]]:
    rng = random.Random(seed)
    return [eq.count_pair(rng) for _ in range(n)]


def _other_script(text: str | None, rng: random.Random) -> str | None:
    if text is None:
        return None
    return "".join(chr(ord(rng.choice(SCRIPTS)) + int(c)) if c.isdigit() and rng.random() < 0.7 else c for c in text)


# count -----------------------------------------------------------------------------------------------------------


_DIGITS_ONLY_NUMBERS = ["1", "2", "3", "5", "12", "0", "007", "40"]
_NOUNS = ["circles", "circle", "boxes", "berries", "people", "mice", "glasses", "bus", "fish", "cats"]


def _digits_only(rng: random.Random) -> str:
    """Count text whose numbers are all digits (no number words, which a scaling would not reach)."""
    parts = []
    for _ in range(rng.randint(0, 4)):
        adjective = rng.choice(["", "red ", "big blue "])
        if rng.random() < 0.15:
            parts.append(f"{rng.choice(_NOUNS)}: {rng.choice(_DIGITS_ONLY_NUMBERS)}")
        else:
            parts.append(f"{rng.choice(_DIGITS_ONLY_NUMBERS)} {adjective}{rng.choice(_NOUNS)}")
    if rng.random() < 0.15:
        return rng.choice(_DIGITS_ONLY_NUMBERS)
    return rng.choice(["", "I count ", "There are "]) + rng.choice([", ", " and ", "; "]).join(parts)


SCALE = 10**20


def _scaled(text: str) -> str:
    return re.sub(r"\d+", lambda m: m.group(0) + "0" * 20, text)


def _scaled_details(details: str | None) -> dict | None:
    if details is None:
        return None
    value = json.loads(details)
    for key in ("expected", "found", "matched"):
        value[key] = {k: v * SCALE for k, v in value[key].items()}
    if value["reasoning"].startswith("the response"):  # its numbers are counts ("n of m expected counts" are not)
        value["reasoning"] = re.sub(r"\d+", lambda m: str(int(m.group(0)) * SCALE), value["reasoning"])
    return value


def test_count_numbers_of_25_digits_give_the_verdicts_of_small_ones() -> None:
    """Every number times 10**20 (25+ digits): equal counts stay equal and sums stay sums, so the verdicts are those
    on the small numbers, and the details those details times 10**20. Scaled and plain rows interleave."""
    rng = random.Random(9)
    pairs = []
    for _ in range(1500):
        expected = _digits_only(rng)
        output = expected if rng.random() < 0.3 else _digits_only(rng)
        pairs.append((output, expected))
    plain = _frame(pairs)
    scale = [i % 2 == 0 for i in range(len(pairs))]
    mixed = _frame([(_scaled(o), _scaled(e)) if s else (o, e) for (o, e), s in zip(pairs, scale)])
    new, old = count_frame(mixed), count_frame(plain)
    assert new["status"].to_list() == old["status"].to_list() and new["error"].to_list() == old["error"].to_list()
    assert new["score"].to_list() == old["score"].to_list()
    for a, b, s in zip(new["details"].to_list(), old["details"].to_list(), scale):
        assert (json.loads(a) if a else None) == (_scaled_details(b) if s else json.loads(b) if b else None)
    assert sum(1 for r in new.iter_rows(named=True) if r["score"] == 1.0) > 300


def test_count_reads_digits_of_any_script_as_digits() -> None:
    rng = random.Random(4)
    pairs = _count_pairs(2000)
    other = _frame([(_other_script(o, rng), _other_script(e, rng)) for o, e in pairs])
    new, old = count_frame(other), count_frame(_frame(pairs))
    _same(new, old)
    assert new["details"].to_list() == old["details"].to_list()
    assert other["output"].str.contains("[٠-٩]").sum() > 100


def test_count_totals_beyond_int64_and_numbers_too_long_to_read() -> None:
    many = " and ".join(["999999999999999 cats"] * 10_000)  # adds up past 2**63
    rows = [
        (many, "9999999999999990000 cats"),
        (many, "5 cats"),
        ("9" * (MAX_DIGITS + 1) + " cats", "5 cats"),
        ("5 cats", "1" * 6000),
        ("5 cats", "5 cats"),
    ]
    out = count_frame(_frame(rows)).to_dicts()
    assert [r["score"] for r in out] == [1.0, 0.0, None, None, 1.0]
    assert out[2]["error"] == f"output holds a number of more than {MAX_DIGITS} digits: too long to read as a count"
    assert out[3]["error"].startswith("expected_output holds a number of more than")


@pytest.mark.parametrize("bad_share", [0.01, 0.1, 0.5])
def test_count_bad_rows_leave_the_good_rows_verdicts_alone(bad_share: float) -> None:
    rng = random.Random(int(bad_share * 100))
    pairs = _count_pairs(4000, seed=11)
    bad = [rng.random() < bad_share for _ in pairs]
    awkward = ["1234567890123456789012345 circles", "٣ circles", "9" * 5000, "３ dogs and 2 cats", "\ud7ff 12"]
    mixed = _frame([(rng.choice(awkward), e) if b else (o, e) for (o, e), b in zip(pairs, bad)])
    scored = count_frame(mixed)
    good = [i for i, b in enumerate(bad) if not b]
    alone = count_frame(_frame([pairs[i] for i in good]))
    _same(scored[good], alone)
    assert scored.height == len(pairs) and scored["status"].is_not_null().all()


# chart -----------------------------------------------------------------------------------------------------------


def test_chart_reads_digits_of_any_script_as_digits() -> None:
    rng = random.Random(12)
    pairs = []
    for _ in range(800):
        expected = eq.chart_text(rng)
        pairs.append((expected if rng.random() < 0.3 else eq.chart_text(rng), expected))
    other = _frame([(_other_script(o, rng), _other_script(e, rng)) for o, e in pairs])
    new, old = chart_frame(other), chart_frame(_frame(pairs))
    _same(new, old)


# json ------------------------------------------------------------------------------------------------------------


def _deep(depth: int, leaf: str = "1", kind: str = "[") -> str:
    if kind == "[":
        return "[" * depth + leaf + "]" * depth
    return '{"a": ' * depth + leaf + "}" * depth


def test_json_nesting_beyond_the_limit_is_a_plain_reason() -> None:
    opts = JsonOptions()
    assert (
        check_one(None, _deep(5000), '{"a": 1}', opts)["error"] == f"output: JSON nested deeper than {MAX_DEPTH} levels"
    )
    assert check_one(None, "{}", _deep(5000, kind="{"), opts)["error"] == (
        f"expected_output: JSON nested deeper than {MAX_DEPTH} levels"
    )
    at_limit = check_one(None, _deep(MAX_DEPTH, kind="{"), _deep(MAX_DEPTH, "2", kind="{"), opts)
    assert at_limit["status"] == "processed" and at_limit["score"] == 0.0
    # Brackets inside strings are text, not nesting.
    assert check_one(None, json.dumps({"a": "[" * 500}), json.dumps({"a": "[" * 500}), opts)["score"] == 1.0


def test_json_nested_arrays_are_paired_without_exponential_work() -> None:
    # Each level pairs its one item by a trial comparison: without remembering those, 60 levels is 2**60 of them.
    result = check_one(None, _deep(60), _deep(60), JsonOptions())
    assert result["status"] == "processed" and result["score"] == 1.0


def test_json_integers_too_long_to_read_are_plain_reasons() -> None:
    huge = "7" * 5000
    assert check_one(None, f'{{"a": {huge}}}', '{"a": 1}', JsonOptions())["error"].startswith("output holds a number")
    assert check_one(None, '{"a": 1}', f"[{huge}]", JsonOptions())["error"].startswith("expected_output holds")
    same = check_one(None, '{"a": 12345678901234567890123}', '{"a": 12345678901234567890123}', JsonOptions())
    assert same["score"] == 1.0


@pytest.mark.parametrize("compare_values", [True, False])
def test_json_hostile_documents_in_a_batch_get_their_own_verdicts(compare_values: bool) -> None:
    """3,000 rows of one expected shape, with deep, huge and odd responses among them: each row's verdict in the
    batch is ``json_row``'s on that row alone."""
    rng = random.Random(21)
    expected = json.dumps({"total": 5, "items": [{"d": "w", "q": 1}], "name": "Acme"})
    hostile = [
        _deep(65), _deep(MAX_DEPTH), _deep(5000, kind="{"), '{"total": ' + "9" * 5000 + "}", '{"total": NaN}',
        json.dumps({"total": 5, "items": [{"d": "w", "q": 1}], "name": "Acme", "deep": json.loads(_deep(63))}),
        json.dumps({"total": 5, "items": [{"d": "w", "q": 1}], "name": "Acme", "x": "[[[[" * 40}),
    ]  # fmt: skip
    outputs = []
    for _ in range(3000):
        roll = rng.random()
        if roll < 0.1:
            outputs.append(rng.choice(hostile))
        else:
            value = json.loads(expected)
            outputs.append(eq.json_response(rng, value if roll < 0.5 else eq.json_mutated(rng, value)))
    frame = pl.DataFrame({"output": outputs, "expected_output": [expected] * len(outputs)}, schema=SCHEMA)
    scored = json_frame(frame, compare_values)
    opts = JsonOptions(compare_values=compare_values)
    alone = [json_row(o, expected, opts) for o in outputs]
    assert eq.verdicts(scored) == [(r.status, r.score, r.details, r.error, r.passed) for r in alone]
    assert scored["error"].drop_nulls().str.contains("nested deeper").sum() > 10
    assert scored["error"].drop_nulls().str.contains("too long to read").sum() > 10


def test_json_generated_documents_with_hostile_rows_keep_the_others_verdicts() -> None:
    rng = random.Random(5)
    rows = []
    for _ in range(400):
        want = eq.json_value(rng)
        rows.append(
            (eq.json_response(rng, want if rng.random() < 0.3 else eq.json_mutated(rng, want)), json.dumps(want))
        )
    frame = _frame(rows)
    hostile = _frame([(_deep(5000), '{"a": 1}'), ('{"a": 1}', _deep(5000)), ('{"a": ' + "1" * 6000 + "}", "{}")])
    together = json_frame(pl.concat([frame, hostile]))
    _same(together.head(frame.height), json_frame(frame))
    assert together.tail(3)["status"].to_list() == ["error"] * 3
