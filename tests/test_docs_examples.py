"""Docs that run: every shell and Python block of README.md and docs/*.md is executed here, in order, in a fresh
folder that looks like a checkout (``datasets/`` and ``evaluators/`` linked in), offline; a block that cannot run
offline is marked right before its fence with ``<!-- not run: <reason> -->`` (or ``not run offline:``)."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
SHELL = {"bash", "sh", "shell", "console"}
PYTHON = {"python", "py"}
MARK = re.compile(r"^<!--\s*not run(?: offline)?:\s*(.*?)\s*-->$")
FENCE = re.compile(r"^```(\w*)\s*$")


@dataclass
class Block:
    file: Path
    line: int
    lang: str
    code: str
    skip: str | None
    """The reason given by a ``not run`` marker, or ``None``."""

    @property
    def runnable(self) -> bool:
        return self.lang in SHELL | PYTHON

    def __str__(self) -> str:
        return f"{self.file.name}:{self.line}"


def blocks(path: Path) -> list[Block]:
    lines = path.read_text(encoding="utf-8").splitlines()
    out: list[Block] = []
    index = 0
    while index < len(lines):
        fence = FENCE.match(lines[index])
        if not fence:
            index += 1
            continue
        start, body = index, []
        index += 1
        while index < len(lines) and not lines[index].startswith("```"):
            body.append(lines[index])
            index += 1
        before = next((lines[j].strip() for j in range(start - 1, -1, -1) if lines[j].strip()), "")
        mark = MARK.match(before)
        out.append(Block(path, start + 1, fence.group(1), "\n".join(body) + "\n", mark.group(1) if mark else None))
        index += 1
    return out


def test_every_block_is_run_or_marked_with_a_reason() -> None:
    for path in DOCS:
        lines = path.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines):
            if MARK.match(line.strip()):
                following = next((x for x in lines[number + 1 :] if x.strip()), "")
                assert FENCE.match(following), f"{path.name}:{number + 1}: a marker not right before a fence"
        for block in blocks(path):
            if block.skip is not None:
                assert block.runnable, f"{block}: only shell and Python blocks are run; no marker needed"
                assert len(block.skip) > 10, f"{block}: say why it cannot run"
    runnable = [b for path in DOCS for b in blocks(path) if b.runnable and b.skip is None]
    assert len(runnable) >= 6  # the quick start, running evaluations, outputs, Python API, scripts, fake judges


def _workspace(tmp_path: Path) -> Path:
    """A folder that looks like a checkout to the docs' relative paths, without writing into the checkout."""
    work = tmp_path / "checkout"
    work.mkdir()
    for name in ("datasets", "evaluators"):
        (work / name).symlink_to(REPO / name, target_is_directory=True)
    return work


def _env(work: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "HYDRA_FULL_ERROR"}
    scripts = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join([scripts, env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def _run(block: Block, work: Path, env: dict[str, str], number: int) -> subprocess.CompletedProcess[str]:
    if block.lang in PYTHON:
        script = work / f"_doc_block_{number}.py"
        script.write_text(block.code, encoding="utf-8")
        command = [sys.executable, str(script)]
    else:
        command = ["bash", "-euo", "pipefail", "-c", block.code]
    process = subprocess.Popen(
        command, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        stdout, stderr = process.communicate(timeout=600)
    finally:
        with contextlib.suppress(ProcessLookupError):  # a block may start a background server: stop it
            os.killpg(process.pid, signal.SIGTERM)
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


@pytest.mark.slow
@pytest.mark.parametrize("doc", [d for d in DOCS if any(b.runnable and b.skip is None for b in blocks(d))],
                         ids=lambda d: d.name)  # fmt: skip
def test_doc_examples_run(doc: Path, tmp_path: Path) -> None:
    if shutil.which("vision-eval", path=str(Path(sys.executable).parent)) is None:
        pytest.skip("vision-eval is not installed next to this interpreter (pip install -e .)")
    work = _workspace(tmp_path)
    env = _env(work)
    ran = []
    for number, block in enumerate(blocks(doc)):
        if not block.runnable or block.skip is not None:
            continue
        proc = _run(block, work, env, number)
        assert proc.returncode == 0, f"{block} failed (exit {proc.returncode}):\n{block.code}\n{proc.stderr[-3000:]}"
        ran.append(block)
    assert ran == [b for b in blocks(doc) if b.runnable and b.skip is None]
