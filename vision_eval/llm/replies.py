"""Finding the JSON object in a model reply: fenced, wrapped in prose, with comments or trailing commas."""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.S)
_LINE_COMMENT = re.compile(r"(?m)^\s*//.*$|(?<=[,{\[\s])//[^\n\"]*$")
_TRAILING_COMMA = re.compile(r",\s*([}\]])")


def _loads_lenient(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        cleaned = _TRAILING_COMMA.sub(r"\1", _LINE_COMMENT.sub("", text))
        return json.loads(cleaned)


def _objects(text: str) -> list[dict[str, Any]]:
    """Every top-level JSON object that can be decoded from ``text``, in order."""
    found: list[dict[str, Any]] = []
    decoder = json.JSONDecoder()
    position = text.find("{")
    while position != -1:
        try:
            value, end = decoder.raw_decode(text, position)
        except ValueError:
            value, end = _balanced(text, position)
        if isinstance(value, dict):
            found.append(value)
            position = text.find("{", end)
        else:
            position = text.find("{", position + 1)
    return found


def _balanced(text: str, start: int) -> tuple[Any, int]:
    """Decode the brace-balanced span at ``start`` leniently (comments, trailing commas)."""
    depth, in_string, escape = 0, False, False
    for index in range(start, len(text)):
        char = text[index]
        if in_string:
            if escape:
                escape = False
            elif char == "\\":
                escape = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                try:
                    return _loads_lenient(text[start : index + 1]), index + 1
                except ValueError:
                    return None, start + 1
    return None, start + 1


def find_json_object(text: str, required_key: str | None = None) -> dict[str, Any] | None:
    """The first JSON object in ``text`` (preferring fenced blocks, and objects holding ``required_key``)."""
    if not text:
        return None
    candidates: list[dict[str, Any]] = []
    for block in _FENCE.findall(text):
        candidates += _objects(block)
    candidates += _objects(text)
    if required_key is not None:
        for candidate in candidates:
            if required_key in candidate:
                return candidate
    return candidates[0] if candidates else None
