"""Parsing an agent's reply: score 0-100, TOP_ISSUE / topIssue, categoryScores, lists, checklist, feedback.

The JSON object is found by the judges' extraction (``vision_eval.llm.replies.find_json_object``):
fenced blocks first, then every balanced object in the prose, lenient about comments and trailing commas.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from vision_eval.agents.panel import SEVERITIES
from vision_eval.llm.replies import find_json_object

ISSUE_KEYS = ("TOP_ISSUE", "topIssue", "top_issue")


class ReplyError(ValueError):
    """A reply with no usable score; the message is the row's error reason."""


@dataclass
class AgentVerdict:
    """One agent's parsed verdict on one image (scores normalized to 0..1)."""

    score: float
    raw_score: float | None
    top_issue: dict[str, Any] | None = None
    category_scores: dict[str, float] = field(default_factory=dict)
    what_worked: list[str] = field(default_factory=list)
    prompt_instructions: list[str] = field(default_factory=list)
    checklist: list[dict[str, Any]] = field(default_factory=list)
    feedback: str | None = None
    parse_failed: bool = False
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form for details."""
        return asdict(self)


def _score_0_100(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        match = re.fullmatch(r"\s*(-?\d+(?:\.\d+)?)\s*(?:/\s*100|%)?\s*", value)
        value = float(match.group(1)) if match else None
    if isinstance(value, int | float) and math.isfinite(value) and 0 <= value <= 100:
        return float(value)
    return None


def _strings(value: Any, key: str, warnings: list[str]) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value.strip()] if value.strip() else []
    if isinstance(value, list):
        return [str(v).strip() for v in value if v is not None and str(v).strip()]
    warnings.append(f"{key} is not a list of strings")
    return []


def _top_issue(data: dict[str, Any], warnings: list[str]) -> dict[str, Any] | None:
    raw = next((data[k] for k in ISSUE_KEYS if k in data), None)
    if raw is None:
        return None
    if isinstance(raw, str):
        raw = {"problem": raw}
    if not isinstance(raw, dict):
        warnings.append("TOP_ISSUE is not an object")
        return None
    severity = str(raw.get("severity") or "").strip().lower() or None
    if severity is not None and severity not in SEVERITIES:
        warnings.append(f"TOP_ISSUE severity {raw.get('severity')!r} is not one of {', '.join(SEVERITIES)}")
        severity = None
    problem, fix = raw.get("problem"), raw.get("fix")
    return {
        "problem": str(problem).strip() if problem is not None else None,
        "severity": severity,
        "fix": str(fix).strip() if fix is not None else None,
    }


def _categories(value: Any, warnings: list[str]) -> dict[str, float]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        warnings.append("categoryScores is not an object")
        return {}
    scores = {}
    for key, raw in value.items():
        number = _score_0_100(raw)
        if number is None:
            warnings.append(f"categoryScores.{key}: {raw!r} is not a number from 0 to 100")
        else:
            scores[str(key)] = number / 100.0
    return scores


def _passed(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("pass", "passed", "true", "yes", "ok", "✓"):
        return True
    if text in ("fail", "failed", "false", "no", "✗"):
        return False
    return None


def _checklist(value: Any, warnings: list[str]) -> list[dict[str, Any]]:
    if value is None:
        return []
    if isinstance(value, dict):  # {"item": true, ...}
        value = [{"item": k, "pass": v} for k, v in value.items()]
    if not isinstance(value, list):
        warnings.append("checklist is not a list")
        return []
    items: list[dict[str, Any]] = []
    for entry in value:
        if isinstance(entry, str):
            items.append({"item": entry, "passed": None, "notes": None})
            continue
        if not isinstance(entry, dict):
            continue
        label = next((entry[k] for k in ("item", "name", "label", "check") if k in entry), None)
        verdict = next((entry[k] for k in ("pass", "passed", "status", "result") if k in entry), None)
        notes = entry.get("notes", entry.get("note"))
        items.append({"item": label, "passed": _passed(verdict) if verdict is not None else None, "notes": notes})
    return items


def parse_reply(text: str, fallback_score: float | None = None) -> AgentVerdict:
    """Parse an agent's reply. No JSON object or no valid ``score`` (0-100): with ``fallback_score``
    (0-100) a verdict flagged ``parse_failed``, else ``ReplyError``. Malformed optional fields are
    dropped with a warning; they do not fail the reply."""
    data = find_json_object(text, required_key="score")
    reason = None
    if data is None:
        reason = "no JSON object in the reply"
    else:
        raw_score = _score_0_100(data.get("score"))
        if "score" not in data:
            reason = "the reply has no 'score'"
        elif raw_score is None:
            reason = f"score {data.get('score')!r} is not a number from 0 to 100"
    if reason is not None:
        if fallback_score is None:
            raise ReplyError(reason)
        return AgentVerdict(
            score=fallback_score / 100.0, raw_score=None, parse_failed=True, warnings=[f"{reason}; fallback score"]
        )
    assert data is not None and raw_score is not None
    warnings: list[str] = []
    feedback = data.get("feedback")
    return AgentVerdict(
        score=raw_score / 100.0,
        raw_score=raw_score,
        top_issue=_top_issue(data, warnings),
        category_scores=_categories(data.get("categoryScores", data.get("category_scores")), warnings),
        what_worked=_strings(data.get("whatWorked", data.get("what_worked")), "whatWorked", warnings),
        prompt_instructions=_strings(
            data.get("promptInstructions", data.get("prompt_instructions")), "promptInstructions", warnings
        ),
        checklist=_checklist(data.get("checklist"), warnings),
        feedback=str(feedback) if feedback is not None else None,
        warnings=warnings,
    )
