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

from vision_eval.llm.batch_worker import Op
from vision_eval.llm.claims import FIND, LEASE_S, PEEK, PUT, RELEASE, RENEW, SEND, ClaimingStore, Found, provably_dead
from vision_eval.storage import writing

SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    created REAL NOT NULL,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS claims (
    key TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    expires REAL NOT NULL
);
"""
CHUNK = 500
"""Keys per ``IN (...)`` query (within every SQLite build's limit on bound parameters)."""


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


def journal_mode(mode: str, filesystem: str | None) -> str:
    """``wal`` or ``rollback``: ``mode`` when forced, else WAL except on a network filesystem."""
    if mode != "auto":
        return mode
    return "rollback" if filesystem in NETWORK_FILESYSTEMS else "wal"


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


class CallCache(ClaimingStore):
    """Key -> JSON value store in one SQLite file (``<dir>/calls.sqlite``), with the claims of calls in flight.

    ``mode``: ``auto`` uses WAL on a local disk and the rollback journal on a network filesystem; ``wal`` or
    ``rollback`` forces one (``rollback`` for a network filesystem that :data:`NETWORK_FILESYSTEMS` does not
    name). The asynchronous methods (:meth:`find`, :meth:`store`) run batched on the store's thread; the plain
    ones (:meth:`get`, :meth:`put`) run at once in the caller's thread."""

    def __init__(self, directory: str | Path | None = None, mode: str = "auto", lease_s: float = LEASE_S) -> None:
        super().__init__(lease_s)
        folder = Path(directory).expanduser() if directory else default_cache_dir()
        self.path = folder / "calls.sqlite"
        self._lock = threading.Lock()
        with writing(self.path):
            folder.mkdir(parents=True, exist_ok=True)
        self.filesystem = filesystem_type(folder)
        self.journal_mode = journal_mode(mode, self.filesystem)
        self.mode = f"sqlite-{self.journal_mode}"
        self._db: sqlite3.Connection | None = None
        self._chosen = mode

    @property
    def _conn(self) -> sqlite3.Connection:
        """The connection, opened on first use, under ``_lock``: by the store's thread for the asynchronous
        methods, since opening may wait for another process's lock."""
        if self._db is None:
            with writing(self.path):
                conn = sqlite3.connect(self.path, timeout=60, check_same_thread=False, isolation_level=None)
                conn.execute("PRAGMA busy_timeout=60000")
                pragma = "DELETE" if self.journal_mode == "rollback" else "WAL"
                self._retry(lambda: conn.execute(f"PRAGMA journal_mode={pragma}"))
                conn.execute("PRAGMA synchronous=NORMAL")
                self._retry(lambda: conn.executescript(SCHEMA))
            self._db = conn
        return self._db

    def describe(self) -> dict[str, Any]:
        why = "forced (judge.cache_mode)" if self._chosen != "auto" else (
            "a network filesystem: WAL needs shared memory" if self.journal_mode == "rollback" else "a local disk"
        )  # fmt: skip
        return {"mode": self.mode, "path": str(self.path), "filesystem": self.filesystem, "why": why}

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
        """The stored value, or ``None`` (at once, in the caller's thread)."""
        with self._lock:
            row = self._retry(lambda: self._conn.execute("SELECT value FROM calls WHERE key = ?", (key,)).fetchone())
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        value: dict[str, Any] = json.loads(row[0])
        return value

    def put(self, key: str, model: str, value: dict[str, Any]) -> None:
        """Store ``value`` at once (last writer wins; identical keys carry equivalent values). A write the disk
        refuses is :class:`~vision_eval.errors.OutputsNotWritten`."""
        text = json.dumps(value, ensure_ascii=False, default=str)
        with self._lock, writing(self.path):
            self._retry(
                lambda: self._conn.execute(
                    "INSERT OR REPLACE INTO calls (key, model, created, value) VALUES (?, ?, ?, ?)",
                    (key, model, time.time(), text),
                )
            )
        self.writes += 1

    def run_ops(self, ops: list[Op]) -> list[Any]:
        """One pass of queued operations: every lookup in one query; every write, release, renewal and claim in
        one transaction."""
        finds = list(dict.fromkeys(op.arg for op in ops if op.kind in (FIND, PEEK)))
        puts = [op.arg for op in ops if op.kind == PUT]
        released = [op.arg for op in ops if op.kind == RELEASE]
        renew = any(op.kind == RENEW for op in ops)
        failure: BaseException | None = None
        with self._lock:
            found = {k: Found(json.loads(v)) for k, v in self._values(finds).items()}
            claiming = {op.arg for op in ops if op.kind == FIND} if self.claims else set()
            wanted = [k for k in finds if k not in found and k in claiming]
            if puts or released or renew or wanted:
                try:
                    with writing(self.path):
                        found.update(self._retry(lambda: self._write(puts, released, renew, wanted)))
                        self._stored([key for key, _, _ in puts])
                except Exception as exc:  # the puts of this pass fail with it; lookups send without a claim
                    failure = exc
                    self.refused += len(puts)
        outcomes: list[Any] = []
        for op in ops:
            if op.kind in (FIND, PEEK):
                outcomes.append(found.get(op.arg, SEND))
            else:
                outcomes.append(failure if op.kind == PUT else None)
        return outcomes

    def _stored(self, keys: list[str]) -> None:
        """Called once the values of ``keys`` are committed."""

    def _values(self, keys: list[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        for start in range(0, len(keys), CHUNK):
            chunk = keys[start : start + CHUNK]
            marks = ",".join("?" * len(chunk))
            rows = self._retry(
                lambda: self._conn.execute(f"SELECT key, value FROM calls WHERE key IN ({marks})", chunk).fetchall()  # noqa: B023
            )
            out.update(rows)
        return out

    def _write(
        self, puts: list[tuple[str, str, str]], released: list[str], renew: bool, wanted: list[str]
    ) -> dict[str, Found]:
        """One transaction: store ``puts``, drop this owner's claims on them and on ``released``, renew its
        leases, and claim each of ``wanted`` that is still neither answered nor held by a live process."""
        conn, now = self._conn, time.time()
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany(
                "INSERT OR REPLACE INTO calls (key, model, created, value) VALUES (?, ?, ?, ?)",
                [(key, model, now, text) for key, model, text in puts],
            )
            done = [key for key, _, _ in puts] + released
            conn.executemany("DELETE FROM claims WHERE key = ? AND owner = ?", [(k, self.owner) for k in done])
            if renew:
                conn.execute("UPDATE claims SET expires = ? WHERE owner = ?", (now + self.lease_s, self.owner))
            found = {k: Found(json.loads(v)) for k, v in self._values(wanted).items()}  # answered since the read
            holders = self._holders([k for k in wanted if k not in found])
            taken = []
            for key in wanted:
                if key in found:
                    continue
                holder = holders.get(key)
                if holder is None or holder[1] < now or holder[0] == self.owner or provably_dead(holder[0]):
                    taken.append((key, self.owner, now + self.lease_s))
                else:
                    found[key] = Found(holder=holder[0])
            conn.executemany("INSERT OR REPLACE INTO claims (key, owner, expires) VALUES (?, ?, ?)", taken)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return found

    def _holders(self, keys: list[str]) -> dict[str, tuple[str, float]]:
        out: dict[str, tuple[str, float]] = {}
        for start in range(0, len(keys), CHUNK):
            chunk = keys[start : start + CHUNK]
            marks = ",".join("?" * len(chunk))
            for key, owner, expires in self._conn.execute(
                f"SELECT key, owner, expires FROM claims WHERE key IN ({marks})", chunk
            ):
                out[key] = (owner, expires)
        return out

    def total_cost(self) -> float:
        """Sum of the recorded calls' ``cost_usd`` (what a run's journal says was spent)."""
        with self._lock:
            row = self._conn.execute("SELECT SUM(json_extract(value, '$.cost_usd')) FROM calls").fetchone()
        return float(row[0] or 0.0)

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM calls").fetchone()[0])

    def close(self, timeout: float | None = None) -> bool:
        done = super().close(timeout)
        if done:
            with self._lock:
                if self._db is not None:
                    self._db.close()
                    self._db = None
        return done


class CallJournal(CallCache):
    """A run's journal of finished calls (``calls.sqlite`` in its checkpoint), plus ``calls.keys``: each finished
    call's key appended as it is recorded. The second record survives damage to the database, so a resume knows
    which finished calls the journal lost and counts each one it sends again. One run writes it: it keeps no
    claims."""

    claims = False

    def __init__(self, directory: str | Path) -> None:
        super().__init__(directory)
        self.keys_path = self.path.with_name(KEYS_FILE)
        with writing(self.keys_path):
            self._keys = self.keys_path.open("a", encoding="ascii")

    def put(self, key: str, model: str, value: dict[str, Any]) -> None:
        try:
            super().put(key, model, value)
        except BaseException:
            self.refused += 1
            raise
        with self._lock:
            self._stored([key])

    def _stored(self, keys: list[str]) -> None:
        with writing(self.keys_path):
            self._keys.write("".join(key + "\n" for key in keys))
            self._keys.flush()

    def close(self, timeout: float | None = None) -> bool:
        if not ClaimingStore.close(self, timeout):  # the queued writes first: they append to calls.keys
            return False
        with self._lock:
            self._keys.close()
        return super().close()


def open_cache(location: str | None, mode: str = "auto") -> ClaimingStore:
    """The call cache at ``location``: a Redis server (``redis://...``), else a SQLite folder (``None``: the
    default folder)."""
    if location is not None and location.startswith(("redis://", "rediss://", "unix://")):
        from vision_eval.llm.redis_cache import RedisCallCache

        return RedisCallCache(location)
    return CallCache(location, mode)
