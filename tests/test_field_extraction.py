"""field_accuracy's extraction (``duckpath``: DuckDB, or msgspec on small batches) against the row-wise reference,
many fields at once."""

from __future__ import annotations

import json
import random
from typing import Any

import polars as pl
import pytest

import vision_eval
from vision_eval.structured import duckpath
from vision_eval.structured import matching as m

DOCS = [
    '{"a": "x", "n": 1, "b": {"c": "deep", "d": [1, 2]}, "items": [{"v": 1, "w": "p"}, {"v": "2"}], "tags": ["t0"]}',
    '{"a": "\\ud800 lone surrogate", "n": 2}',
    '{"a": "x", "n": NaN}',
    '{"a": "x", "n": Infinity}',
    '{"a": "x", "n": 1e400}',
    '{"a": "x", "n": -0}',
    '{"a": "x", "n": 1.50}',
    '{"a": "x", "n": 12345678901}',
    '{"a": "x", "n": 0.1, "n": 0.2}',
    '{"a": "é ü 漢字", "n": 3}',
    '{"a": "tab\\tand \\u00e9", "n": "1,500.00"}',
    '{"b": null, "items": null}',
    '{"b": "not an object", "items": {"0": {"v": 5}}}',
    '{"b": {"c": null}, "items": []}',
    '{"b": {"c": {"x": [1, {"y": 2}]}}, "items": [{"v": [1, 2]}]}',
    '{"b": {"c": {"x\\ny": 1, "q\\"": "\\u0008"}}}',
    '{"b": {"c": "one"}, "b": {"d": "two"}}',
    '{"items": [{"v": 1}, 7], "tags": [null, "t1"]}',
    '{"a": "x", "weird key": 1, "a-b": {"c.d": 2}}',
    '```json\n{"a": "fenced", "n": 4}\n```',
    'Sure! Here it is: {"a": "prose", "n": 5} Hope it helps.',
    'prose {"a": "first"} and {"a": "second"}',
    '{"a": "x"}, {"n": 9}',
    '{"a": [1, 2',
    '"{\\"a\\": \\"double encoded\\"}"',
    "[1, 2, 3]",
    "42",
    "not json at all",
    "",
    '  {\n  "a" :\t"spaced" , "n":\r\n7 }  ',
    '{"a": "x\\u0000y", "n": true}',
    '{"a": "see ```code``` here", "n": 1}',
    '{"a": "before"} ```json\n{"a": "inside"}\n```',
    '{"a": "x", "n": 1,}',
    '{"a": "x", "n": [1, 2,]}',
    '{"a": "x", "n": nan}',
    '{"a": "x", "n": -inf}',
    '{"a": "x", "n": -Infinity}',
    '{"\\u0061": "escaped first", "a": "literal last"}',
    '{"a": "literal first", "\\u0061": "escaped last"}',
    '{"b": {"c": "one", "c": "two"}, "a": "b"}',
    '{"a": "a", "n": 0.000001, "b": {"c": 1e-7, "d": [0.0001, 1e16]}}',
    '{"a": "\\u00e9\\u2028\\/", "n": 1E+2, "b": {"c": -0, "d": [-0.0, 123456789012345678901]}}',
    '{"items": {"0": {"v": "object key 0"}}, "tags": {"1": "2025-02-03", "0": "t"}}',
    '{"a": {"nested": {"deep": [1, {"k": null}]}}, "b": {"d": {"1": "key"}}}',
    '{"a~b": 1, "a/b": 2, "weird key": "quoted \\" key", "a-b": {"c.d": 3}}',
    '{"b": {"c": "present", "x": {"c": "elsewhere"}}, "note": "b"}',
]

