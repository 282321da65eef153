"""json_validator's columnar path (:mod:`vision_eval.validators.json_columns`) gives, byte for byte, the results of
the row-wise path (:func:`json_check.json_rows`, ``check_one`` per row) on every row it decides, and leaves to the
row-wise path the rows it cannot decide exactly."""

from __future__ import annotations

import json
import random
import re
from typing import Any

import polars as pl
import pytest

from tests import equivalence as eq
from vision_eval.validators import json_columns, json_compare
from vision_eval.validators.json_check import (
    JsonOptions,
    candidate_of,
    extract_candidates,
    json_row,
    json_rows,
    required_message,
)
from vision_eval.validators.json_columns import json_frame


def _frame(seed: int, n: int) -> pl.DataFrame:
    return eq.frame(eq.json_shaped_pairs(n, seed))


def _prepared(frame: pl.DataFrame) -> pl.DataFrame:
    return json_columns.prepared(frame)


OPTIONS = [
    JsonOptions(),
    JsonOptions(compare_values=False),
    JsonOptions(case_sensitive=True),
    JsonOptions(number_tolerance=0.01),
    JsonOptions(number_tolerance=0.01, case_sensitive=True, require_valid_schema=False),
]


@pytest.mark.parametrize("opts", OPTIONS)
def test_columnar_rows_are_the_row_wise_results_byte_for_byte(opts: JsonOptions) -> None:
    prepared = _prepared(_frame(3, 3000))
    decided = json_columns.score_columns(prepared, opts, min_rows=1)
    rowwise = json_rows(prepared, opts).with_row_index("row")
    expected = rowwise.join(decided.select("row"), on="row", how="semi")
    assert expected["status"].to_list() == ["processed"] * decided.height
    assert expected["error"].to_list() == [None] * decided.height
    assert decided["score"].to_list() == expected["score"].to_list()
    assert decided["passed"].to_list() == expected["passed"].to_list()
    for got, want in zip(decided["details"].to_list(), expected["details"].to_list()):
        assert got == want
    assert decided.height > 0.3 * prepared.height  # most rows are decided column-wise


