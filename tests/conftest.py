"""Shared fixtures: small generated images, the fake provider servers, fake cloud credentials,
and an environment for subprocesses that import this checkout."""

from __future__ import annotations

import base64
import io
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

REPO = Path(__file__).resolve().parent.parent


def png_bytes(colour: tuple[int, int, int] = (200, 30, 30), size: tuple[int, int] = (8, 6)) -> bytes:
    """A tiny solid-colour PNG."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", size, colour).save(buffer, format="PNG")
    return buffer.getvalue()


def shape_png(
    colour: tuple[int, int, int], shapes: int = 1, size: tuple[int, int] = (96, 64), fmt: str = "PNG"
) -> bytes:
    """A white image with ``shapes`` filled circles of ``colour``."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", size, (255, 255, 255))
    draw = ImageDraw.Draw(image)
    for k in range(shapes):
        x = 4 + k * 22
        draw.ellipse((x, 8, x + 16, 24), fill=colour)
    buffer = io.BytesIO()
    image.save(buffer, format=fmt)
    return buffer.getvalue()


RED = (220, 40, 40)
BLUE = (40, 70, 220)
GREEN = (40, 170, 60)


def sent_images(fake: Any) -> list[bytes]:
    """The bytes of every image the fake received in OpenAI chat requests, in order."""
    found = []
    for request in fake.requests:
        for message in request.body["messages"]:
            for part in message["content"] if isinstance(message["content"], list) else []:
                if part.get("type") == "image_url":
                    found.append(base64.b64decode(part["image_url"]["url"].split(",", 1)[1]))
    return found


JUDGED = "desc:\n  type: llm_judge\n  prompt: image-description\n"
"""An evaluators file with one image-description judge."""


def user_project(root: Path, rows: list[dict[str, Any]], stacks: dict[str, str], image_folder: str = "") -> Path:
    """A user's folder under ``root``: ``data/`` with ``red.png`` and ``blue.png`` (in ``image_folder``) and
    ``rows.jsonl``; ``conf/`` with the dataset ``mine`` and one evaluators file per entry of ``stacks``."""
    images = root / "data" / image_folder
    images.mkdir(parents=True)
    (images / "red.png").write_bytes(shape_png(RED, 2))
    (images / "blue.png").write_bytes(shape_png(BLUE, 3))
    (root / "data" / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    conf = root / "conf"
    (conf / "dataset").mkdir(parents=True)
    (conf / "evaluators").mkdir()
    (conf / "dataset" / "mine.yaml").write_text(f"path: {root / 'data' / 'rows.jsonl'}\n")
    for name, text in stacks.items():
        (conf / "evaluators" / f"{name}.yaml").write_text(text)
    return root


@pytest.fixture(scope="session")
def fake() -> Iterator[object]:
    from vision_eval.testing.fake_providers import FakeProviders

    with FakeProviders() as server:
        yield server


@pytest.fixture
def fresh_fake(fake: object) -> object:
    fake.reset()  # type: ignore[attr-defined]
    return fake


@pytest.fixture(scope="session")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """Headless Chromium (one for the session), or a skip when none is installed."""
    from chromium import Browser, chromium

    binary = chromium()
    if binary is None:
        pytest.skip("no chromium binary found (apt-get install chromium, or set VISION_EVAL_CHROMIUM)")
    chrome = Browser(binary, tmp_path_factory.mktemp("chromium-profile"))
    yield chrome
    chrome.close()


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("boto3")  # litellm signs Bedrock requests with botocore
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "fake")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "fake")
    monkeypatch.setenv("AWS_REGION_NAME", "us-east-1")


@pytest.fixture
def image_dir(tmp_path: Path) -> Path:
    (tmp_path / "red.png").write_bytes(shape_png(RED, 2))
    (tmp_path / "blue.png").write_bytes(shape_png(BLUE, 3))
    (tmp_path / "green.jpg").write_bytes(shape_png(GREEN, 1, fmt="JPEG"))
    return tmp_path


def child_env(**extra: str) -> dict[str, str]:
    """Environment for child processes that import this checkout's package (``extra`` variables set too)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.pop("HYDRA_FULL_ERROR", None)
    if env.get("MUTANT_UNDER_TEST") == "stats":  # mutmut's call-recording pass (docs/testing.md) works in-process only
        env["MUTANT_UNDER_TEST"] = ""
    return {**env, **extra}


@pytest.fixture
def subprocess_env() -> dict[str, str]:
    """Environment for child processes that import this checkout's package."""
    return child_env()


@pytest.fixture
def python() -> str:
    """The interpreter running the tests."""
    return sys.executable
