"""Who holds a run directory, and when that holder is provably gone.

A run's lock records its process (host, pid and the pid's start time, so that a reused pid is not taken for the
holder) and, when the process is a scheduler's job, that job: ``slurm:<job id>`` or ``ray:<sweep>-<job>``. A
holder is gone when

* it ran on this host and its pid is gone, or belongs to a later process;
* it ran on another host as an earlier attempt of the job this process runs: a SLURM requeue keeps the job's id
  and a Ray retry the task's arguments, and neither starts an attempt before the previous one has died;
* it ran as a SLURM job that ``squeue`` shows finished, or no longer knows.

Anything else (another host, no ``squeue`` to ask) cannot be proved gone, and its lock is respected.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

SLURM_LIVE = frozenset(
    {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "STOPPED", "RESIZING", "SIGNALING", "STAGE_OUT",
     "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD", "RESV_DEL_HOLD", "SPECIAL_EXIT"}
)  # fmt: skip
"""SLURM job states in which the job's processes may still be running (every other state is final)."""
SQUEUE_TIMEOUT_S = 30

_job: str | None = None


def set_job(key: str | None) -> None:
    """Declare which scheduler job this process runs (a Ray task does; SLURM's is read from the variables it
    sets)."""
    global _job
    _job = key


def current_job() -> str | None:
    """This process's scheduler job: ``ray:<sweep>-<job>``, ``slurm:<array job>_<task>`` or ``slurm:<job id>``."""
    if _job is not None:
        return _job
    array, task = os.environ.get("SLURM_ARRAY_JOB_ID"), os.environ.get("SLURM_ARRAY_TASK_ID")
    if array and task:
        return f"slurm:{array}_{task}"
    job = os.environ.get("SLURM_JOB_ID")
    return f"slurm:{job}" if job else None


def _process_start(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot, from /proc), or ``None`` where that cannot be read."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()
    return fields[19] if len(fields) > 19 else None


def me() -> dict[str, Any]:
    """What a lock records about this process."""
    record: dict[str, Any] = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.time()}
    start = _process_start(os.getpid())
    if start is not None:
        record["process_start"] = start
    job = current_job()
    if job is not None:
        record["job"] = job
    return record


def describe(owner: dict[str, Any] | None) -> str:
    """The holder in words: ``pid 123 on host node7 (SLURM job 45_2)``."""
    if not owner:
        return "a run whose lock cannot be read"
    text = f"pid {owner.get('pid', '?')} on host {owner.get('host', '?')}"
    job = str(owner.get("job") or "")
    scheduler, _, key = job.partition(":")
    if scheduler == "slurm":
        text += f" (SLURM job {key})"
    elif scheduler == "ray":
        text += f" (Ray job {key})"
    return text


def _slurm_state(job: str) -> tuple[str | None, str]:
    """SLURM's state of ``job`` by ``squeue`` (``None`` when it cannot be asked) and, when it is unknown to SLURM,
    ``"unknown"``."""
    try:
        proc = subprocess.run(
            ["squeue", "-h", "-j", job, "--states=all", "-o", "%T"],
            capture_output=True,
            text=True,
            timeout=SQUEUE_TIMEOUT_S,
        )
    except (OSError, subprocess.SubprocessError):
        return None, "squeue could not be run"
    if proc.returncode != 0:
        if "invalid job id" in proc.stderr.lower():
            return "unknown", "SLURM no longer knows it"
        return None, f"squeue failed: {proc.stderr.strip()[:200]}"
    states = proc.stdout.split()
    return (states[0], "") if states else ("unknown", "squeue no longer lists it")


def gone(owner: dict[str, Any] | None) -> str | None:
    """Why the holder ``owner`` (a lock's record) is provably gone, or ``None`` when it may still be running."""
    if not owner:
        return "its lock records no process"
    host, job = owner.get("host"), owner.get("job")
    try:
        pid = int(owner["pid"])
    except (KeyError, TypeError, ValueError):
        return "its lock records no process"
    here = socket.gethostname()
    if host != here and job and job == current_job():
        return "it was an earlier attempt of this job, which was requeued or retried"
    if host == here:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return "its process is gone"
        except PermissionError:
            return None
        recorded = owner.get("process_start")
        if recorded is not None and _process_start(pid) not in (None, recorded):
            return "its process is gone (the pid now belongs to another process)"
        return None
    if isinstance(job, str) and job.startswith("slurm:"):
        state, why = _slurm_state(job.partition(":")[2])
        if state is None or state in SLURM_LIVE:
            return None
        return f"its SLURM job is {state}" if state != "unknown" else f"its SLURM job is over ({why})"
    return None
