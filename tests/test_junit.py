"""``run.junit`` agrees with the exit code: a run that exits 0 has no ``failure`` or ``error`` element (its failing
rows are testcases with their verdict in ``system-out``, counted in the suite's properties); a failed gate is a
``failure``, and so are the rows of the evaluator whose gate failed, each showing both texts it compared."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import vision_eval as ve

ROWS = [
    {"id": "a", "output": "5 bottles", "expected_output": "5 bottles", "label": "5 bottles"},
    {"id": "b", "output": "Three cans ", "expected_output": "3 cans", "label": "three cans"},
    {"id": "c", "output": "7 cups", "expected_output": "7 cups", "label": "7 cups"},
    {"id": "d", "output": "no idea", "expected_output": "2 mugs", "label": "two mugs"},
]


def junit(tmp_path: Path, evaluators: dict[str, Any], **run: Any) -> tuple[ET.Element, int]:
    path = tmp_path / "junit.xml"
    result = ve.evaluate(ROWS, evaluators=evaluators, run={"progress": False, "junit": str(path), **run})
    return ET.parse(path).getroot(), result.exit_code


def properties(suite: ET.Element) -> dict[str, int]:
    return {p.get("name") or "": int(p.get("value") or 0) for p in suite.iterfind("properties/property")}


def test_a_run_that_exits_0_has_no_failure_or_error_element(tmp_path: Path) -> None:
    evaluators = {
        "exact": {"type": "exact_match"},
        "count": {"type": "exact_count", "protocol": "lenient", "max_error_rate": 0.5},
    }
    root, code = junit(tmp_path, evaluators)
    assert code == 0
    assert root.findall(".//failure") == [] and root.findall(".//error") == []
    exact = root.find("testsuite[@name='exact']")
    assert exact is not None and (exact.get("tests"), exact.get("failures"), exact.get("errors")) == ("4", "0", "0")
    assert properties(exact) == {"passed": 2, "failed": 2, "error": 0, "skipped": 0, "processed": 0}
    out = exact.findtext("testcase[@name='b']/system-out") or ""
    assert out.startswith("failed (score 0 < threshold 1; no gate of exact failed)")
    assert '"Three cans "' in out and '"3 cans"' in out  # both texts, quoted: the trailing space shows
    assert exact.find("testcase[@name='a']/system-out") is None  # a passing row says nothing
    count = root.find("testsuite[@name='count']")
    assert count is not None and properties(count)["error"] == 1 and count.get("errors") == "0"
    assert "error (within max_error_rate): cannot extract a count" in (
        count.findtext("testcase[@name='d']/system-out") or ""
    )
    cases = root.iterfind("testsuite[@name='gates']/testcase")
    gates = {case.get("name"): case.findtext("system-out") for case in cases}
    assert gates["exact.max_error_rate"] == "exact: error rate 0.0% \u2264 10.0% (0 of 4 rows)"
    assert gates["count.max_error_rate"] == "count: error rate 25.0% \u2264 50.0% (1 of 4 rows)"


def test_a_failed_gate_is_a_failure_with_its_rows_and_both_texts(tmp_path: Path) -> None:
    evaluators = {
        "exact": {"type": "exact_match", "min_pass_rate": 0.9},
        "labels": {"type": "exact_match", "columns": {"expected_output": "label"}},  # its gate holds
    }
    root, code = junit(tmp_path, evaluators)
    assert code == 1
    gate = root.find("testsuite[@name='gates']/testcase[@name='exact.min_pass_rate']/failure")
    assert gate is not None and gate.get("message") == "exact: pass rate 0.500 < 0.9"
    exact = root.find("testsuite[@name='exact']")
    assert exact is not None and exact.get("failures") == "2"
    failure = exact.find("testcase[@name='b']/failure")
    assert failure is not None and failure.get("message") == "score 0 < threshold 1"
    assert failure.text == '{"equal":false}\n         output: "Three cans "\nexpected_output: "3 cans"'
    # The other evaluator's failing row made no gate fail: not a failure, and its body shows the column it read.
    labels = root.find("testsuite[@name='labels']")
    assert labels is not None and labels.get("failures") == "0" and labels.find(".//failure") is None
    assert labels.find("testcase[@name='b']/system-out") is None  # "three cans": equal, case aside
    assert 'expected_output: "two mugs"' in (labels.findtext("testcase[@name='d']/system-out") or "")


def test_a_failed_error_rate_makes_the_error_rows_errors(tmp_path: Path) -> None:
    root, code = junit(tmp_path, {"count": {"type": "exact_count", "protocol": "lenient", "max_error_rate": 0}})
    assert code == 3
    error = root.find("testsuite[@name='count']/testcase[@name='d']/error")
    assert error is not None and error.get("message") == "cannot extract a count from the output"
    assert 'output: "no idea"' in (error.text or "")
    assert root.find("testsuite[@name='count']").get("errors") == "1"  # type: ignore[union-attr]
    assert root.find("testsuite[@name='gates']/testcase[@name='count.max_error_rate']/failure") is not None
