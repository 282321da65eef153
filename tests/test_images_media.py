"""Media detection, safe decoding, preprocessing policy, chat extraction and provider formats."""

from __future__ import annotations

import base64
import io
import json

import pytest
from conftest import BLUE, RED, shape_png

from vision_eval.config import ImagePolicy
from vision_eval.images.chat import extract_chat, looks_like_chat
from vision_eval.images.media import ImageError, decode, detect_media_type, resolve_media_type
from vision_eval.images.policy import check_call_caps, prepare_image, target_size
from vision_eval.images.provider_rules import estimate_image_tokens, openai_image_tokens, provider_rule
from vision_eval.images.providers import format_message, openai_message
from vision_eval.images.refs import load_bytes


def _encode(fmt: str, size: tuple[int, int] = (20, 10)) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", size, (200, 10, 10)).save(buffer, format=fmt)
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("fmt", "media"), [("PNG", "image/png"), ("JPEG", "image/jpeg"), ("GIF", "image/gif"), ("WEBP", "image/webp")]
)
def test_detects_each_format_from_bytes(fmt: str, media: str) -> None:
    assert detect_media_type(_encode(fmt)) == media


def test_riff_without_webp_fourcc_is_not_an_image() -> None:
    wav = b"RIFF\x24\x00\x00\x00WAVEfmt " + b"\x00" * 32
    assert detect_media_type(wav) is None
    with pytest.raises(ImageError, match="not a PNG"):
        resolve_media_type(wav)


def test_declared_type_wins_only_when_it_agrees() -> None:
    jpeg = _encode("JPEG")
    assert resolve_media_type(jpeg, "image/jpg") == "image/jpeg"
    assert resolve_media_type(jpeg, "image/png") == "image/jpeg"


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "empty"),
        (b"\x89PNG\r\n\x1a\n" + b"garbage" * 10, "corrupt|truncated"),
        (b"hello world", "not a PNG"),
    ],
)
def test_unusable_bytes_are_image_errors(data: bytes, reason: str) -> None:
    with pytest.raises(ImageError, match=reason):
        decode(data)


def test_truncated_image_is_an_error() -> None:
    from PIL import Image

    buffer = io.BytesIO()
    Image.effect_noise((200, 200), 50).convert("RGB").save(buffer, format="JPEG")
    with pytest.raises(ImageError, match=r"truncated|corrupt"):
        decode(buffer.getvalue()[:1500])


def test_decompression_bomb_is_refused_before_decoding() -> None:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("1", (12000, 12000)).save(buffer, format="PNG")  # 144 Mpx, a few KB on disk
    data = buffer.getvalue()
    assert len(data) < 100_000
    with pytest.raises(ImageError, match=r"exceeds the limit|bomb"):
        decode(data, max_pixels=50_000_000)


def test_target_size_never_upscales_and_keeps_aspect() -> None:
    assert target_size(4000, 3000, 1024, None) == (1024, 768)
    assert target_size(800, 600, 1024, None) == (800, 600)
    assert target_size(4000, 3000, None, 1_000_000) == (1154, 866)


def test_a_cost_cap_makes_a_12mp_photo_cheap() -> None:
    from PIL import Image

    buffer = io.BytesIO()
    Image.effect_noise((4000, 3000), 40).convert("RGB").save(buffer, format="JPEG", quality=70)
    prepared = prepare_image(buffer.getvalue(), ImagePolicy(max_side=1024), label="Image 1")
    assert (prepared.width, prepared.height) == (1024, 768)
    assert prepared.media_type == "image/jpeg"
    # hand-checked: 1024x768 -> 2x2 tiles of 512 -> 85 + 4*170 = 765 tokens (vs 1105 unscaled at 2048 cap)
    assert openai_image_tokens(1024, 768) == 765
    assert estimate_image_tokens(prepared.width, prepared.height) == 765
    record = prepared.record()
    assert record["source_size"] == [4000, 3000] and record["size"] == [1024, 768]
    assert record["policy"]["max_side"] == 1024 and len(record["sha256"]) == 64
    assert record["encoding"] == "re-encoded: downscaled to the cap set (max_side / max_pixels)"