def test_json_frame_is_the_row_wise_path_on_every_row(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(json_columns, "MIN_GROUP_ROWS", 100)  # groups of ~200 rows here
    frame = _frame(4, 1500)
    for opts in OPTIONS:
        new = json_frame(frame, opts)
        old = json_rows(_prepared(frame), opts)
        assert new.equals(old), opts
        assert json_columns.score_columns(_prepared(frame), opts).height > 0.3 * frame.height
        inputs = [(o, e, opts) for o, e in frame.iter_rows()]
        eq.assert_same_verdicts(new, eq.by_rows(json_row, inputs), inputs)


EXPECTED = {
    "a": 1,
    "obj": {"x": "Sx", "y": 2.5, "z": None},
    "items": [{"d": "w", "q": 1}, {"d": "Z", "q": 2}],
    "tags": ["p", "q"],
    "s": 'é \\"x" ',
}
BASE = json.dumps(EXPECTED)
# (response text, decided column-wise? (None: when values are not compared))
CASES: list[tuple[str, bool | None]] = [
    (BASE, True),
    (json.dumps(EXPECTED, indent=2, ensure_ascii=False), True),
    (f"```json\n{BASE}\n```", True),
    (f"Sure! {BASE} Anything else?", True),
    ('{"a": 2, "obj": {"x": "sx ", "y": 2.50, "z": 0}, "items": [{"d": "Z", "q": 2}, {"d": "w", "q": 1}],'
     ' "tags": ["q", "p"], "s": "É \\\\\\"X\\"  "}', True),  # values, order of items, case and spaces
    ('{"obj": {"x": "Sx", "y": 2.5, "z": null}, "tags": ["p", "q"]}', True),  # top-level keys missing
    ('{"a": 1, "obj": {"x": "Sx", "y": 2.5, "z": null}, "items": [{"d": "w", "q": 1, "n": 1}, {"q": 2, "d": "Z"}],'
     ' "tags": ["p", "q"], "s": "x", "more": {"k": [1]}, "m\\u00f6re": 1, "q\\"k": 2}', True),  # extra keys
    ('{"a": 1, "a": 1, "obj": {}, "tags": []}', False),  # repeated expected key, nested keys missing
    ('{"a": 1, "b": 5, "b": 6}', True),  # a repeated extra key is listed once
    ('{"s": "10:30", "tags": ["p", "q"]}', True),  # colons in values: keys read, none extra
    ('{"a": 1, "obj": {}}', False),
    ('{"a": 1, "obj": []}', False),
    ('{"a": 1, "obj": "none"}', False),
    ('{"a": 1, "items": []}', False),
    ('{"a": 1, "items": {"0": {"d": "w", "q": 1}, "1": {"d": "Z", "q": 2}}}', False),
    ('{"a": 1, "items": [{"d": "w", "q": 1}]}', False),
    ('{"a": 1, "items": [{"d": "w", "q": 1}, {"d": "Z", "q": 2}, {"d": "x", "q": 3}]}', False),
    ('{"a": 1, "items": [{}, {"d": "Z", "q": 2}]}', False),
    ('{"a": 1, "items": [{"d": "w", "q": 1}, 7]}', False),
    ('{"a": 1, "tags": {"0": "p", "1": "q"}}', False),
    ('{"a": 1, "tags": ["p", "q", "r"]}', False),
    ('{"a": "1"}', False),  # type error
    ('{"a": [1]}', False),
    ('{"a": 1, "k]": 1}', False),  # an extra key the row-wise path takes for an array item
    ('{"a": 1, "k\\u0001": 1}', False),  # an extra key msgspec escapes its own way
    ('{"a": 1, "obj": {"x": "Sx", "y": 2.5, "z": {"deep": 1}}}', None),  # null expected, object found: a mismatch
    # showing the whole object when values are compared, else a match
    ('[{"a": 1}]', False),
    ('{"a": 1,}', False),
    ('{"a": NaN}', False),
    ('{"a": 1e400}', False),
    ('{"a": 1, "x": ' + "[" * 450 + "]" * 450 + "}", False),
    ('{"a": 1, "n": 123456789012345678901234567890}', True),
    ('{"a": 1e16, "obj": {"x": "\\u00e9\\n", "y": 2.5e-7, "z": -0.0}}', True),  # numbers msgspec prints its way
    ("", True),
    ("no json here", False),
]  # fmt: skip


HUGE = "1" + "0" * 320  # float() of it overflows: the row-wise path reports an error
TARGETED = [
    (BASE, CASES),
    ("{}", [("{}", True), ('{"x": 1, "y": {"z": 2}}', True), ("[]", False), ("[1]", False), ("", True)]),
    ("[]", [("[]", True), ("[1]", False), ("{}", False), ("[{}]", False)]),
    (f'{{"n": {HUGE}}}', [(f'{{"n": {HUGE}}}', False), ('{"n": 1}', False)]),
    ("5", [("5", False), ("{}", False)]),
]


@pytest.mark.parametrize("opts", OPTIONS)
def test_targeted_responses_are_decided_or_left_as_designed(opts: JsonOptions) -> None:
    for expected, cases in TARGETED:
        frame = pl.DataFrame(
            {"output": [text for text, _ in cases], "expected_output": [expected] * len(cases)},
            schema={"output": pl.Utf8, "expected_output": pl.Utf8},
        )
        prepared = _prepared(frame)
        decided = json_columns.score_columns(prepared, opts, min_rows=1)
        rowwise = json_rows(prepared, opts).with_row_index("row")
        by_row = {r["row"]: r for r in rowwise.iter_rows(named=True)}
        for got in decided.iter_rows(named=True):
            want = by_row[got["row"]]
            assert (want["status"], want["error"]) == ("processed", None)
            assert (got["score"], got["passed"], got["details"]) == (want["score"], want["passed"], want["details"])
        rows = set(decided["row"].to_list())
        for k, (text, columnar) in enumerate(cases):
            assert (k in rows) == (columnar if columnar is not None else not opts.compare_values), (expected, text)


def test_candidate_extraction_is_candidate_of() -> None:
    rng = random.Random(9)
    pieces = ["```", "`", "``", "json", "JSON", "Json", " ", "\n", "\t", "\xa0", "\u2003", "{", "}", "[", "]", "a", "é"]
    pieces += ['"x"', ":", ",", "\x1c", "json\n", "```json", "```JSON  "]
    pieces += ["\x1c", "\x1f", "\x85", "\u2028", "\u3000"]  # whitespace to Python's str.strip, not to Polars'
    texts = [None, "", "   "] + ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 12))) for _ in range(20_000)]
    assert extract_candidates(pl.Series(texts, dtype=pl.Utf8)).to_list() == [candidate_of(t) for t in texts]


