"""Images go at the largest size the model's provider uses: the providers' published sizing examples, which models
count as a server of your own, re-encoding only for a provider's limit, what a hosted provider's candidate and judge
receive (and run.json records), and the dry run's image tokens sized otherwise."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

import vision_eval as ve
from vision_eval.config import ImagePolicy
from vision_eval.images.media import ImageError
from vision_eval.images.policy import prepare_image
from vision_eval.images.provider_rules import SERVER, ProviderRule, patches, provider_rule


def test_anthropic_sizes_are_the_published_examples() -> None:
    # platform.claude.com/docs/en/build-with-claude/vision: an A4 scan, and the downscaled 4K, 3 MP and HD images
    claude = provider_rule("anthropic/claude-sonnet-4-5")
    assert claude.fit(1075, 1520) == (924, 1307)
    assert claude.fit(3840, 2160) == (1456, 819) and claude.fit(1920, 1080) == (1456, 819)
    assert claude.fit(2000, 1500) == (1270, 952) and claude.fit(200, 200) == (200, 200)
    assert claude.tokens(1000, 1000) == 1296 and claude.tokens(1092, 1092) == 1521
    opus = provider_rule("anthropic/claude-opus-4-7")  # high resolution: 2576 px, 4784 patches
    assert opus.fit(3840, 2160) == (2576, 1449) and opus.fit(1920, 1080) == (1920, 1080)
    assert provider_rule("bedrock/anthropic.claude-opus-4-8-v1:0").fit(3840, 2160) == (2576, 1449)
    assert provider_rule("anthropic/claude-3-5-sonnet-20240620").fit(3840, 2160) == (1456, 819)


def test_openai_sizes_are_the_published_examples() -> None:
    # developers.openai.com/api/docs/guides/images-vision: "Calculating costs"
    mini = provider_rule("openai/gpt-5-mini")  # 1,536 patches, 2048 px, 1.62 tokens per patch
    assert mini.fit(1800, 2400) == (1056, 1408) and patches(1056, 1408, 32) == 1452
    assert mini.fit(1024, 1024) == (1024, 1024) and mini.sent_tokens(1800, 2400) == 2353  # ceil(1452 x 1.62)
    gpt_4o = provider_rule("openai/gpt-4o")  # tiles: fit 2048, then a shortest side of 768
    assert gpt_4o.sent_tokens(1024, 1024) == 765 and gpt_4o.sent_tokens(2048, 4096) == 1105
    assert gpt_4o.fit(1700, 2200) == (768, 994)
    assert provider_rule("openai/gpt-4o", detail="low").fit(1700, 2200) == (395, 512)
    # gpt-5.4 (auto = high: 2,500 patches, 2048 px): shrink sqrt(32² x 2500 / 12M) = 0.4619, trimmed to whole
    # patches along the width (57 / 57.73) -> 0.4560: 1823x1367, 57 x 43 = 2,451 patches
    assert provider_rule("openai/gpt-5.4").fit(4000, 3000) == (1823, 1367)
    assert provider_rule("openai/gpt-5.4", detail="original").fit(3000, 2000) == (3000, 2000)  # 5,922 of 10,000
    # gpt-5.5 (10,000 patches, 6000 px): shrink 0.5409, trimmed along the height (84 / 84.51) -> 0.5376: 3763x2688,
    # 118 x 84 = 9,912 patches
    assert provider_rule("openai/gpt-5.5").fit(7000, 5000) == (3763, 2688)
    assert provider_rule("openai/gpt-5.6").fit(4000, 3000) == (4000, 3000)  # keeps the input size...
    assert patches(*provider_rule("openai/gpt-5.6").fit(8000, 8000), 32) <= 30_000  # ...within 30,000 patches


@pytest.mark.parametrize(
    ("model", "api_base", "sizing"),
    [
        ("openai/Qwen2-VL-7B-Instruct", "http://127.0.0.1:8000/v1", "server: the source bytes"),
        ("openai/llava", "http://gpu-box:11434/v1", "server: the source bytes"),
        ("hosted_vllm/Qwen/Qwen2-VL-7B-Instruct", None, "server: the source bytes"),
        ("ollama/llava", None, "server: the source bytes"),
        ("openai/gpt-4o-mini", None, "openai tiles 2048/768"),
        ("openai/gpt-4o-mini", "https://api.openai.com/v1", "openai tiles 2048/768"),
        ("gpt-4.1-mini", None, "openai patches 1536/2048px"),
        ("openai/some-future-model", None, "openai: the source (30,000 patches at most)"),
        ("anthropic/claude-sonnet-4-5", None, "anthropic 1568px/1568 patches"),
        ("gemini/gemini-2.5-flash", None, "gemini: the source"),
        ("bedrock/converse/us.amazon.nova-lite-v1:0", None, "nova: the source (8000px at most)"),
        ("mistral/pixtral-12b", None, "unknown provider: the source"),
    ],
)
def test_which_rule_a_model_follows(model: str, api_base: str | None, sizing: str) -> None:
    assert provider_rule(model, api_base).name == sizing


def test_the_providers_byte_limits() -> None:
    assert provider_rule("anthropic/claude-sonnet-4-5").max_image_bytes == 7_500_000  # 10 MB of base64
    assert provider_rule("bedrock/anthropic.claude-sonnet-4-5").max_image_bytes == 3_750_000  # 5 MB of base64
    assert provider_rule("vertex_ai/gemini-2.5-flash").max_image_bytes == 7_000_000
    assert provider_rule("gemini/gemini-2.5-flash").max_request_bytes == 15_000_000  # 20 MB of base64 inline
    assert SERVER.max_image_bytes is None and SERVER.max_request_bytes is None


def _noise_png(width: int, height: int) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.effect_noise((width, height), 60).convert("RGB").save(buffer, format="PNG")
    return buffer.getvalue()


def test_an_image_over_a_providers_byte_limit_is_re_encoded_within_it_and_only_then() -> None:
    data = _noise_png(800, 600)
    limited = ProviderRule("a 150 kB provider", max_image_bytes=150_000)
    assert len(data) > 150_000
    sent = prepare_image(data, ImagePolicy(), rule=limited)
    assert len(sent.data) <= 150_000 and sent.media_type == "image/jpeg"
    assert sent.record()["encoding"].startswith("re-encoded: over the provider's 150,000-byte limit per image")
    roomy = prepare_image(data, ImagePolicy(), rule=ProviderRule("roomy", max_image_bytes=len(data)))
    assert roomy.data == data and roomy.record()["encoding"] == "source bytes"
    with pytest.raises(ImageError, match="cannot bring the image within the provider's 100-byte limit"):
        prepare_image(data, ImagePolicy(), rule=ProviderRule("tiny", max_image_bytes=100))


def test_a_format_the_provider_refuses_is_re_encoded() -> None:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (40, 30), (200, 20, 20)).save(buffer, format="WEBP", lossless=True)
    webp = buffer.getvalue()
    no_webp = ProviderRule("png and jpeg only", media_types=frozenset({"image/png", "image/jpeg"}))
    sent = prepare_image(webp, ImagePolicy(), rule=no_webp)
    assert sent.media_type == "image/jpeg" and "does not accept image/webp" in sent.record()["encoding"]
    assert prepare_image(webp, ImagePolicy(), rule=provider_rule("openai/gpt-4o")).data == webp


def _page(folder: Path) -> Path:
    """A 1700x2200 PNG page (a few lines of text on white)."""
    from PIL import Image, ImageDraw, ImageFont

    page = Image.new("RGB", (1700, 2200), "white")
    ImageDraw.Draw(page).text((100, 100), "Total due: 4,250.00", fill="black", font=ImageFont.load_default(20))
    page.save(folder / "page.png")
    return folder / "page.png"


def _rows(folder: Path) -> list[dict[str, Any]]:
    return [{"id": "p", "input": "Read the page.", "images": [str(_page(folder))], "expected_output": "x"}]


def _claude(fake: Any, **extra: Any) -> dict[str, Any]:
    return {"model": "anthropic/claude-sonnet-4-5", "api_base": fake.anthropic_base, "api_key": "k", "cache": False,
            **extra}  # fmt: skip


def test_a_hosted_providers_candidate_and_judge_receive_the_size_its_model_uses(
    fresh_fake: Any, tmp_path: Path
) -> None:
    # Claude (1568 px, 1568 patches of 28 px): 1700x2200 -> 952x1232, 34 x 44 = 1,496 patches; a larger page at the
    # same ratio would take 45 rows of patches and 35 columns, 1,575 patches > 1,568.
    exact = {"exact": {"type": "exact_match"}}
    generated = ve.evaluate(_rows(tmp_path), evaluators=exact, candidate=_claude(fresh_fake), output_dir=tmp_path / "c")
    judge = {"desc": {"type": "llm_judge", "prompt": "image-description", "judge": _claude(fresh_fake)}}
    judged = ve.evaluate([{**_rows(tmp_path)[0], "output": "a page"}], evaluators=judge, output_dir=tmp_path / "j")
    assert [(i.width, i.height) for r in fresh_fake.requests for i in r.images] == [(952, 1232), (952, 1232)]
    assert {i.media_type for r in fresh_fake.requests for i in r.images} == {"image/png"}  # PNG stays PNG
    for caller, run in (("candidate", "c"), ("desc", "j")):
        record = json.loads((tmp_path / run / "run.json").read_text())["images_sent"][caller]
        record = record["anthropic/claude-sonnet-4-5"]
        assert record["sizing"] == ["anthropic 1568px/1568 patches"]
        column = record["columns"]["images"]
        assert column["sizes"] == {"952x1232": 1} and column["largest_source"] == [1700, 2200]
        assert column["re_encoded"] == {"downscaled to the provider's size": 1} and column["sent_as_source_bytes"] == 0
    assert generated.run_info["images_sent"]["candidate"]["anthropic/claude-sonnet-4-5"]["policy"]["quality"] == 95
    assert judged.run_info["images_sent"]["desc"]["anthropic/claude-sonnet-4-5"]["policy"]["quality"] == 85
    assert generated.exit_code == 0 and judged.exit_code == 0


def test_a_judges_cost_cap_is_honoured(fresh_fake: Any, tmp_path: Path) -> None:
    judge = {"desc": {"type": "llm_judge", "prompt": "image-description",
                      "judge": _claude(fresh_fake, image={"max_side": 512})}}  # fmt: skip
    ve.evaluate([{**_rows(tmp_path)[0], "output": "a page"}], evaluators=judge)
    assert [(i.width, i.height) for i in fresh_fake.requests[0].images] == [(395, 512)]


def test_the_dry_run_prices_the_images_sized_otherwise(fresh_fake: Any, tmp_path: Path, capsys: Any) -> None:
    from vision_eval.dryrun import print_plan

    evaluators = {"desc": {"type": "llm_judge", "prompt": "image-description",
                           "judge": _claude(fresh_fake, image={"max_side": 512})}}  # fmt: skip
    result = ve.evaluate(_rows(tmp_path), evaluators=evaluators, candidate=_claude(fresh_fake), run={"dry_run": True})
    assert fresh_fake.calls == 0
    lines = {line["evaluator"]: line for line in result.run_info["plan"]["lines"]}
    # the candidate, at the provider's size: 952x1232 = 34 x 44 = 1,496 patches; with max_side=1024: 791x1024 =
    # 29 x 37 = 1,073
    candidate = lines["candidate"]
    assert candidate["image_tokens"] == 1496 and candidate["sized_otherwise"] == "max_side=1024"
    assert candidate["image_tokens_sized_otherwise"] == 1073
    # the judge, capped at 512: 395x512 = 15 x 19 = 285 patches; at the provider's size 1,496
    desc = lines["desc"]
    assert desc["image_tokens"] == 285 and desc["sized_otherwise"] == "the provider's size"
    assert desc["image_tokens_sized_otherwise"] == 1496
    assert result.run_info["images_sent"]["desc"]["anthropic/claude-sonnet-4-5"]["columns"]["images"]["sizes"] == {
        "395x512": 1
    }
    print_plan(result.run_info["plan"], [])
    out = capsys.readouterr().out
    assert "image tokens: as sent, and sized otherwise" in out and "+1,211" in out and "-423" in out