def test_default_policy_sends_a_server_the_source_and_gpt_4o_its_own_size() -> None:
    from PIL import Image

    buffer = io.BytesIO()
    Image.effect_noise((4000, 3000), 40).convert("RGB").save(buffer, format="JPEG", quality=70)
    source = buffer.getvalue()
    served = prepare_image(source, ImagePolicy(), rule=provider_rule("openai/qwen", "http://127.0.0.1:8000/v1"))
    assert served.data == source and (served.width, served.height) == (4000, 3000)
    assert served.record()["encoding"] == "source bytes" and served.record()["sizing"] == "server: the source bytes"
    # GPT-4o: fit 2048x2048 (2048x1536), then the shortest side to 768 -> 1024x768, what the model works at
    hosted = prepare_image(source, ImagePolicy(), rule=provider_rule("openai/gpt-4o"))
    assert (hosted.width, hosted.height) == (1024, 768) and hosted.media_type == "image/jpeg"
    assert hosted.record()["encoding"] == "re-encoded: downscaled to the provider's size"


def test_keep_format_sends_source_bytes_when_small() -> None:
    png = shape_png(RED)
    prepared = prepare_image(png, ImagePolicy(format="keep"))
    assert prepared.data == png and prepared.media_type == "image/png"
    assert prepared.sha256 == prepared.source_sha256


def test_caps_per_call() -> None:
    images = [prepare_image(shape_png(RED), ImagePolicy(format="png")) for _ in range(3)]
    with pytest.raises(ImageError, match="max_images_per_call"):
        check_call_caps(images, ImagePolicy(max_images_per_call=2))
    with pytest.raises(ImageError, match="max_bytes_per_call"):
        check_call_caps(images, ImagePolicy(max_bytes_per_call=100))
    check_call_caps(images, ImagePolicy())


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_extracts_images_from_every_chat_format(image_dir) -> None:
    red, blue = shape_png(RED), shape_png(BLUE)
    messages = [
        {"role": "system", "content": "be terse"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "compare"},
                {"type": "image_url", "image_url": "data:image/png;base64," + _b64(red)},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64," + _b64(blue)}},
                {"type": "input_image", "image_url": "data:image/png;base64," + _b64(red)},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": _b64(blue)}},
                {"inline_data": {"mime_type": "image/png", "data": _b64(red)}},
                {"inlineData": {"mimeType": "image/png", "data": _b64(blue)}},
                {"image": {"format": "png", "source": {"bytes": _b64(red)}}},
                {"type": "image_url", "image_url": {"url": "red.png"}},
            ],
        },
    ]
    assert looks_like_chat(json.dumps(messages))
    assert not looks_like_chat("just text")
    found = extract_chat(json.dumps(messages), image_dir)
    assert len(found.images) == 8
    assert all(ref["error"] is None for ref in found.images)
    assert [load_bytes(r) for r in found.images[:7]] == [red, blue, red, blue, red, blue, red]
    assert "[Image 1]" in found.text and "[Image 8]" in found.text
    assert "base64" not in found.text and _b64(red)[:40] not in found.text


def test_chat_image_url_refused_unless_allowed() -> None:
    part = {"role": "user", "content": [{"type": "image", "source": {"type": "url", "url": "https://x.org/a.png"}}]}
    assert "disabled" in extract_chat([part]).images[0]["error"]
    assert extract_chat([part], allow_urls=True).images[0]["error"] is None


def test_provider_formats_are_native_shapes() -> None:
    image = prepare_image(shape_png(RED), ImagePolicy(format="png"))
    parts = ["Image 1: ", image, "judge it"]
    openai = openai_message(parts, detail="low")
    assert openai["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64," + _b64(image.data), "detail": "low"},
    }
    anthropic = format_message(parts, "anthropic")["content"][1]
    assert anthropic == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": _b64(image.data)},
    }
    gemini = format_message(parts, "gemini")
    assert gemini["parts"][1] == {"inline_data": {"mime_type": "image/png", "data": _b64(image.data)}}
    nova = format_message(parts, "nova")["content"]
    assert nova[1] == {"image": {"format": "png", "source": {"bytes": _b64(image.data)}}} and nova[0] == {
        "text": "Image 1: "
    }
    with pytest.raises(ValueError, match="unknown provider"):
        format_message(parts, "nope")
