"""Model grading: everything the model-graded evaluators share (the evaluators themselves live in
:mod:`vision_eval.evaluators`: ``output_graders``, ``context_graders``, ``select_best``, ``llm_judge``).

- :mod:`~vision_eval.grading.base`: ``GradedEvaluator``, the one base class of every model-graded evaluator
  (images, calls, samples, panels, failures as ``error`` rows).
- :mod:`~vision_eval.grading.settings`: ``GradedSettings``, the settings they all accept.
- :mod:`~vision_eval.grading.calls`: ``Asker`` (one judgement's calls through the run's scheduler) and ``Usage``.
- :mod:`~vision_eval.grading.parsers`: promptfoo's grading contracts as pure reply parsers.
- :mod:`~vision_eval.grading.prompts`: the default grading prompt templates and how ``prompt:`` is read.
- :mod:`~vision_eval.grading.outcomes`: the typed results, ``Grade`` / ``GradeFailure`` per judgement and
  ``JudgeResult`` / ``JudgeFailure`` per judge and row.
- :mod:`~vision_eval.grading.reliability`: aggregation of samples and panels, agreement and kappa (pure maths).
- :mod:`~vision_eval.grading.calibration`: dataset-level calibration against human labels, a panel's agreement.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vision_eval.grading.base import GradedEvaluator
    from vision_eval.grading.calls import Asker
    from vision_eval.grading.outcomes import Grade, GradeFailure
    from vision_eval.grading.parsers import GraderError
    from vision_eval.grading.settings import GradedSettings

# Imported on first use, so importing one light module of the package (parsers, reliability) does not import
# the base class and the model-call modules it brings.
_LAZY = {
    "Asker": "vision_eval.grading.calls",
    "Grade": "vision_eval.grading.outcomes",
    "GradeFailure": "vision_eval.grading.outcomes",
    "GradedEvaluator": "vision_eval.grading.base",
    "GradedSettings": "vision_eval.grading.settings",
    "GraderError": "vision_eval.grading.parsers",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = ["Asker", "Grade", "GradeFailure", "GradedEvaluator", "GradedSettings", "GraderError"]
