"""Where the shipped configs, judge prompts and demo dataset live.

In a wheel they are packaged under ``vision_eval/_shipped``; in a checkout (or an editable
install) they are the top-level ``conf/``, ``evaluators/`` and ``datasets/`` folders.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def shipped_root() -> Path:
    """The folder holding ``conf/``, ``evaluators/`` and ``datasets/``."""
    packaged = _PACKAGE / "_shipped"
    return packaged if (packaged / "conf").is_dir() else _PACKAGE.parent


def conf_dir() -> Path:
    """The shipped Hydra config tree."""
    return shipped_root() / "conf"


def resource(relative: str) -> Path:
    """A shipped file or folder, e.g. ``datasets/demo`` or ``evaluators/llm-judges``."""
    return shipped_root() / relative
