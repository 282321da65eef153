"""Where submitted batch jobs are remembered: ``batches.sqlite`` in the run's checkpoint folder (next to the call
journal), so a killed run resumes polling its jobs instead of sending their requests again."""

from __future__ import annotations

import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

STORE_FILE = "batches.sqlite"
SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (job_id TEXT PRIMARY KEY, provider TEXT NOT NULL, model TEXT NOT NULL,
                                 api_base TEXT, submitted REAL NOT NULL, closed INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS job_keys (job_id TEXT NOT NULL, key TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS job_keys_key ON job_keys (key);
"""


@dataclass
class StoredJob:
    """A submitted job as the store remembers it."""

    job_id: str
    submitted: float


class JobStore:
    """Submitted jobs and the request keys each carries (``batches.sqlite`` next to the run's journal; in memory
    when the run keeps no checkpoint). A job is closed once its results are in the journal."""

    def __init__(self, directory: str | Path | None = None) -> None:
        target = str(Path(directory) / STORE_FILE) if directory is not None else ":memory:"
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(target, check_same_thread=False, isolation_level=None, timeout=60)
        self._conn.executescript(SCHEMA)

    def record(self, job_id: str, provider: str, model: str, api_base: str | None, keys: list[str]) -> None:
        with self._lock:
            self._conn.execute("BEGIN")
            self._conn.execute("INSERT OR REPLACE INTO jobs VALUES (?, ?, ?, ?, ?, 0)",
                               (job_id, provider, model, api_base or "", time.time()))  # fmt: skip
            self._conn.executemany("INSERT INTO job_keys VALUES (?, ?)", [(job_id, k) for k in keys])
            self._conn.execute("COMMIT")

    def open_jobs(self, model: str, api_base: str | None) -> list[StoredJob]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT job_id, submitted FROM jobs WHERE closed = 0 AND model = ? AND api_base = ? ORDER BY rowid",
                (model, api_base or ""),
            ).fetchall()
        return [StoredJob(*row) for row in rows]

    def open_job_for(self, key: str) -> str | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT k.job_id FROM job_keys k JOIN jobs j ON j.job_id = k.job_id WHERE k.key = ? AND j.closed = 0",
                (key,),
            ).fetchone()
        return row[0] if row else None

    def keys_of(self, job_id: str) -> list[str]:
        with self._lock:
            return [r[0] for r in self._conn.execute("SELECT key FROM job_keys WHERE job_id = ?", (job_id,))]

    def submitted_at(self, job_id: str) -> float:
        with self._lock:
            row = self._conn.execute("SELECT submitted FROM jobs WHERE job_id = ?", (job_id,)).fetchone()
        return float(row[0]) if row else time.time()

    def close(self, job_id: str) -> None:
        with self._lock:
            self._conn.execute("UPDATE jobs SET closed = 1 WHERE job_id = ?", (job_id,))

    def count(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM jobs").fetchone()[0])
