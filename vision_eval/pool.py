"""The process pool that per-row rules spread large batches over (one per process, started on first use).

Workers are forked from the run's process: they start at once, with the rule's modules already imported, and
never re-run the user's main script (``spawn`` and ``forkserver`` do, which breaks a script that calls
``evaluate()`` outside an ``if __name__ == "__main__"`` guard). A forked child has only the forking thread, so
what runs there must not use Polars (its thread pool is not copied): per-row rules are plain Python by contract.
"""

from __future__ import annotations

import atexit
import os
import warnings
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

_pool: ProcessPoolExecutor | None = None
_size = 0


def default_workers() -> int:
    """The cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def process_pool(workers: int) -> ProcessPoolExecutor:
    """The process's pool of ``workers`` processes (a pool of another size is replaced)."""
    global _pool, _size
    if _pool is not None and _size == workers:
        return _pool
    shutdown()
    import multiprocessing  # here, not at start-up: most runs never start a pool
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("fork")
    _pool, _size = ProcessPoolExecutor(max_workers=workers, mp_context=context), workers
    with warnings.catch_warnings():  # Python 3.12+ warns about any fork of a threaded process; see the docstring
        warnings.filterwarnings("ignore", message=".*fork.*", category=DeprecationWarning)
        _pool.submit(int).result()  # a fork pool starts every worker at its first task: now, under the filter
    return _pool


def shutdown() -> None:
    """Stop the pool's workers (if any)."""
    global _pool, _size
    if _pool is not None:
        _pool.shutdown(wait=True, cancel_futures=True)
    _pool, _size = None, 0


atexit.register(shutdown)
