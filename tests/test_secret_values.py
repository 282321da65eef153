"""Redaction by value (vision_eval.secrets): which values count as secrets, where they come from, and that every
occurrence in text and in a frame's text columns is masked, a longer key whole."""

from __future__ import annotations

from types import SimpleNamespace

import polars as pl
import pytest
from pydantic import SecretStr

from vision_eval.secrets import MASK, MIN_SECRET_LENGTH, Secrets, key_values

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
