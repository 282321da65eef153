"""The standalone validator script protocol: one JSON record in, the standard result out.

``python count_validator.py '{"output": "5 bottles", "expected_output": "5 bottles"}'`` (or the
record on stdin) prints ``{"status", "score", "passed", "details"}`` and exits 0 when passed,
1 when not passed and 2 on error. Keys other than the row columns are the validator's settings.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import polars as pl

from vision_eval.evaluator import Evaluator

ROW_KEYS = ("id", "input", "output", "expected_output", "keywords", "images", "metadata", "task", "type")


def validate_one(cls: type[Evaluator], record: dict[str, Any]) -> dict[str, Any]:
    """Run the validator ``cls`` (e.g. ``CountValidator``) on one record, as a run would."""
    from pydantic import ValidationError

    from vision_eval.data.text import invalid_column

    column = invalid_column(record)
    if column is not None:  # a lone surrogate (a \ud800 escape in the JSON)
        error = f"{column!r} is not valid text (a lone surrogate)"
        return {"status": "error", "score": None, "passed": False, "details": {}, "error": error}
    config = {k: v for k, v in record.items() if k not in ROW_KEYS}
    nested = config.pop("config", None)
    if isinstance(nested, dict):  # a code_judge-style record carries its settings under "config"
        config.update(nested)
    try:
        settings = cls.settings_model(**config)
        evaluator = cls(cls.type_name, settings)
    except (ValidationError, ValueError) as exc:
        return {"status": "error", "score": None, "passed": False, "details": {}, "error": f"bad settings: {exc}"}
    columns: dict[str, Any] = {
        "id": ["0"],
        "output": [record.get("output")],
        "expected_output": [record.get("expected_output")],
    }
    if record.get("keywords") is not None:
        keywords = record["keywords"]
        columns["keywords"] = pl.Series([[str(k) for k in keywords] if isinstance(keywords, list) else [str(keywords)]])
    for column in evaluator.columns_needed():
        if column != "keywords" and columns.get(column, [None])[0] is None:
            return {"status": "error", "score": None, "passed": False, "details": {}, "error": f"{column} is missing"}
    row = evaluator.evaluate(pl.DataFrame(columns)).results.row(0, named=True)
    status = row["status"]
    details = json.loads(row["details"]) if row.get("details") else {}
    if status != "processed":
        return {"status": status, "score": None, "passed": False, "details": details, "error": row.get("error")}
    score = float(row["score"])
    threshold = evaluator.threshold if evaluator.threshold is not None else 1.0
    passed = row.get("passed")
    passed = (score >= threshold) if passed is None else bool(passed) and score >= threshold
    return {"status": status, "score": score, "passed": passed, "details": details}


def main(cls: type[Evaluator], argv: list[str] | None = None) -> int:
    """Entry point of a script: read the record, print the result, return the exit code."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        text = argv[0] if argv else sys.stdin.read()
        record = json.loads(text)
        if not isinstance(record, dict):
            raise ValueError("the input must be a JSON object")
    except (ValueError, OSError) as exc:
        print(
            json.dumps({"status": "error", "score": None, "passed": False, "details": {}, "error": f"bad input: {exc}"})
        )
        return 2
    try:
        result = validate_one(cls, record)
    except Exception as exc:  # the protocol promises exit code 2, never a traceback (the type goes in details)
        from vision_eval.reasons import plain_reason

        reason = plain_reason(exc)[:300]
        result = {
            "status": "error",
            "score": None,
            "passed": False,
            "details": {"exception": type(exc).__name__},
            "error": f"the record could not be checked{': ' + reason if reason else ''}",
        }
    print(json.dumps(result, ensure_ascii=False, default=str))
    if result["status"] == "error":
        return 2
    return 0 if result["passed"] else 1
