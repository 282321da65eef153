"""Values of structured outputs: dot paths, JSON extraction, numbers and fuzzy similarity.

The parsing rules :mod:`matching` compares with; dates live in :mod:`dates`. Each function is called for every
field of every row: patterns are compiled once, and the common case (a plain JSON value, a plain number) takes
the shortest way.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache
from json.encoder import encode_basestring  # the C quoting json.dumps uses
from typing import Any


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
"""A path that does not resolve (distinct from JSON ``null``)."""

# ---------------------------------------------------------------- paths and JSON extraction

_STEP = re.compile(r"([^.\[\]]+)|\[(\d+)\]|\.")


@lru_cache(maxsize=1024)
def parse_path(path: str) -> tuple[str | int, ...]:
    """Steps of a dot path: keys (``str``) and indexes (``int``). ``a[0].b`` and ``a.0.b`` both give
    ``("a", 0, "b")``; a numeric dot segment indexes a list (and is the key ``"0"`` of an object)."""
    if not path or path.startswith(".") or path.endswith(".") or ".." in path:
        raise ValueError(f"invalid field path {path!r}")
    steps: list[str | int] = []
    pos = 0
    while pos < len(path):
        m = _STEP.match(path, pos)
        if m is None or m.end() == pos:
            raise ValueError(f"invalid field path {path!r} at position {pos}")
        if m.group(1) is not None:
            text = m.group(1)
            steps.append(int(text) if text.isdigit() else text)
        elif m.group(2) is not None:
            steps.append(int(m.group(2)))
        pos = m.end()
    if not steps:
        raise ValueError(f"invalid field path {path!r}")
    return tuple(steps)


def resolve(value: Any, steps: tuple[str | int, ...]) -> Any:
    """The value at ``steps`` or :data:`MISSING`."""
    for step in steps:
        if isinstance(value, dict):
            key = str(step)
            if key not in value:
                return MISSING
            value = value[key]
        elif isinstance(value, list) and isinstance(step, int):
            if step >= len(value):
                return MISSING
            value = value[step]
        else:
            return MISSING
    return value


FENCE = r"```[A-Za-z]*[ \t]*\n?(?s:(.*?))```"
_FENCE_OPEN = re.compile(r"```[A-Za-z]*[ \t]*\n?")

MAX_DEPTH = 100
"""Deepest nesting of a JSON document that is read (deeper documents are refused with :data:`TOO_DEEP`)."""
TOO_DEEP = f"JSON nested deeper than {MAX_DEPTH} levels"
NOT_JSON_TEXT = "not JSON"
_LONG_INT = 4000
"""Integers with more digits are built through ``Decimal`` (``int()`` refuses more than 4300 digits)."""
_STRUCTURE = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _int(text: str) -> int:
    return int(text) if len(text) <= _LONG_INT else int(Decimal(text))


def loads(text: str) -> Any:
    """``json.loads`` that reads integers of any length exactly."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except ValueError:  # an integer beyond int()'s digit limit
        return json.loads(text, parse_int=_int)


def _raw_decode(text: str, start: int) -> Any:
    try:
        return json.JSONDecoder().raw_decode(text, start)[0]
    except json.JSONDecodeError:
        raise
    except ValueError:
        return json.JSONDecoder(parse_int=_int).raw_decode(text, start)[0]


def nesting_depth(text: str) -> int:
    """The deepest ``[``/``{`` nesting in ``text``, brackets inside JSON strings not counted."""
    depth = deepest = 0
    for match in _STRUCTURE.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif token in "]}":
            depth = max(0, depth - 1)
    return deepest


def too_deep(text: str) -> bool:
    """Whether ``text`` nests brackets deeper than :data:`MAX_DEPTH` (counted only when it has that many)."""
    return text.count("{") + text.count("[") > MAX_DEPTH and nesting_depth(text) > MAX_DEPTH


