"""Checking a checkpoint before a resume sends anything, and setting its damaged files aside when asked to.

Every file a resume relies on is checked: ``manifest.json`` (valid JSON with the run id and config), every finished
part (each file its ``part.json`` lists, at the listed size, Parquet from its first bytes to its last; a part saved
before ``part.json`` existed needs its three result files), the call journal ``calls.sqlite`` (SQLite's own quick
check) against ``calls.keys`` (the keys of every call the run finished, a second record kept beside it: a journal
that reads fine but lost records is caught too), and the batch-job store ``batches.sqlite``. The evaluated rows
(``.samples``) are not: a resume writes every batch's rows again from the dataset.

A damaged checkpoint stops the resume (exit 2) with a message naming each damaged file and what is intact. With
``run.resume_damaged=true`` the damaged files are renamed (``.damaged-…``, kept until the run completes), the
batches they held are evaluated again, the calls the journal still proves finished are answered from it, and the
finished calls it lost are returned here (:attr:`Health.lost_calls`) so the scheduler counts each one it sends
again.
"""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vision_eval.checkpoint import JOURNAL, KINDS, MANIFEST, PART_LIST
from vision_eval.llm.batch_store import STORE_FILE as BATCH_STORE
from vision_eval.llm.cache import KEYS_FILE

DAMAGED = ".damaged-"
"""Prefix a damaged file or part takes when it is set aside (a name no resume reads)."""
_MAGIC = b"PAR1"


@dataclass
class Damage:
    """One damaged file (or part folder) and what is wrong with it."""

    path: Path
    problem: str


@dataclass
class Health:
    """What a check of a checkpoint found."""

    directory: Path
    manifest: dict[str, Any] | None = None
    """The manifest's contents (``None`` when it is missing or damaged)."""
    damaged: list[Damage] = field(default_factory=list)
    parts: int = 0
    """Finished parts that are whole."""
    damaged_parts: int = 0
    journal_calls: int | None = None
    """Finished calls the journal can answer (``None``: no journal, or it cannot be read)."""
    recorded_calls: int | None = None
    """Finished calls ``calls.keys`` lists (``None``: a checkpoint written before it existed)."""
    lost_calls: set[str] = field(default_factory=set)
    """Keys of finished calls the journal cannot answer: a resume sends them again if it needs them."""

    def describe(self) -> str:
        """The message of a damaged checkpoint: each damaged file, what is intact, what a resume would cost."""
        names = "; ".join(f"{d.path.relative_to(self.directory.parent)}: {d.problem}" for d in self.damaged)
        intact = [f"{self.parts} of {self.parts + self.damaged_parts} finished batches are whole"]
        if self.damaged_parts:
            intact.append(f"the rows of the damaged {self.damaged_parts} would be evaluated again")
        if self.recorded_calls is not None:
            held = self.recorded_calls - len(self.lost_calls)
            intact.append(f"the journal answers {held} of the {self.recorded_calls} calls the run finished")
            if self.lost_calls:
                lost = len(self.lost_calls)
                intact.append(f"up to {lost} finished calls would be sent (and paid) again, each counted")
        elif self.journal_calls is not None:
            intact.append(f"the journal answers {self.journal_calls} finished calls")
        if self.manifest is None:
            intact.append("the config it was written with cannot be checked")
        return (
            f"the checkpoint in {self.directory} is damaged: {names}. What can be recovered: {', '.join(intact)}. "
            "Resume with run.resume_damaged=true to set the damaged files aside and continue, or start a new run"
        )


def _parquet_problem(path: Path, size: int | None = None) -> str | None:
    """What is wrong with a saved Parquet part (``None`` when it is whole)."""
    try:
        actual = path.stat().st_size
        if size is not None and actual != size:
            return f"{actual} bytes where {size} were written" + (" (truncated)" if actual < size else "")
        with path.open("rb") as handle:
            head = handle.read(4)
            handle.seek(max(0, actual - 4))
            tail = handle.read(4)
    except FileNotFoundError:
        return "missing"
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    return None if head == _MAGIC and tail == _MAGIC else "not a whole Parquet file"


def _part_problem(folder: Path) -> str | None:
    """What is wrong with one saved part (``None`` when every file it holds is whole)."""
    listing = folder / PART_LIST
    if listing.exists():
        try:
            files: dict[str, int] = json.loads(listing.read_text(encoding="utf-8"))["files"]
        except (OSError, ValueError, KeyError, TypeError):
            return f"{PART_LIST} is not valid"
    else:  # saved before part.json existed: its three result files at least
        files = {f"{name}.part": -1 for name in KINDS}
        files.update({p.name: -1 for p in folder.glob("*.part")})
    for name, size in sorted(files.items()):
        problem = _parquet_problem(folder / name, size if size >= 0 else None)
        if problem is not None:
            return f"{name} is {problem}" if problem != "missing" else f"{name} is missing"
    return None


def _sqlite_problem(path: Path) -> str | None:
    try:
        with sqlite3.connect(f"file:{path}?mode=rw", uri=True) as conn:
            found = [row[0] for row in conn.execute("PRAGMA quick_check").fetchall()]
    except sqlite3.Error as exc:
        return str(exc)
    return None if found == ["ok"] else "; ".join(found[:3])


