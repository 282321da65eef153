"""Each provider through litellm with api_base: images reach the fake as pixels, in order."""

from __future__ import annotations

import base64
import json

import pytest
from conftest import BLUE, RED, shape_png

from vision_eval.config import ImagePolicy
from vision_eval.images.policy import prepare_image
from vision_eval.images.providers import openai_message
from vision_eval.testing.fake_providers import default_verdict, inspect_image


def _completion(**kwargs):
    import litellm

    litellm.suppress_debug_info = True
    return litellm.completion(api_key="k", max_retries=0, num_retries=0, **kwargs)


def _messages(text: str) -> list[dict]:
    red = prepare_image(shape_png(RED, 2), ImagePolicy(format="png"), label="Image 1")
    blue = prepare_image(shape_png(BLUE, 3), ImagePolicy(format="png"), label="Image 2")
    return [openai_message([f'{text} {{"scores": {{"accuracy": 0}}}}\nImage 1: ', red, "\nImage 2: ", blue])]


def test_inspect_image_counts_shapes_and_colour() -> None:
    seen = inspect_image(shape_png(BLUE, 3))
    assert (seen.colour, seen.shapes, seen.width) == ("blue", 3, 96)


PROVIDERS = [
    ("openai/gpt-4o-mini", "openai_base", "openai"),
    ("anthropic/claude-3-5-sonnet-20240620", "base", "anthropic"),
    ("gemini/gemini-1.5-flash", "base", "gemini"),
    ("bedrock/converse/us.amazon.nova-pro-v1:0", "base", "bedrock"),
]


@pytest.mark.parametrize(("model", "base_attr", "provider"), PROVIDERS)
def test_each_provider_receives_native_images_in_order(fresh_fake, aws_env, model, base_attr, provider) -> None:
    response = _completion(model=model, api_base=getattr(fresh_fake, base_attr), messages=_messages("red and blue"))
    assert fresh_fake.calls_by_provider == {provider: 1}
    request = fresh_fake.requests[0]
    assert [(i.label, i.colour, i.shapes) for i in request.images] == [("Image 1", "red", 2), ("Image 2", "blue", 3)]
    body = json.dumps(request.body)
    if provider == "anthropic":
        assert '"type": "image"' in body and '"media_type": "image/png"' in body
    if provider == "gemini":
        assert "inline_data" in body or "inlineData" in body
    if provider == "bedrock":
        assert '"format": "png"' in body
    reply = response.choices[0].message.content
    assert '"accuracy": 0.9' in reply
    assert response.usage.prompt_tokens > 0


def test_verdict_is_grounded_in_pixels(fresh_fake) -> None:
    good = _completion(model="openai/gpt-4o-mini", api_base=fresh_fake.openai_base, messages=_messages("red, blue"))
    wrong = _completion(model="openai/gpt-4o-mini", api_base=fresh_fake.openai_base, messages=_messages("green only"))
    assert '"accuracy": 0.9' in good.choices[0].message.content
    assert '"accuracy": 0.3' in wrong.choices[0].message.content


def test_base64_in_text_is_rejected(fresh_fake) -> None:
    import litellm

    payload = base64.b64encode(shape_png(RED)).decode()
    messages = [{"role": "user", "content": f"look: data:image/png;base64,{payload}"}]
    with pytest.raises(litellm.BadRequestError):
        _completion(model="openai/gpt-4o-mini", api_base=fresh_fake.openai_base, messages=messages)


def test_scripted_errors_and_logprobs(fresh_fake) -> None:
    import litellm

    fresh_fake.push(
        {"status": 429, "retry_after": 0.5}, {"malformed": True}, {"reply": "7", "top_logprobs": {"7": -0.2, "8": -1.8}}
    )
    with pytest.raises(litellm.RateLimitError):
        _completion(model="openai/gpt-4o-mini", api_base=fresh_fake.openai_base, messages=_messages("x"))
    with pytest.raises(Exception):  # noqa: B017 - litellm maps a non-JSON body to several exception kinds
        _completion(model="openai/gpt-4o-mini", api_base=fresh_fake.openai_base, messages=_messages("x"))
    response = _completion(
        model="openai/gpt-4o-mini",
        api_base=fresh_fake.openai_base,
        messages=_messages("x"),
        logprobs=True,
        top_logprobs=2,
    )
    assert response.choices[0].message.content == "7"
    top = response.choices[0].logprobs.content[0].top_logprobs
    assert [t.token for t in top] == ["7", "8"]
    assert fresh_fake.calls == 3


def test_default_verdict_without_images() -> None:
    from vision_eval.testing.fake_providers import FakeRequest

    reply = default_verdict(FakeRequest("openai", "m", '"scores": {"a": 0, "b": 0}', [], {}, {}))
    parsed = json.loads(reply.split("```json\n")[1].split("\n```")[0])
    assert parsed["scores"] == {"a": 0.0, "b": 0.0}