_SCAN = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # set in __init__, not in the stubs
"""The C scanner ``json.loads`` runs: on a stripped text (no JSON whitespace around it), ``json.loads(text)``
succeeds exactly when it reads a value that ends where the text ends, and returns that value."""


def _whole(text: str) -> tuple[bool, Any]:
    """``text`` (stripped) as one JSON document; a JSON string holding an object or array (double-encoded) is
    decoded once more."""
    try:
        value, end = _SCAN(text, 0)
    except StopIteration:  # no JSON value at the start
        return False, None
    except json.JSONDecodeError:
        return False, None
    except ValueError:  # an integer beyond int()'s digit limit: read as json.loads would
        try:
            value, end = loads(text), len(text)
        except ValueError:
            return False, None
    if end != len(text):
        return False, None
    if isinstance(value, str) and value.strip()[:1] in ("{", "["):
        try:
            return True, loads(value)
        except ValueError:
            pass
    return True, value


def read_json(text: str | None) -> tuple[bool, Any, str | None]:
    """``(ok, value, problem)`` for the JSON in ``text``, by the first rule that applies:

    1. the whole text (spaces stripped) is a JSON document;
    2. a fenced block (```` ```json ... ``` ````): its content up to the first closing fence that leaves a JSON
       document (a ```` ``` ```` inside a string value does not end the block);
    3. an object wrapped in prose: the JSON object that starts at the first ``{`` (text after it ignored).

    A JSON string that holds an object or array (double-encoded) is decoded once more. Otherwise ``problem`` is
    ``"not JSON"``, or :data:`TOO_DEEP` for text nested deeper than :data:`MAX_DEPTH` levels. An invalid object
    never yields one of its inner objects."""
    if text is None:
        return False, None, NOT_JSON_TEXT
    if text.count("{") + text.count("[") > MAX_DEPTH and nesting_depth(text) > MAX_DEPTH:  # too_deep, inlined
        return False, None, TOO_DEEP
    ok, value = _whole(text.strip())
    if ok:
        return True, value, None
    opening = _FENCE_OPEN.search(text)
    if opening is not None:
        close = text.find("```", opening.end())
        while close >= 0:
            ok, value = _whole(text[opening.end() : close].strip())
            if ok:
                return True, value, None
            close = text.find("```", close + 3)
    start = text.find("{")
    if start >= 0:
        try:
            return True, _raw_decode(text, start), None
        except ValueError:
            pass
    return False, None, NOT_JSON_TEXT


def extract_json(text: str | None) -> tuple[bool, Any]:
    """``(True, value)`` for the JSON in ``text`` (the rules of :func:`read_json`), else ``(False, None)``."""
    ok, value, _ = read_json(text)
    return ok, value


_KINDS: dict[type, str] = {
    str: "string",
    int: "number",
    float: "number",
    bool: "bool",
    type(None): "null",
    dict: "object",
    list: "array",
}


def kind(value: Any) -> str:
    """``missing``, ``null``, ``bool``, ``number``, ``string``, ``object`` or ``array``."""
    known = _KINDS.get(type(value))
    if known is not None:
        return known
    if value is MISSING:
        return "missing"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "object" if isinstance(value, dict) else "array"


_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
"""``json.dumps(value, ensure_ascii=False, separators=(",", ":"))`` without building an encoder per call."""
_FLOAT_TEXT = {math.inf: "Infinity", -math.inf: "-Infinity"}


def to_json(value: Any) -> str | None:
    """Compact JSON text of a value (``None`` for :data:`MISSING`); integers of any length are written in full.

    Scalars are written as ``json.dumps`` writes them, without its per-call set-up."""
    kind = type(value)
    if kind is str:
        return encode_basestring(value)
    if kind is float:
        if value != value:
            return "NaN"
        return _FLOAT_TEXT.get(value) or float.__repr__(value)
    if kind is int and -_SHORT_INT < value < _SHORT_INT:
        return int.__repr__(value)
    if value is None:
        return "null"
    if kind is bool:
        return "true" if value else "false"
    if value is MISSING:
        return None
    try:
        return _COMPACT.encode(value)
    except ValueError:  # an integer beyond str()'s digit limit
        text = _COMPACT.encode(_long_ints_marked(value))
        return text.replace(f'"{_MARK}', "").replace(f'{_MARK}"', "")


