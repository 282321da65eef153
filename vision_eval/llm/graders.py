"""The grading contracts of the model-graded assertions: pure functions from a grader reply to a verdict.

They follow promptfoo's documented behaviour, so a reply a promptfoo grader gives means the same here,
except that a reply that cannot be read raises :class:`GraderError` (the row becomes ``error``, never a
silent fail). JSON is found by the one shared extractor (:func:`vision_eval.llm.replies.find_json_object`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from vision_eval.llm.replies import find_json_object

TRUE_WORDS = ("true", "yes", "pass", "y")
FACTUALITY_CATEGORIES = ("A", "B", "C", "D", "E")
FACTUALITY_ALIASES = {"subset": "A", "superset": "B", "agree": "C", "disagree": "D", "differButFactual": "E"}
"""promptfoo's ``options.factuality`` names for the categories."""
GEVAL_MAX = 10


class GraderError(ValueError):
    """A grader reply that does not follow the contract; the row is ``error`` with the reply kept."""


def number(value: Any) -> float | None:
    """A finite number from a JSON value (numeric strings too), else ``None``; booleans are not numbers."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        result = float(value)
    elif isinstance(value, str) and value.strip():
        try:
            result = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return result if math.isfinite(result) else None


@dataclass
class RubricVerdict:
    """An ``llm_rubric`` reply."""

    passed: bool
    score: float
    reason: str


def parse_rubric(text: str) -> RubricVerdict:
    """``{"reason", "pass", "score"}``: ``pass`` missing -> true, a string is true only for true/yes/pass/y;
    ``score`` missing or not numeric -> 1 if pass else 0."""
    obj = find_json_object(text)
    if obj is None:
        raise GraderError("grader reply holds no JSON object")
    raw_pass = obj.get("pass", True)
    passed = raw_pass if isinstance(raw_pass, bool) else str(raw_pass).strip().lower() in TRUE_WORDS
    score = number(obj.get("score"))
    reason = obj.get("reason", "")
    return RubricVerdict(passed, float(passed) if score is None else score, reason if isinstance(reason, str) else "")


def parse_steps(text: str) -> list[str]:
    """G-Eval step 1: ``{"steps": [...]}`` with at least one non-blank string."""
    obj = find_json_object(text, required_key="steps")
    steps = obj.get("steps") if obj is not None else None
    if not isinstance(steps, list) or not steps:
        raise GraderError('grader reply holds no {"steps": [...]} list')
    cleaned = [str(s).strip() for s in steps if str(s).strip()]
    if not cleaned:
        raise GraderError("grader proposed only blank evaluation steps")
    return cleaned


def parse_geval(text: str, max_score: int = GEVAL_MAX) -> tuple[float, str]:
    """G-Eval step 2: ``{"score": 0..max, "reason"}``; out of range or a blank reason is a grader error."""
    obj = find_json_object(text, required_key="score")
    if obj is None:
        raise GraderError("grader reply holds no JSON object")
    score = number(obj.get("score"))
    if score is None:
        raise GraderError(f"score is not a number: {obj.get('score')!r}")
    if not 0 <= score <= max_score:
        raise GraderError(f"score {score:g} is outside 0..{max_score}")
    reason = obj.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise GraderError("the reason is blank")
    return score, reason


_SCORE_PREFIX = re.compile(r"""["']?score["']?\s*:\s*["']?\s*$""", re.I)


def weighted_score(logprobs: Any, max_score: int = GEVAL_MAX) -> tuple[float, dict[str, float]] | None:
    """The probability-weighted mean over the allowed scores 0..max at the score token, from OpenAI-shaped
    ``logprobs.content`` (each token with ``top_logprobs``); ``None`` when the score token is not found."""
    if not isinstance(logprobs, list):
        return None
    prefix = ""
    for entry in logprobs:
        token = str(entry.get("token", "")) if isinstance(entry, dict) else ""
        if token.strip().isdigit() and _SCORE_PREFIX.search(prefix):
            probs: dict[str, float] = {}
            for top in entry.get("top_logprobs") or [{"token": token, "logprob": entry.get("logprob", 0.0)}]:
                candidate = str(top.get("token", "")).strip()
                if candidate.isdigit() and 0 <= int(candidate) <= max_score:
                    key = str(int(candidate))
                    probs[key] = probs.get(key, 0.0) + math.exp(float(top.get("logprob", -math.inf)))
            total = sum(probs.values())
            if total <= 0:
                return None
            mean = sum(int(k) * p for k, p in probs.items()) / total
            return mean, {k: p / total for k, p in sorted(probs.items(), key=lambda kv: int(kv[0]))}
        prefix += token
    return None


_LEGACY_OPTION = re.compile(r"\(?([a-eA-E])\)")


def parse_factuality(text: str) -> tuple[str, str]:
    """``{"category": "A".."E", "reason"}``, or the legacy ``(A) ...`` form -> (category, reason)."""
    obj = find_json_object(text, required_key="category")
    if obj is not None and "category" in obj:
        category = str(obj["category"]).strip().strip("()").upper()
        if category not in FACTUALITY_CATEGORIES:
            raise GraderError(f"category {obj['category']!r} is not one of A-E")
        reason = obj.get("reason", "")
        return category, reason if isinstance(reason, str) else str(reason)
    match = _LEGACY_OPTION.search(text or "")  # promptfoo's legacy pattern, unanchored
    if match is None:
        raise GraderError("grader reply names no category A-E")
    return match.group(1).upper(), text[match.end() :].strip()


def parse_closed_qa(text: str) -> bool:
    """The last non-space character: ``Y`` passes, ``N`` fails, anything else is a grader error."""
    stripped = (text or "").rstrip()
    if stripped.endswith("Y"):
        return True
    if stripped.endswith("N"):
        return False
    raise GraderError(f"the reply does not end with Y or N (ends with {stripped[-20:]!r})")


ATTRIBUTED = re.compile(r"\[\s*attributed\s*\]", re.I)
NOT_ATTRIBUTED = re.compile(r"\[\s*not\s+attributed\s*\]", re.I)


def parse_recall(text: str) -> tuple[int, int]:
    """Context recall: (attributed, classified) sentences from ``[Attributed]`` / ``[Not attributed]`` marks
    (promptfoo's tokens); no mark at all is a grader error."""
    attributed, missing = len(ATTRIBUTED.findall(text or "")), len(NOT_ATTRIBUTED.findall(text or ""))
    if attributed + missing == 0:
        raise GraderError("the reply classifies no sentence as [Attributed] or [Not attributed]")
    return attributed, attributed + missing


def parse_statements(text: str) -> list[str]:
    """Faithfulness step 1: one statement per non-blank line (as promptfoo splits it)."""
    statements = [line.strip() for line in (text or "").splitlines() if line.strip()]
    if not statements:
        raise GraderError("the grader extracted no statements")
    return statements


FINAL_VERDICT = "final verdict for each statement in order:"


def parse_faithfulness(text: str, statements: int) -> tuple[int, int]:
    """Faithfulness step 2 -> (unsupported, verdicts): after "Final verdict for each statement in order:" every
    '.'-separated verdict without "yes" is unsupported; otherwise "verdict: no" / "verdict: yes" are counted."""
    lowered = (text or "").lower().strip()
    if FINAL_VERDICT in lowered:
        tail = lowered[lowered.index(FINAL_VERDICT) + len(FINAL_VERDICT) :]
        verdicts = [v for v in tail.split(".") if v.strip()]
        if not verdicts:
            raise GraderError("the final verdict line lists no verdicts")
        return sum("yes" not in v for v in verdicts), len(verdicts)
    no, yes = lowered.count("verdict: no"), lowered.count("verdict: yes")
    if no + yes == 0:
        raise GraderError("the reply gives no verdict (Yes/No) for any statement")
    return no, no + yes


_FIRST_INT = re.compile(r"\d+")


def parse_select_best(text: str, candidates: int) -> int:
    """The first integer in the reply is the (0-based) index of the best candidate."""
    match = _FIRST_INT.search((text or "").strip())
    if match is None:
        raise GraderError("the reply holds no integer")
    index = int(match.group(0))
    if not 0 <= index < candidates:
        raise GraderError(f"index {index} is outside 0..{candidates - 1}")
    return index