FIELDS: list[dict[str, Any]] = [
    {"path": "a"},
    {"path": "a", "match": "fuzzy"},
    {"path": "n", "match": "numeric_tolerance", "tolerance": 0.5},
    {"path": "b"},
    {"path": "b.c"},
    {"path": "b.c", "match": "fuzzy", "required": False},
    {"path": "b.d[1]"},
    {"path": "items[0].v"},
    {"path": "items.1.v", "required": False},
    {"path": "items[0].w", "match": "fuzzy"},
    {"path": "tags[0]"},
    {"path": "tags.1", "match": "date"},
    {"path": "weird key"},
    {"path": "a-b.c.d", "required": False},
]
WANTS = [
    '{"a": "x", "n": 1, "b": {"c": "deep", "d": [1, 2]}, "items": [{"v": 1, "w": "p"}, {"v": "2"}], "tags": ["t0"]}',
    '{"a": "y", "n": 1.4, "b": {"c": null}, "items": [{"v": 1}], "weird key": 1, "tags": [null, "2025-01-02"]}',
    '{"b": "scalar", "items": {"0": {"v": 5}}}',
    '{"b": {"c": {"x\\ny": 2, "q\\"": "\\u0007"}}}',
]


@pytest.fixture(params=["msgspec", "rows", "arrow"])
def result_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Small batches are read by msgspec; larger ones by DuckDB, whose results come back as Python rows or (the
    largest) through Arrow: all three are tested."""
    if request.param != "msgspec":
        monkeypatch.setattr(duckpath, "MSGSPEC_ROWS", 0)
    if request.param == "arrow":
        monkeypatch.setattr(duckpath, "SMALL_RESULT", 0)
    return str(request.param)


def test_many_fields_match_reference(result_path: str) -> None:
    rows = [
        {"id": f"{i}-{j}", "output": g, "expected_output": w} for i, g in enumerate(DOCS) for j, w in enumerate(WANTS)
    ]
    rows += [{"id": f"e{i}", "output": WANTS[0], "expected_output": d} for i, d in enumerate(DOCS)]
    res = vision_eval.evaluate(rows, evaluators={"f": {"type": "field_accuracy", "fields": FIELDS}})
    specs = [m.FieldSpec(**f) for f in FIELDS]
    mine: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in res.fields.to_dicts():  # field-major: per (row, path) in field order
        mine.setdefault((r["sample_id"], r["path"]), []).append(r)
    for row, result in zip(rows, res.results.to_dicts()):
        ref = m.evaluate_row(specs, row["output"], row["expected_output"], "weighted_average")
        assert result["status"] == ref["status"], row
        if "surrogate" in row["output"] + row["expected_output"]:
            continue  # shown with U+FFFD (Polars strings are UTF-8); the batch must not fail
        assert result["score"] == pytest.approx(ref.get("score"), abs=1e-12), row
        if result["status"] != "error":
            details = json.loads(result["details"])
            labels = [(f"{p}: {fr.reason}", fr.hit) for p, fr, _, _ in ref["fields"]]
            assert details["hits"] == [lab for lab, hit in labels if hit is True], row
            assert details["misses"] == [lab for lab, hit in labels if hit is False], row
            assert details["left_out"] == [lab for lab, hit in labels if hit is None], row
            assert details.get("reason") == ref.get("reason"), row
            if ref.get("reason") == m.NOT_JSON:
                assert details["raw"] == row["output"]
        for path, fr, got, want in ref["fields"]:
            r = mine[(row["id"], path)].pop(0)
            assert (r["hit"], r["score"], r["reason"]) == (fr.hit, fr.score, fr.reason), (row, path)
            assert r["expected"] == m.to_json(want), (row, path)
            if fr.reason != m.NOT_JSON:
                assert r["actual"] == m.to_json(got), (row, path)


@pytest.mark.parametrize("text", DOCS)
def test_tokens_give_reference_values(text: str) -> None:
    """Per document and path: kind, JSON text and (for rules that read values) text equal the reference's value."""
    specs = [m.FieldSpec(**f) for f in FIELDS]
    batch = pl.DataFrame({"output": [text]})
    ok, _, sides = duckpath.extract_sides(batch, ("output",), specs)["output"]
    good, value = m.extract_json(text)
    assert ok.to_list() == [good]
    if "surrogate" in text:
        assert sides[0].json[0] == '"\ufffd lone surrogate"'
        assert sides[1].text is not None and sides[1].text[0] == "\ufffd lone surrogate"
        return
    for spec, side in zip(specs, sides):
        expected = m.resolve(value, m.parse_path(spec.path)) if good else m.MISSING
        assert side.kind[0] == m.kind(expected), (text, spec.path)
        assert side.json[0] == m.to_json(expected), (text, spec.path)
        assert (side.text is None) == (spec.match == "exact")
        if side.text is not None and m.kind(expected) == "string":
            assert side.text[0] == expected
        elif side.text is not None and m.kind(expected) not in ("missing", "null"):
            assert side.text[0] == m.to_json(expected)


