"""Redaction by value (vision_eval.secrets): which values count as secrets, where they come from, and that every
occurrence in text and in a frame's text columns is masked, a longer key whole."""

from __future__ import annotations

import os
from types import SimpleNamespace

import polars as pl
import pytest
from pydantic import SecretStr

from vision_eval.secrets import (
    MASK,
    MIN_SECRET_LENGTH,
    Secrets,
    clean_message,
    given_secrets,
    key_values,
    redact,
    redact_override,
)

KEY = "sk-live-1234567890"


def test_key_values_reads_the_direct_key_and_the_named_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_KEY", "from-the-environment")
    monkeypatch.setenv("EMPTY_KEY", "")
    monkeypatch.delenv("UNSET_KEY", raising=False)
    assert key_values(SimpleNamespace(api_key=SecretStr(KEY), api_key_env="MY_KEY")) == [KEY, "from-the-environment"]
    assert key_values(SimpleNamespace(api_key="plain-text-key", api_key_env=None)) == ["plain-text-key"]
    assert key_values(SimpleNamespace(api_key=None, api_key_env="UNSET_KEY")) == []
    assert key_values(SimpleNamespace(api_key=None, api_key_env="EMPTY_KEY")) == []
    assert key_values(SimpleNamespace()) == []


def test_values_shorter_than_the_minimum_are_not_secrets() -> None:
    assert MIN_SECRET_LENGTH == 8
    secrets = Secrets(["1234567", "12345678", "", "12345678"])
    assert secrets.values == ["12345678"] and secrets
    assert secrets.scrub("a 1234567 b 12345678") == f"a 1234567 b {MASK}"
    assert not Secrets(["x", "dummy"]) and Secrets(["x"]).scrub("x marks") == "x marks"


def test_a_key_containing_another_is_masked_whole_in_text_and_frames() -> None:
    inner, outer = "abcdefgh", "abcdefgh-and-more"
    secrets = Secrets([inner, outer])
    assert secrets.values == [outer, inner]
    text = f"401: bad key {outer}; also {inner} and {outer}"
    assert secrets.scrub(text) == f"401: bad key {MASK}; also {MASK} and {MASK}"
    frame = pl.DataFrame({"error": [text, None], "details": [f'{{"raw": "{outer}"}}', "ok"]})
    scrubbed = secrets.scrub_frame(frame)
    assert scrubbed["error"].to_list() == [f"401: bad key {MASK}; also {MASK} and {MASK}", None]
    assert scrubbed["details"].to_list() == [f'{{"raw": "{MASK}"}}', "ok"]


def test_scrub_frame_masks_only_the_named_text_columns() -> None:
    secrets = Secrets.of_models([SimpleNamespace(api_key=SecretStr(KEY), api_key_env=None)])
    frame = pl.DataFrame({"error": [KEY], "output": [KEY], "details": [1]})
    scrubbed = secrets.scrub_frame(frame)
    assert scrubbed.to_dict(as_series=False) == {"error": [MASK], "output": [KEY], "details": [1]}
    assert secrets.scrub_frame(frame, ["output"])["output"].to_list() == [MASK]
    assert Secrets().scrub_frame(frame) is frame
    assert secrets.scrub_frame(frame, ["missing"]) is frame


def test_longer_keys_are_masked_first_whatever_their_letters() -> None:
    inner, outer = "zzzzzzzz", "azzzzzzzz"  # the longer key sorts first by length, last by letters
    secrets = Secrets([inner, outer])
    assert secrets.values == [outer, inner]
    assert secrets.scrub(f"bad key {outer}") == f"bad key {MASK}"


def test_a_console_message_hides_keys_by_name_by_shape_and_by_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    """clean_message: a ``…api_key=value`` is masked by its key name, the values given on the command line (two
    comma-separated keys in one argument, a token shaped like a provider key typed anywhere) and those of the
    ``*_API_KEY`` / ``*_TOKEN`` / ``*_SECRET`` variables wherever they appear; anything else is left as it is."""
    for name in [n for n in os.environ if n.upper().endswith(("API_KEY", "_TOKEN", "_SECRET"))]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("MY_API_KEY", "env-key-12345678")
    monkeypatch.setenv("hf_token", "hf-token-87654321")
    monkeypatch.setenv("PLAIN", "plain-value-0000")
    shaped = "sk-" + "a1" * 10
    argv = ["judge.api_key=first-key-1111,second-key-2222", f"judge.model={shaped}", "x=plain-value-1111"]
    message = (
        "Could not override 'judge.api_key=first-key-1111'. first-key-1111 and second-key-2222 failed; "
        f"{shaped} is not a model; env-key-12345678, hf-token-87654321, plain-value-0000, plain-value-1111"
    )
    assert clean_message(message, argv) == (
        "Could not override 'judge.api_key=***'. *** and *** failed; *** is not a model; ***, ***, "
        "plain-value-0000, plain-value-1111"
    )
    assert given_secrets(argv).values == sorted(
        ["first-key-1111", "second-key-2222", shaped, "env-key-12345678", "hf-token-87654321"], key=len, reverse=True
    )
    assert redact_override("candidate.api_key_env=OPENAI_API_KEY,judge.password=hunter2-long") == (
        "candidate.api_key_env=OPENAI_API_KEY,judge.password=***"
    )


def test_redact_masks_secret_keys_in_nested_configs_and_keeps_empty_ones() -> None:
    config = {
        "judge": {"model": "m", "api_key": "k" * 12, "api_key_env": "OPENAI_API_KEY", "max_tokens": 5},
        "candidates": [{"token": "t" * 12, "name": "a"}, {"password": "", "secret": None}],
        "headers": [SecretStr("hidden-value-123"), "shown"],
        "n": 3,
    }
    assert redact(config) == {
        "judge": {"model": "m", "api_key": MASK, "api_key_env": "OPENAI_API_KEY", "max_tokens": 5},
        "candidates": [{"token": MASK, "name": "a"}, {"password": "", "secret": None}],
        "headers": [MASK, "shown"],
        "n": 3,
    }


def test_a_sweep_over_keys_is_read_wherever_it_is_in_the_argument(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each value of a swept key is a secret, also after other text in one (quoted) argument; the sweep ends at
    the next ``key=value`` (not a secret unless its key names one)."""
    for name in [n for n in os.environ if n.upper().endswith(("API_KEY", "_TOKEN", "_SECRET"))]:
        monkeypatch.delenv(name)
    quoted = given_secrets(["note=run two judge.api_key=first-key-1111,second-key-2222"])
    assert sorted(quoted.values) == ["first-key-1111", "second-key-2222"]
    joined = given_secrets(["judge.api_key=first-key-1111,judge.model=openai/gpt-4o,candidate.api_key=third-key-3333"])
    assert sorted(joined.values) == ["first-key-1111", "third-key-3333"]
