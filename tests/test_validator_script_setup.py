"""The four validator scripts run as documented on a machine where vision-eval is not installed: with plain
``python`` (the package of the checkout they sit in) and with ``uv run`` (their PEP 723 header names only packages
published on PyPI)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "evaluators" / "code-validators"
KINDS = ("count", "ocr", "json", "chart")
RECORDS = {
    "count": ({"output": "5 bottles", "expected_output": "5 bottles"}, 0),
    "ocr": ({"output": "Project Proposal", "expected_output": "Project Proposal"}, 0),
    "json": ({"output": '{"total": 41}', "expected_output": '{"total": 42}'}, 1),
    "chart": ({"output": "revenue $2.4M", "expected_output": "$2.4M"}, 0),
}


def _header(path: Path) -> dict:
    block = re.search(r"^# /// script\n((?:#.*\n)+?)# ///$", path.read_text(encoding="utf-8"), re.M)
    assert block, f"{path.name} has no PEP 723 header"
    return tomllib.loads("".join(line[2:] + "\n" for line in block.group(1).splitlines()))


def _clean_env() -> dict[str, str]:
    """No PYTHONPATH: the script must find the package by itself."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}


@pytest.mark.parametrize("kind", KINDS)
def test_header_asks_only_for_published_dependencies_of_the_package(kind: str) -> None:
    header = _header(SCRIPTS / f"{kind}_validator.py")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = set(project["dependencies"])
    wanted = header["dependencies"]
    assert not any(d.startswith("vision-eval") for d in wanted)  # not on PyPI
    assert set(wanted) <= declared, set(wanted) - declared  # same specifiers as the package itself
    assert header["requires-python"] == project["requires-python"]


@pytest.mark.parametrize("kind", KINDS)
def test_plain_python_uses_the_checkout(kind: str, tmp_path: Path) -> None:
    record, code = RECORDS[kind]
    script = SCRIPTS / f"{kind}_validator.py"
    proc = subprocess.run(
        [sys.executable, str(script), json.dumps(record)],
        cwd=tmp_path,
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == code, proc.stderr
    assert json.loads(proc.stdout)["status"] == "processed"


def _uv() -> str | None:
    return shutil.which("uv") or shutil.which("uv", path=str(Path(sys.executable).parent))


@pytest.mark.slow
@pytest.mark.skipif(_uv() is None, reason="uv is not installed")
def test_uv_run_installs_the_header_and_runs() -> None:
    record, code = RECORDS["count"]
    # As the README says, from the checkout: uv reads the script's header, not the project's pyproject.toml.
    proc = subprocess.run(
        [str(_uv()), "run", "evaluators/code-validators/count_validator.py", json.dumps(record)],
        cwd=ROOT,
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode != code and "Failed to fetch" in proc.stderr:
        pytest.skip(f"uv cannot reach the package index here: {proc.stderr[-300:]}")
    assert proc.returncode == code, proc.stderr
    result = json.loads(proc.stdout)
    assert result["status"] == "processed" and result["score"] == 1.0
