"""type: code_judge (subprocess per row / per batch) and type: python (in-process)."""

from __future__ import annotations

import io
import json
import os
import sys
import time
from pathlib import Path

import pytest

import vision_eval

ROOT = Path(__file__).resolve().parents[1]
JUDGE = str(ROOT / "tests" / "fixtures" / "judge_script.py")


def results(data: list[dict], **settings) -> dict[str, dict]:
    result = vision_eval.evaluate(data, evaluators={"j": {"type": "code_judge", **settings}})
    rows = {r["sample_id"]: r for r in result.results.to_dicts()}
    for row in rows.values():
        row["details"] = json.loads(row["details"]) if row["details"] else None
    return rows


def judge(**settings) -> dict:
    return {"command": [sys.executable, JUDGE], **settings}


ROWS = [
    {"id": "a", "output": "x", "expected_output": "x"},
    {"id": "b", "output": "y", "expected_output": "x"},
]


def test_per_row_hits_misses_form() -> None:
    rows = results(ROWS, **judge(mode="equal"))
    assert rows["a"]["score"] == 1.0 and rows["a"]["passed"] is True
    assert rows["b"]["score"] == 0.0 and rows["b"]["passed"] is False
    assert rows["a"]["details"] == {"hits": ["equal"], "misses": [], "reasoning": "compared"}


def test_row_payload_images_metadata_config_and_cwd(tmp_path: Path) -> None:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (4, 4), "red").save(buffer, format="PNG")
    file_image = tmp_path / "pic.png"
    file_image.write_bytes(buffer.getvalue())
    row = {"input": "q", "output": "o", "expected_output": "e", "task": "t"}
    command = f"{sys.executable} {JUDGE}"  # a string command
    settings = {"command": command, "cwd": str(tmp_path), "mode": "echo", "extra": [1, 2]}
    rows = results([{"id": "m", **row, "images": [buffer.getvalue()]}], **settings)
    rows |= results([{"id": "f", **row, "images": [str(file_image)]}], **settings)
    memory = rows["m"]["details"]
    assert memory["cwd"] == str(tmp_path)
    sent = memory["row"]
    assert sent["id"] == "m" and sent["input"] == "q" and sent["output"] == "o" and sent["expected_output"] == "e"
    assert sent["metadata"]["task"] == "t"
    assert sent["config"] == {"mode": "echo", "extra": [1, 2]}
    assert memory["sizes"] == [len(buffer.getvalue())]  # bytes were written to a temp file with a path
    assert sent["images"][0].endswith(".png")
    assert not Path(sent["images"][0]).exists()  # the temp file is removed afterwards
    assert rows["f"]["details"]["row"]["images"] == [str(file_image)]
    assert rows["m"]["passed"] is True and rows["m"]["score"] == 0.5


def test_timeout_kills_the_process_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    start = time.monotonic()
    rows = results([ROWS[0]], **judge(mode="sleep", pidfile=str(pidfile), timeout=1.5))
    assert time.monotonic() - start < 30
    assert rows["a"]["status"] == "error"
    assert rows["a"]["error"] == "timed out after 1.5 s"
    child = int(pidfile.read_text())
    time.sleep(0.2)
    assert not _running(child)  # the grandchild died with the group


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")  # a killed orphan may stay a zombie until init reaps it


def test_garbage_output_and_crash_are_row_errors_with_stderr() -> None:
    garbage = results([ROWS[0]], **judge(mode="garbage"))["a"]
    assert garbage["status"] == "error" and "no JSON" in garbage["error"]
    assert garbage["details"]["stdout"].strip() == "this is not json"
    crash = results([ROWS[0]], **judge(mode="crash"))["a"]
    assert crash["status"] == "error"
    assert "exit code 3" in crash["error"] and "something broke" in crash["error"]


