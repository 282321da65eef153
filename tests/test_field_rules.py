"""field_accuracy's comparison rules as the public helpers give them (the code-judge scripts' API): nested objects and
arrays (their similarity guides the any_order pairing), the field-level rules, paths, fuzzy similarity and JSON
reading limits."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest

from vision_eval.evaluators.fields.matching import (
    MAX_DEPTH,
    MISSING,
    FieldSpec,
    Outcome,
    compare_field,
    compare_scalar,
    compare_values,
    loads,
    resolve,
    rule,
    similarity,
)
from vision_eval.evaluators.fields.values import (
    SLACK,
    as_float,
    fmt,
    nesting_depth,
    read_json,
    to_json,
    tolerance_compare,
    too_deep,
)

NUMERIC = FieldSpec(path="x", match="numeric_tolerance")


def test_exact_objects_are_equal_only_when_every_nested_value_is() -> None:
    exact = FieldSpec(path="x")
    assert compare_values(exact, {"a": [1, {"b": 2}]}, {"a": [1, {"b": 2}]}) == Outcome(1.0, True, "equal")
    for got, want in [
        ({"a": [1, 2]}, {"a": [1]}),
        ({"a": [1]}, {"a": [1, 2]}),
        ({"a": [1, 2]}, {"a": [1, 3]}),
        ({"a": 1}, {"a": "1"}),
        ({"a": None}, {"a": [None]}),
    ]:
        assert compare_values(exact, got, want) == Outcome(0.0, False, f"got {to_json(got)}, expected {to_json(want)}")


def test_objects_compared_key_by_key_under_other_rules() -> None:
    outcome = compare_values(NUMERIC, {"a": 1, "b": 2}, {"a": 1, "b": 5, "c": 1})
    # a: hit (1.0); b: 0.5 / (1 + 3/5) = 0.3125; c: on one side only (0.0).
    assert outcome == Outcome(0.4375, False, "b: diff=3.0 > tolerance 0.0; c: only on one side")
    assert compare_values(NUMERIC, {"a": 1}, {"a": 1.0}) == Outcome(1.0, True, "equal")
    assert compare_values(NUMERIC, {}, {}) == Outcome(1.0, True, "equal")
    any_order = FieldSpec(path="x", match="exact", array_match="any_order")
    assert compare_values(any_order, {"a": [2, 1]}, {"a": [1, 2]}) == Outcome(1.0, True, "equal")


def test_ordered_arrays_report_each_miss_and_the_unpaired_items() -> None:
    extra = compare_values(NUMERIC, [1, 2, 3], [1, 5])
    assert extra == Outcome(
        0.4375, False, "1/2 items match; item 1: diff=3.0 > tolerance 0.0; 1 extra item(s) in response"
    )
    missing = compare_values(NUMERIC, [1], [1, 2, 3])
    assert missing == Outcome(1 / 3, False, "1/3 items match; 2 expected item(s) unmatched: 1, 2")
    assert compare_values(NUMERIC, [1, 2], [1, 2.0]) == Outcome(1.0, True, "all 2 items match")
    assert compare_values(NUMERIC, [], []) == Outcome(1.0, True, "all 0 items match")


def test_any_order_pairs_items_by_similarity_even_when_none_is_a_hit() -> None:
    fuzzy = FieldSpec(path="x", match="fuzzy", threshold=0.95, array_match="any_order")
    outcome = compare_values(fuzzy, ["banan", "apple pi"], ["apple pie", "banana"])
    assert outcome == Outcome(
        pytest.approx((0.8333333333333334 + 0.8888888888888888) / 2),
        False,
        "0/2 items match (any order); item 1: similarity 0.833 < threshold 0.95; "
        "item 0: similarity 0.889 < threshold 0.95",
    )
    any_order = FieldSpec(path="x", array_match="any_order")
    assert compare_values(any_order, [3, 1, 2], [1, 2, 3]) == Outcome(1.0, True, "all 3 items match (any order)")
    assert compare_values(any_order, [], [1]) == Outcome(
        0.0, False, "0/1 items match (any order); 1 expected item(s) unmatched: 0"
    )
    assert compare_values(any_order, [1], []) == Outcome(
        0.0, False, "0/0 items match (any order); 1 extra item(s) in response"
    )


def test_scalars_and_nulls() -> None:
    exact = FieldSpec(path="x")
    assert compare_scalar(exact, None, None) == Outcome(1.0, True, "both null")
    assert compare_scalar(exact, 1, None) == Outcome(0.0, False, "got 1, expected null")
    assert compare_scalar(exact, None, "a") == Outcome(0.0, False, 'got null, expected "a"')
    assert compare_scalar(NUMERIC, "$1,000", 1000) == Outcome(1.0, True, "diff=0.0 <= tolerance 0.0")


def test_field_level_rules() -> None:
    required, optional = FieldSpec(path="x"), FieldSpec(path="x", required=False)
    assert compare_field(required, MISSING, 1).__dict__ == {
        "score": 0.0,
        "hit": False,
        "reason": "missing from the response",
    }
    assert compare_field(optional, MISSING, 1).__dict__ == {
        "score": None,
        "hit": None,
        "reason": "optional field missing from the response (left out)",
    }
    assert compare_field(required, 2, MISSING).__dict__ == {"score": 1.0, "hit": True, "reason": "no expected value"}
    assert compare_field(required, 2, 3).__dict__ == {"score": 0.0, "hit": False, "reason": "got 2, expected 3"}
    assert compare_field(NUMERIC, 2, 2.0).__dict__ == {"score": 1.0, "hit": True, "reason": "diff=0.0 <= tolerance 0.0"}


def test_a_fields_rule_is_made_once_and_follows_its_spec() -> None:
    spec = FieldSpec(path="x", match="fuzzy", threshold=0.5)
    assert rule(spec) is rule(spec) and rule(spec).threshold == 0.5
    other = FieldSpec(path="x", match="fuzzy", threshold=0.9)
    assert rule(other) is not rule(spec) and rule(other).threshold == 0.9
    for i in range(300):  # the cache is bounded; every spec still gets its own rule
        many = FieldSpec(path=f"f{i}", tolerance=i, match="numeric_tolerance")
        assert rule(many).tolerance == i and rule(many).spec is many


def test_resolve_paths_through_objects_and_lists() -> None:
    doc = {"a": [{"b": 1}, {"b": None}], "0": "key"}
    assert resolve(doc, ("a", 1, "b")) is None
    assert resolve(doc, ("a", 0, "b")) == 1
    assert resolve(doc, (0,)) == "key"  # a numeric step is the key "0" of an object
    assert resolve(doc, ("a", 2)) is MISSING and resolve(doc, ("a", "b")) is MISSING
    assert resolve(doc, ("z",)) is MISSING and resolve(doc, ("a", 0, "b", "c")) is MISSING
    assert repr(MISSING) == "MISSING"


def test_fuzzy_similarity_normalizes_only_when_asked() -> None:
    assert similarity("Acme  Corp", "acme corp", "levenshtein", True) == 1.0
    assert similarity("Acme  Corp", "acme corp", "levenshtein", False) == pytest.approx(0.7)
    assert similarity("b a", "a b", "token_sort", False) == 1.0
    assert similarity("abc", "abd", "jaro_winkler", False) == pytest.approx(0.8222222222222223)


def test_nesting_depth_and_the_too_deep_limit() -> None:
    assert nesting_depth('{"a": [1, {"b": "[[["}]}') == 3  # brackets inside strings do not count
    assert nesting_depth("[[]][[[]]]") == 3 and nesting_depth("]]][") == 1 and nesting_depth("x") == 0
    deep, shallow = "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert too_deep(deep) and not too_deep(shallow)
    wide = "[" + "[], " * (MAX_DEPTH + 5) + "[]]"  # many brackets, little depth
    assert not too_deep(wide)


def test_long_integers_are_read_and_written_exactly() -> None:
    digits, number = "9" * 4500, 10**4500 - 1  # past int()'s 4300-digit limit
    assert loads(digits) == number and loads(f'{{"n": {digits}}}')["n"] == number
    assert loads("4000") == 4000
    assert to_json({"n": number}) == f'{{"n":{digits}}}'
    assert to_json([number, -number, 1]) == f"[{digits},-{digits},1]"


def test_fuzzy_fields_compare_strings_only_and_the_threshold_is_inclusive() -> None:
    fuzzy = FieldSpec(path="x", match="fuzzy", threshold=0.8)
    assert compare_values(fuzzy, "abcdx", "abcde") == Outcome(0.8, True, "similarity 0.8 >= threshold 0.8")
    assert compare_values(fuzzy, "abxyz", "abcde") == Outcome(0.4, False, "similarity 0.4 < threshold 0.8")
    assert compare_values(fuzzy, "abc", 5) == Outcome(0.0, False, "expected value is not a string: 5")
    assert compare_values(fuzzy, 5, "abc") == Outcome(0.0, False, "not a string: got 5")


def test_fuzzy_normalization_lowercases() -> None:
    # Lowercasing keeps "ß" (upper-casing would make it "SS" and the two texts equal).
    assert similarity("Straße", "STRASSE", "levenshtein", True) == pytest.approx(5 / 7)


def test_depth_counts_reopened_brackets_after_a_close() -> None:
    assert nesting_depth("[[] [[]]]") == 3
    assert too_deep("{" * (MAX_DEPTH + 1))
    assert not too_deep("[" * MAX_DEPTH + "]" * MAX_DEPTH + "[]")  # 101 brackets, 100 deep


def test_long_integers_written_beside_other_values() -> None:
    number = 10**4500
    assert to_json({"n": number, "s": "x", "b": True, "f": 1.5, "l": [None]}) == (
        '{"n":1' + "0" * 4500 + ',"s":"x","b":true,"f":1.5,"l":[null]}'
    )


def test_a_response_that_is_not_json_misses_every_field_in_the_fields_table() -> None:
    import vision_eval as ve

    fields = [{"path": "a", "match": "fuzzy"}, {"path": "b"}]
    rows = [{"id": "x", "output": "not json", "expected_output": '{"a": "\\ud800x", "b": 2}'}]
    result = ve.evaluate(rows, evaluators={"f": {"type": "field_accuracy", "fields": fields}}, run={"progress": False})
    table = result.fields.select("path", "match", "expected", "actual", "score", "hit", "reason").rows()
    assert table == [
        ("a", "fuzzy", '"\ufffdx"', None, 0.0, False, "response is not JSON"),  # a lone surrogate shown as U+FFFD
        ("b", "exact", "2", None, 0.0, False, "response is not JSON"),
    ]
    assert result.results["score"].to_list() == [0.0]


def test_tolerance_bounds_forgive_float_rounding_in_proportion() -> None:
    # The bound is tolerance + 1e-9 x max(1, tolerance): 1e-6 of slack at a tolerance of 1000, 1e-9 at 0.5.
    wide, narrow = (FieldSpec(path="x", match="numeric_tolerance", tolerance=t) for t in (1000.0, 0.5))
    assert compare_values(wide, 2000.0000005, 1000).hit and not compare_values(wide, 2000.000002, 1000).hit
    assert compare_values(narrow, 1.5000000007, 1).hit and not compare_values(narrow, 1.500000002, 1).hit


def test_kind_of_values_and_of_subclasses() -> None:
    from vision_eval.evaluators.fields.values import kind

    class Text(str):
        pass

    class Whole(int):
        pass

    class Real(float):
        pass

    class Mapping(dict):  # type: ignore[type-arg]
        pass

    class Items(list):  # type: ignore[type-arg]
        pass

    assert [kind(v) for v in (MISSING, None, True, 1, 1.5, "a", {}, [])] == [
        "missing", "null", "bool", "number", "number", "string", "object", "array",
    ]  # fmt: skip
    assert [kind(v) for v in (Text("a"), Whole(1), Real(1.0), Mapping(), Items())] == [
        "string", "number", "number", "object", "array",
    ]  # fmt: skip


def test_an_object_in_prose_with_a_long_integer() -> None:
    from vision_eval.evaluators.fields.values import read_json

    assert read_json('Here it is: {"n": ' + "9" * 4500 + "} (done)") == (True, {"n": 10**4500 - 1}, None)


def test_evaluate_row_applies_the_aggregation_and_shows_a_missing_response_as_null() -> None:
    from vision_eval.evaluators.fields.field_row import evaluate_row

    specs = [FieldSpec(path="a"), FieldSpec(path="b")]
    got, want = '{"a": 1, "b": 3}', '{"a": 1, "b": 2}'
    assert evaluate_row(specs, got, want, "weighted_average").score == 0.5
    strict = evaluate_row(specs, got, want, "all_or_nothing")
    assert (
        strict.score == 0.0
        and strict.details == '{"hits":["a: equal"],"misses":["b: got 3, expected 2"],"left_out":[]}'
    )
    missing = evaluate_row(specs, None, want, "weighted_average")
    assert (missing.status, missing.score) == ("processed", 0.0)
    assert missing.details == (
        '{"reason":"response is not JSON","raw":null,"hits":[],'
        '"misses":["a: response is not JSON","b: response is not JSON"],"left_out":[]}'
    )


def test_dates_with_month_names_in_a_format() -> None:
    spec = FieldSpec(path="x", match="date", formats=["DD-MMM-YYYY", "DD MMMM YYYY"])
    for text in ("05-Mar-2024", "05-MAR-2024", "05 March 2024", "05 march 2024"):
        assert compare_values(spec, text, "2024-03-05") == Outcome(1.0, True, "same date 2024-03-05")
    assert compare_values(spec, "05-Mrz-2024", "2024-03-05").reason == 'could not parse date "05-Mrz-2024"'


def test_a_format_with_month_names_reads_them_itself() -> None:
    from datetime import datetime

    from vision_eval.evaluators.fields.dates import read_by_format

    assert read_by_format("05-Mar-2024", "DD-MMM-YYYY") == datetime(2024, 3, 5)
    assert read_by_format("05-mar-2024", "DD-MMM-YYYY") == datetime(2024, 3, 5)
    assert read_by_format("March 05 2024 13:45", "MMMM DD YYYY HH:mm") == datetime(2024, 3, 5, 13, 45)
    assert read_by_format("2024-03-05", "DD-MMM-YYYY") is None


# ---------------------------------------------------------------- numbers: reasons' text and the tolerance bound


@pytest.mark.parametrize(
    ("x", "text"),
    [(1.0, "1.0"), (-1.0, "-1.0"), (1.5, "1.5"), (0.1234567, "0.123457"), (-0.1234565, "-0.123456"),
     (5e-6, "0.000005"), (-5e-6, "-0.000005"), (1.25e-5, "0.000013"), (123456.7890123, "123456.789012"),
     (1e15, "1000000000000000.0"), (1e16, "1e+16"), (3e21, "3e+21"), (-2.5e300, "-2.5e+300"),
     (0.000999999, "0.001"), (0.0001234, "0.000123"), (1 / 3, "0.333333"), (2 / 3, "0.666667"),
     (math.nan, "NaN"), (math.inf, "inf"), (-math.inf, "-inf")],
)  # fmt: skip
def test_fmt_prints_numbers_rounded_to_6_decimals_in_plain_notation_below_1e15(x: float, text: str) -> None:
    assert fmt(x) == text


def test_fmt_zero_tiny_and_beyond_the_float_range() -> None:
    assert fmt(0) == fmt(0.0) == fmt(-0.0) == fmt(4e-7) == fmt(-4e-7) == "0.0"
    assert fmt(Fraction(1, 3)) == "0.333333"
    assert fmt(Fraction(10**400)) == "1.000000e+400"
    assert fmt(Fraction(-(10**400) * 3, 2)) == "-1.500000e+400"


def exact_hit(got: int | float, want: int | float, tolerance: float, relative: bool) -> bool:
    g, w, t = Fraction(got), Fraction(want), Fraction(tolerance)
    tol = t * abs(w) if relative and w != 0 else t
    return abs(g - w) <= tol + Fraction(SLACK) * max(Fraction(1), tol)


@pytest.mark.parametrize(
    ("got", "want", "tolerance", "relative", "hit"),
    [
        (1.1, 1.0, 0.1, False, True),  # float rounding at the bound is forgiven
        (1.1 + 2e-9, 1.0, 0.1, False, False),  # past the slack: a miss
        (1.1 + 0.5e-9, 1.0, 0.1, False, True),
        (2000.0 + 5e-7, 1000.0, 1000.0, False, True),  # the slack scales with a tolerance above 1
        (2000.0 + 2e-6, 1000.0, 1000.0, False, False),
        (1.0 + 0.5e-9, 1.0, 0.0, False, True),  # a zero tolerance keeps the absolute slack
        (1.0 + 2e-9, 1.0, 0.0, False, False),
        (202, 200, 0.01, True, True),  # relative: 1% of 200
        (202.01, 200, 0.01, True, False),
        (-202, -200, 0.01, True, True),  # of |want|
        (0.01, 0, 0.01, True, True),  # relative to 0: the tolerance itself
        (0.0101, 0, 0.01, True, False),
        (2**60 + 1, 2**60, 0.0, False, False),  # integers beyond 2**53 compared exactly
        (2**60 + 1, 2**60, 1.0, False, True),
        (2**60 + 2, 2**60, 1.0, False, False),
        (-(2**60) - 2, -(2**60), 1.0, False, False),
        (2**53 + 1, 2**53, 0.0, False, False),
        (2**53 + 1, float(2**53), 0.0, False, False),
        (10**400, 10**400 + 1, 0.0, False, False),
        (10**400, 10**400, 0.0, False, True),
    ],
)
def test_tolerance_compare_at_and_just_past_the_bound(
    got: int | float, want: int | float, tolerance: float, relative: bool, hit: bool
) -> None:
    assert exact_hit(got, want, tolerance, relative) is hit
    found, diff, tol = tolerance_compare(got, want, tolerance, relative)
    assert found is hit
    assert float(diff) == float(abs(Fraction(got) - Fraction(want)))
    expected_tol = tolerance * abs(want) if relative and want != 0 else tolerance
    assert float(tol) == pytest.approx(float(expected_tol), rel=1e-12)


def test_tolerance_compare_agrees_with_exact_arithmetic_and_stays_in_floats_away_from_the_bound() -> None:
    rng = random.Random(7)
    for _ in range(2000):
        want = rng.choice([rng.uniform(-1e6, 1e6), rng.randint(-(2**62), 2**62), rng.randint(-1000, 1000), 0])
        tolerance = rng.choice([0.0, 0.5, 1.0, 2.5, 1e-3, 1e3])
        relative = rng.random() < 0.5
        tol = tolerance * abs(want) if relative and want != 0 else tolerance
        got = want + rng.choice([-1, 1]) * tol * rng.choice([0.5, 1.0, 1.0 + 1e-10, 1.0 + 1e-8, 2.0])
        if isinstance(want, int) and rng.random() < 0.5:
            got = int(want + rng.choice([-1, 0, 1]) * int(tol))
        found, diff, _ = tolerance_compare(got, want, tolerance, relative)
        assert found is exact_hit(got, want, tolerance, relative), (got, want, tolerance, relative)
    found, diff, tol = tolerance_compare(3.0, 1.0, 0.5, False)
    assert (found, diff, tol) == (False, 2.0, 0.5) and isinstance(diff, float)


def test_tolerance_compare_infinite_and_nan_compare_as_floats() -> None:
    assert tolerance_compare(math.inf, math.inf, 1.0, False)[0] is False  # inf - inf is NaN
    assert tolerance_compare(math.inf, 1.0, 1e300, False)[0] is False
    assert tolerance_compare(math.nan, 1.0, 1.0, False)[0] is False
    assert tolerance_compare(-math.inf, -math.inf, 0.0, False)[0] is False
    assert as_float(10**400) == math.inf and as_float(-(10**400)) == -math.inf and as_float(3) == 3.0


def test_mismatched_kinds_and_unreadable_expected_values_are_misses_that_say_why() -> None:
    """A null against an object (or an exact field's mismatch) shows both values; other kinds name the kinds; a
    string against an expected null is a miss, not "both null"; an expected date that is not a date string, or
    cannot be read, is a miss saying so; a mismatched key counts 0 toward its object's similarity."""
    date = FieldSpec(path="x", match="date")
    fuzzy = FieldSpec(path="x", match="fuzzy")
    assert compare_values(date, "2024-03-05", 5) == Outcome(0.0, False, "expected value is not a date string: 5")
    assert compare_values(date, "2024-03-05", "not a date") == Outcome(
        0.0, False, 'could not parse expected date "not a date"'
    )
    assert compare_values(fuzzy, None, {"a": 1}) == Outcome(
        0.0, False, 'type mismatch: got null null, expected object {"a":1}'
    )
    assert compare_values(fuzzy, "abc", [1]) == Outcome(0.0, False, "type mismatch: got string, expected array")
    assert compare_values(NUMERIC, "x", None) == Outcome(0.0, False, 'got "x", expected null')
    assert compare_values(NUMERIC, {"a": 1, "b": None}, {"a": 1, "b": {"c": 1}}) == Outcome(
        0.5, False, 'b: type mismatch: got null null, expected object {"c":1}'
    )


def test_a_fenced_array_in_prose_is_read_from_its_fence() -> None:
    text = "Here they are:\n```json\n[1, 2]\n```\nDone {x}."  # no whole document; the first "{" opens no object
    assert read_json(text) == (True, [1, 2], None)
