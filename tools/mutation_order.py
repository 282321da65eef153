"""pytest plugin for the mutation run (``tools/mutation.py``, docs/testing.md): a mutant's tests run cheapest first,
and the run's process pool is shut down after them.

mutmut hands each mutant the tests that call the mutated function, in no particular order, and stops at the first
failure. This plugin records what each test costs in mutmut's call-recording pass (setup, call and teardown: a
module fixture that runs the CLI counts too) and runs a mutant's tests in that order, so a mutant is usually killed
by a test that takes milliseconds. mutmut ends a mutant's process without the exit handlers that stop
vision_eval's pool workers: the plugin stops them itself. It changes nothing outside a mutation run.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

DURATIONS = Path("test-durations.json")
"""Written in the mutants folder (mutmut's working directory) by the call-recording pass."""
_RECORDING = "stats"
_NOT_A_MUTANT = ("", _RECORDING, "fail", "list_all_tests", "mutant_generation")
_spent: dict[str, float] = {}


def _mode() -> str | None:
    return os.environ.get("MUTANT_UNDER_TEST")


def pytest_runtest_logreport(report: Any) -> None:
    if _mode() == _RECORDING:
        _spent[report.nodeid] = _spent.get(report.nodeid, 0.0) + report.duration


def pytest_sessionfinish(session: Any) -> None:
    if _mode() is None:
        return
    pool = sys.modules.get("vision_eval.pool")
    if pool is not None:
        pool.shutdown()
    if _mode() == _RECORDING and _spent:
        known = json.loads(DURATIONS.read_text()) if DURATIONS.exists() else {}
        DURATIONS.write_text(json.dumps({**known, **_spent}))


def pytest_collection_modifyitems(session: Any, config: Any, items: list[Any]) -> None:
    if _mode() in _NOT_A_MUTANT or _mode() is None or not DURATIONS.exists():
        return
    spent = json.loads(DURATIONS.read_text())
    items.sort(key=lambda item: spent.get(item.nodeid, 0.0))
