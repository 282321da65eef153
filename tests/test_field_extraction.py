"""field_accuracy's reading of responses: the JSON it finds in a text (whole, fenced, in prose, double-encoded), the
value at each path, the JSON text shown for it, and hostile documents (repeated keys, NaN, lone surrogates, escaped
keys, trailing commas, numbers of any length), checked against the standard library's ``json``."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from typing import Any

import polars as pl
import pytest

import vision_eval
from vision_eval.evaluators.fields import matching as m
from vision_eval.evaluators.fields.field_row import evaluate_row, row_function
from vision_eval.rowwise import score_rows

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


def _walk(value: Any, path: str) -> Any:
    """The value at a dot path, written independently of ``values.resolve``: a digit step indexes a list, or is a key
    of an object."""
    for step in path.replace("[", ".").replace("]", "").split("."):
        if isinstance(value, dict) and step in value:
            value = value[step]
        elif isinstance(value, list) and step.isdigit() and int(step) < len(value):
            value = value[int(step)]
        else:
            return m.MISSING
    return value


def _shown(value: Any) -> str | None:
    return None if value is m.MISSING else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _plain(text: str) -> Any:
    """The object ``json.loads`` reads in ``text``, or None where the text is not one JSON object (or holds a lone
    surrogate, shown otherwise)."""
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) and "\\ud800" not in text else None


def test_values_at_every_path_are_jsons() -> None:
    """Per plain document and path: the fields row shows the JSON text of the value ``json.loads`` reads there."""
    rows = [
        {"id": f"{i}-{j}", "output": g, "expected_output": w} for i, g in enumerate(DOCS) for j, w in enumerate(WANTS)
    ]
    res = vision_eval.evaluate(rows, evaluators={"f": {"type": "field_accuracy", "fields": FIELDS}})
    assert res.fields is not None
    by_row: dict[str, list[dict[str, Any]]] = {}
    for r in res.fields.to_dicts():
        by_row.setdefault(r["sample_id"], []).append(r)
    checked = 0
    for row in rows:
        got, want = _plain(row["output"]), json.loads(row["expected_output"])
        fields = by_row[row["id"]]
        assert [f["path"] for f in fields] == [f["path"] for f in FIELDS]  # each row's fields, in field order
        for field, shown in zip(FIELDS, fields):
            assert shown["expected"] == _shown(_walk(want, field["path"])), (row, field)
            if got is not None:
                assert shown["actual"] == _shown(_walk(got, field["path"])), (row, field)
                checked += 1
    assert checked > 1000


HOSTILE = [  # (response, the JSON text shown for its "a", or NOT_JSON)
    ('{"a": 1, "a": 2}', "2"),  # the last of repeated keys, as json.loads
    ('{"\\u0061": "escaped first", "a": "literal last"}', '"literal last"'),
    ('{"a": "literal first", "\\u0061": "escaped last"}', '"escaped last"'),
    ('{"a": NaN}', "NaN"),
    ('{"a": Infinity}', "Infinity"),
    ('{"a": -inf}', m.NOT_JSON),
    ('{"a": nan}', m.NOT_JSON),
    ('{"a": 1,}', m.NOT_JSON),  # a trailing comma: not JSON, and no inner object is taken instead
    ('{"a": [1, 2,]}', m.NOT_JSON),
    ('{"a": "p,}q"}', '"p,}q"'),
    ('```json\n{"a": "fenced"}\n```', '"fenced"'),
    ('```\nnot json\n```\n```json\n{"a": "second block"}\n```', '"second block"'),
    ('{"a": "see ``` here"}', '"see ``` here"'),
    ('Sure! Here it is: {"a": "prose"} Hope it helps.', '"prose"'),
    ('prose {"a": "first"} and {"a": "second"}', '"first"'),
    ('"{\\"a\\": \\"double encoded\\"}"', '"double encoded"'),
    ('\x1c{"a": "odd spaces"}\x1c', '"odd spaces"'),
    ('{"a": ' + "7" * 5000 + "}", "7" * 5000),
    ('{"a": 1e400}', "Infinity"),
    ('{"a": -0, "b": -0.0, "c": 1E+2}', "0"),
    ('{"a": "tab\\tand \\u00e9 \\u2028 \\u0000"}', '"tab\\tand é \u2028 \\u0000"'),
    ('{"a": [1, 2', m.NOT_JSON),
    ("not json at all", m.NOT_JSON),
    ("", m.NOT_JSON),
]


@pytest.mark.parametrize(("text", "shown"), HOSTILE)
def test_hostile_responses(text: str, shown: str) -> None:
    verdict = evaluate_row([m.FieldSpec(path="a")], text, '{"a": "x"}', "weighted_average")
    [field] = verdict.fields
    if shown == m.NOT_JSON:
        assert (field.reason, field.actual, verdict.score) == (m.NOT_JSON, None, 0.0)
        assert json.loads(verdict.details or "")["raw"] == text
    else:
        assert field.actual == shown


def test_lone_surrogates_are_shown_as_replacement_characters_and_compared_as_written() -> None:
    """JSON may spell a lone surrogate; UTF-8 columns cannot hold one: it is shown as U+FFFD, while the values are
    compared as written (two different surrogates differ)."""
    fields = [{"path": "a"}, {"path": "b", "match": "fuzzy"}]
    rows = [
        {"id": "same", "output": '{"a": "\\ud800", "b": "x\\ud800"}', "expected_output": '{"a": "\\ud800", "b": "x"}'},
        {"id": "other", "output": '{"a": "\\udc00"}', "expected_output": '{"a": "\\ud800", "b": "\\udfff"}'},
    ]
    res = vision_eval.evaluate(rows, evaluators={"f": {"type": "field_accuracy", "fields": fields}})
    got = {(r["sample_id"], r["path"]): r for r in res.fields.to_dicts()}
    same = got["same", "a"]
    assert (same["hit"], same["actual"], same["reason"]) == (True, '"\ufffd"', "equal")
    assert got["same", "b"]["reason"] == "similarity 0.5 < threshold 0.85"
    assert got["other", "a"]["hit"] is False and got["other", "a"]["reason"] == 'got "\ufffd", expected "\ufffd"'
    assert got["other", "b"]["reason"] == "missing from the response"
    details = json.loads(res.results.filter(pl.col("sample_id") == "other")["details"][0])
    assert details["misses"] == ['a: got "\ufffd", expected "\ufffd"', "b: missing from the response"]


NUMBER_TEXTS = {
    "12": 12, " 12 ": 12, "1e5": 100000.0, "+3": 3, ".5": 0.5, "-0.25": -0.25, "USD 1,500": 1500, "1 500 EUR": 1500,
    "(20)": -20, "--5": 5, "$1,500.00": 1500.0, "abc": None, "1.": None, "inf": None, "NaN": None, "12\u00a0000": 12000,
    "€ 3,5": 35, "": None, "1,2,3": 123, "0x10": None, "1_000": None, "١٢٣": 123, "(١٢)": -12, "9" * 30: int("9" * 30),
}  # fmt: skip


def test_numbers_in_strings() -> None:
    for text, want in NUMBER_TEXTS.items():
        got = m.as_number(text)
        assert got == want and type(got) is type(want), text
    assert [m.as_number(v) for v in (1.5, 2, True, None, [1])] == [1.5, 2, None, None, None]


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


def test_generated_documents() -> None:
    """Hundreds of generated documents (nesting, escapes, repeated keys, wrappers): where ``json.loads`` reads an
    object, each path shows its value; where the text is no JSON at all (cut short, a trailing comma, no fence or
    prose to read), every field misses."""
    rng = random.Random(7)
    texts = [_render(rng, {k: _random_value(rng, 3) for k in rng.sample(KEYS, rng.randint(1, 5))}) for _ in range(600)]
    paths = ["a", "b.c", "items[0]", "items.1.n", "0", "b.0.a", "é", "weird key", "n"]
    specs = [m.FieldSpec(path=p, match="fuzzy", required=False) for p in paths]
    seen = {"plain": 0, "not json": 0}
    for text in texts:
        verdict = evaluate_row(specs, text, "{}", "weighted_average")
        value = _plain(text)
        if value is not None:
            assert [f.actual for f in verdict.fields] == [_shown(_walk(value, p)) for p in paths], text
            seen["plain"] += 1
        elif not m.extract_json(text)[0]:
            assert all(f.reason == m.NOT_JSON for f in verdict.fields), text
            seen["not json"] += 1
    assert min(seen.values()) > 30


def test_a_batch_on_the_process_pool_gives_what_the_run_process_gives() -> None:
    """A batch spread over worker processes (the rule pickled as its settings, prepared again there) gives the
    frames scored in this process, row for row and field for field."""
    rng = random.Random(11)
    texts = [_render(rng, {k: _random_value(rng, 2) for k in rng.sample(KEYS, rng.randint(1, 4))}) for _ in range(400)]
    texts += DOCS
    rows = 3000
    frame = pl.DataFrame(
        {
            "id": [f"r{i}" for i in range(rows)],
            "output": [texts[i % len(texts)] for i in range(rows)],
            "expected_output": [texts[(i * 7 + 3) % len(texts)] for i in range(rows)],
        }
    )
    specs = [m.FieldSpec(**f) for f in FIELDS] + [m.FieldSpec(path="a", match="date", formats=["DD.MM.YYYY"])]
    inputs = frame.select("output", "expected_output")
    function = row_function(specs, "weighted_average")
    alone = score_rows(frame["id"], inputs, function, workers=1)
    pooled = score_rows(frame["id"], inputs, function, workers=2, pool_min_rows=1)
    assert pooled.results.equals(alone.results, null_equal=True)
    assert pooled.fields is not None and alone.fields is not None
    assert pooled.fields.equals(alone.fields, null_equal=True)
    assert set(alone.results["status"].to_list()) == {"processed", "error"}
    assert alone.fields.height > rows


def test_warm_up_prepares_the_fields_and_loads_no_query_engine(subprocess_env: dict[str, str]) -> None:
    code = (
        "import sys\n"
        "from vision_eval.evaluators.fields.field_accuracy import FieldAccuracy, FieldAccuracySettings\n"
        "from vision_eval.evaluators.fields import dates\n"
        "fields = [{'path': 'a.b'}, {'path': 'd', 'match': 'date', 'formats': ['DD.MM.YYYY']}]\n"
        "fields += [{'path': 'v', 'match': 'fuzzy'}, {'path': 'i[0]'}]\n"
        "FieldAccuracy('f', FieldAccuracySettings(fields=fields)).warm_up()\n"
        "loaded = [m in sys.modules for m in ('duckdb', 'msgspec', 'rapidfuzz', 'dateutil.parser')]\n"
        "print(loaded, dates._format_plan.cache_info().currsize)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=subprocess_env, check=True)
    assert out.stdout.split("\n")[:1] == ["[False, False, True, True] 1"], out.stdout + out.stderr
