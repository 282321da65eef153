"""How deeply a JSON text nests: documents nested beyond :data:`MAX_DEPTH` are not read."""

from __future__ import annotations

import re

MAX_DEPTH = 64
"""JSON nested deeper than this is not read (a plain row error): deeper documents would exhaust Python's recursion
in parsing, comparison or JSON Schema validation, differently from run to run."""
_QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]")


def nesting_depth(text: str) -> int:
    """How deeply ``text`` (JSON) nests arrays and objects (brackets inside strings do not count); a text with at most
    ``MAX_DEPTH`` brackets is not scanned (its depth is at most that, and this returns its bracket count)."""
    openers = text.count("[") + text.count("{")
    if openers <= MAX_DEPTH:
        return openers
    depth = deepest = 0
    for bracket in _NOT_BRACKET.sub("", _QUOTED.sub("", text)):
        depth += 1 if bracket in "[{" else -1
        deepest = max(deepest, depth)
    return deepest