def test_unusable_result_and_error_status() -> None:
    no_score = results([ROWS[0]], **judge(mode="no_score"))["a"]
    assert no_score["status"] == "error" and "no score" in no_score["error"]
    said_no = results([ROWS[0]], **judge(mode="status_error"))["a"]
    assert said_no["status"] == "error" and said_no["error"] == "judge says no"


def test_missing_command_is_a_row_error() -> None:
    rows = results([ROWS[0]], command=["/nonexistent/judge-binary"])
    assert rows["a"]["status"] == "error" and "cannot start" in rows["a"]["error"]


def test_batch_mode_one_process_per_batch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "calls.log"
    monkeypatch.setenv("JUDGE_LOG", str(log))
    data = [{"id": str(i), "output": str(i % 2), "expected_output": "0"} for i in range(10)]
    rows = results(data, **judge(mode="equal", batch=True, batch_size=4, concurrency=2))
    assert log.read_text().count("call") == 3
    assert [rows[str(i)]["score"] for i in range(10)] == [1.0, 0.0] * 5


def test_batch_mode_results_by_id_and_wrong_count(tmp_path: Path) -> None:
    data = [{"id": str(i), "output": str(i % 2), "expected_output": "0"} for i in range(5)]
    rows = results(data, **judge(mode="by_id", batch=True, batch_size=5))
    assert [rows[str(i)]["score"] for i in range(5)] == [1.0, 0.0, 1.0, 0.0, 1.0]
    short = results(data, **judge(mode="short", batch=True, batch_size=5))
    assert all(r["status"] == "error" and "1 result for 5 rows" in r["error"] for r in short.values())


def test_validator_script_as_code_judge() -> None:
    script = str(ROOT / "evaluators" / "code-validators" / "count_validator.py")
    data = [
        {"id": "a", "output": "5 bottles", "expected_output": "5 bottles"},
        {"id": "b", "output": "5 bottles, 3 cans", "expected_output": "5 bottles, 8 cans"},
    ]
    env = {"PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    rows = results(data, command=[sys.executable, script], env=env)
    assert rows["a"]["score"] == 1.0 and rows["a"]["passed"] is True
    assert rows["b"]["score"] == 0.5 and rows["b"]["passed"] is False  # exit code 1 is a result, not a crash
    assert rows["b"]["details"]["matched"] == {"bottle": 5}


def test_bad_settings_are_refused() -> None:
    with pytest.raises(Exception, match="timeout"):
        results([ROWS[0]], **judge(timeout=0))


# ---- type: python ------------------------------------------------------------------------------


def py(data: list[dict], **settings) -> dict[str, dict]:
    result = vision_eval.evaluate(data, evaluators={"p": {"type": "python", **settings}})
    return {r["sample_id"]: r for r in result.results.to_dicts()}


def test_python_row_function_with_config_and_judge_form() -> None:
    rows = py(ROWS, function="tests.fixtures.py_judges:row_judge", why="because")
    assert rows["a"]["score"] == 1.0 and rows["b"]["score"] == 0.0
    assert json.loads(rows["a"]["details"]) == {"hits": ["equal"], "misses": [], "reasoning": "because"}


def test_python_row_function_without_config_errors_only_its_bad_row() -> None:
    data = [{"id": "a", "output": "12345"}, {"id": "b", "output": "boom"}]
    rows = py(data, function="tests.fixtures.py_judges:row_no_config")
    assert rows["a"]["score"] == 0.5 and rows["a"]["passed"] is True  # default threshold 0.5
    assert rows["b"]["status"] == "error" and "TypeError: bad row" in rows["b"]["error"]


def test_python_frame_function() -> None:
    rows = py(ROWS, function="tests.fixtures.py_judges:frame_judge", columns=["output", "expected_output"])
    assert rows["a"]["score"] == 1.0 and rows["b"]["score"] == 0.0


def test_python_unknown_function_is_refused() -> None:
    with pytest.raises(Exception, match="cannot import"):
        py(ROWS, function="tests.fixtures.py_judges:nope")
