"""The command line as people type it: flags anywhere among the overrides, secrets masked in every message (argument
errors included), a provider's 5xx blamed on the provider, and console commands that a closed pipe (`| head`) does not
break."""

from __future__ import annotations

import pytest

import vision_eval as ve
from vision_eval.errors import PreflightError
from vision_eval.testing.fake_providers import Action, FakeProviders

KEY = "sk-live-0123456789abcdefXYZ"


@pytest.mark.parametrize("status", [500, 502, 503])
def test_a_preflight_5xx_is_the_providers_trouble_not_the_settings(status: int, fresh_fake: FakeProviders) -> None:
    fresh_fake.push(Action(status=status))
    judge = {"model": "openai/gpt-4o-mini", "api_base": fresh_fake.openai_base, "api_key": KEY, "max_retries": 0,
             "cache": False}  # fmt: skip
    rows = [{"id": "a", "input": "Is it red?", "output": "red"}]
    with pytest.raises(PreflightError) as caught:
        ve.evaluate(rows, evaluators={"r": {"type": "llm_rubric", "rubric": "says red", "images": []}}, judge=judge,
                    run={"progress": False, "preflight": True})  # fmt: skip
    message = str(caught.value)
    assert f"HTTP {status}" in message and "the provider's trouble" in message
    assert "retry later" in message and "run.preflight=false" in message
    assert "max_tokens" not in message  # not the model's settings
    assert fresh_fake.calls == 1


def test_a_preflight_400_still_points_at_the_settings(fresh_fake: FakeProviders) -> None:
    fresh_fake.push(Action(status=400))
    judge = {"model": "openai/gpt-4o-mini", "api_base": fresh_fake.openai_base, "api_key": KEY, "cache": False}
    with pytest.raises(PreflightError, match=r"check the model's settings"):
        ve.evaluate([{"id": "a", "output": "red"}], evaluators={"r": {"type": "llm_rubric", "rubric": "red",
                    "images": []}}, judge=judge, run={"progress": False, "preflight": True})  # fmt: skip
