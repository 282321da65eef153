"""Counts in messages: ``counted(1, "row")`` is ``1 row``, ``counted(2, "row")`` is ``2 rows``."""

from __future__ import annotations


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` and ``noun``, in the plural (``plural``, else ``noun`` + ``s``) unless ``count`` is 1."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"
