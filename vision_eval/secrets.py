"""One redaction of secrets for every string a run writes or prints.

Config mappings and overrides are redacted by key name (:func:`redact`, :func:`redact_override`); values are
redacted wherever they appear (:class:`Secrets`): the keys given on the command line and in ``*_API_KEY``
variables (:func:`given_secrets`: every console message, argument errors included), and the API keys of every
configured judge and candidate (``api_key`` given directly, or the variable named by ``api_key_env``) — a
provider's error body that echoes the key, a reply, a log line. Values shorter than :data:`MIN_SECRET_LENGTH` are
not treated as secrets (they cannot be told apart from ordinary text, and local servers often take a dummy key
such as ``x``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import polars as pl

MIN_SECRET_LENGTH = 8
MASK = "***"
TEXT_COLUMNS = ("error", "details")
SECRET_KEYS = ("api_key", "apikey", "secret", "token", "password", "authorization")
SECRET_ASSIGNMENT = re.compile(r"([\w.+~]*(?:api[_-]?key|secret|password|authorization)(?!_env)\w*)=([^,\s'\"]+)", re.I)
"""A ``key=value`` whose key names a secret (in an override, a log line, a message)."""
_UNQUOTED = re.compile(r"[^\s'\"]*")
"""The rest of an argument's value: a sweep's further values follow the first, comma-separated."""
KEY_SHAPE = re.compile(
    r"(?<![\w-])(?:sk-[\w-]{16,}|AIza[\w-]{30,}|hf_[A-Za-z0-9]{30,}|gsk_[A-Za-z0-9]{30,}|xai-[A-Za-z0-9]{30,}"
    r"|AKIA[0-9A-Z]{16})"
)
"""A token shaped like a provider's API key (OpenAI, Anthropic, Google, Hugging Face, Groq, xAI, AWS), wherever it is
typed on a command line (``judge=sk-…``: a key pasted in the wrong place)."""
SECRET_VARIABLES = ("API_KEY", "_TOKEN", "_SECRET")
"""Environment variables whose values are secrets, by the end of their names."""


def _is_secret_key(key: str) -> bool:
    lowered = key.lower()
    return any(s in lowered for s in SECRET_KEYS) and not lowered.endswith(("_env", "_tokens"))


def redact_override(override: str) -> str:
    """Override text (one ``key=value``, or several joined by commas) with secret values hidden."""
    return SECRET_ASSIGNMENT.sub(rf"\1={MASK}", override)


def redact(value: Any) -> Any:
    """A copy of a config mapping with secret values replaced by ``***``."""
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            out[key] = MASK if _is_secret_key(str(key)) and item not in (None, "") else redact(item)
        return out
    if isinstance(value, list | tuple):
        return [redact(v) for v in value]
    if hasattr(value, "get_secret_value"):  # pydantic's SecretStr
        return MASK
    return value


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
        import polars as pl

        present = [c for c in columns if c in frame.columns and frame.schema[c] == pl.Utf8]
        if not self.values or not present:
            return frame
        return frame.with_columns(
            pl.col(c).str.replace_many(self.values, [MASK] * len(self.values), leftmost=True) for c in present
        )


def given_secrets(argv: Iterable[str]) -> Secrets:
    """The secrets a command line must never show: the values of ``…api_key=`` (any secret-named key) arguments,
    the arguments' tokens shaped like an API key (:data:`KEY_SHAPE`), and the values of the ``*_API_KEY`` /
    ``*_TOKEN`` / ``*_SECRET`` environment variables."""
    argv = list(argv)
    given = [value for arg in argv for value in _assigned(arg)]
    given += [token for arg in argv for token in KEY_SHAPE.findall(arg)]
    env = [value for name, value in os.environ.items() if name.upper().endswith(SECRET_VARIABLES)]
    return Secrets([*given, *env])


def _assigned(arg: str) -> list[str]:
    """The values of the secret-named keys in one argument: ``judge.api_key=k1,k2`` (a sweep over two keys) gives
    both; an item holding ``=`` is the next override (``judge.api_key=k1,judge.model=m``), not a key."""
    values = []
    for match in SECRET_ASSIGNMENT.finditer(arg):
        values.append(match[2])
        for item in _UNQUOTED.match(arg, match.end())[0].split(",")[1:]:  # type: ignore[index]
            if "=" in item:
                break
            values.append(item)
    return values


def clean_message(text: str, argv: Iterable[str]) -> str:
    """A console message with every secret masked: by key name and by the values of :func:`given_secrets`."""
    return given_secrets(argv).scrub(redact_override(text))
