"""The process's in-memory DuckDB database, for the evaluators that hand whole columns to DuckDB's C++ functions.

DuckDB is imported on first use (it costs ~0.15 s), and one database serves every caller: a new connection costs
~14 ms, a cursor on an open one ~0.1 ms. Each caller takes its own cursor, so threads never share one.
"""

from __future__ import annotations

import threading
from typing import Any

_DATABASE: list[Any] = []
_LOCK = threading.Lock()


def cursor() -> Any:
    """A new cursor (use it as a context manager) on the shared in-memory database."""
    with _LOCK:
        if not _DATABASE:
            import duckdb

            _DATABASE.append(duckdb.connect())
        return _DATABASE[0].cursor()
