"""Every fast path gives, on every generated row, the verdict of its row-wise definition (the shared harness in
``tests/equivalence.py``): the code validators' column-wise paths against ``count_row``, ``ocr_row``, ``chart_row``
and ``json_row``."""

from __future__ import annotations

import json
import random
from typing import Any

import numpy as np
import polars as pl
import pytest

from tests import equivalence as eq
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


# field_accuracy ------------------------------------------------------------------------------------------------------

FIELD_SETS: list[list[dict[str, Any]]] = [
    [  # the keys of eq.json_pairs' documents
        {"path": "a"},
        {"path": "b", "match": "fuzzy", "threshold": 0.8},
        {"path": "total", "match": "numeric_tolerance", "tolerance": 0.5},
        {"path": "name", "match": "date"},
        {"path": "items", "required": False},
        {"path": "ü"},
    ],
    [  # the shapes of eq.json_shaped_pairs: nested keys, keys a JSON pointer escapes
        {"path": "invoice_number"},
        {"path": "vendor", "match": "fuzzy"},
        {"path": "total", "match": "numeric_tolerance", "tolerance": 0.01, "relative": True},
        {"path": "a.b.c"},
        {"path": "a.b.d", "match": "numeric_tolerance", "tolerance": 1},
        {"path": "a/b~c", "match": "date", "required": False},
        {"path": "k3"},
        {"path": "n", "match": "fuzzy"},
    ],
    [  # an index step, and a path that ends where another goes on: read by DuckDB at every batch size
        {"path": "line_items.0.amount", "match": "numeric_tolerance"},
        {"path": "a"},
        {"path": "a.b.c"},
    ],
]
ENGINES = ["msgspec", "msgspec in small steps", "duckdb rows", "duckdb arrow"]
TRAILING_COMMAS = [
    '{"a": "x",}', '{"a": [1, 2,], "total": 3}', '{"a": "x"} and {"b": 2,}', '{"a": 1,} {"a": 2}', '{"a": NaN,}',
    '{"a": "\\ud800",}', '{"a": "p,}q"}', '{"a": "p,}q",}', '{"a": {"b": {"c": 1,},},}', '{"a": 1,}}', '{"a": 1 ,\n}',
    '{"a": 1,\x0c}', '{"a": "\\",}"}', '{"a": 01,}', '{"ü": "x",}\n', '{"b": "Acme",  }',
]  # fmt: skip
"""Objects with a trailing comma: no JSON the reference reads, unless the text holds another object it reads."""


def _surrogates_shown(text: Any) -> Any:
    """A reference text as a Polars column shows it (lone surrogates as U+FFFD)."""
    if not isinstance(text, str):
        return text
    return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("fields", FIELD_SETS, ids=["keys", "shapes", "index"])
def test_field_accuracy_is_evaluate_row(
    engine: str, fields: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hostile JSON (NaN, lone surrogates, 1e400, repeated keys, trailing commas, deep nesting, fences, prose) on
    every extraction engine: small batches read by msgspec, large ones by DuckDB (its results as rows or Arrow)."""
    from vision_eval.evaluator import EvalContext
    from vision_eval.evaluators.field_accuracy import FieldAccuracy, FieldAccuracySettings
    from vision_eval.structured import duckpath, matching, msgpath

    if engine.startswith("duckdb"):
        monkeypatch.setattr(duckpath, "MSGSPEC_ROWS", 0)
    if engine == "msgspec in small steps":
        monkeypatch.setattr(msgpath, "CHUNK", 37)
    if engine == "duckdb arrow":
        monkeypatch.setattr(duckpath, "SMALL_RESULT", 0)
    read_by_msgspec = [0]
    tokens = msgpath.tokens

    def counting(*args: Any) -> Any:
        read_by_msgspec[0] += 1
        return tokens(*args)

    monkeypatch.setattr(msgpath, "tokens", counting)
    pairs = eq.json_pairs(700, 21) + eq.json_shaped_pairs(900, 22)
    pairs += [(text, '{"a": "x", "b": "Acme", "a/b~c": "2025-01-05"}') for text in TRAILING_COMMAS]
    batch = eq.frame(pairs).with_columns(pl.Series("id", [f"r{i}" for i in range(len(pairs))]))
    evaluator = FieldAccuracy("f", FieldAccuracySettings(fields=fields), EvalContext())
    out = evaluator.evaluate(batch)
    specs = [matching.FieldSpec(**f) for f in fields]
    mine: dict[str, list[dict[str, Any]]] = {}
    for r in out.fields.to_dicts() if out.fields is not None else []:
        mine.setdefault(r["sample_id"], []).append(r)
    for (output, expected), result in zip(pairs, out.results.to_dicts(), strict=True):
        ref = matching.evaluate_row(specs, output, expected, "weighted_average")
        got = (result["status"], result["score"], result["error"])
        assert got == (ref["status"], ref.get("score"), ref.get("error")), (output, expected)
        rows = mine.get(result["sample_id"], [])
        assert len(rows) == len(ref["fields"]), (output, expected)
        for (path, fr, value, want), r in zip(ref["fields"], rows):
            shown = (path, fr.hit, fr.score, _surrogates_shown(fr.reason), _surrogates_shown(matching.to_json(want)))
            assert (r["path"], r["hit"], r["score"], r["reason"], r["expected"]) == shown, (output, expected)
            if fr.reason != matching.NOT_JSON:
                assert r["actual"] == _surrogates_shown(matching.to_json(value)), (output, expected, path)
    supported = msgpath.supported(tuple(matching.parse_path(f["path"]) for f in fields))
    uses_msgspec = engine.startswith("msgspec") and supported
    assert (read_by_msgspec[0] > 0) == uses_msgspec
