"""Faults of the process, each as an operator meets it, and what the run must say: one line and the right exit code,
never a traceback; no finished row lost; nothing paid twice without saying so.

* A full disk: the CLI on a real small tmpfs at several fill levels (CI runs as root; skipped, saying why, where a
  filesystem cannot be mounted), and a file-size limit (``RLIMIT_FSIZE``, runs anywhere): exit 3, one line, no
  ``.tmp`` left, no truncated file, and the resume after space is freed completes.
* A damaged checkpoint (:mod:`test_checkpoint_damage`).
* The exit codes of the README's table, each from the command line; Ctrl-C as a terminal sends it.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest

CLI = [sys.executable, "-m", "vision_eval.cli"]
OUTPUTS = ("results.parquet", "dimensions.parquet", "fields.parquet", "samples.parquet", "run.json", "report.html")


def run_cli(args: list[str], cwd: Path, env: dict[str, str], **options: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300, **options)


def one_line(stderr: str, text: str) -> str:
    """The one stderr line holding ``text`` (asserting there is exactly one, and no traceback anywhere)."""
    assert "Traceback" not in stderr, stderr[-3000:]
    lines = [line for line in stderr.splitlines() if text in line]
    assert len(lines) == 1, stderr[-3000:]
    return lines[0]


def leftovers(folder: Path) -> list[Path]:
    """Temporary files or folders a write left behind."""
    return [p for p in folder.rglob("*") if p.name.endswith(".tmp") or p.name.startswith(".tmp-")]


def assert_whole(folder: Path) -> None:
    """Every output file present reads whole (none truncated)."""
    for name in OUTPUTS:
        path = folder / name
        if not path.exists():
            continue
        if name.endswith(".parquet"):
            pl.read_parquet(path)
        elif name == "run.json":
            json.loads(path.read_text())
        else:
            assert path.read_text().rstrip().endswith("</html>"), path


# --- a full disk ------------------------------------------------------------------------------------------------


class SmallDisk:
    """A tmpfs of a chosen size, resized at will (root only)."""

    def __init__(self, mount_point: Path) -> None:
        self.path = mount_point
        self.mounted = False

    def mount(self, size: int) -> Path:
        self.unmount()
        self.path.mkdir(parents=True, exist_ok=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(self.path)], check=True)
        self.mounted = True
        return self.path

    def resize(self, size: int) -> None:
        subprocess.run(["mount", "-o", f"remount,size={size}", str(self.path)], check=True)

    def unmount(self) -> None:
        if self.mounted:
            subprocess.run(["umount", "-l", str(self.path)], check=False)
            self.mounted = False


def _can_mount(probe: Path) -> str | None:
    """Why a tmpfs cannot be mounted here (``None`` when it can)."""
    if os.geteuid() != 0:
        return "mounting a small tmpfs needs root (CI runs as root)"
    if shutil.which("mount") is None:
        return "no mount command"
    probe.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(probe)], capture_output=True)
    if done.returncode != 0:
        return f"this container cannot mount a tmpfs: {done.stderr.decode(errors='replace').strip()}"
    subprocess.run(["umount", str(probe)], check=False)
    return None


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[SmallDisk]:
    why = _can_mount(tmp_path / "probe")
    if why is not None:
        pytest.skip(why)
    disk = SmallDisk(tmp_path / "disk")
    yield disk
    disk.unmount()


def demo_size(tmp_path: Path, env: dict[str, str]) -> int:
    """Bytes the demo's finished run directory takes (what a disk must at least hold)."""
    done = run_cli(["hydra.run.dir=full"], tmp_path, env)
    assert done.returncode == 0, done.stderr[-3000:]
    return sum(p.stat().st_size for p in (tmp_path / "full").rglob("*") if p.is_file())


def test_a_full_disk_at_every_fill_level_is_exit_3_in_one_line_and_the_resume_completes(
    small_disk: SmallDisk, tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    """The demo on a real tmpfs too small for it, from almost empty to almost enough: whichever file meets the
    full disk (the call journal, a checkpoint part, samples, an output file, the report), the run exits 3 with
    one line naming it and saying how to resume, leaves no temporary file and no truncated output; after the
    disk grows, the resume writes every output and removes the checkpoint."""
    needed = demo_size(tmp_path, subprocess_env)
    failed_on = set()
    for share in (0.02, 0.1, 0.3, 0.6, 0.9, 0.97):
        disk = small_disk.mount(max(4096, int(needed * share)))
        done = run_cli([f"hydra.run.dir={disk / 'run'}"], tmp_path, subprocess_env)
        assert done.returncode == 3, (share, done.stderr[-3000:])
        line = one_line(done.stderr, "could not be written")
        assert line.startswith("vision-eval: exit 3: the outputs could not be written: "), line
        assert f"resume with run.resume={disk / 'run'}" in line, line
        failed_on.add(line.split(": ")[3].split("/")[-1][:8])
        assert not leftovers(disk), leftovers(disk)
        assert_whole(disk / "run")
        small_disk.resize(needed * 4)
        resumed = run_cli([f"hydra.run.dir={disk / 'again'}", f"run.resume={disk / 'run'}"], tmp_path, subprocess_env)
        assert resumed.returncode == 0, (share, resumed.stderr[-3000:])
        assert all((disk / "run" / name).is_file() for name in OUTPUTS) and not (disk / "run" / "checkpoint").exists()
        assert_whole(disk / "run")
    assert len(failed_on) >= 3, failed_on  # the levels met the disk in different files


def _limited(limit: int) -> Callable[[], None]:
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead of killing
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


@pytest.mark.parametrize(
    ("limit", "failed"),
    [(6_000, "checkpoint/calls.sqlite: disk I/O error; no output file was written"),
     (100_000, "report.html: File too large; written: results.parquet, dimensions.parquet, fields.parquet")],
    ids=["journal", "report"],
)  # fmt: skip
def test_a_file_size_limit_is_exit_3_in_one_line_and_the_resume_completes(
    limit: int, failed: str, tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    """A file-size limit (runs unprivileged): 6 kB stops the call journal (SQLite's shared-memory file is
    larger), 100 kB the report. Exit 3, one line naming the file and what was written, no temporary file, no
    run.json (written last, it would say the outputs are all there); the resume without the limit completes."""
    run = tmp_path / "run"
    done = run_cli([f"hydra.run.dir={run}"], tmp_path, subprocess_env, preexec_fn=_limited(limit))
    assert done.returncode == 3, done.stderr[-3000:]
    line = one_line(done.stderr, "could not be written")
    assert failed in line and f"resume with run.resume={run}" in line, line
    assert not leftovers(run) and not (run / "run.json").exists()
    assert_whole(run)
    resumed = run_cli(["hydra.run.dir=again", f"run.resume={run}"], tmp_path, subprocess_env)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert all((run / name).is_file() for name in OUTPUTS) and not (run / "checkpoint").exists()
