"""What grading gives, as types: one judgement is a :class:`Grade` or a :class:`GradeFailure` (the reason, and the
raw reply when the grader's reply broke the contract); one judge's samples of a row are a :class:`JudgeResult`
or, with too few valid judgements, a :class:`JudgeFailure`. A failure never becomes a score: the row is
``error`` with the failures in ``details.errors`` (see :class:`vision_eval.grading.base.GradedEvaluator`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from jinja2 import TemplateError

from vision_eval.grading.parsers import GraderError
from vision_eval.llm.budget import NotAttempted
from vision_eval.llm.transport import CallError

GRADING_FAILURES = (GraderError, CallError, TemplateError)
"""The exceptions one judgement may end with that become a :class:`GradeFailure` (anything else fails the row)."""


@dataclass
class Grade:
    """One judgement of one row by one judge."""

    score: float
    """The judgement's score on 0..1 (the evaluator's mapping of the grader's reply)."""
    passed: bool
    """The judgement's verdict."""
    details: dict[str, Any]
    """What the row's ``details`` JSON shows of this judgement (the grader's reason and raw values)."""
    dims: dict[str, float] = field(default_factory=dict)
    """Scores per dimension on 0..1 (g_eval's criteria, a judge file's dimensions, select_best's candidates)."""
    weights: dict[str, float] = field(default_factory=dict)
    """Weight of each dimension in ``dimensions.parquet`` (default 1)."""


@dataclass(frozen=True)
class GradeFailure:
    """One judgement that gave no grade, with why."""

    reason: str
    """The plain reason; the row's ``error`` when this is the row's only judgement."""
    kind: Literal["reply", "call", "not_attempted", "template"]
    """What failed: the grader's reply broke the contract, the call failed after its retries, the scheduler did not
    attempt the call, or a prompt did not render."""
    reply: Any = None
    """The grader's raw reply (text, or the object a server sent as content) when ``kind`` is ``reply``; ``None``
    when no reply had arrived."""
    attempts: int = 0
    """Attempts made, when ``kind`` is ``call``."""
    failures: tuple[str, ...] = ()
    """What each failed attempt said, when ``kind`` is ``call``."""
    not_attempted: str | None = None
    """What refused the call (``budget`` or ``circuit_breaker``), when ``kind`` is ``not_attempted``."""

    @classmethod
    def of(cls, exc: Exception, replies: list[Any]) -> GradeFailure:
        """The failure a judgement ended with (one of :data:`GRADING_FAILURES`); ``replies``: those it received."""
        if isinstance(exc, GraderError):
            return cls(f"unusable grader reply: {exc}", "reply", reply=replies[-1] if replies else None)
        if isinstance(exc, NotAttempted):
            return cls(str(exc), "not_attempted", not_attempted=exc.kind)
        if isinstance(exc, CallError):
            attempts: int = getattr(exc, "attempts", 1)
            failures = tuple(getattr(exc, "failures", [str(exc)]))
            return cls(
                f"grader call failed after {attempts} attempt(s): {exc}", "call", attempts=attempts, failures=failures
            )
        return cls(f"prompt template error: {exc}", "template")

    def kept(self) -> dict[str, Any]:
        """What the failure keeps besides its reason, as the row's ``details`` shows it."""
        if self.kind == "reply":
            return {"reply": self.reply}
        if self.kind == "call":
            return {"attempts": self.attempts, "failures": list(self.failures)}
        return {"not_attempted": self.not_attempted} if self.kind == "not_attempted" else {}

    def details(self) -> dict[str, Any]:
        """The failure as ``details.errors`` lists it."""
        return {"error": self.reason, **self.kept()}


@dataclass
class JudgeResult:
    """One judge's valid judgements of one row (``samples`` of them at most), aggregated."""

    score: float
    """The aggregated score on 0..1 (``aggregate``)."""
    passed: bool
    """The aggregated verdict."""
    grades: list[Grade]
    """The valid judgements, in sample order; the first one's details are the row's."""
    failures: list[GradeFailure]
    """The samples that gave no grade (``details.samples.errors``)."""
    images: list[dict[str, Any]]
    """Records of the images the judge saw (``details.images``)."""

    @property
    def dims(self) -> dict[str, float]:
        """Mean score per dimension over the valid judgements."""
        return mean_by_key(g.dims for g in self.grades)


@dataclass
class JudgeFailure:
    """One judge gave fewer valid judgements of a row than ``min_valid``."""

    reason: str
    """The plain reason (the first failure's, with the count when there are several samples)."""
    failures: list[GradeFailure]
    """Every judgement that failed, in sample order."""
    images: list[dict[str, Any]]
    """Records of the images the judge was shown."""


def quorum(configured: int | None, total: int) -> int:
    """Valid judgements needed of ``total``: the configured number, else half rounded up; at least one."""
    return max(1, configured if configured is not None else -(-total // 2))


def mean_by_key(mappings: Iterable[dict[str, float]]) -> dict[str, float]:
    """The mean of each key over the mappings that hold it, keys in first-seen order."""
    values: dict[str, list[float]] = {}
    for mapping in mappings:
        for key, value in mapping.items():
            values.setdefault(key, []).append(value)
    return {key: sum(v) / len(v) for key, v in values.items()}
