"""Exceptions raised before any evaluation starts.

Row-level problems never raise: they become result rows with status ``error``.
These exceptions are for problems that make the whole run meaningless (a bad
config, an unreadable dataset), so they are raised before any paid call.
"""

from __future__ import annotations


class VisionEvalError(Exception):
    """Base class of the errors this package raises on purpose."""


class ConfigError(VisionEvalError):
    """A config value is wrong. Names the dotted key and, when known, the file."""

    def __init__(self, key: str, message: str, file: str | None = None) -> None:
        self.key = key
        self.message = message
        self.file = file
        where = f" (in {file})" if file else ""
        super().__init__(f"{key}: {message}{where}")


class DatasetError(VisionEvalError):
    """The dataset cannot be loaded or lacks a required column."""


class PreflightError(VisionEvalError):
    """A configured model cannot be used (missing key, wrong URL or model, refused request): nothing ran."""
