"""Scheduler pieces: backoff with Retry-After, RPM/TPM window, concurrency limits, shipped judge configs."""

from __future__ import annotations

import asyncio
import random
from email.utils import formatdate
from pathlib import Path

import pytest
import yaml

from vision_eval.config import JudgeConfig
from vision_eval.llm.cache import cache_key
from vision_eval.llm.retry import backoff_delay
from vision_eval.llm.scheduler import RateLimiter, Scheduler
from vision_eval.llm.transport import CallError, parse_retry_after, uses_direct

ROOT = Path(__file__).resolve().parents[1]


def test_backoff_honours_retry_after_and_grows_exponentially() -> None:
    rng = random.Random(0)
    assert all(3.0 <= backoff_delay(1, 3.0, rng) <= 3.3 for _ in range(50))
    first = [backoff_delay(1, None, rng) for _ in range(50)]
    third = [backoff_delay(3, None, rng) for _ in range(50)]
    assert all(0.25 <= d <= 0.5 for d in first) and all(1.0 <= d <= 2.0 for d in third)
    assert all(15.0 <= backoff_delay(12, None, rng) <= 30.0 for _ in range(20))


def test_retry_after_parsing() -> None:
    import time

    assert parse_retry_after("2") == 2.0 and parse_retry_after(None) is None and parse_retry_after("soon") is None
    assert 8 <= parse_retry_after(formatdate(time.time() + 10, usegmt=True)) <= 10


def test_error_classification() -> None:
    assert CallError("x", 429).retryable and CallError("x", 503).retryable and CallError("reset").retryable
    assert not CallError("x", 400).retryable and not CallError("x", 401).retryable


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_rate_limiter_window_rpm_and_tpm() -> None:
    clock = Clock()
    rpm = RateLimiter(rpm=2, tpm=None, clock=clock)
    assert rpm._wait_needed(0) == 0
    rpm.events.extend([(0.0, 0), (10.0, 0)])
    clock.now = 20.0
    assert rpm._wait_needed(0) == pytest.approx(40.0)  # the call at t=0 leaves the window at t=60
    clock.now = 61.0
    assert rpm._wait_needed(0) == 0
    tpm = RateLimiter(rpm=None, tpm=1000, clock=clock)
    tpm.events.extend([(61.0, 600), (70.0, 300)])
    clock.now = 80.0
    assert tpm._wait_needed(100) == 0
    assert tpm._wait_needed(200) == pytest.approx(41.0)  # needs the 600 tokens of t=61 gone: 61 + 60 - 80


def test_rate_limiter_sleeps_until_the_window_frees() -> None:
    clock = Clock()
    limiter = RateLimiter(rpm=1, tpm=None, clock=clock)

    async def run() -> float:
        await limiter.acquire()
        original = asyncio.sleep

        async def fake_sleep(seconds: float) -> None:
            clock.now += seconds
            await original(0)

        asyncio.sleep = fake_sleep  # type: ignore[assignment]
        try:
            return await limiter.acquire()
        finally:
            asyncio.sleep = original  # type: ignore[assignment]

    assert asyncio.run(run()) == pytest.approx(60.0)


@pytest.mark.parametrize(("global_limit", "model_limit", "expected"), [(8, 3, 3), (2, 5, 2)])
def test_concurrency_limits_are_respected(fake, global_limit, model_limit, expected) -> None:
    fake.reset()
    fake.latency = 0.05
    judge = JudgeConfig(model="openai/m", api_base=fake.openai_base, cache=False, max_concurrency=model_limit)
    scheduler = Scheduler(concurrency=global_limit)

    async def main() -> None:
        async with scheduler.session():
            messages = [[{"role": "user", "content": f'{{"scores": {{"a": 0}}}} {i}'}] for i in range(9)]
            await asyncio.gather(*(scheduler.complete(judge, m) for m in messages))

    try:
        asyncio.run(main())
    finally:
        fake.latency = 0.0
    assert fake.calls == 9 and fake.peak_in_flight == expected
    assert scheduler.stats.calls == 9 and scheduler.stats.by_transport == {"direct": 9}


def test_transport_choice() -> None:
    assert uses_direct(JudgeConfig(model="openai/gpt-4o-mini"))
    assert uses_direct(JudgeConfig(model="hosted_vllm/qwen"))
    assert not uses_direct(JudgeConfig(model="anthropic/claude-3-5-sonnet-20240620"))
    assert not uses_direct(JudgeConfig(model="openai/gpt-4o-mini", transport="litellm"))


def test_cache_key_uses_image_hashes_and_parameters() -> None:
    image = "data:image/png;base64," + "A" * 1000
    messages = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": image}}]}]
    key = cache_key("m", None, {"temperature": 0}, messages)
    assert key == cache_key("m", None, {"temperature": 0}, messages)
    assert key != cache_key("m", None, {"temperature": 0.5}, messages)
    other = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": image[:-1] + "B"}}]}]
    assert key != cache_key("m", None, {"temperature": 0}, other)


@pytest.mark.parametrize("name", ["none", "openai", "anthropic", "gemini", "bedrock_nova", "local"])
def test_shipped_judge_configs_validate(name: str) -> None:
    config = JudgeConfig.model_validate(yaml.safe_load((ROOT / "conf/judge" / f"{name}.yaml").read_text()) or {})
    assert (config.model is None) == (name == "none")


def test_judges_stack_builds_offline() -> None:
    from vision_eval.evaluator import EvalContext
    from vision_eval.stack import build_stack

    stack = yaml.safe_load((ROOT / "conf/evaluators/judges.yaml").read_text())
    evaluators = build_stack(stack, EvalContext())
    assert {e.spec.name for e in evaluators} == {
        "image-description", "activity", "comparison", "reasoning", "structured-output", "quality-assessment"
    }  # fmt: skip


def test_logprobs_and_sample_keys_through_the_scheduler(fake, tmp_path) -> None:
    fake.reset()
    fake.push({"reply": "8", "top_logprobs": {"8": -0.1, "7": -2.5}}, {"reply": "6"})
    judge = JudgeConfig(model="openai/m", api_base=fake.openai_base, cache_dir=str(tmp_path), temperature=0.7)
    scheduler = Scheduler(4)
    messages = [{"role": "user", "content": "score it"}]

    async def main() -> list:
        async with scheduler.session():
            first = await scheduler.complete(judge, messages, params={"logprobs": True, "top_logprobs": 2})
            other = await scheduler.complete(judge, messages, params={"logprobs": True, "top_logprobs": 2},
                                             key_extra={"sample": 1})  # fmt: skip
            again = await scheduler.complete(judge, messages, params={"logprobs": True, "top_logprobs": 2})
            return [first, other, again]

    first, other, again = asyncio.run(main())
    assert [t["token"] for t in first.logprobs[0]["top_logprobs"]] == ["8", "7"]
    assert fake.requests[0].body["top_logprobs"] == 2
    assert (first.text, other.text, again.text) == ("8", "6", "8")
    assert again.cached and again.logprobs == first.logprobs and fake.calls == 2