def _recorded_keys(path: Path) -> tuple[list[str], int]:
    """The keys ``calls.keys`` lists, and how many of its lines are not keys (a line cut by a kill excepted)."""
    text = path.read_bytes().decode("ascii", "replace")
    lines = text.split("\n")
    if lines and lines[-1] and len(lines[-1]) < 64:  # the last line, cut short by a kill mid-write
        lines = lines[:-1]
    keys = [line for line in lines if len(line) == 64 and all(c in "0123456789abcdef" for c in line)]
    return keys, sum(1 for line in lines if line) - len(keys)


def _lost(journal: Path, keys: list[str]) -> set[str]:
    """The keys the journal does not hold (an anti-join in SQLite, not a Python set of the journal's keys)."""
    with sqlite3.connect(f"file:{journal}?mode=rw", uri=True) as conn:
        conn.execute("CREATE TEMP TABLE recorded (key TEXT PRIMARY KEY) WITHOUT ROWID")
        conn.executemany("INSERT OR IGNORE INTO temp.recorded VALUES (?)", ((k,) for k in keys))
        rows = conn.execute("SELECT key FROM temp.recorded EXCEPT SELECT key FROM calls").fetchall()
    return {row[0] for row in rows}


def _journal_count(journal: Path) -> int:
    with sqlite3.connect(f"file:{journal}?mode=rw", uri=True) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM calls").fetchone()[0])


def _check_calls(health: Health) -> None:
    """The journal (SQLite's quick check) and, against it, the keys of the calls the run finished."""
    journal, record = health.directory / JOURNAL, health.directory / KEYS_FILE
    keys: list[str] = []
    if record.exists():
        keys, bad_lines = _recorded_keys(record)
        health.recorded_calls = len(set(keys))
        if bad_lines:
            health.damaged.append(Damage(record, f"{bad_lines} lines are not call keys"))
    if not journal.exists():
        if keys:
            health.damaged.append(Damage(journal, "missing"))
            health.lost_calls = set(keys)
        return
    problem = _sqlite_problem(journal)
    if problem is None:
        try:
            health.journal_calls = _journal_count(journal)
            health.lost_calls = _lost(journal, keys) if keys else set()
        except sqlite3.Error as exc:
            if "no such table" in str(exc) and not keys:  # created, never written to: the run finished no call
                health.journal_calls = 0
                return
            problem = str(exc)
    if problem is not None:
        health.damaged.append(Damage(journal, f"not a readable SQLite journal ({problem})"))
        health.lost_calls = set(keys)
    elif health.lost_calls:
        lost = len(health.lost_calls)
        health.damaged.append(Damage(journal, f"lost the records of {lost} of the {health.recorded_calls} "
                                              f"finished calls {KEYS_FILE} lists"))  # fmt: skip


def check(directory: Path) -> Health:
    """Check every file of the checkpoint in ``directory`` that a resume would rely on."""
    health = Health(directory)
    manifest = directory / MANIFEST
    try:
        recorded = json.loads(manifest.read_text(encoding="utf-8"))
        if not isinstance(recorded, dict) or not isinstance(recorded.get("config"), dict):
            raise ValueError("no run id and config")
        health.manifest = recorded
    except FileNotFoundError:
        health.damaged.append(Damage(manifest, "missing"))
    except (OSError, ValueError) as exc:
        health.damaged.append(Damage(manifest, f"not valid ({str(exc).splitlines()[0][:80]})"))
    for evaluator in sorted(p for p in directory.iterdir() if p.is_dir() and not p.name.startswith(".")):
        for folder in sorted(p for p in evaluator.iterdir() if p.is_dir() and not p.name.startswith(".")):
            problem = _part_problem(folder)
            if problem is None:
                health.parts += 1
            else:
                health.damaged_parts += 1
                health.damaged.append(Damage(folder, problem))
    _check_calls(health)
    store = directory / BATCH_STORE
    if store.exists() and (problem := _sqlite_problem(store)) is not None:
        health.damaged.append(Damage(store, f"not a readable SQLite store of batch jobs ({problem}): the "
                                            "provider batch jobs it lists would be submitted again"))  # fmt: skip
    return health


def set_aside(health: Health) -> None:
    """Rename every damaged file (and a damaged journal's ``-wal`` / ``-shm`` files) out of a resume's way;
    ``calls.keys`` keeps its readable keys (the lost calls are already counted in :attr:`Health.lost_calls`)."""
    for damage in health.damaged:
        path = damage.path
        if path.name == KEYS_FILE:
            keys, _ = _recorded_keys(path)
            os.replace(path, path.with_name(DAMAGED + path.name))
            path.write_text("".join(k + "\n" for k in keys), encoding="ascii")
            continue
        if not path.exists():
            continue
        os.replace(path, path.with_name(DAMAGED + path.name))
        for suffix in ("-wal", "-shm"):
            sidecar = path.with_name(path.name + suffix)
            if path.suffix == ".sqlite" and sidecar.exists():
                os.replace(sidecar, sidecar.with_name(DAMAGED + sidecar.name))
