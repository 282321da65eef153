"""The standalone scripts in evaluators/code-validators/, run as subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import vision_eval

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "evaluators" / "code-validators"
ENV = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}


def script(kind: str, record: object = None, *, argv: bool = False, raw: str | None = None) -> tuple[int, dict, str]:
    text = raw if raw is not None else json.dumps(record)
    command = [sys.executable, str(SCRIPTS / f"{kind}_validator.py")]
    proc = subprocess.run(
        [*command, text] if argv else command,
        input=None if argv else text,
        capture_output=True,
        text=True,
        env=ENV,
        timeout=60,
        cwd=str(ROOT / "tests"),
    )
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else {}, proc.stderr


def test_count_script_stdin_and_argv_exit_codes() -> None:
    code, result, _ = script("count", {"output": "5 bottles", "expected_output": "5 bottles"})
    assert code == 0 and result["status"] == "processed" and result["score"] == 1.0 and result["passed"] is True
    code, result, _ = script(
        "count", {"output": "5 bottles, 3 cans", "expected_output": "5 bottles, 8 cans"}, argv=True
    )
    assert code == 1 and result["score"] == 0.5 and result["passed"] is False
    assert result["details"]["matched"] == {"bottle": 5}


def test_seed_objects_example() -> None:
    code, result, _ = script("count", {"output": "5 objects", "expected_output": "5 objects"})
    assert code == 0 and result["score"] == 1.0


def test_ocr_and_chart_scripts_with_settings() -> None:
    code, result, _ = script(
        "ocr", {"output": "Project Proposal Q1 2026", "expected_output": "Project Proposal Q1 2026"}
    )
    assert code == 0 and result["score"] > 0.9
    record = {"output": "budget only", "expected_output": "budget only", "keywords": ["budget", "timeline"]}
    code, result, _ = script("ocr", {**record, "threshold": 0.9})
    assert code == 1 and result["score"] == pytest.approx(0.85)
    assert result["details"]["keywords_missing"] == ["timeline"]
    code, result, _ = script(
        "chart", {"output": "revenue $2.8M", "expected_output": "$2.4M", "currency_tolerance": 0.2}
    )
    assert code == 0 and result["details"]["values"][0]["matched"] is True


def test_json_script_invalid_json_is_not_passed_not_error() -> None:
    code, result, _ = script("json", {"output": "no json here", "expected_output": '{"a": 1}'})
    assert code == 1 and result["status"] == "processed" and result["score"] == 0.0
    code, result, _ = script("json", {"output": '{"a": 2}', "json_schema": {"type": "object", "required": ["a"]}})
    assert code == 0


@pytest.mark.parametrize(
    "raw",
    ["this is not json", "[1, 2]", ""],
)
def test_garbage_input_exits_2(raw: str) -> None:
    code, result, _ = script("count", raw=raw)
    assert code == 2 and result["status"] == "error" and result["error"].startswith("bad input")


def test_row_error_and_bad_settings_exit_2() -> None:
    code, result, _ = script("chart", {"output": "x", "expected_output": "nothing numeric"})
    assert code == 2 and "no currency" in result["error"]
    code, result, _ = script("count", {"output": "x", "expected_output": "3 cats", "no_such_setting": 1})
    assert code == 2 and "bad settings" in result["error"]
    code, result, _ = script("count", {"expected_output": "3 cats"})
    assert code == 2 and result["error"] == "output is missing"


def test_scripts_match_the_builtins() -> None:
    record = {
        "output": "Sales rose from $800K in Q1 2025 to $1.3 million in Q4 2025, a 62 percent increase.",
        "expected_output": "Q1 2025: $0.8M; Q4 2025: $1.3M; growth: 62.5%",
    }
    _, from_script, _ = script("chart", record)
    builtin = vision_eval.evaluate([{"id": "x", **record}], evaluators={"c": {"type": "chart_validator"}}).results
    assert from_script["score"] == builtin["score"][0] == 0.8
    assert from_script["details"] == json.loads(builtin["details"][0])
    assert from_script["passed"] is builtin["passed"][0] is False  # default threshold 0.9


def test_clear_message_without_the_dependencies() -> None:
    # The header itself is checked in test_validator_script_setup.py. Without site-packages the checkout's
    # package is found but not its dependencies: a plain message and exit 2.
    proc = subprocess.run(
        [sys.executable, "-S", str(SCRIPTS / "count_validator.py"), "{}"],
        capture_output=True,
        text=True,
        env={"PATH": os.environ.get("PATH", "")},
        cwd="/",
        timeout=60,
    )
    assert proc.returncode == 2
    assert "needs the vision-eval package" in proc.stderr


def test_a_lone_surrogate_is_a_plain_error_exit_2() -> None:
    code, result, stderr = script("count", raw='{"output": "x \\ud800 5 circles", "expected_output": "5 circles"}')
    assert code == 2 and result["error"] == "'output' is not valid text (a lone surrogate)"
    assert "Traceback" not in stderr and "UnicodeEncodeError" not in json.dumps(result)


def test_long_and_foreign_digits_get_verdicts() -> None:
    code, result, _ = script("count", {"output": "9" * 30 + " circles", "expected_output": "5 circles"})
    assert code == 1 and result["status"] == "processed" and result["details"]["found"] == {"circle": int("9" * 30)}
    code, result, _ = script("count", {"output": "٥ circles", "expected_output": "5 circles"})
    assert code == 0 and result["score"] == 1.0
