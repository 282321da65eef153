"""The public API: every name ``vision_eval`` and ``vision_eval.grading`` export resolves, and the heavy ones are
imported only when first used (``import vision_eval`` stays cheap)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import vision_eval
import vision_eval.grading

HEAVY = ("litellm", "numpy", "scipy", "pyarrow", "duckdb", "jinja2")


@pytest.mark.parametrize("package", [vision_eval, vision_eval.grading], ids=lambda p: p.__name__)
def test_every_exported_name_resolves(package: object) -> None:
    names = package.__all__  # type: ignore[attr-defined]
    assert len(names) == len(set(names))
    missing = [name for name in names if getattr(package, name, None) is None]
    assert not missing


def test_the_grading_types_are_the_same_objects_at_both_addresses() -> None:
    for name in vision_eval.grading.__all__:
        if name in vision_eval.__all__:
            assert getattr(vision_eval, name) is getattr(vision_eval.grading, name)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        _ = vision_eval.Nothing  # type: ignore[attr-defined]
    from vision_eval.grading import prompts  # a submodule, not a lazy export

    assert prompts.__name__ == "vision_eval.grading.prompts"


def test_importing_vision_eval_imports_nothing_heavy(subprocess_env: dict[str, str]) -> None:
    code = (
        "import sys\n"
        "import vision_eval\n"
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules) or 'none')\n"
        "print('vision_eval.grading.base' in sys.modules)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=subprocess_env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["none", "False"]
