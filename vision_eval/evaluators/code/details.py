"""How a validator's details are written.

A validator's details are declared once, as a dataclass with a docstring per field; its row function writes one with
:func:`details_text`.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any

_NAMES: dict[type, tuple[str, ...]] = {}
"""Each details dataclass's member names, worked out once."""


def member_names(declared: type) -> tuple[str, ...]:
    """The fields of a details dataclass, in the order the details JSON lists them."""
    names = _NAMES.get(declared)
    if names is None:
        names = _NAMES[declared] = tuple(f.name for f in dataclasses.fields(declared))
    return names


def details_text(details: Any, compact: bool = True) -> str:
    """The details JSON of one row (a details dataclass), members in declared order. ``compact`` without spaces
    (``,`` and ``:``), else as ``json.dumps`` writes by default (a space after ``,`` and ``:``)."""
    return _COMPACT(details) if compact else _SPACED(details)


def members(details: Any) -> dict[str, Any]:
    """A details dataclass as a dict of its members, in declared order."""
    return {name: getattr(details, name) for name in member_names(type(details))}


def _writer(item_separator: str, key_separator: str) -> Callable[[Any], str]:
    """``json.dumps`` with these separators and ``ensure_ascii=False``, a dataclass written as its ``vars()`` (its
    members in declared order: the generated ``__init__`` sets them in that order). The C encoder is made once here
    (``json.dumps`` makes one per call with options like these): details hold no cycles."""
    if c_make_encoder is None:  # no C accelerator
        return json.JSONEncoder(separators=(item_separator, key_separator), ensure_ascii=False, default=vars).encode
    chunks = c_make_encoder(None, vars, encode_basestring, None, key_separator, item_separator, False, False, True)
    return lambda value: "".join(chunks(value, 0))


_COMPACT = _writer(",", ":")
_SPACED = _writer(", ", ": ")
