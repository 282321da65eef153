"""A run's directory: claimed by one run at a time, never shared, and resumable only when it says so.

A fresh run writes into ``run.output_dir`` unless that directory already holds a run (results, a checkpoint
or another run's lock): then it takes the first free ``<dir>-2``, ``<dir>-3``... Claiming is atomic (an
exclusive lock file), so two runs started in the same second never write to the same place. A resume names a
directory that must exist, hold a checkpoint and match the run's config; it takes over the lock of a run that is
provably gone (:mod:`vision_eval.launch.holder`: its pid is gone from this host, its SLURM job is over, or it was an
earlier attempt of this very job), never of one that may still be running. A fresh run whose directory holds an
interrupted run of the same config, whose holder is gone, continues it (a requeued or retried sweep job resumes
its own checkpoint).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vision_eval.checkpoint import MANIFEST
from vision_eval.checkpoint_health import Health, check, set_aside
from vision_eval.errors import CheckpointDamaged, ConfigError
from vision_eval.launch import holder

LOCK = ".vision_eval.lock"
TAKEOVER = ".vision_eval.takeover"
"""A folder that exists while one process takes over a dead run's lock (a mutex: ``mkdir`` is atomic)."""
TAKEOVER_STALE_S = 60
CHECKPOINT = "checkpoint"
MAX_SUFFIX = 1000


class _Busy(ConfigError):
    """The directory's lock is held by a run that may still be running."""


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


def _staged_lock(path: Path) -> Path:
    """This process's lock record, written beside ``path`` (it becomes the lock by a link or a rename, so that
    nobody ever reads a lock half written)."""
    staging = path.with_name(f"{path.name}.{os.getpid()}-{secrets.token_hex(3)}")
    staging.write_text(json.dumps(holder.me()), encoding="utf-8")
    return staging


def _create_lock(path: Path) -> bool:
    """Create the lock at ``path`` for this process, atomically; ``False`` when there is one already."""
    staging = _staged_lock(path)
    try:
        os.link(staging, path)
    except FileExistsError:
        return False
    except OSError:  # a filesystem without hard links: an exclusive create (empty for an instant)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(staging.read_text(encoding="utf-8"))
    finally:
        staging.unlink(missing_ok=True)
    return True


def _lock(directory: Path) -> tuple[bool, str | None]:
    """Take ``directory``'s lock. Returns ``(True, None)`` when it was free, ``(True, note)`` when it was taken
    over from a holder that is provably gone (:mod:`vision_eval.launch.holder`), ``(False, why)`` when its holder
    may still be running. A takeover happens under a short-lived mutex folder, so two processes never take over
    the same lock."""
    path = directory / LOCK
    if _create_lock(path):
        return True, None
    mutex = directory / TAKEOVER
    try:
        os.mkdir(mutex)
    except FileExistsError:
        try:
            stale = time.time() - mutex.stat().st_mtime > TAKEOVER_STALE_S
        except OSError:
            stale = False
        if not stale:
            return False, "another run is taking it over"
    try:
        if _create_lock(path):  # released meanwhile
            return True, None
        owner = _lock_owner(directory)
        reason = holder.gone(owner)
        if reason is None:
            return False, f"{holder.describe(owner)} may still be running"
        os.replace(_staged_lock(path), path)
        return True, f"took over {directory} from {holder.describe(owner)}: {reason}"
    finally:
        with contextlib.suppress(OSError):
            os.rmdir(mutex)


@dataclass
class RunDir:
    """The directory a run writes to, with its lock held."""

    path: Path
    moved_from: Path | None = None
    """The directory asked for, when it already held a run and this one moved to a suffix."""
    note: str | None = None
    """How the directory was taken: from a holder that is gone, or continuing an interrupted run there."""

    def release(self) -> None:
        """Give up the lock (the run ended, however it ended)."""
        try:
            owner = _lock_owner(self.path)
            if owner and owner.get("pid") == os.getpid():
                (self.path / LOCK).unlink()
        except OSError:
            pass


def claim(requested: str | Path) -> RunDir:
    """The first free directory among ``requested``, ``requested-2``, ... locked for this run. A directory that
    holds nothing but the lock of a run that is provably gone (killed before it wrote anything) is taken over."""
    base = Path(requested)
    for index in range(1, MAX_SUFFIX + 1):
        candidate = base if index == 1 else base.with_name(f"{base.name}-{index}")
        candidate.mkdir(parents=True, exist_ok=True)
        only_a_lock = (candidate / LOCK).exists() and not any(
            (candidate / name).exists() for name in ("run.json", "results.parquet", CHECKPOINT)
        )
        if _holds_run(candidate) and not only_a_lock:
            continue
        locked, note = _lock(candidate)
        if locked:
            if (candidate / "run.json").exists() or (candidate / CHECKPOINT).exists():
                (candidate / LOCK).unlink()  # a run finished here between the check and the lock
                continue
            return RunDir(candidate, base if candidate != base else None, note)
    raise ConfigError("run.output_dir", f"{base} and {MAX_SUFFIX - 1} suffixed directories already hold runs")


def _interrupted_here(directory: Path, fingerprint: dict[str, Any]) -> bool:
    """True when ``directory`` holds the checkpoint of an interrupted run of the same config."""
    try:
        manifest = json.loads((directory / CHECKPOINT / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(manifest, dict) and manifest.get("config") == fingerprint


def claim_or_continue(
    requested: str | Path, fingerprint: dict[str, Any], repair: bool = False
) -> tuple[RunDir, str, Health | None]:
    """The directory for a fresh run (:func:`claim`), unless ``requested`` holds an interrupted run of the same
    config whose process is gone: then that run is continued, as ``run.resume`` would (a SLURM requeue or a Ray
    retry runs the same job into the same directory, and so resumes its own checkpoint instead of starting a run
    beside it). Returns the directory, the run id and, when continuing, what the check of its checkpoint found."""
    base = Path(requested)
    if _interrupted_here(base, fingerprint):
        try:
            rundir, run_id, health = claim_resume(base, fingerprint, repair)
        except _Busy:
            pass
        else:
            taken = f" ({rundir.note})" if rundir.note else ""
            rundir.note = f"continuing the interrupted run in {base}{taken}"
            return rundir, run_id, health
    return claim(base), new_run_id(), None


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
    locked, note = _lock(path)
    if not locked:
        raise _Busy(
            "run.resume",
            f"{path} is in use: {note}; wait for it to end, or if it has (vision-eval cannot tell from here), "
            f"delete {path / LOCK} and resume again",
        )
    rundir = RunDir(path, note=note)
    try:
        health = check(checkpoint)
        recorded = (health.manifest or {}).get("config", fingerprint)
        differing = sorted(k for k in set(recorded) | set(fingerprint) if recorded.get(k) != fingerprint.get(k))
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
    except BaseException:
        rundir.release()
        raise
    return rundir, str((health.manifest or {}).get("run_id") or new_run_id()), health
