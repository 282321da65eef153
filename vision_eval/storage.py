"""Writing a run's files when the disk may fail: a write that fails for lack of space, a file-size limit, a
read-only folder or any other input/output error becomes :class:`~vision_eval.errors.OutputsNotWritten` naming
the file (exit 3, one line), whichever library did the writing (Python, Polars' Parquet writer, SQLite).

Anything else a write raises (a bug) is left alone. The files themselves are written whole or not at all by their
writers (a temporary name renamed into place); :func:`writing` only says what failed.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from vision_eval.errors import NOT_WRITTEN, OutputsNotWritten

_IO_TEXT = re.compile(
    r"os error \d+|IO error|transport error|No space left|File too large|Disk quota|Read-only file system"
    r"|disk is full|disk I/O error|unable to open database|readonly database",
    re.IGNORECASE,
)
"""What Polars' writers and SQLite say when the disk, not the data, failed."""
FULL_BELOW = 1 << 20
"""A disk with less free space than this (bytes) counts as full."""
_KNOWN = re.compile(r"No space left on device|File too large|Disk quota exceeded|Read-only file system")


def io_failure(exc: BaseException) -> str | None:
    """The plain reason when ``exc`` says a write failed on the disk's side (``None`` otherwise)."""
    if isinstance(exc, OutputsNotWritten):
        return exc.reason
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    text = str(exc)
    from_writer = isinstance(exc, sqlite3.Error) or type(exc).__module__.startswith("polars")
    if not from_writer or not _IO_TEXT.search(text):
        return None
    known = _KNOWN.search(text)
    return known.group(0) if known else text


DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EIO})
"""What a disk says when it, not the program, refuses a write."""


def disk_failure(exc: BaseException) -> str | None:
    """The one-line problem when ``exc``, raised anywhere, says a disk refused a write (``None`` otherwise: a
    missing file or a refused permission outside a write is not the disk's doing)."""
    if isinstance(exc, OutputsNotWritten):
        return str(exc)
    if isinstance(exc, OSError):
        if exc.errno not in DISK_ERRNOS:
            return None
        where = f"{exc.filename}: " if exc.filename else ""
        return f"{NOT_WRITTEN}: {where}{exc.strerror or exc}"
    reason = io_failure(exc)
    return f"{NOT_WRITTEN}: {reason}" if reason is not None else None


def _reason(exc: Exception, path: Path) -> str | None:
    """:func:`io_failure`, with a writer's vague complaint (Polars: "transport error") named for what it is when
    the disk holding ``path`` is full."""
    reason = io_failure(exc)
    if reason is None or _KNOWN.search(reason):
        return reason
    folder = next((p for p in (path, *path.parents) if p.exists()), None)
    if folder is not None and shutil.disk_usage(folder).free < FULL_BELOW:
        return "No space left on device"
    return reason


@contextmanager
def writing(path: str | Path) -> Iterator[None]:
    """Run a write of ``path``: a failure of the disk becomes :class:`OutputsNotWritten` naming it."""
    try:
        yield
    except OutputsNotWritten:
        raise
    except Exception as exc:
        reason = _reason(exc, Path(path))
        if reason is None:
            raise
        raise OutputsNotWritten(str(path), reason) from exc


def write_atomically(path: str | Path, write: Callable[[Path], Any]) -> None:
    """``write`` to a temporary file beside ``path``, then rename it into place: ``path`` is never left truncated
    and no temporary file is left behind; a failure of the disk is :class:`OutputsNotWritten` naming ``path``."""
    target = Path(path)
    staging = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        with writing(target):
            target.parent.mkdir(parents=True, exist_ok=True)
            write(staging)
            os.replace(staging, target)
    except BaseException:
        staging.unlink(missing_ok=True)
        raise
