"""Values of structured outputs: dot paths, JSON extraction, numbers, dates and fuzzy similarity.

The parsing rules :mod:`matching` compares with (and :mod:`fastpath` reproduces in Polars).
"""

from __future__ import annotations

import json
import math
import re
from datetime import datetime
from functools import lru_cache
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
_FENCE_RE = re.compile(FENCE)


def extract_json(text: str | None) -> tuple[bool, Any]:
    """``(True, value)`` for the JSON in ``text`` (code fences stripped; an object wrapped in prose taken from its
    first ``{`` to its last ``}``, else the first decodable object), else ``(False, None)``. A JSON string that
    itself holds a JSON object or array (double-encoded) is decoded once more."""
    if text is None:
        return False, None
    fenced = _FENCE_RE.search(text)
    body = fenced.group(1) if fenced else text
    start, end = body.find("{"), body.rfind("}")
    if start >= 0 and end > start:
        try:
            return True, json.loads(body[start : end + 1])
        except ValueError:
            pass
    try:
        value = json.loads(body)
    except ValueError:
        decoder = json.JSONDecoder()
        for pos in [i for i, ch in enumerate(body) if ch == "{"][:50]:
            try:
                return True, decoder.raw_decode(body, pos)[0]
            except ValueError:
                continue
        return False, None
    if isinstance(value, str) and value.strip()[:1] in ("{", "["):
        try:
            return True, json.loads(value)
        except ValueError:
            pass
    return True, value


def kind(value: Any) -> str:
    """``missing``, ``null``, ``bool``, ``number``, ``string``, ``object`` or ``array``."""
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


def to_json(value: Any) -> str | None:
    """Compact JSON text of a value (``None`` for :data:`MISSING`)."""
    if value is MISSING:
        return None
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def fmt(x: float) -> str:
    """A number as reasons print it (same text as Polars' ``round(6).cast(String)``)."""
    r = round(float(x), 6)
    if math.isnan(r):
        return "NaN"
    if r == 0:
        return "0.0"
    text = repr(r)
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


def clean_number(text: str) -> str | None:
    """A numeric string without currency signs, ISO codes, thousands separators and spaces, or ``None``."""
    text = text.strip()
    negative = re.match(PARENS, text)
    if negative:
        text = "-" + negative.group(1)
    text = re.sub(ISO_SUFFIX, "", re.sub(ISO_PREFIX, "", text))
    text = re.sub(r"[\s,]", "", re.sub(CURRENCY, "", text))
    text = text.replace("--", "")
    return text if _NUMBER_RE.match(text) else None


def as_number(value: Any) -> float | None:
    """A JSON number or numeric string ("$1,500.00", "(20)", "1 500 EUR") as float; else ``None``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        cleaned = clean_number(value)
        return float(cleaned) if cleaned is not None else None
    return None


def numeric_check(diff: float, tol: float) -> bool:
    """Inclusive bound, forgiving float rounding (100.01 vs 100 with tolerance 0.01 is a hit)."""
    return diff <= tol + 1e-9 * max(1.0, tol)


# ---------------------------------------------------------------- dates

_DATE_TOKENS = [
    ("YYYY", "%Y"),
    ("YY", "%y"),
    ("MMMM", "%B"),
    ("MMM", "%b"),
    ("MM", "%m"),
    ("DD", "%d"),
    ("HH", "%H"),
    ("mm", "%M"),
    ("ss", "%S"),
]


@lru_cache(maxsize=256)
def strftime_format(fmt_text: str) -> str:
    """``DD-MMM-YYYY`` style to strftime (``%d-%b-%Y``); a format containing ``%`` is used as is."""
    if "%" in fmt_text:
        return fmt_text
    out, i = "", 0
    while i < len(fmt_text):
        for token, code in _DATE_TOKENS:
            if fmt_text.startswith(token, i):
                out += code
                i += len(token)
                break
        else:
            out += fmt_text[i]
            i += 1
    return out


@lru_cache(maxsize=65536)
def parse_date(text: str, formats: tuple[str, ...] = ()) -> datetime | None:
    """A naive datetime for ``text``: ``formats`` in order, then ISO 8601, then python-dateutil (ambiguous
    dates month-first). A written offset is dropped, never converted: the machine's time zone never matters."""
    text = text.strip()
    if not text:
        return None
    for f in formats:
        try:
            return datetime.strptime(text, strftime_format(f)).replace(tzinfo=None)
        except ValueError:
            continue
    try:
        return datetime.fromisoformat(text).replace(tzinfo=None)
    except ValueError:
        pass
    from dateutil import parser

    try:
        parsed = parser.parse(text, dayfirst=False, yearfirst=False, default=datetime(2000, 1, 1))
    except (ValueError, OverflowError, parser.ParserError):
        return None
    return parsed.replace(tzinfo=None)


def date_text(value: datetime, compare_time: bool) -> str:
    """How a parsed date is shown and compared."""
    return value.strftime("%Y-%m-%d %H:%M:%S" if compare_time else "%Y-%m-%d")


# ---------------------------------------------------------------- fuzzy


def scorer(algorithm: str) -> Any:
    """The rapidfuzz scorer for an algorithm, returning 0..1."""
    from rapidfuzz import fuzz
    from rapidfuzz.distance import JaroWinkler, Levenshtein

    return {
        "levenshtein": (Levenshtein.normalized_similarity, 1.0),
        "token_sort": (fuzz.token_sort_ratio, 100.0),
        "token_set": (fuzz.token_set_ratio, 100.0),
        "jaro_winkler": (JaroWinkler.normalized_similarity, 1.0),
    }[algorithm]


def normalize_text(text: str) -> str:
    """Lowercase, whitespace collapsed and trimmed."""
    return re.sub(r"\s+", " ", text.lower()).strip()


def similarity(a: str, b: str, algorithm: str, normalize: bool) -> float:
    """Fuzzy similarity in 0..1."""
    if normalize:
        a, b = normalize_text(a), normalize_text(b)
    fn, scale = scorer(algorithm)
    return float(fn(a, b)) / scale