KEY_FIELDS: list[dict[str, Any]] = [
    {"path": "a"},
    {"path": "a", "match": "fuzzy"},
    {"path": "n", "match": "numeric_tolerance", "tolerance": 0.5},
    {"path": "b.c"},
    {"path": "b.c", "match": "fuzzy", "required": False},
    {"path": "b.x.c"},
    {"path": "weird key"},
    {"path": "a-b.c.d", "required": False},
    {"path": "a~b"},
    {"path": "a/b", "match": "date"},
    {"path": "items"},
]
"""Keys only, no path a prefix of another: msgspec reads them at small batch sizes."""


def test_msgspec_tokens_give_reference_values(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every document at once, read by msgspec (DuckDB never starts): kind, JSON text and text of every path equal
    the reference's."""
    from vision_eval.structured import msgpath

    def no_duckdb(*args: Any) -> None:
        raise AssertionError("DuckDB read a small batch")

    monkeypatch.setattr(duckpath, "_duckdb_tokens", no_duckdb)
    specs = [m.FieldSpec(**f) for f in KEY_FIELDS]
    assert msgpath.supported(tuple(m.parse_path(s.path) for s in specs))
    ok, _, sides = duckpath.extract_sides(pl.DataFrame({"output": DOCS}), ("output",), specs)["output"]
    _assert_reference_sides(DOCS, specs, ok, sides)


def _assert_reference_sides(texts: list[str], specs: list[m.FieldSpec], ok: Any, sides: Any) -> None:
    """Per text and path: the extracted kind, JSON text and text (when the rule reads it) are the row-wise
    reference's (a lone surrogate escaped in the text is shown with U+FFFD, Polars strings being UTF-8: its JSON
    text is not compared)."""
    for row, text in enumerate(texts):
        good, value = m.extract_json(text)
        assert ok[row] == good, text
        for spec, side in zip(specs, sides):
            expected = m.resolve(value, m.parse_path(spec.path)) if good else m.MISSING
            assert side.kind[row] == m.kind(expected), (text, spec.path)
            if "\\ud800" in text:
                continue
            assert side.json[row] == m.to_json(expected), (text, spec.path)
            if side.text is not None and m.kind(expected) == "string":
                assert side.text[row] == expected, (text, spec.path)
            elif side.text is not None and m.kind(expected) not in ("missing", "null"):
                assert side.text[row] == m.to_json(expected), (text, spec.path)


@pytest.fixture
def reference_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts the row-wise definition (``matching.read_json``) is asked to read, in order."""
    calls: list[str] = []
    original = m.read_json

    def counting(text: str | None) -> tuple[bool, Any, str | None]:
        calls.append(text or "")
        return original(text)

    monkeypatch.setattr(m, "read_json", counting)
    return calls


def test_msgspec_leaves_the_reference_only_what_it_refuses(reference_calls: list[str]) -> None:
    """Repeated keys are read by msgspec as json.loads reads them; keys written with escapes, NaN, lone surrogates
    (which msgspec refuses), a value where a path needs an object and an object with a trailing comma followed by more
    text go row by row."""
    plain = ['{"a": 1, "a": 2}', '{"b": {"c": "one"}, "b": {"d": "two"}}', '{"a": 1,}', '{"a": [1, {"b": 2,}]}']
    plain += ['```json\n{"a": "y", "n": 2.5}\n```', 'Here: {"a": "z", "items": ["t", null]} done', "no json"]
    odd = ['{"\\u0061": 1, "a": 3}', '{"a": NaN}', '{"a": "\\ud800"}', '{"b": "not an object"}', '{"a": 1,} {"a": 2}']
    specs = [m.FieldSpec(**f) for f in KEY_FIELDS]
    batch = pl.DataFrame({"output": plain + odd})
    ok, _, _ = duckpath.extract_sides(batch, ("output",), specs)["output"]
    assert reference_calls == odd
    assert ok.to_list() == [m.extract_json(t)[0] for t in batch["output"]]


def test_the_batch_size_alone_picks_msgspec_or_duckdb(monkeypatch: pytest.MonkeyPatch) -> None:
    """Small batches are read by msgspec, large ones by DuckDB, with the same results, whatever came before: an
    evaluator keeps no state between batches."""
    from vision_eval.evaluator import EvalContext
    from vision_eval.evaluators.field_accuracy import FieldAccuracy, FieldAccuracySettings
    from vision_eval.structured import msgpath

    readers: list[str] = []

    def logged(reader: Any, label: str) -> Any:
        def read(*args: Any) -> Any:
            readers.append(label)
            return reader(*args)

        return read

    monkeypatch.setattr(msgpath, "tokens", logged(msgpath.tokens, "msgspec"))
    monkeypatch.setattr(duckpath, "_duckdb_tokens", logged(duckpath._duckdb_tokens, "duckdb"))
    monkeypatch.setattr(duckpath, "MSGSPEC_ROWS", len(DOCS))
    evaluator = FieldAccuracy("f", FieldAccuracySettings(fields=KEY_FIELDS), EvalContext())
    batch = pl.DataFrame({"id": [str(i) for i in range(len(DOCS))], "output": DOCS, "expected_output": DOCS[::-1]})
    twice = pl.concat([batch, batch])
    outs = [evaluator.evaluate(b) for b in (batch, twice, batch)]
    assert readers == ["msgspec", "duckdb", "msgspec"]
    assert outs[1].results.equals(pl.concat([outs[0].results, outs[2].results]))
    assert outs[0].fields is not None and outs[1].fields is not None and outs[2].fields is not None
    # The same rows (field by field, in any order): one batch of both, or each alone.
    columns = outs[1].fields.columns
    assert outs[1].fields.sort(columns).equals(pl.concat([outs[0].fields, outs[2].fields]).sort(columns))


def test_plain_documents_never_reach_the_reference(reference_calls: list[str]) -> None:
    """Plain, fenced and prose-wrapped objects are read by DuckDB (index paths: at every batch size); only what it
    may misread goes row by row."""
    plain = [
        '{"a": "x", "n": 1, "b": {"c": "deep"}}',
        '```json\n{"a": "y", "n": 2.5}\n```',
        'Here: {"a": "z", "tags": ["t", null]} done',
        '{"a": "é\\n", "n": -0, "b": {"c": {"x": 1}}}',
    ]
    # Texts DuckDB may read otherwise, and invalid texts whose verdict needs the reference's search (a "}" that may
    # close the object, a fence, a trailing comma DuckDB does not read past).
    odd = ['{"a": 1, "a": 2}', '{"a": "x,}"}', '{"a": "\\ud800"}', '{"\\u0061": 1}', '{"a": "}"', '{"a": 1,} ```']
    odd += ['{"a": "\\", }"}', '{"a": "\\ud800", "b": 1,}']
    # Decided at once: text with no object, no fence, no JSON; an object cut short; a trailing comma outside strings.
    invalid = ["not json", '{"a": 1, "b": [1', ' \n{"a": "x', '{"a": 1,}', '{"a": "x,}",}', '{"a": "\\n\\"", "b": 1,}']
    invalid += ['Here: {"a": [1, 2,], "b": "}"} ok', '{"a": "\\\\", "b": [1,]}']
    specs = [m.FieldSpec(**f) for f in FIELDS[:6]]
    batch = pl.DataFrame({"output": plain + odd + invalid})
    ok, _, _ = duckpath.extract_sides(batch, ("output",), specs)["output"]
    assert reference_calls == odd
    assert ok.to_list() == [m.extract_json(t)[0] for t in batch["output"]]


def test_pointer_escapes() -> None:
    assert duckpath.pointer(("a~b", 0, "c/d", "x y")) == "/a~0b/0/c~1d/x y"


NUMBER_TEXTS = ["12", " 12 ", "1e5", "+3", ".5", "-0.25", "USD 1,500", "1 500 EUR", "(20)", "--5", "$1,500.00", "abc"]
NUMBER_TEXTS += ["1.", "inf", "NaN", "12\u00a0000", "€ 3,5", "", "1,2,3", "0x10", "1_000"]


def test_numbers_match_clean_number() -> None:
    from vision_eval.structured import fastpath

    frame = pl.DataFrame({"t": NUMBER_TEXTS, "k": ["string"] * len(NUMBER_TEXTS)})
    want = [m.as_number(t) for t in NUMBER_TEXTS]
    assert fastpath.clean_numbers(frame["t"]).to_list() == want
    assert fastpath.numbers(frame, "k", "t").to_list() == want
    # numbers read as numbers, other kinds are not numbers
    mixed = pl.DataFrame({"t": ["1.5", "2", None, "true"], "k": ["number", "string", "null", "bool"]})
    assert fastpath.numbers(mixed, "k", "t").to_list() == [1.5, 2.0, None, None]


def _random_value(rng: random.Random, depth: int) -> Any:
    pick = rng.random()
    if depth > 0 and pick < 0.2:
        return {rng.choice(KEYS): _random_value(rng, depth - 1) for _ in range(rng.randint(0, 3))}
    if depth > 0 and pick < 0.3:
        return [_random_value(rng, depth - 1) for _ in range(rng.randint(0, 3))]
    return rng.choice(SCALARS)


KEYS = ["a", "b", "c", "n", "items", "tags", "weird key", "0", "1", "é"]
SCALARS: list[Any] = [
    None,
    True,
    False,
    0,
    -0.0,
    1,
    2.5,
    1e-7,
    1e16,
    10**20,
    0.1,
    "x",
    "",
    "é ü",
    'q"q',
    "a\\b",
    "2025-01-02",
]
SCALARS += ["1,500.00", "$3", "\u2028", "tab\there", "\x00nul", "```", "{not json}", "Infinity"]


def _render(rng: random.Random, value: Any) -> str:
    """A JSON text of ``value`` written in one of several ways (spacing, escapes, repeated keys, wrappers)."""
    text = json.dumps(value, ensure_ascii=rng.random() < 0.3, indent=rng.choice([None, None, 2]))
    if isinstance(value, dict) and value and rng.random() < 0.15:  # a repeated key, first or last
        key = rng.choice(list(value))
        extra = f"{json.dumps(key)}: {json.dumps(rng.choice(SCALARS))}"
        text = "{" + extra + ", " + text[1:] if rng.random() < 0.5 else text[:-1] + ", " + extra + "}"
    wrap = rng.random()
    if wrap < 0.1:
        return f"```json\n{text}\n```"
    if wrap < 0.2:
        return f"Here it is: {text} — done."
    if wrap < 0.25:
        return text.replace("}", ",}", 1)
    if wrap < 0.3:
        return text[: len(text) * 2 // 3]  # cut short
    if wrap < 0.33:
        return f"Here: {text.replace('}', ',}', 1)} ok"
    return text


def test_generated_documents_match_reference(result_path: str) -> None:
    """Hundreds of generated documents (nesting, escapes, repeated keys, wrappers): DuckDB's reading or the fallback
    gives exactly the reference's kind and JSON text for every path."""
    rng = random.Random(7)
    texts = [_render(rng, {k: _random_value(rng, 3) for k in rng.sample(KEYS, rng.randint(1, 5))}) for _ in range(600)]
    paths = ["a", "b.c", "items[0]", "items.1.n", "0", "b.0.a", "é", "weird key", "n"]
    fields = [{"path": p, "match": "fuzzy"} for p in paths]
    specs = [m.FieldSpec(**f) for f in fields]
    frame = pl.DataFrame({"output": texts})
    ok, _, sides = duckpath.extract_sides(frame, ("output",), specs, result_path == "msgspec")["output"]
    assert all(side.text is not None for side in sides)  # fuzzy rules read the text
    _assert_reference_sides(texts, specs, ok, sides)


def test_halves_give_the_results_of_one_pass() -> None:
    """A batch big enough for the engine to score as two halves on two threads gives, row for row, what one pass
    gives."""
    from concurrent.futures import ThreadPoolExecutor

    from vision_eval.batch_part import SPLIT_MIN_ROWS, evaluate_batch
    from vision_eval.evaluator import EvalContext
    from vision_eval.evaluators.field_accuracy import FieldAccuracy, FieldAccuracySettings

    rng = random.Random(5)
    docs = [_render(rng, {k: _random_value(rng, 2) for k in rng.sample(KEYS, rng.randint(1, 4))}) for _ in range(500)]
    rows = 2 * SPLIT_MIN_ROWS + 7
    batch = pl.DataFrame(
        {
            "id": [str(i) for i in range(rows)],
            "output": [docs[i % 500] for i in range(rows)],
            "expected_output": [docs[(i * 7 + 3) % 500] for i in range(rows)],
        }
    )
    fields = [{"path": p, "match": mt} for p in ("a", "b.c", "n", "items[0]") for mt in ("exact", "fuzzy", "date")]
    evaluator = FieldAccuracy("f", FieldAccuracySettings(fields=fields), EvalContext())
    assert evaluator.splittable
    with ThreadPoolExecutor(1) as helper:
        split = evaluate_batch(evaluator, batch, helper)
    whole = evaluate_batch(evaluator, batch)
    assert split.results.equals(whole.results, null_equal=True)
    assert split.fields is not None and whole.fields is not None
    key = ["path", "match", "sample_id"]
    ordered = [f.sort(key, maintain_order=True) for f in (split.fields, whole.fields)]
    assert ordered[0].equals(ordered[1], null_equal=True)
    assert set(whole.results["status"].to_list()) >= {"processed", "error"}


def test_warm_up_builds_ahead_and_starts_duckdb_only_for_paths_msgspec_cannot_read(
    subprocess_env: dict[str, str],
) -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from vision_eval.evaluators.field_accuracy import FieldAccuracy, FieldAccuracySettings\n"
        "from vision_eval.structured import msgpath\n"
        "fields = [{'path': 'a.b'}, {'path': 'd', 'match': 'date', 'formats': ['DD.MM.YYYY']}]\n"
        "fields += [{'path': 'v', 'match': 'fuzzy'}]\n"
        "FieldAccuracy('f', FieldAccuracySettings(fields=fields)).warm_up()\n"
        "loaded = [m in sys.modules for m in ('duckdb', 'msgspec', 'rapidfuzz', '_strptime')]\n"
        "print(loaded, msgpath._reader.cache_info().currsize)\n"
        "FieldAccuracy('g', FieldAccuracySettings(fields=[{'path': 'a[0]'}])).warm_up()\n"
        "print('duckdb' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=subprocess_env, check=True)
    assert out.stdout.split("\n")[:2] == ["[False, True, True, True] 1", "True"], out.stdout + out.stderr
