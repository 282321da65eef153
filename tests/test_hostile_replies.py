"""Hostile replies from the provider, on both transports (the direct aiohttp path and litellm's, for each provider
litellm serves differently): a gzip body that inflates far past ``judge.max_reply_bytes`` is that row's error,
read no further; a redirect to another origin is never followed (the other server receives nothing) and the row
says so; a redirect within the origin and a gzip reply within the cap still work. The rows beside the faulty one
are scored as usual."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import RED, shape_png

import vision_eval as ve
from vision_eval.testing.fake_providers import Action, FakeProviders

KEY = "sk-hostile-replies-000"
GOOD_REPLY = '{"scores": {"visual_accuracy": 0.8, "completeness": 0.8, "clarity": 0.8, "relevance": 0.8}}'
BOMB = 256 * 2**20
"""Decoded size of the gzip bomb (about 260 KB on the wire)."""
ROUTES = {
    "direct-openai": ("openai/gpt-4o-mini", "direct", "openai_base"),
    "litellm-openai": ("openai/gpt-4o-mini", "litellm", "openai_base"),
    "litellm-anthropic": ("anthropic/claude-3-5-haiku-20241022", "litellm", "base"),
    "litellm-gemini": ("gemini/gemini-2.0-flash", "litellm", "base"),
    "litellm-bedrock": ("bedrock/amazon.nova-lite-v1:0", "litellm", "base"),
}
"""The transport and, on litellm, the provider: litellm sends OpenAI's calls through the OpenAI SDK and the others'
through its own HTTP handler, each with its own request path (the API key rides in Gemini's query string)."""


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[FakeProviders, FakeProviders]]:
    """The provider, and another origin (a server on another port) a redirect may point at."""
    with FakeProviders(responder=lambda request: GOOD_REPLY) as provider, FakeProviders() as elsewhere:
        yield provider, elsewhere


@pytest.fixture(params=list(ROUTES))
def route(request: pytest.FixtureRequest, servers: tuple[FakeProviders, FakeProviders]) -> dict[str, Any]:
    """The judge settings of one route, the fake servers reset."""
    if "bedrock" in request.param:
        request.getfixturevalue("aws_env")
    model, transport, base = ROUTES[request.param]
    provider, elsewhere = servers
    provider.reset()
    elsewhere.reset()
    return {"model": model, "transport": transport, "api_base": getattr(provider, base), "api_key": KEY,
            "cache": False, "max_retries": 1}  # fmt: skip


def _run(tmp_path: Path, judge: dict[str, Any], good_rows: int = 3) -> dict[str, dict[str, Any]]:
    """One faulty row (its text holds FAULT) among good ones; the result rows by id."""
    (tmp_path / "red.png").write_bytes(shape_png(RED, 2))
    rows = [{"id": "faulty", "output": "FAULT red circles", "images": [str(tmp_path / "red.png")]}]
    rows += [{"id": f"good{i}", "output": f"red circles {i}", "images": [str(tmp_path / "red.png")]}
             for i in range(good_rows)]  # fmt: skip
    result = ve.evaluate(rows, evaluators={"desc": {"type": "llm_judge", "prompt": "image-description"}},
                         judge=judge, output_dir=tmp_path / "run", run={"progress": False})  # fmt: skip
    out = {row["sample_id"]: row for row in result.results.iter_rows(named=True)}
    assert sorted(out) == sorted(row["id"] for row in rows)  # no row lost, none duplicated
    for i in range(good_rows):
        assert out[f"good{i}"]["status"] == "processed" and out[f"good{i}"]["score"] == pytest.approx(0.8)
    return out


def test_a_gzip_bomb_is_that_rows_error_read_no_further(
    route: dict[str, Any], servers: tuple[FakeProviders, FakeProviders], tmp_path: Path
) -> None:
    provider, _ = servers
    provider.push_for("FAULT", Action(gzip_bomb=BOMB))
    faulty = _run(tmp_path, route)["faulty"]
    assert faulty["status"] == "error"
    assert "reply larger than judge.max_reply_bytes (8,000,000 bytes once decoded)" in faulty["error"]
    assert provider.marked_calls["FAULT"] == 1  # not retried: the same endpoint would answer the same


def test_max_reply_bytes_caps_a_plain_reply_too(
    route: dict[str, Any], servers: tuple[FakeProviders, FakeProviders], tmp_path: Path
) -> None:
    provider, _ = servers
    provider.push_for("FAULT", Action(reply=GOOD_REPLY[:-1] + ', "notes": "' + "x" * 4000 + '"}'))
    faulty = _run(tmp_path, {**route, "max_reply_bytes": 4000})["faulty"]
    assert faulty["status"] == "error" and "judge.max_reply_bytes (4,000 bytes" in faulty["error"]


def test_a_gzip_reply_within_the_cap_is_read(
    route: dict[str, Any], servers: tuple[FakeProviders, FakeProviders], tmp_path: Path
) -> None:
    provider, _ = servers
    provider.push_for("FAULT", Action(gzip=True))
    faulty = _run(tmp_path, route, good_rows=1)["faulty"]
    assert faulty["status"] == "processed" and faulty["score"] == pytest.approx(0.8)


def test_a_redirect_to_another_origin_is_not_followed(
    route: dict[str, Any], servers: tuple[FakeProviders, FakeProviders], tmp_path: Path
) -> None:
    provider, elsewhere = servers
    provider.push_for("FAULT", Action(redirect=elsewhere.base))
    faulty = _run(tmp_path, route)["faulty"]
    assert faulty["status"] == "error"
    assert f"redirected the call to another origin ({elsewhere.base}): not followed" in faulty["error"]
    assert elsewhere.calls == 0  # nothing was sent there: not the prompt, not the key, no verdict taken
    assert provider.marked_calls["FAULT"] == 1


def test_a_redirect_within_the_origin_is_followed(
    route: dict[str, Any], servers: tuple[FakeProviders, FakeProviders], tmp_path: Path
) -> None:
    provider, elsewhere = servers
    provider.push_for("FAULT", Action(redirect=provider.base))
    faulty = _run(tmp_path, route, good_rows=1)["faulty"]
    assert faulty["status"] == "processed" and faulty["score"] == pytest.approx(0.8)
    assert provider.marked_calls["FAULT"] == 2 and elsewhere.calls == 0
