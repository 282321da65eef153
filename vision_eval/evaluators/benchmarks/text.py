"""Text rules the benchmark metrics share: reference answer lists, and ``details`` JSON written as Polars writes it.

Plain Python (the row functions run in worker processes, without Polars).
"""

from __future__ import annotations

import json
import math
from json.encoder import encode_basestring
from typing import Any

WHITE_SPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"
)
"""Unicode's White_Space characters: what ``text.strip(WHITE_SPACE)`` removes (Python's ``str.strip()`` also
removes ``\\x1c``-``\\x1f``, which are not white space to Unicode)."""
PY_WHITE_SPACE = WHITE_SPACE + "\x1c\x1d\x1e\x1f"
"""What Python's ``str.strip()`` and ``str.split()`` treat as white space (``str.isspace``)."""


_decode = json.JSONDecoder().raw_decode
_TEXTS = {str}


def reference_answers(text: str, column: str) -> tuple[list[str], None] | tuple[None, str]:
    """(the reference answers, ``None``) or (``None``, why they cannot be used).

    ``text`` is one answer, or a JSON list of answers when it starts with ``[`` (leading white space aside), read
    by Python's ``json.loads``; numbers in the list become their JSON text, nulls are left out.
    """
    head = text[:1]
    if head != "[" and (not head or head not in WHITE_SPACE):
        return [text], None  # most references: one answer
    stripped = text.strip(WHITE_SPACE)
    if not stripped.startswith("["):
        return [text], None
    try:
        # json.loads, without its layers: nothing to skip before the "[", no JSON white space after the end.
        value, end = _decode(stripped)
        if end != len(stripped):
            extra = len(stripped) - len(stripped[end:].lstrip(" \t\n\r"))  # after JSON white space, as json.loads
            raise json.JSONDecodeError("Extra data", stripped, extra)
        if type(value) is list and set(map(type, value)) <= _TEXTS:
            answers = value
        elif not isinstance(value, list) or any(isinstance(v, list | dict) for v in value):
            raise ValueError("not a flat JSON list")
        else:
            answers = [v if isinstance(v, str) else json.dumps(v) for v in value if v is not None]
        if "\\u" in stripped:  # an escaped lone surrogate decodes to text that is not valid UTF-8
            for answer in answers:
                answer.encode()
    except (ValueError, RecursionError) as exc:  # UnicodeEncodeError is a ValueError
        return None, f"reference answers look like a JSON list but do not parse ({exc}): {stripped[:200]}"
    if not answers:
        return None, f"no reference answers in {column}"
    return answers, None


def json_number(value: float) -> str:
    """``value`` as Polars writes a float in JSON: Python's shortest repr, but ``null`` for NaN and infinities,
    decimals down to 1e-5 and exponents without padding (``1e-7``, not ``1e-07``)."""
    if not math.isfinite(value):
        return "null"
    text = repr(value)
    if "e-" not in text:
        return text
    mantissa, exponent = text.split("e-")
    if exponent != "05":
        return f"{mantissa}e-{int(exponent)}"
    sign = "-" if mantissa.startswith("-") else ""
    return f"{sign}0.0000{mantissa.lstrip('-').replace('.', '')}"


def json_text(value: str | None) -> str:
    """A string (or ``None``) as a JSON value."""
    return "null" if value is None else encode_basestring(value)


def json_float(value: float | None) -> str:
    """A float (or ``None``) as a JSON value, written as Polars writes it (:func:`json_number`)."""
    return "null" if value is None else json_number(value)


def json_value(value: Any) -> str:
    """``value`` (text, number, bool, null or a list of them) as compact JSON, written as Polars writes it."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, float):
        return json_number(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return encode_basestring(value)
    return "[" + ",".join(json_value(v) for v in value) + "]"


def details_json(**fields: Any) -> str:
    """A row's ``details``: a JSON object of ``fields`` in order, byte for byte as Polars' ``json_encode`` writes
    the same struct."""
    return "{" + ",".join(f'"{name}":{json_value(value)}' for name, value in fields.items()) + "}"
