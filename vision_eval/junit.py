"""``run.junit``: the results as JUnit XML, for CI systems that read it. It agrees with the exit code.

One ``testsuite`` per evaluator, one ``testcase`` per sample (``classname`` the evaluator, ``name`` the sample id),
and a ``gates`` testsuite with one ``testcase`` per gate: a gate that failed is a ``failure`` with its message.
A row is a ``failure`` (did not pass) or an ``error`` only when it made the run fail: when a quality gate of its
evaluator failed (``min_pass_rate``, ``min_mean_score``: its failing rows), or its ``max_error_rate`` did (its error
rows). Otherwise its verdict and reason are its ``system-out``, and each suite counts its rows by verdict in its
``properties``: a run that exits 0 has no ``failure`` or ``error`` element, so a green job shows no red test.
A failing row's text shows the evaluator's reasoning, then the response and the expected output it compared.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

from vision_eval.results import ERROR, PROCESSED, SKIPPED
from vision_eval.storage import write_atomically

MAX_TEXT = 4000
QUALITY_GATES = ("min_pass_rate", "min_mean_score")
TEXTS = ("output", "expected_output")
"""The texts a failing row's body shows, when the evaluator reads them."""


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


def _quoted(value: Any) -> str:
    """A text as a JSON string (its spaces, case and line breaks visible), cut at MAX_TEXT."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return json.dumps(text[:MAX_TEXT], ensure_ascii=False) + (" [cut]" if len(text) > MAX_TEXT else "")


def _verdict(row: dict[str, Any]) -> str:
    """``failed``, ``error``, ``skipped``, ``passed`` or ``processed`` (a score without a threshold)."""
    if row["status"] == ERROR:
        return "error"
    if row["status"] == SKIPPED:
        return "skipped"
    if row["status"] == PROCESSED and row["passed"] is False:
        return "failed"
    return "passed" if row["passed"] else "processed"


def _score_line(row: dict[str, Any]) -> str:
    threshold = "-" if row["threshold"] is None else f"{row['threshold']:g}"
    score = "-" if row["score"] is None else f"{row['score']:.4g}"
    return f"score {score} < threshold {threshold}"


def _body(row: dict[str, Any]) -> str:
    """A failing row's reasoning, then the response and the expected output (JSON-quoted, when present)."""
    lines = [_reason(row["details"])]
    width = max(map(len, TEXTS))
    lines += [f"{name:>{width}}: {_quoted(row[name])}" for name in TEXTS if row.get(name) is not None]
    return "\n".join(line for line in lines if line)


def _case(suite: ET.Element, row: dict[str, Any], verdict: str, fails_run: bool) -> None:
    case = ET.SubElement(suite, "testcase", classname=row["evaluator"], name=str(row["sample_id"]))
    if row["latency_s"] is not None:
        case.set("time", f"{row['latency_s']:.3f}")
    if verdict == "skipped":
        ET.SubElement(case, "skipped", message=_reason(row["details"]))
    elif verdict == "error" and fails_run:
        ET.SubElement(case, "error", message=(row["error"] or "")[:MAX_TEXT], type="error").text = _body(row)
    elif verdict == "failed" and fails_run:
        ET.SubElement(case, "failure", message=_score_line(row)).text = _body(row)
    elif verdict == "error":
        ET.SubElement(case, "system-out").text = f"error (within max_error_rate): {row['error'] or ''}"[:MAX_TEXT]
    elif verdict == "failed":
        summary = f"failed ({_score_line(row)}; no gate of {row['evaluator']} failed)"
        ET.SubElement(case, "system-out").text = summary + "\n" + _body(row)


def _failed_gates(gates: list[dict[str, Any]]) -> tuple[set[str], set[str]]:
    """The evaluators with a failed quality gate, and those with a failed ``max_error_rate``."""
    failed = [g for g in gates if not g["passed"]]
    quality = {g["evaluator"] for g in failed if g["gate"] in QUALITY_GATES}
    return quality, {g["evaluator"] for g in failed if g["gate"] == "max_error_rate"}


