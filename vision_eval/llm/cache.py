"""A persistent, content-addressed cache of model calls, safe when several processes share it.

SQLite in WAL mode: readers never block, concurrent writers (Hydra multirun jobs, shards) wait on
the database lock (``busy_timeout``) instead of failing. WAL needs memory shared between processes, which a
network filesystem (NFS, Lustre, GPFS, CIFS...) cannot provide, so a cache there uses SQLite's rollback
journal, whose safety then rests on the filesystem's POSIX locks (see README, "In CI and on clusters").

The key is the sha256 of the canonical JSON of the model, its parameters and the rendered messages, with
every inline image replaced by the sha256 of its data, so a re-run with identical requests costs no calls.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from vision_eval.storage import writing

SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    created REAL NOT NULL,
    value TEXT NOT NULL
)
"""


NETWORK_FILESYSTEMS = frozenset(
    {"nfs", "nfs4", "cifs", "smbfs", "smb3", "lustre", "gpfs", "beegfs", "glusterfs", "fuse.glusterfs", "ceph",
     "fuse.sshfs", "9p", "afs", "panfs", "wekafs"}
)  # fmt: skip


def filesystem_type(path: Path, mounts: str | None = None) -> str | None:
    """The type of the filesystem holding ``path`` (from ``/proc/mounts``; ``None`` when unknown)."""
    if mounts is None:
        try:
            mounts = Path("/proc/mounts").read_text(encoding="utf-8")
        except OSError:
            return None
    target = str(path.resolve())
    best, kind = "", None
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        point = fields[1].replace("\\040", " ")
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and len(point) > len(best):
            best, kind = point, fields[2]
    return kind


def default_cache_dir() -> Path:
    """``$VISION_EVAL_CACHE_DIR``, else ``$XDG_CACHE_HOME/vision_eval``, else ``~/.cache/vision_eval``."""
    if os.environ.get("VISION_EVAL_CACHE_DIR"):
        return Path(os.environ["VISION_EVAL_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "vision_eval"


def _hash_images(value: Any) -> Any:
    """A copy of messages with inline image data replaced by its sha256 (keys stay small and stable)."""
    if isinstance(value, dict):
        return {k: _hash_images(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_hash_images(v) for v in value]
    if isinstance(value, str) and value.startswith("data:") and len(value) > 256:
        return "sha256:" + hashlib.sha256(value.encode("ascii", "replace")).hexdigest()
    return value


def cache_key(model: str, api_base: str | None, params: dict[str, Any], messages: list[dict[str, Any]]) -> str:
    """The content address of a call."""
    payload = {"model": model, "api_base": api_base, "params": params, "messages": _hash_images(messages)}
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


KEYS_FILE = "calls.keys"
"""Beside a run's journal: the key of every call the run finished, one a line (see :class:`CallJournal`)."""


class CallCache:
    """Key -> JSON value store in one SQLite file (``<dir>/calls.sqlite``)."""

    def __init__(self, directory: str | Path | None = None) -> None:
        folder = Path(directory).expanduser() if directory else default_cache_dir()
        self.path = folder / "calls.sqlite"
        self._lock = threading.Lock()
        with writing(self.path):
            folder.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(self.path, timeout=60, check_same_thread=False, isolation_level=None)
            self._conn.execute("PRAGMA busy_timeout=60000")
            self.filesystem = filesystem_type(folder)
            mode = "DELETE" if self.filesystem in NETWORK_FILESYSTEMS else "WAL"
            self._retry(lambda: self._conn.execute(f"PRAGMA journal_mode={mode}"))
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._retry(lambda: self._conn.execute(SCHEMA))
        self.hits = 0
        self.misses = 0
        self.writes = 0

    def _retry(self, action: Any) -> Any:
        for attempt in range(50):
            try:
                return action()
            except sqlite3.OperationalError as exc:  # "database is locked" while another process sets up
                if "locked" not in str(exc) or attempt == 49:
                    raise
                time.sleep(0.05 * (attempt + 1))
        return None

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored value, or ``None``."""
        with self._lock:
            row = self._retry(lambda: self._conn.execute("SELECT value FROM calls WHERE key = ?", (key,)).fetchone())
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        value: dict[str, Any] = json.loads(row[0])
        return value

    def put(self, key: str, model: str, value: dict[str, Any]) -> None:
        """Store ``value`` (last writer wins; identical keys carry equivalent values). A write the disk refuses
        is :class:`~vision_eval.errors.OutputsNotWritten`."""
        text = json.dumps(value, ensure_ascii=False, default=str)
        with self._lock, writing(self.path):
            self._retry(
                lambda: self._conn.execute(
                    "INSERT OR REPLACE INTO calls (key, model, created, value) VALUES (?, ?, ?, ?)",
                    (key, model, time.time(), text),
                )
            )
        self.writes += 1

    def total_cost(self) -> float:
        """Sum of the recorded calls' ``cost_usd`` (what a run's journal says was spent)."""
        with self._lock:
            row = self._conn.execute("SELECT SUM(json_extract(value, '$.cost_usd')) FROM calls").fetchone()
        return float(row[0] or 0.0)

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM calls").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()


class CallJournal(CallCache):
    """A run's journal of finished calls (``calls.sqlite`` in its checkpoint), plus ``calls.keys``: each finished
    call's key appended as it is recorded. The second record survives damage to the database, so a resume knows
    which finished calls the journal lost and counts each one it sends again."""

    def __init__(self, directory: str | Path) -> None:
        super().__init__(directory)
        self.keys_path = self.path.with_name(KEYS_FILE)
        with writing(self.keys_path):
            self._keys = self.keys_path.open("a", encoding="ascii")

    def put(self, key: str, model: str, value: dict[str, Any]) -> None:
        super().put(key, model, value)
        with self._lock, writing(self.keys_path):
            self._keys.write(key + "\n")
            self._keys.flush()

    def close(self) -> None:
        with self._lock:
            self._keys.close()
        super().close()
