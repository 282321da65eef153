"""A run's directory: claimed by one run at a time, never shared, and resumable only when it says so.

A fresh run writes into ``run.output_dir`` unless that directory already holds a run (results, a checkpoint
or another run's lock): then it takes the first free ``<dir>-2``, ``<dir>-3``... Claiming is atomic (an
exclusive lock file), so two runs started in the same second never write to the same place. A resume names a
directory that must exist, hold a checkpoint and match the run's config; it takes over the lock of a run
that died, never of one still running.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vision_eval.checkpoint_health import Health, check, set_aside
from vision_eval.errors import CheckpointDamaged, ConfigError

LOCK = ".vision_eval.lock"
CHECKPOINT = "checkpoint"
MAX_SUFFIX = 1000


def new_run_id() -> str:
    """A run id that sorts by start time and is unique across machines: ``20261124-101500-3fa9c2``."""
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"


def _holds_run(directory: Path) -> bool:
    return any((directory / name).exists() for name in ("run.json", "results.parquet", CHECKPOINT, LOCK))


def _lock_owner(directory: Path) -> dict[str, Any] | None:
    try:
        owner = json.loads((directory / LOCK).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return owner if isinstance(owner, dict) else None


def _alive(owner: dict[str, Any] | None) -> bool:
    """True when the lock's process is still running on this machine (a lock from elsewhere counts as alive)."""
    if not owner:
        return False
    if owner.get("host") != socket.gethostname():
        return True
    try:
        os.kill(int(owner["pid"]), 0)
    except (ProcessLookupError, ValueError, KeyError, TypeError):
        return False
    except PermissionError:
        return True
    return True


def _write_lock(path: Path, exclusive: bool) -> bool:
    flags = os.O_WRONLY | os.O_CREAT | (os.O_EXCL if exclusive else os.O_TRUNC)
    try:
        fd = os.open(path, flags, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump({"pid": os.getpid(), "host": socket.gethostname(), "started": time.time()}, handle)
    return True


@dataclass
class RunDir:
    """The directory a run writes to, with its lock held."""

    path: Path
    moved_from: Path | None = None
    """The directory asked for, when it already held a run and this one moved to a suffix."""

    def release(self) -> None:
        """Give up the lock (the run ended, however it ended)."""
        try:
            owner = _lock_owner(self.path)
            if owner and owner.get("pid") == os.getpid():
                (self.path / LOCK).unlink()
        except OSError:
            pass


def claim(requested: str | Path) -> RunDir:
    """The first free directory among ``requested``, ``requested-2``, ... locked for this run."""
    base = Path(requested)
    for index in range(1, MAX_SUFFIX + 1):
        candidate = base if index == 1 else base.with_name(f"{base.name}-{index}")
        candidate.mkdir(parents=True, exist_ok=True)
        if _holds_run(candidate):
            continue
        if _write_lock(candidate / LOCK, exclusive=True):
            if (candidate / "run.json").exists() or (candidate / CHECKPOINT).exists():
                (candidate / LOCK).unlink()  # a run finished here between the check and the lock
                continue
            return RunDir(candidate, base if candidate != base else None)
    raise ConfigError("run.output_dir", f"{base} and {MAX_SUFFIX - 1} suffixed directories already hold runs")


def claim_resume(
    directory: str | Path, fingerprint: dict[str, Any], repair: bool = False
) -> tuple[RunDir, str, Health]:
    """Take over an interrupted run's directory once every file of its checkpoint is checked; returns it, the run's
    id and what the check found. ``ConfigError`` (exit 2) when there is nothing to resume, the checkpoint was
    written by a different config or another run is still writing to it; ``CheckpointDamaged`` (exit 2) when
    files are damaged, unless ``repair`` (``run.resume_damaged``) sets them aside."""
    path = Path(directory)
    if not path.is_dir():
        raise ConfigError("run.resume", f"{path} does not exist: there is no run to resume there")
    checkpoint = path / CHECKPOINT
    if not checkpoint.is_dir():
        finished = (path / "results.parquet").exists()
        why = "its run completed and removed its checkpoint" if finished else "no run was checkpointed there"
        raise ConfigError("run.resume", f"{path} holds no checkpoint to resume ({why})")
    owner = _lock_owner(path)
    if (path / LOCK).exists() and _alive(owner):
        raise ConfigError("run.resume", f"a run (pid {owner.get('pid') if owner else '?'}) is still writing to {path}")
    health = check(checkpoint)
    recorded = (health.manifest or {}).get("config", fingerprint)
    differing = sorted(key for key in set(recorded) | set(fingerprint) if recorded.get(key) != fingerprint.get(key))
    if differing:
        raise ConfigError(
            "run.resume",
            f"the checkpoint in {path} was written with a different {', '.join(differing)} config; "
            "resume with the same dataset, evaluators, judge and candidate, or start a new run",
        )
    if health.damaged and not repair:
        raise CheckpointDamaged(health.describe())
    if health.damaged:
        set_aside(health)
    _write_lock(path / LOCK, exclusive=False)
    return RunDir(path), str((health.manifest or {}).get("run_id") or new_run_id()), health
