"""``run.junit``: the results as JUnit XML, for CI systems that read it.

One ``testsuite`` per evaluator, one ``testcase`` per sample (``classname`` the evaluator, ``name`` the sample
id): a ``failure`` with the score, the threshold and the evaluator's reasoning when the row did not pass, an
``error`` with the error text, ``skipped`` with the reason. The run's failed gates are a testsuite of their own.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import polars as pl

from vision_eval.results import ERROR, SKIPPED

MAX_TEXT = 4000


def _reason(details: str | None) -> str:
    """The readable part of a row's details: its reason or reasoning, else the details themselves."""
    if not details:
        return ""
    try:
        value = json.loads(details)
    except ValueError:
        return details[:MAX_TEXT]
    if isinstance(value, dict):
        for key in ("reason", "reasoning", "message"):
            text = value.get(key)
            if isinstance(text, str):
                return text[:MAX_TEXT]
    return details[:MAX_TEXT]


def _case(suite: ET.Element, row: dict[str, Any]) -> None:
    case = ET.SubElement(suite, "testcase", classname=row["evaluator"], name=str(row["sample_id"]))
    if row["latency_s"] is not None:
        case.set("time", f"{row['latency_s']:.3f}")
    if row["status"] == ERROR:
        ET.SubElement(case, "error", message=(row["error"] or "")[:MAX_TEXT], type="error")
    elif row["status"] == SKIPPED:
        ET.SubElement(case, "skipped", message=_reason(row["details"]))
    elif not row["passed"]:
        threshold = "-" if row["threshold"] is None else f"{row['threshold']:g}"
        failure = ET.SubElement(case, "failure", message=f"score {row['score']:.4g} < threshold {threshold}")
        failure.text = _reason(row["details"])


def write_junit(results: pl.DataFrame, gates: list[dict[str, Any]], path: str | Path) -> Path:
    """Write the XML to ``path`` (folders created)."""
    root = ET.Element("testsuites", name="vision-eval")
    columns = ["evaluator", "sample_id", "status", "score", "passed", "threshold", "details", "error", "latency_s"]
    for (name,), group in results.select(columns).group_by("evaluator", maintain_order=True):
        suite = ET.SubElement(root, "testsuite", name=str(name))
        counts = {"tests": group.height, "failures": 0, "errors": 0, "skipped": 0}
        for row in group.iter_rows(named=True):
            _case(suite, row)
            if row["status"] == ERROR:
                counts["errors"] += 1
            elif row["status"] == SKIPPED:
                counts["skipped"] += 1
            elif not row["passed"]:
                counts["failures"] += 1
        for key, value in counts.items():
            suite.set(key, str(value))
    if gates:
        suite = ET.SubElement(root, "testsuite", name="gates", tests=str(len(gates)))
        failed = 0
        for gate in gates:
            case = ET.SubElement(suite, "testcase", classname="gates", name=f"{gate['evaluator']}.{gate['gate']}")
            if not gate["passed"]:
                failed += 1
                ET.SubElement(case, "failure", message=gate["message"])
        suite.set("failures", str(failed))
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(out, encoding="utf-8", xml_declaration=True)
    return out
