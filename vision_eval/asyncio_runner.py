"""Running a coroutine to completion from synchronous code, inside a running event loop too (notebooks)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any


def run_coroutine(factory: Callable[[], Any]) -> Any:
    """``asyncio.run`` that also works when called from inside a running loop (notebooks)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(factory())
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(lambda: asyncio.run(factory())).result()
