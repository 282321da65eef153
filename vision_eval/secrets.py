"""One redaction of the configured keys' values for every string a run writes or prints.

Config files and overrides are redacted by key name (:func:`vision_eval.config.redact`); this module
redacts by *value*: the API keys of every configured judge and candidate (``api_key`` given directly, or the
variable named by ``api_key_env``), wherever they appear — a provider's error body that echoes the key, a
reply, a log line. Values shorter than :data:`MIN_SECRET_LENGTH` are not treated as secrets (they cannot be
told apart from ordinary text, and local servers often take a dummy key such as ``x``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import polars as pl

MIN_SECRET_LENGTH = 8
MASK = "***"
TEXT_COLUMNS = ("error", "details")


def key_values(model: Any) -> list[str]:
    """The key values a judge or candidate config can send: ``api_key`` and ``$api_key_env``."""
    values = []
    key = getattr(model, "api_key", None)
    if key is not None:
        values.append(key.get_secret_value() if hasattr(key, "get_secret_value") else str(key))
    env = getattr(model, "api_key_env", None)
    if env and os.environ.get(env):
        values.append(os.environ[env])
    return values


class Secrets:
    """The secret values of a run, longest first (so a key containing another is masked whole)."""

    def __init__(self, values: Iterable[str] = ()) -> None:
        unique = {v for v in values if v and len(v) >= MIN_SECRET_LENGTH}
        self.values = sorted(unique, key=len, reverse=True)

    @staticmethod
    def of_models(models: Iterable[Any]) -> Secrets:
        return Secrets(v for m in models for v in key_values(m))

    def __bool__(self) -> bool:
        return bool(self.values)

    def scrub(self, text: str) -> str:
        """``text`` with every secret value replaced by ``***``."""
        for value in self.values:
            if value in text:
                text = text.replace(value, MASK)
        return text

    def scrub_frame(self, frame: pl.DataFrame, columns: Iterable[str] = TEXT_COLUMNS) -> pl.DataFrame:
        """``frame`` with the secret values masked in its text ``columns`` (vectorized)."""
        present = [c for c in columns if c in frame.columns and frame.schema[c] == pl.Utf8]
        if not self.values or not present:
            return frame
        return frame.with_columns(
            pl.col(c).str.replace_many(self.values, [MASK] * len(self.values), leftmost=True) for c in present
        )
