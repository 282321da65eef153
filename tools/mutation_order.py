"""pytest plugin for the mutation run (``tools/mutation.py``, docs/testing.md): a mutant runs the tests of its own
module (:data:`MODULE_TESTS`), cheapest first, and the run's process pool is shut down after them.

mutmut hands each mutant every selected test that calls the mutated function, in no particular order, and stops at
the first failure. A function every run calls (``where``, the gates, redaction) is called by hundreds of tests; its
mutants run only the tests written for its module. This plugin records what each test costs in mutmut's
call-recording pass (setup, call and teardown: a module fixture that runs the CLI counts too) and runs a mutant's
tests in that order, so a mutant is usually killed by a test that takes milliseconds. mutmut ends a mutant's
process without the exit handlers that stop vision_eval's pool workers: the plugin stops them itself. It changes
nothing outside a mutation run.
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

_BENCHMARK_TESTS = (
    "test_benchmark_rules",
    "test_benchmark_metrics",
    "test_benchmark_protocols",
    "test_benchmark_protocols_rows",
    "test_benchmark_protocols_leaderboard",
    "test_benchmark_presets",
    "test_benchmark_parity",
)
MODULE_TESTS: dict[str, tuple[str, ...]] = {
    "vision_eval.gates": ("test_gates_exit_codes", "test_error_rate_gate", "test_run_result", "test_candidate"),
    "vision_eval.exit_codes": ("test_gates_exit_codes", "test_run_result"),
    "vision_eval.finish": ("test_run_result", "test_error_rate_gate", "test_gates_exit_codes", "test_candidate"),
    "vision_eval.prechecks": ("test_where_and_held_rows", "test_engine"),
    "vision_eval.secrets": ("test_secret_values", "test_config", "test_candidate"),
    "vision_eval.exits": ("test_exits",),
    "vision_eval.pairing": ("test_compare", "test_report_compare"),
    "vision_eval.stats": ("test_compare", "test_report_compare"),
    "vision_eval.ranking": ("test_leaderboard_table", "test_leaderboard", "test_compare", "test_report_compare"),
    "vision_eval.compare": ("test_compare", "test_compare_page", "test_report_compare"),
    "vision_eval.leaderboard": (
        "test_leaderboard_table",
        "test_leaderboard",
        "test_benchmark_protocols_leaderboard",
        "test_report_compare",
    ),
    "vision_eval.report.aggregates": ("test_report_overview", "test_report_compare"),
    "vision_eval.evaluators.benchmarks": _BENCHMARK_TESTS,
    # The judged presets' grading is tested in process there (their fake-server tests hang under the fork server).
    "vision_eval.evaluators.benchmarks.mmbench": (*_BENCHMARK_TESTS, "test_judged_grading"),
    "vision_eval.evaluators.benchmarks.mathvista": (*_BENCHMARK_TESTS, "test_judged_grading"),
    "vision_eval.evaluators.benchmarks.mmvet": (*_BENCHMARK_TESTS, "test_judged_grading"),
    "vision_eval.evaluators.fields": (
        "test_field_rules",
        "test_field_accuracy",
        "test_field_contract",
        "test_field_dates",
        "test_field_extraction",
    ),
    "vision_eval.evaluators.boxes": ("test_box_rules", "test_bbox_iou"),
}
"""The test files (``tests/<name>.py``) written for each mutated module (or package): a mutant of the module runs
those of its tests that call the mutated function, no others."""


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


def own_tests(mutant: str) -> tuple[str, ...] | None:
    """The test files of a mutant's module (``vision_eval.gates.x_worst__mutmut_2`` -> ``vision_eval.gates``)."""
    module = mutant.rpartition(".")[0]
    while module:
        if module in MODULE_TESTS:
            return tuple(f"tests/{name}.py" for name in MODULE_TESTS[module])
        module = module.rpartition(".")[0]
    return None


def pytest_collection_modifyitems(session: Any, config: Any, items: list[Any]) -> None:
    mutant = _mode()
    if mutant is None or mutant in _NOT_A_MUTANT:
        return
    files = own_tests(mutant)
    if files is not None:
        kept = [item for item in items if item.nodeid.split("::")[0] in files]
        config.hook.pytest_deselected(items=[item for item in items if item not in kept])
        items[:] = kept
    if DURATIONS.exists():
        spent = json.loads(DURATIONS.read_text())
        items.sort(key=lambda item: spent.get(item.nodeid, 0.0))