def test_duckdb_tokens_print_as_msgspec_where_the_columnar_path_relies_on_it() -> None:
    """Number tokens matching SAFE_NUMBER and string tokens without a backslash are what msgspec prints for the
    value json.loads reads from the original text (the details use them as they are)."""
    import msgspec

    rng = random.Random(2)
    values: list[Any] = [0, -0.0, 1.0, 960, 960.0, 0.1, 1e-5, 1.5e-5, 9.99e15, 123456789012345.6, 2**53 + 1]
    values += [rng.uniform(-1e6, 1e6) for _ in range(500)] + [10 ** rng.uniform(-8, 18) for _ in range(500)]
    values += [round(rng.uniform(0, 1000), rng.randint(0, 6)) for _ in range(500)] + [rng.randint(-(2**62), 2**62)]
    values += ["é", "a b", "\u2028", "\x7f", "😀", 'q"uote', "back\\slash", "tab\t", "\x01"]
    texts = [json.dumps({"v": v}, ensure_ascii=rng.random() < 0.5) for v in values]
    tokens = json_compare.extract(pl.DataFrame({"d": texts}), {"d": ["/v"]})["d0"]
    checked = 0
    for text, token in zip(texts, tokens.to_list()):
        expected = msgspec.json.encode(json.loads(text)["v"]).decode()
        if ("\\" not in token and token.startswith('"')) or re.fullmatch(json_compare.SAFE_NUMBER[1:-1], token):
            assert token == expected, text
            checked += 1
        assert json_compare.canonical(pl.Series([token])).item() == expected, text
    assert checked > 1000


def test_a_large_frame_gives_the_row_wise_results() -> None:
    frame = pl.concat([_frame(6, 2500)] * 8)  # 20,000 rows (json_rows: once per row)
    for opts in OPTIONS[:2]:
        assert json_frame(frame, opts).equals(json_rows(_prepared(frame), opts))


def test_greedy_item_pairing_with_ties_reordering_and_nested_objects() -> None:
    """Arrays of 3-5 objects (with a nested object) shuffled and perturbed so that items tie on overlap: the
    columnar greedy pairing takes the same response item as ``_Compare._list`` for every expected item."""
    rng = random.Random(1)

    def item() -> dict[str, Any]:
        return {
            "label": rng.choice(["cat", "dog", "Cat"]),
            "count": rng.choice([1, 2, 2.0, 3]),
            "box": {"x": rng.choice([0, 1]), "y": rng.choice([0, 1])},
        }

    rows: dict[str, list[str]] = {"output": [], "expected_output": []}
    for _ in range(1200):
        want = {"objects": [item() for _ in range(rng.choice([3, 4, 5]))], "n": 1}
        got = json.loads(json.dumps(want))
        rng.shuffle(got["objects"])
        for it in got["objects"]:
            it["label"] = rng.choice(["cat", "dog", "bird", "CAT "]) if rng.random() < 0.3 else it["label"]
            it["count"] = rng.choice([1, 2, 3, 4]) if rng.random() < 0.2 else it["count"]
            it["box"]["x"] = rng.choice([0, 1, 2]) if rng.random() < 0.2 else it["box"]["x"]
        rows["expected_output"].append(json.dumps(want))
        rows["output"].append(json.dumps(got))
    prepared = _prepared(pl.DataFrame(rows))
    for opts in OPTIONS:
        decided = json_columns.score_columns(prepared, opts, min_rows=1)
        expected = json_rows(prepared, opts).with_row_index("row").join(decided.select("row"), on="row", how="semi")
        assert decided.height == prepared.height  # nothing structural: every row column-wise
        assert decided["details"].to_list() == expected["details"].to_list()
        assert decided["score"].to_list() == expected["score"].to_list()


def test_required_messages_are_jsonschemas() -> None:
    """The column-wise path and check_one's shortcut write JSON Schema's own messages for absent top-level keys."""
    from jsonschema import Draft202012Validator

    for key in ["invoice", "it's", 'q"k', "é", "a\nb", "\\", "x.y"]:
        errors = list(Draft202012Validator({"required": [key]}).iter_errors({}))
        assert [f"$: {e.message}" for e in errors] == [required_message(key)]
    expected = json.dumps({"invoice": "A-1", "it's": 1, "total": 5, "lines": [{"q": 1}]})
    frame = pl.DataFrame(
        {"output": ['{"lines": [{"q": 2}]}', '{"total": 5, "extra": true}'], "expected_output": [expected] * 2}
    )
    details = [json.loads(d) for d in json_frame(frame, JsonOptions())["details"]]
    assert details[0]["schema_errors"] == [required_message(k) for k in ("invoice", "it's", "total")]
