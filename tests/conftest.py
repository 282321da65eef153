"""Shared fixtures: tiny generated images and an environment for subprocesses."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def png_bytes(colour: tuple[int, int, int] = (200, 30, 30), size: tuple[int, int] = (8, 6)) -> bytes:
    """A tiny solid-colour PNG."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", size, colour).save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture
def image_dir(tmp_path: Path) -> Path:
    """A folder with red.png and blue.png."""
    (tmp_path / "red.png").write_bytes(png_bytes((220, 20, 20)))
    (tmp_path / "blue.png").write_bytes(png_bytes((20, 20, 220)))
    return tmp_path


@pytest.fixture
def subprocess_env() -> dict[str, str]:
    """Environment for child processes that import this checkout's package."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.pop("HYDRA_FULL_ERROR", None)
    return env


@pytest.fixture
def python() -> str:
    """The interpreter running the tests."""
    return sys.executable