def _texts(
    results: pl.DataFrame, samples: pl.DataFrame | pl.LazyFrame | None, columns: Mapping[str, Mapping[str, str]]
) -> dict[tuple[str, str], dict[str, Any]]:
    """Per (evaluator, sample id) of a failing or error row: the ``output`` and ``expected_output`` that evaluator
    read (through its ``columns`` mapping, else the canonical column), when ``samples`` holds them (one lazy read of
    those rows and columns)."""
    present = samples.lazy().collect_schema().names() if samples is not None else []
    if samples is None or "id" not in present:
        return {}
    failing = (pl.col("status") == ERROR) | ((pl.col("status") == PROCESSED) & (pl.col("passed") == False))  # noqa: E712
    rows = results.filter(failing).select("evaluator", pl.col("sample_id").cast(pl.Utf8))
    read: dict[str, dict[str, str]] = {}
    for evaluator in rows["evaluator"].unique(maintain_order=True).to_list():
        mapped = {name: (columns.get(evaluator) or {}).get(name, name) for name in TEXTS}
        read[evaluator] = {name: column for name, column in mapped.items() if column in present}
    wanted = sorted({column for mapped in read.values() for column in mapped.values()})
    if not wanted:
        return {}
    found = (
        samples.lazy()
        .select(pl.col("id").cast(pl.Utf8), *wanted)
        .filter(pl.col("id").is_in(rows["sample_id"].unique().implode()))
        .collect(engine="streaming")
    )
    by_id = {row["id"]: row for row in found.iter_rows(named=True)}
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for evaluator, sample_id in rows.iter_rows():
        sample = by_id.get(sample_id)
        if sample is not None and read[evaluator]:
            out[(evaluator, sample_id)] = {name: sample[column] for name, column in read[evaluator].items()}
    return out


def write_junit(
    results: pl.DataFrame,
    gates: list[dict[str, Any]],
    path: str | Path,
    samples: pl.DataFrame | pl.LazyFrame | None = None,
    columns: Mapping[str, Mapping[str, str]] | None = None,
) -> Path:
    """Write the XML to ``path`` (folders created). ``samples`` (with ``columns``, each evaluator's mapping of
    ``output`` / ``expected_output`` to dataset columns) gives the texts a failing row's body shows."""
    root = ET.Element("testsuites", name="vision-eval")
    quality, error_rate = _failed_gates(gates)
    texts = _texts(results, samples, columns or {})
    names = ["evaluator", "sample_id", "status", "score", "passed", "threshold", "details", "error", "latency_s"]
    for (name,), group in results.select(names).group_by("evaluator", maintain_order=True):
        suite = ET.SubElement(root, "testsuite", name=str(name))
        verdicts = dict.fromkeys(("passed", "failed", "error", "skipped", "processed"), 0)
        counts = {"tests": group.height, "failures": 0, "errors": 0, "skipped": 0}
        properties = ET.SubElement(suite, "properties")
        for row in group.iter_rows(named=True):
            verdict = _verdict(row)
            verdicts[verdict] += 1
            fails_run = name in (error_rate if verdict == "error" else quality)
            row.update(texts.get((str(name), str(row["sample_id"])), {}))
            _case(suite, row, verdict, fails_run)
            if verdict == "skipped":
                counts["skipped"] += 1
            elif verdict == "error" and fails_run:
                counts["errors"] += 1
            elif verdict == "failed" and fails_run:
                counts["failures"] += 1
        for key, value in verdicts.items():
            ET.SubElement(properties, "property", name=key, value=str(value))
        for key, count in counts.items():
            suite.set(key, str(count))
    if gates:
        suite = ET.SubElement(root, "testsuite", name="gates", tests=str(len(gates)))
        failed = 0
        for gate in gates:
            case = ET.SubElement(suite, "testcase", classname="gates", name=f"{gate['evaluator']}.{gate['gate']}")
            if gate["passed"]:
                ET.SubElement(case, "system-out").text = gate["message"]
            else:
                failed += 1
                ET.SubElement(case, "failure", message=gate["message"])
        suite.set("failures", str(failed))
        suite.set("errors", "0")
    out = Path(path)
    write_atomically(out, lambda target: ET.ElementTree(root).write(target, encoding="utf-8", xml_declaration=True))
    return out
