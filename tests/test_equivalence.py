"""Every fast path gives, on every generated row, the verdict of its row-wise definition (the shared harness in
``tests/equivalence.py``): the benchmark metrics' column functions against their row-wise definitions, and
field_accuracy's extraction engines against ``matching.evaluate_row``. (The code validators have one implementation
each, their row functions: ``tests/test_code_validators.py``.)"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import polars as pl
import pytest

from tests import equivalence as eq
from vision_eval.evaluators import _anls, _counts, _relaxed, _vqa_answers, _yes_no
from vision_eval.rowwise import RowResult


def counted(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[int]:
    """Calls of the definition ``module.name`` from the fast path (the rows it handed over), counted."""
    calls = [0]
    definition = getattr(module, name)

    def counting(*args: Any) -> RowResult:
        calls[0] += 1
        return definition(*args)

    monkeypatch.setattr(module, name, counting)
    return calls


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