_SHORT_INT = 10**4000
"""Integers below this magnitude are written by ``int.__repr__`` (its limit is 4,300 digits)."""


_MARK = "\\u0000long-int\\u0000"
"""How ``json.dumps`` writes the marker around a long integer's digits."""
_LONG_INT_MIN = 10**_LONG_INT


def _long_ints_marked(value: Any) -> Any:
    """``value`` with long integers replaced by marked digit strings (the marks and quotes are removed after
    encoding)."""
    if isinstance(value, dict):
        return {k: _long_ints_marked(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_long_ints_marked(v) for v in value]
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= _LONG_INT_MIN:
        return f"\x00long-int\x00{Decimal(value)}\x00long-int\x00"
    return value


def fmt(x: float | Fraction) -> str:
    """A number as reasons print it (same text as Polars' ``round(6).cast(String)``); an exact value beyond the
    float range in scientific notation with 7 significant digits."""
    if x == 0:
        return "0.0"
    try:
        r = round(float(x), 6)
    except OverflowError:
        exact = Fraction(x)
        return f"{Decimal(exact.numerator) / Decimal(exact.denominator):.6e}"
    if math.isnan(r):
        return "NaN"
    if r == 0:
        return "0.0"
    text = float.__repr__(r)
    if "e" in text and abs(r) < 1e15:
        text = f"{r:.6f}".rstrip("0")
        text = text + "0" if text.endswith(".") else text
    return text


# ---------------------------------------------------------------- numbers

CURRENCY = r"[$€£¥₹₩₽¢]"
ISO_PREFIX = r"^[A-Z]{3}\s*"
ISO_SUFFIX = r"\s*[A-Z]{3}$"
NUMBER = r"^[+-]?(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$"
PARENS = r"^\((.*)\)$"
_NUMBER_RE = re.compile(NUMBER)
_CURRENCY_RE, _ISO_PREFIX_RE, _ISO_SUFFIX_RE = re.compile(CURRENCY), re.compile(ISO_PREFIX), re.compile(ISO_SUFFIX)
_PARENS_RE, _SEPARATORS_RE = re.compile(PARENS), re.compile(r"[\s,]")


INTEGER = r"^[+-]?[0-9]+$"
_INTEGER_RE = re.compile(INTEGER)


class _AsciiDigits(dict[int, int]):
    """``str.translate`` table: every Unicode decimal digit to its ASCII digit (filled on first use)."""

    def __missing__(self, code: int) -> int:
        digit = unicodedata.decimal(chr(code), None)
        self[code] = out = code if digit is None else ord("0") + digit
        return out


_ASCII_DIGITS = _AsciiDigits()


def clean_number(text: str) -> str | None:
    """A numeric string without currency signs, ISO codes, thousands separators and spaces, or ``None``. Digits
    of any script (``"١٢٣"``) read as digits."""
    if text.isascii():
        text = text.strip()
        if _NUMBER_RE.match(text):  # a plain number: none of the steps below would change it
            return text
    else:
        text = text.translate(_ASCII_DIGITS).strip()
    negative = _PARENS_RE.match(text)
    if negative:
        text = "-" + negative.group(1)
    text = _ISO_SUFFIX_RE.sub("", _ISO_PREFIX_RE.sub("", text))
    text = _SEPARATORS_RE.sub("", _CURRENCY_RE.sub("", text))
    text = text.replace("--", "")
    return text if _NUMBER_RE.match(text) else None


Number = int | float
"""A number as compared: JSON integers (and integer strings) exactly as ``int``, everything else as ``float``."""


def as_number(value: Any) -> Number | None:
    """A JSON number or numeric string ("$1,500.00", "(20)", "1 500 EUR") as a number; else ``None``. Integers stay
    exact (``int``) whatever their length."""
    kind = type(value)
    if kind is int or kind is float:
        return value  # type: ignore[no-any-return]
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return value
    if isinstance(value, str):
        cleaned = clean_number(value)
        if cleaned is None:
            return None
        return _int(cleaned) if _INTEGER_RE.match(cleaned) else float(cleaned)
    return None


SLACK = 1e-9
"""Tolerance bounds are inclusive and forgive float rounding: ``diff <= tol + SLACK * max(1, tol)``."""
EXACT_FLOAT = 2**53
"""Integers up to this magnitude are exact as float64."""
SAFE_MARGIN = 1e-12
"""A float comparison of ``diff`` and the bound is trusted when they differ by more than this share; float rounding
(< 1e-15 relative) cannot flip it. Closer ones are decided with exact fractions."""


def tolerance_compare(got: Number, want: Number, tolerance: float, relative: bool) -> tuple[bool, Any, Any]:
    """``(hit, diff, tol)`` for ``|got - want| <= tol + SLACK * max(1, tol)``, ``tol`` being ``tolerance`` or (with
    ``relative``) ``tolerance * |want|`` (``tolerance`` when ``want`` is 0). Decided exactly: in float64 when that
    cannot differ from exact arithmetic, otherwise with fractions (integers beyond 2**53, values at the bound).
    Infinite and NaN values compare as floats."""
    g_float, w_float = isinstance(got, float), isinstance(want, float)
    finite = (not g_float or math.isfinite(got)) and (not w_float or math.isfinite(want))
    if not finite or (
        (g_float or -EXACT_FLOAT <= got <= EXACT_FLOAT) and (w_float or -EXACT_FLOAT <= want <= EXACT_FLOAT)
    ):
        g, w = as_float(got), as_float(want)
        diff = abs(g - w)
        tol = tolerance * abs(w) if relative and w != 0 else tolerance
        bound = tol + SLACK * (tol if tol > 1.0 else 1.0)
        if not finite or abs(diff - bound) > SAFE_MARGIN * (diff if diff > bound else bound):
            return diff <= bound, diff, tol
    exact_g, exact_w = Fraction(got), Fraction(want)
    exact_diff = abs(exact_g - exact_w)
    exact_tol = Fraction(tolerance) * abs(exact_w) if relative and exact_w != 0 else Fraction(tolerance)
    return exact_diff <= exact_tol + Fraction(SLACK) * max(Fraction(1), exact_tol), exact_diff, exact_tol


def as_float(value: Any) -> float:
    """A float for a number of any size (beyond the float range: infinite, with its sign)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


# ---------------------------------------------------------------- fuzzy


@lru_cache(maxsize=8)
def scorer(algorithm: str) -> Any:
    """The rapidfuzz scorer for an algorithm and the scale of its result (divide by it for 0..1)."""
    from rapidfuzz import fuzz
    from rapidfuzz.distance import JaroWinkler, Levenshtein

    return {
        "levenshtein": (Levenshtein.normalized_similarity, 1.0),
        "token_sort": (fuzz.token_sort_ratio, 100.0),
        "token_set": (fuzz.token_set_ratio, 100.0),
        "jaro_winkler": (JaroWinkler.normalized_similarity, 1.0),
    }[algorithm]


def normalize_text(text: str) -> str:
    """Lowercase, whitespace collapsed and trimmed (``str.split`` splits on the characters ``\\s`` matches)."""
    return " ".join(text.lower().split())


def similarity(a: str, b: str, algorithm: str, normalize: bool) -> float:
    """Fuzzy similarity in 0..1."""
    if normalize:
        a, b = normalize_text(a), normalize_text(b)
    fn, scale = scorer(algorithm)
    return float(fn(a, b)) / float(scale)
