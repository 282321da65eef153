"""The fast paths of the code validators give the same results as the straightforward implementations they
replaced (frozen in ``tests/reference``), on generated and awkward inputs."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

import polars as pl
import pytest

from tests.reference import chart_reference, count_reference, json_reference, ocr_reference
from vision_eval.validators import chart
from vision_eval.validators import count as count_module
from vision_eval.validators._distinct import codes
from vision_eval.validators.chart import ChartOptions, chart_frame
from vision_eval.validators.count import count_frame
from vision_eval.validators.json_check import JsonOptions, json_frame
from vision_eval.validators.ocr import OcrOptions, ocr_frame

ALPHABET = [
    *"abcXYZ  01é",
    ".",
    ",",
    "!",
    "?",
    "'",
    '"',
    "-",
    "“",
    "”",
    "…",
    "—",
    "\t",
    "\n",
    "\xa0",
    "\u2003",
    "\x0b",
    "\x85",
    "\u2028",
    "\u3000",
]


def _text(rng: random.Random, n: int = 14) -> str | None:
    if rng.random() < 0.05:
        return None
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, n)))


def _same(new: pl.DataFrame, old: pl.DataFrame) -> None:
    assert new.columns == old.columns
    assert {"status", "score", "details", "error"} <= set(new.columns)
    assert new["status"].to_list() == old["status"].to_list()
    assert new["error"].to_list() == old["error"].to_list()
    for a, b in zip(new["score"].to_list(), old["score"].to_list()):
        assert (a is None and b is None) or a == pytest.approx(b, abs=1e-12)
    for a, b in zip(new["details"].to_list(), old["details"].to_list()):
        assert (json.loads(a) if a is not None else None) == (json.loads(b) if b is not None else None)


def _keywords(rng: random.Random) -> list[str | None] | None:
    if rng.random() < 0.1:
        return None
    pool = ["abc", "ABC", "x y", "", "  ", "!!!", "é", "z", None, "a-b", "c.", "xyz0"]
    return [rng.choice(pool) for _ in range(rng.randint(0, 4))]


OCR_OPTIONS = [
    OcrOptions(),
    OcrOptions(case_sensitive=True),
    OcrOptions(strip_punctuation=False),
    OcrOptions(normalize_whitespace=False),
    OcrOptions(case_sensitive=True, strip_punctuation=False, normalize_whitespace=False),
    OcrOptions(scorer="token_set_ratio", similarity_weight=0.0, keyword_weight=0.0),
    OcrOptions(scorer="token_sort_ratio", similarity_weight=2.0, keyword_weight=1.0, keywords=("abc", " ", "é!")),
]


@pytest.mark.parametrize("opts", OCR_OPTIONS)
def test_ocr_matches_reference_on_awkward_text(opts: OcrOptions) -> None:
    rng = random.Random(7)
    rows: dict[str, list[Any]] = {"output": [], "expected_output": [], "keywords": []}
    for _ in range(400):
        out = _text(rng)
        rows["output"].append(out)
        rows["expected_output"].append(out if rng.random() < 0.2 else _text(rng))
        rows["keywords"].append(_keywords(rng))
    frame = pl.DataFrame(rows, schema={"output": pl.Utf8, "expected_output": pl.Utf8, "keywords": pl.List(pl.Utf8)})
    _same(ocr_frame(frame, opts), ocr_reference.ocr_frame(frame, opts))
    text_keywords = frame.with_columns(pl.col("keywords").list.join(","))
    _same(ocr_frame(text_keywords, opts), ocr_reference.ocr_frame(text_keywords, opts))
    no_keywords = frame.drop("keywords")
    _same(ocr_frame(no_keywords, opts), ocr_reference.ocr_frame(no_keywords, opts))


def test_ocr_matches_reference_on_empty_and_single_row_frames() -> None:
    schema = {"output": pl.Utf8, "expected_output": pl.Utf8, "keywords": pl.List(pl.Utf8)}
    for rows in ([], [("", "", [])], [(None, None, None)], [("A b", "a  B!", ["b", "q"])]):
        frame = pl.DataFrame(rows, schema=schema, orient="row")
        _same(ocr_frame(frame, OcrOptions()), ocr_reference.ocr_frame(frame, OcrOptions()))


CHART_PIECES = [
    "$2.4M", "2.4 million", "€300K", "1,250", "USD 5", "usd5", "58%", "58 percent", "-3.5 pct", "+2 per cent",
    "Q4 2025", "Q1'25", "q2 fy24", "Q3", "2025-03-01", "March 5th, 2025", "Jan 2024", "sept. 2025", "1.", "2025",
    "0", "$0", "$0.0M", "7", "£1,000,000.50", "3 dollars", "12 eur", "5 bn", "4mm", "2.6 M", "$2.5 billion euros",
    "revenue", "up", "¥12", "1,2345", "$1.2M.", "Q5 2025", "2.4m", "300k", "$2,400,000",
]  # fmt: skip


def _chart_text(rng: random.Random) -> str | None:
    if rng.random() < 0.04:
        return None
    seps = ["; ", ", ", "\n", " and ", " ", ": "]
    return "".join(rng.choice(CHART_PIECES) + rng.choice(seps) for _ in range(rng.randint(0, 6)))


def _chart_numbers(rng: random.Random) -> str | None:
    """Chart text with many distinct values (fresh numbers), unlike the fixed pieces."""
    pieces = [
        f"${rng.randint(1, 400) / 10}M",
        f"{rng.randint(1, 99)}.{rng.randint(0, 9)}%",
        f"€{rng.randint(1, 999)},{rng.randint(100, 999)}",
        f"Q{rng.randint(1, 4)} 20{rng.randint(10, 30)}",
        f"{rng.choice(['Jan', 'March', 'Oct.'])} {rng.randint(1, 28)}, 20{rng.randint(10, 30)}",
        f"{rng.randint(1, 9)}. item",
    ]
    return " and ".join(rng.sample(pieces, rng.randint(0, len(pieces))))


def _chart_money(rng: random.Random) -> str | None:
    """Chart text whose values are nearly all distinct."""
    values = [
        f"${rng.randint(1, 10**6) / 100}M",
        f"{rng.randint(1, 10**5) / 1000}%",
        f"{rng.randint(1, 10**6)} dollars",
    ]
    return "; ".join(rng.sample(values, rng.randint(1, 3)))


def _respaced(details: list[str | None], opts: ChartOptions) -> list[str | None]:
    """The reference's details with the tolerances spaced as today's (the only byte difference)."""
    tolerances = {"currency": opts.currency_tolerance, "percent": opts.percent_tolerance, "zero": opts.zero_tolerance}
    compact, spaced = json.dumps(tolerances, separators=(",", ":")), json.dumps(tolerances)
    return [d.replace(f'"tolerances":{compact}', f'"tolerances":{spaced}') if d else d for d in details]


@pytest.mark.parametrize(
    "opts",
    [ChartOptions(), ChartOptions(0.0, 0.0, 0.0), ChartOptions(0.5, 1.0, 1e6)],
)
@pytest.mark.parametrize("text", [_chart_text, _chart_numbers, _chart_money])
def test_chart_matches_reference_on_generated_text(
    opts: ChartOptions, text: Callable[..., str | None], monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(11)
    rows = {"output": [], "expected_output": []}
    for _ in range(600):
        expected = text(rng)
        rows["expected_output"].append(expected)
        rows["output"].append(expected if rng.random() < 0.15 else text(rng))
    frame = pl.DataFrame(rows, schema={"output": pl.Utf8, "expected_output": pl.Utf8})
    for layout in (frame, pl.concat([frame, frame]), frame.head(60).sample(1200, with_replacement=True, seed=2)):
        new, old = chart_frame(layout, opts), chart_reference.chart_frame(layout, opts)
        _same(new, old)
        assert new["details"].to_list() == _respaced(old["details"].to_list(), opts)
    assert chart_frame(frame.head(0), opts).height == 0
    whole = chart_frame(frame, opts)
    monkeypatch.setattr(chart, "SLICE_ROWS", 97)  # large frames are scored in slices, with the same results
    sliced = chart_frame(frame, opts)
    assert sliced.schema == whole.schema and sliced.equals(whole, null_equal=True)


COUNT_PIECES = [
    "5", "12", "0", "100", "007", "five", "Five", "twenty-one", "twenty one", "ninety", "a dozen", "half a dozen",
    "dozen", "a pair of", "couple of", "a single", "an", "a", "no", "none", "zero", "fivefold", "ones", "someone",
    "circles", "circle", "boxes", "berries", "toys", "people", "mice", "glasses", "bus", "buses", "gases", "leaves",
    "fish", "cats", "Cats", "dogs'", "x-ray", "o'clock", "red", "big", "blue", "and", "AND", "with", "the",
    "there are", "I see", "I count", "total", "of", "in the image", "approximately", "circles: 3", "cats = 2",
    "boxes:7", "é", "naïve", "?", "!", "(", ")", '"', "/", "=", ":", ";", ".", ",", "-", "'", "\n", "\t", "\xa0",
]  # fmt: skip


def _count_text(rng: random.Random) -> str | None:
    roll = rng.random()
    if roll < 0.04:
        return None
    if roll < 0.08:
        return rng.choice(["", " ", "7", "12 ", "none"])
    seps = [" ", " ", " ", ", ", "; ", "\n", "", " and "]
    return "".join(rng.choice(COUNT_PIECES) + rng.choice(seps) for _ in range(rng.randint(0, 9)))


def _count_mentions(rng: random.Random) -> str:
    numbers = ["1", "2", "3", "5", "12", "0", "two", "three", "five", "a dozen", "twenty-one", "no", "a", "an"]
    nouns = ["circles", "circle", "boxes", "berries", "people", "mice", "glasses", "bus", "fish", "cats", "toys"]
    parts = []
    for _ in range(rng.randint(1, 4)):
        adjective = rng.choice(["", "", "red ", "big blue ", "small red round "])
        if rng.random() < 0.15:
            parts.append(f"{rng.choice(nouns)}{rng.choice([': ', ' = ', ':'])}{rng.choice(numbers[:6])}")
        else:
            parts.append(f"{rng.choice(numbers)} {adjective}{rng.choice(nouns)}")
    opening = rng.choice(["", "I count ", "There are ", "The image shows "])
    return opening + rng.choice([", ", " and ", "; "]).join(parts)


def _count_pair(rng: random.Random) -> tuple[str | None, str | None]:
    roll = rng.random()
    if roll < 0.3:
        return _count_text(rng), _count_text(rng)
    expected = _count_mentions(rng)
    if rng.random() < 0.3:  # an adjective that is also an expected object: the first such word keys a mention
        expected = rng.choice(["2 red, ", "3 big and ", "1 blue; "]) + expected + rng.choice(["", ", 5 round"])
    if roll < 0.4:
        return expected, expected
    if roll < 0.5:
        return _count_mentions(rng), rng.choice(["7", "3", "0", "12"])
    output = expected.replace(rng.choice("0123456789"), rng.choice(["4", "five", "one", ""]))
    if rng.random() < 0.3:
        output += rng.choice([". Also 2 cats.", " with 3 more circles", " plus a dog", "!"])
    return output, expected if rng.random() < 0.8 else _count_mentions(rng)


def _tagged(rng: random.Random, i: int, text: str | None) -> str | None:
    """``text`` made distinct: a tag word in parentheses first, a distinct count last."""
    tag = "".join("qxzj"[(i >> (2 * k)) & 3] for k in range(7))
    return None if text is None else f"(qq{tag}) {text}; {rng.randint(10**6, 10**9)} {rng.choice(['cats', 'boxes'])}"


@pytest.mark.parametrize("layout", ["distinct", "mostly distinct", "each twice", "few distinct", "two halves"])
def test_count_matches_reference_on_generated_text(layout: str) -> None:
    rng = random.Random(3)
    rows: dict[str, list[str | None]] = {"output": [], "expected_output": []}
    for i in range(4000 if layout != "two halves" else 2 * count_module.HALF_MIN_ROWS + 10):
        output, expected = _count_pair(rng)
        if layout in ("distinct", "two halves"):
            output, expected = _tagged(rng, i, output), _tagged(rng, i, expected)
        rows["output"].append(output)
        rows["expected_output"].append(expected)
    frame = pl.DataFrame(rows, schema={"output": pl.Utf8, "expected_output": pl.Utf8})
    # Equal texts and rows are read and scored once: every path of that, and their results in every row.
    if layout == "mostly distinct":
        frame = pl.concat([frame, frame.head(50)])
    elif layout == "each twice":
        frame = pl.concat([frame, frame.sample(fraction=1.0, shuffle=True, seed=1)])
    elif layout == "few distinct":
        frame = frame.head(300).sample(4000, with_replacement=True, seed=1)
    new, old = count_frame(frame), count_reference.count_frame(frame)
    _same(new, old)
    assert new["details"].to_list() == old["details"].to_list()  # byte for byte, not only as JSON
    assert new["score"].to_list() == old["score"].to_list()
    assert new.schema == old.schema
    assert old["score"].is_between(0.01, 0.99).sum() > 30 and old["status"].eq("error").sum() > 5
    assert count_frame(frame.head(0)).height == 0


def _json_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.choice(["obj", "obj", "list", "num", "str", "bool", "null"] if depth < 3 else ["num", "str", "bool"])
    if kind == "obj":
        keys = rng.sample(["a", "b", "total", "name", "items", "x.y", "ü"], rng.randint(0, 4))
        return {k: _json_value(rng, depth + 1) for k in keys}
    if kind == "list":
        if rng.random() < 0.5:
            return [{"d": rng.choice(["w", "W "]), "q": rng.randint(0, 3)} for _ in range(rng.randint(0, 3))]
        return [_json_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if kind == "num":
        return rng.choice([0, 1, 2.5, -3, 10**20, 960, 960.0, 1e-3])
    if kind == "str":
        return rng.choice(["Acme", "acme ", "ACME  Corp", "", "2024-01-05", 'q"uote', "é\\n"])
    return None if kind == "null" else rng.random() < 0.5


def _mutate(rng: random.Random, value: Any) -> Any:
    if isinstance(value, dict):
        out = {k: _mutate(rng, v) for k, v in value.items() if rng.random() > 0.15}
        if rng.random() < 0.2:
            out["extra"] = 1
        return out
    if isinstance(value, list):
        out = [_mutate(rng, v) for v in value if rng.random() > 0.15]
        return [*out, {"d": "w"}] if rng.random() < 0.15 else out[::-1]
    roll = rng.random()
    if roll < 0.1:
        return "text"
    if roll < 0.2 and isinstance(value, int | float) and not isinstance(value, bool):
        return value * 1.005
    return value


def _json_response(rng: random.Random, value: Any) -> str | None:
    text = json.dumps(value, indent=rng.choice([None, 2]), ensure_ascii=rng.random() < 0.5)
    roll = rng.random()
    if roll < 0.05:
        return None
    if roll < 0.1:
        return text[: len(text) // 2]  # truncated
    if roll < 0.13:
        return rng.choice(['{"a": NaN}', '{"a": 1e400}', '{"a": "\\ud800"}', "[1, 2,]", "no json at all", "  "])
    if roll < 0.35:
        return f"Here you go:\n```json\n{text}\n```\nDone."
    if roll < 0.5:
        return f"The answer is {text} as requested."
    return text


JSON_OPTIONS = [
    JsonOptions(),
    JsonOptions(compare_values=False),
    JsonOptions(number_tolerance=0.01, case_sensitive=True),
    JsonOptions(require_valid_schema=False),
    JsonOptions(schema=json.dumps({"type": "object", "required": ["a"], "properties": {"a": {"type": "number"}}})),
]


@pytest.mark.parametrize("opts", JSON_OPTIONS)
def test_json_matches_reference_on_generated_documents(opts: JsonOptions) -> None:
    rng = random.Random(5)
    rows: dict[str, list[Any]] = {"output": [], "expected_output": []}
    for _ in range(500):
        want = _json_value(rng)
        expected = json.dumps(want) if rng.random() > 0.05 else rng.choice([None, "", "{not json"])
        got = want if rng.random() < 0.2 else _mutate(rng, want)
        rows["output"].append(_json_response(rng, got))
        rows["expected_output"].append(expected)
    frame = pl.DataFrame(rows, schema={"output": pl.Utf8, "expected_output": pl.Utf8})
    frame = pl.concat([frame, frame.head(50)])  # repeated rows are scored once and copied
    new, old = json_frame(frame, opts), json_reference.json_frame(frame, opts)
    _same(new, old)
    assert new["passed"].to_list() == old["passed"].to_list()
    assert json_frame(frame.head(0), opts).height == 0
    if opts.schema is not None:  # validation against the configured schema alone
        alone = frame.drop("expected_output")
        _same(json_frame(alone, opts), json_reference.json_frame(alone, opts))


def test_json_required_messages_match_jsonschema() -> None:
    expected = json.dumps({"invoice": "A-1", "it's": 1, "total": 5, "lines": [{"q": 1}]})
    frame = pl.DataFrame(
        {"output": ['{"lines": [{"q": 2}]}', '{"total": 5, "extra": true}'], "expected_output": [expected] * 2}
    )
    new = [json.loads(d) for d in json_frame(frame, JsonOptions())["details"]]
    old = [json.loads(d) for d in json_reference.json_frame(frame, JsonOptions())["details"]]
    assert new == old
    assert new[0]["schema_errors"] == [
        "$: 'invoice' is a required property",
        '$: "it\'s" is a required property',
        "$: 'total' is a required property",
    ]


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
