"""The shared equivalence harness: seeded generators of awkward and hostile inputs, and the check that a fast path's
verdict on every row is its row-wise definition's, byte for byte (``tests/test_equivalence.py`` runs it on every
fast path).

Hostile inputs: digits of other scripts (including ones only newer Unicode tables know), numbers far beyond Int64,
JSON nested thousands deep, whitespace Python and Polars disagree on (``\\x1c``-``\\x1f``), characters the two
lowercase differently (newer Unicode) or fold to ASCII letters (``\u212a`` Kelvin, ``ſ``, ``İ``, ``ı``), final sigma.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterable
from typing import Any

import polars as pl

from vision_eval.rowwise import RowResult

SCHEMA = {"output": pl.Utf8, "expected_output": pl.Utf8}
DIGIT_ZEROS = ["٠", "۰", "०", "০", "０", "\U0001d7ce", "๐", "\U00011f50", "\U0001e4f0", "\U00010d40", "\U00016ac0"]
"""Zero of Arabic-Indic, Extended Arabic-Indic, Devanagari, Bengali, fullwidth, mathematical bold, Thai, Kawi and Nag
Mundari (Unicode 15), Garay and Kirat Rai (Unicode 16: digits only Polars' newer tables may know)."""
ODD_SPACES = ["\t", "\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f", "\x85", "\xa0", "\u2003", "\u2028"]
ODD_SPACES += ["\u3000", "\u200b", "\ufeff"]
ODD_LETTERS = [
    "\u212a",
    "ſ",
    "İ",
    "ı",
    "ß",
    "ﬁ",
    "Σ",
    "ΑΣ ",
    "ς",
    "\ua7cb",
    "\u0264",
    "\u1c89",
    "\u1c8a",
    "\U00010d50",
    "\U00010d70",
]
ODD_LETTERS += ["é", "É", "\x00"]
"""Letters the engines disagree on: Kelvin sign and long s (fold to k, s), dotted and dotless I, ligatures, sigma,
letters only newer Unicode lowercases (U+A7CB, U+1C89, Garay)."""


def frame(pairs: Iterable[tuple[str | None, str | None]]) -> pl.DataFrame:
    pairs = list(pairs)
    return pl.DataFrame({"output": [p[0] for p in pairs], "expected_output": [p[1] for p in pairs]}, schema=SCHEMA)


def verdicts(results: pl.DataFrame) -> list[tuple[Any, ...]]:
    """(status, score, details, error[, passed]) of every row."""
    columns = [c for c in ("status", "score", "details", "error", "passed") if c in results.columns]
    return list(results.select(columns).iter_rows())


def assert_same_verdicts(fast: pl.DataFrame, definition: list[RowResult], inputs: list[Any]) -> None:
    """Every row's verdict from the fast path is the definition's: status, score (exactly), details (byte for byte),
    error (and ``passed`` where the fast path sets it)."""
    assert fast.height == len(definition) == len(inputs)
    passed = "passed" in fast.columns
    for row, want, given in zip(verdicts(fast), definition, inputs, strict=True):
        expected = (want.status, want.score, want.details, want.error) + ((want.passed,) if passed else ())
        assert row == expected, f"input {given!r}:\nfast path  {row}\ndefinition {expected}"


def other_script(text: str | None, rng: random.Random, share: float = 0.7) -> str | None:
    """``text`` with some ASCII digits written in other scripts."""
    if text is None:
        return None
    return "".join(
        chr(ord(rng.choice(DIGIT_ZEROS)) + int(c)) if c in "0123456789" and rng.random() < share else c for c in text
    )


def sprinkled(text: str | None, rng: random.Random, pool: list[str], share: float = 0.08) -> str | None:
    """``text`` with characters of ``pool`` inserted or replacing spaces here and there."""
    if text is None:
        return None
    out = []
    for c in text:
        if rng.random() < share:
            out.append(rng.choice(pool) if c != " " or rng.random() < 0.5 else c + rng.choice(pool))
        else:
            out.append(c)
    return "".join(out)


def hostile(text: str | None, rng: random.Random) -> str | None:
    """``text`` made awkward one way or another (or left as it is)."""
    roll = rng.random()
    if roll < 0.15:
        return other_script(text, rng)
    if roll < 0.3:
        return sprinkled(text, rng, ODD_SPACES)
    if roll < 0.4:
        return sprinkled(text, rng, ODD_LETTERS)
    if roll < 0.45 and text:
        return text.upper()
    return text


def shared_rows(pairs: list[tuple[Any, ...]], rng: random.Random) -> list[tuple[Any, ...]]:
    """The pairs with repeats: the fast paths read equal texts and score equal rows once."""
    return pairs + [rng.choice(pairs) for _ in range(len(pairs) // 4)]


# count -----------------------------------------------------------------------------------------------------------

COUNT_PIECES = [
    "5", "12", "0", "100", "007", "five", "Five", "twenty-one", "twenty one", "ninety", "a dozen", "half a dozen",
    "dozen", "a pair of", "couple of", "a single", "an", "a", "no", "none", "zero", "fivefold", "ones", "someone",
    "circles", "circle", "boxes", "berries", "toys", "people", "mice", "glasses", "bus", "buses", "gases", "leaves",
    "fish", "cats", "Cats", "dogs'", "x-ray", "o'clock", "red", "big", "blue", "and", "AND", "with", "the",
    "there are", "I see", "I count", "total", "of", "in the image", "approximately", "circles: 3", "cats = 2",
    "boxes:7", "scene 12:", "three: 4", "10:30", "x-ray = 2", "dogs' : 2",
    "é", "naïve", "?", "!", "(", ")", '"', "/", "=", ":", ";", ".", ",", "-", "'", "\n", "\t", "\xa0",
]  # fmt: skip
COUNT_NUMBERS = ["1", "2", "3", "5", "12", "0", "two", "three", "five", "a dozen", "twenty-one", "no", "a", "an"]
COUNT_NOUNS = ["circles", "circle", "boxes", "berries", "people", "mice", "glasses", "bus", "fish", "cats", "toys"]


def count_text(rng: random.Random) -> str | None:
    roll = rng.random()
    if roll < 0.04:
        return None
    if roll < 0.08:
        return rng.choice(["", " ", "7", "12 ", "none"])
    seps = [" ", " ", " ", ", ", "; ", "\n", "", " and "]
    return "".join(rng.choice(COUNT_PIECES) + rng.choice(seps) for _ in range(rng.randint(0, 9)))


def count_mentions(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(1, 4)):
        adjective = rng.choice(["", "", "red ", "big blue ", "small red round "])
        if rng.random() < 0.15:
            parts.append(f"{rng.choice(COUNT_NOUNS)}{rng.choice([': ', ' = ', ':'])}{rng.choice(COUNT_NUMBERS[:6])}")
        else:
            parts.append(f"{rng.choice(COUNT_NUMBERS)} {adjective}{rng.choice(COUNT_NOUNS)}")
    opening = rng.choice(["", "I count ", "There are ", "The image shows "])
    return opening + rng.choice([", ", " and ", "; "]).join(parts)


def count_pair(rng: random.Random) -> tuple[str | None, str | None]:
    """An (output, expected) pair: random pieces, equal texts, bare expected numbers, near misses."""
    roll = rng.random()
    if roll < 0.3:
        return count_text(rng), count_text(rng)
    expected = count_mentions(rng)
    if rng.random() < 0.3:  # an adjective that is also an expected object: the first such word keys a mention
        expected = rng.choice(["2 red, ", "3 big and ", "1 blue; "]) + expected + rng.choice(["", ", 5 round"])
    if roll < 0.4:
        return expected, expected
    if roll < 0.5:
        return count_mentions(rng), rng.choice(["7", "3", "0", "12"])
    output = expected.replace(rng.choice("0123456789"), rng.choice(["4", "five", "one", ""]))
    if rng.random() < 0.3:
        output += rng.choice([". Also 2 cats.", " with 3 more circles", " plus a dog", "!"])
    return output, expected if rng.random() < 0.8 else count_mentions(rng)


def huge_numbers(text: str | None, rng: random.Random) -> str | None:
    """Some numbers of ``text`` made 16 to 30 digits long (or, rarely, longer than a count may be)."""
    if text is None:
        return None
    roll = rng.random()
    if roll < 0.02:
        return text + " " + "9" * rng.choice([4301, 5000])
    return "".join(c + "0" * rng.randint(14, 28) if c.isdigit() and rng.random() < 0.3 else c for c in text)


def count_pairs(n: int, seed: int) -> list[tuple[str | None, str | None]]:
    """Count pairs, some made hostile (other scripts, odd spaces and letters, huge numbers)."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        output, expected = count_pair(rng)
        roll = rng.random()
        if roll < 0.3:
            output, expected = hostile(output, rng), hostile(expected, rng)
        elif roll < 0.36:
            output, expected = huge_numbers(output, rng), huge_numbers(expected, rng)
        pairs.append((output, expected))
    return shared_rows(pairs, rng)


# ocr -------------------------------------------------------------------------------------------------------------

OCR_ALPHABET = [*"abcXYZ  01é", ".", ",", "!", "?", "'", '"', "-", "“", "”", "…", "—", *ODD_SPACES, *ODD_LETTERS]


def ocr_text(rng: random.Random, n: int = 14) -> str | None:
    if rng.random() < 0.05:
        return None
    return "".join(rng.choice(OCR_ALPHABET) for _ in range(rng.randint(0, n)))


def ocr_keywords(rng: random.Random) -> list[str | None] | None:
    if rng.random() < 0.1:
        return None
    pool = ["abc", "ABC", "x y", "", "  ", "!!!", "é", "z", None, "a-b", "c.", "xyz0", "\x1f", "ΑΣ", "\ua7cb", "\u212a"]
    return [rng.choice(pool) for _ in range(rng.randint(0, 4))]


def ocr_rows(n: int, seed: int) -> list[tuple[str | None, str | None, list[str | None] | None]]:
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        out = ocr_text(rng)
        expected = out if rng.random() < 0.2 else ocr_text(rng)
        if out is not None and rng.random() < 0.2:
            out = out.upper()
        rows.append((out, expected, ocr_keywords(rng)))
    return shared_rows(rows, rng)


# chart -----------------------------------------------------------------------------------------------------------

CHART_PIECES = [
    "$2.4M", "2.4 million", "€300K", "1,250", "USD 5", "usd5", "58%", "58 percent", "-3.5 pct", "+2 per cent",
    "Q4 2025", "Q1'25", "q2 fy24", "Q3", "2025-03-01", "March 5th, 2025", "Jan 2024", "sept. 2025", "1.", "2025",
    "0", "$0", "$0.0M", "7", "£1,000,000.50", "3 dollars", "12 eur", "5 bn", "4mm", "2.6 M", "$2.5 billion euros",
    "revenue", "up", "¥12", "1,2345", "$1.2M.", "Q5 2025", "2.4m", "300k", "$2,400,000", "$0.00005", "0.00001 usd",
    "$" + "9" * 400, "1e5 dollars", "MİLLİON", "$5 mıllion", "3 \u212a", "5 thouſand", "Dec\x1c2024", "Q1\x1f2024",
    "5\u2003%", "Apr\u3000 3rd,\u20282025",
]  # fmt: skip


def chart_text(rng: random.Random) -> str | None:
    if rng.random() < 0.04:
        return None
    seps = ["; ", ", ", "\n", " and ", " ", ": ", "\x1d", "\xa0"]
    return "".join(rng.choice(CHART_PIECES) + rng.choice(seps) for _ in range(rng.randint(0, 6)))


def chart_numbers(rng: random.Random) -> str | None:
    """Chart text with many distinct values (fresh numbers), unlike the fixed pieces."""
    pieces = [
        f"${rng.randint(1, 400) / 10}M",
        f"{rng.randint(1, 99)}.{rng.randint(0, 9)}%",
        f"€{rng.randint(1, 999)},{rng.randint(100, 999)}",
        f"Q{rng.randint(1, 4)} 20{rng.randint(10, 30)}",
        f"{rng.choice(['Jan', 'March', 'Oct.'])} {rng.randint(1, 28)}, 20{rng.randint(10, 30)}",
        f"{rng.randint(1, 9)}. item",
        f"${rng.randint(1, 10**6) / 100}M",
        f"{rng.randint(1, 10**6)} dollars",
    ]
    return " and ".join(rng.sample(pieces, rng.randint(0, len(pieces))))


def chart_pairs(n: int, seed: int) -> list[tuple[str | None, str | None]]:
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        text = chart_text if rng.random() < 0.6 else chart_numbers
        expected = text(rng)
        output = expected if rng.random() < 0.15 else text(rng)
        if rng.random() < 0.3:
            output, expected = hostile(output, rng), hostile(expected, rng)
        pairs.append((output, expected))
    return shared_rows(pairs, rng)


# json ------------------------------------------------------------------------------------------------------------


def json_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.choice(["obj", "obj", "list", "num", "str", "bool", "null"] if depth < 3 else ["num", "str", "bool"])
    if kind == "obj":
        keys = rng.sample(["a", "b", "total", "name", "items", "x.y", "ü", "k]", "q\x01"], rng.randint(0, 4))
        return {k: json_value(rng, depth + 1) for k in keys}
    if kind == "list":
        if rng.random() < 0.5:
            return [{"d": rng.choice(["w", "W "]), "q": rng.randint(0, 3)} for _ in range(rng.randint(0, 3))]
        return [json_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if kind == "num":
        return rng.choice([0, 1, 2.5, -3, 10**20, 960, 960.0, 1e-3, 1e-7, 1e16, 2**70, -0.0])
    if kind == "str":
        return rng.choice(["Acme", "acme ", "ACME  Corp", "", "2024-01-05", 'q"uote', "é\\n", "a\x1cb", "ΑΣ", "\u212a"])
    return None if kind == "null" else rng.random() < 0.5


def json_mutated(rng: random.Random, value: Any) -> Any:
    if isinstance(value, dict):
        out = {k: json_mutated(rng, v) for k, v in value.items() if rng.random() > 0.15}
        if rng.random() < 0.2:
            out["extra"] = 1
        return out
    if isinstance(value, list):
        out = [json_mutated(rng, v) for v in value if rng.random() > 0.15]
        return [*out, {"d": "w"}] if rng.random() < 0.15 else out[::-1]
    roll = rng.random()
    if roll < 0.1:
        return "text"
    if roll < 0.2 and isinstance(value, int | float) and not isinstance(value, bool):
        return value * 1.005
    return value


def deep(depth: int, leaf: str = "1", kind: str = "[") -> str:
    if kind == "[":
        return "[" * depth + leaf + "]" * depth
    return '{"a": ' * depth + leaf + "}" * depth


JSON_ODD = [
    '{"a": NaN}', '{"a": 1e400}', '{"a": "\\ud800"}', "[1, 2,]", "no json at all", "  ", '{"a": ' + "7" * 5000 + "}",
    deep(5000), deep(65), deep(64, kind="{"), '{"a": 1, "a": 2}', "\x1c{}\x1c", '{"a": Infinity}', '{"a": -inf}',
]  # fmt: skip


def json_response(rng: random.Random, value: Any) -> str | None:
    text = json.dumps(value, indent=rng.choice([None, 2]), ensure_ascii=rng.random() < 0.5)
    roll = rng.random()
    if roll < 0.05:
        return None
    if roll < 0.1:
        return text[: len(text) // 2]  # truncated
    if roll < 0.15:
        return rng.choice(JSON_ODD)
    if roll < 0.35:
        return f"Here you go:\n```{rng.choice(['json', 'JSON', ''])}{rng.choice(ODD_SPACES)}{text}\n```\nDone."
    if roll < 0.5:
        return f"The answer is {text} as requested."
    return text


def json_pairs(n: int, seed: int) -> list[tuple[str | None, str | None]]:
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        want = json_value(rng)
        roll = rng.random()
        expected = json.dumps(want) if roll > 0.06 else rng.choice([None, "", "{not json", deep(70), "[" + "1" * 5000])
        got = want if rng.random() < 0.2 else json_mutated(rng, want)
        pairs.append((json_response(rng, got), expected))
    return shared_rows(pairs, rng)


JSON_STRINGS = [
    *["Acme", "acme ", "ACME  Corp", "", "2024-01-05", 'q"uote', "back\\slash", "é café", "ÉCOLE", "line\nbreak"],
    *["tab\there", "😀", "İstanbul", "ß", "a  b", " A B ", "x:y", "Widgets", "widgets", "\u2028", "\x7f"],
]
JSON_NUMBERS = [0, 1, 2.5, -3, 960, 960.0, 1e-3, 0.1, 0.30000000000000004, 100, 100.5, 101, 99.5, -0.0, 12345678, 1e16]
JSON_NUMBERS += [2.5e-7, 10**20, 7]


def json_scalar(rng: random.Random) -> Any:
    roll = rng.random()
    if roll < 0.45:
        return rng.choice(JSON_STRINGS)
    if roll < 0.85:
        return rng.choice(JSON_NUMBERS)
    return rng.choice([True, False, None])


def json_template(rng: random.Random, kind: int) -> Any:
    """Expected values of a few shapes (rows of one shape are compared as a group)."""
    s = lambda: json_scalar(rng)  # noqa: E731
    if kind == 0:
        return {
            "invoice_number": f"INV-{rng.randint(1, 99)}",
            "vendor": rng.choice(JSON_STRINGS),
            "total": rng.choice(JSON_NUMBERS),
            "paid": rng.random() < 0.5,
            "note": None,
            "line_items": [
                {
                    "description": rng.choice(JSON_STRINGS[:6]),
                    "quantity": rng.randint(1, 3),
                    "amount": rng.choice(JSON_NUMBERS),
                }
                for _ in range(2)
            ],
        }
    if kind == 1:
        return [{"label": rng.choice(["cat", "Cat", "dog", "bird"]), "count": rng.randint(0, 3)} for _ in range(3)]
    if kind == 2:
        return {"a": {"b": {"c": s(), "d": s()}, "e": [s(), s(), s()]}, "f": s()}
    if kind == 3:
        return {"x": {}, "y": [], "z": s(), "x.y": s(), "ü": s(), "it's": s(), "a/b~c": s(), 'q"k': s()}
    if kind == 4:
        return [s(), s(), {"k": s()}, {"k": s(), "m": {"n": s()}}]
    if kind == 5:
        return {f"k{i}": s() for i in range(23)}
    return {"rows": [[s(), s()], [s()]], "n": s()}  # arrays inside array items: row-wise


def json_shape_mutated(rng: random.Random, value: Any, depth: int = 0) -> Any:
    if isinstance(value, dict):
        out = {k: json_shape_mutated(rng, v, depth + 1) for k, v in value.items() if rng.random() > 0.08}
        if rng.random() < 0.08:
            out[rng.choice(["extra", "note2", "ü2", "k]"])] = json_scalar(rng)
        if rng.random() < 0.1:
            out = dict(reversed(list(out.items())))
        return out
    if isinstance(value, list):
        out = [json_shape_mutated(rng, v, depth + 1) for v in value]
        roll = rng.random()
        if roll < 0.35:
            rng.shuffle(out)
        elif roll < 0.42:
            out = out[:-1]
        elif roll < 0.48:
            out = [*out, json_scalar(rng)]
        return out
    roll = rng.random()
    if roll < 0.06:
        return json_scalar(rng)  # another value, maybe of another type
    if isinstance(value, str) and roll < 0.2:
        return rng.choice([value.upper(), value.lower(), f"  {value} ", value.replace(" ", "   ")])
    if isinstance(value, int | float) and not isinstance(value, bool) and roll < 0.3:
        return rng.choice([value * 1.005, value + 1, float(value), value * 1.02])
    return value


def json_text(rng: random.Random, value: Any) -> str:
    text = json.dumps(value, indent=rng.choice([None, None, 2]), ensure_ascii=rng.random() < 0.3)
    roll = rng.random()
    if roll < 0.03:
        text = text.replace("}", ",}", 1)  # trailing comma
    elif roll < 0.05 and text.startswith("{") and len(text) > 2:
        text = '{"invoice_number": "dup", ' + text[1:]  # a repeated key (json.loads keeps the last)
    elif roll < 0.06:
        text = text.replace("1", "NaN", 1)
    elif roll < 0.07:
        text = text[: len(text) // 2]
    return text


def json_shaped_response(rng: random.Random, value: Any) -> str | None:
    text = json_text(rng, value)
    roll = rng.random()
    if roll < 0.02:
        return None
    if roll < 0.04:
        return rng.choice(["", "   ", "no json at all", "{}", "[]", '{"a": 1e400}', '{"a": "\\ud800"}'])
    if roll < 0.3:
        return f"Here you go:\n```json\n{text}\n```\nDone."
    if roll < 0.4:
        return f"The answer is {text} as requested."
    return text


def json_shaped_pairs(n: int, seed: int) -> list[tuple[str | None, str | None]]:
    """Responses to expected documents of a few shapes (rows of one shape are compared column-wise as a group)."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        kind = rng.randrange(7)
        want = json_template(rng, kind)
        got = want if rng.random() < 0.15 else json_shape_mutated(rng, want)
        # One spelling per shape (indent, escapes), so rows of a shape share their expected_output's layout.
        pairs.append((json_shaped_response(rng, got), json.dumps(want, ensure_ascii=kind % 2 == 0)))
    return pairs


def by_rows(definition: Callable[..., RowResult], rows: list[tuple[Any, ...]]) -> list[RowResult]:
    return [definition(*row) for row in rows]
