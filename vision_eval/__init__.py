"""vision_eval: declarative, dataset-centric batch evaluation for vision AI.

Public API::

    from vision_eval import evaluate
    result = evaluate(frame, evaluators={"exact": {"type": "exact_match"}})
    result.results      # Polars frame, one row per sample x evaluator
    result.write("outputs/run1")
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from vision_eval.api import evaluate, run_config
from vision_eval.config import AppConfig, DatasetConfig, ImagePolicy, JudgeConfig, RunConfig, validate_config
from vision_eval.errors import ConfigError, DatasetError, VisionEvalError
from vision_eval.evaluator import EvalContext, EvalOutput, Evaluator, EvaluatorSettings
from vision_eval.example import Example
from vision_eval.output import EvalResult
from vision_eval.registry import register
from vision_eval.results import ERROR, PROCESSED, SKIPPED
from vision_eval.rowwise import FieldRow, RowResult, RowRule

if TYPE_CHECKING:
    from vision_eval.grading import Grade, GradedEvaluator, GradedSettings, GradeFailure, GraderError

__version__ = "0.1.0"

# Imported on first use, through vision_eval.grading (which maps each to its module): the model-graded code brings
# jinja2, YAML and the model-call modules with it.
_FROM_GRADING = frozenset({"Grade", "GradeFailure", "GradedEvaluator", "GradedSettings", "GraderError"})


def __getattr__(name: str) -> Any:
    if name not in _FROM_GRADING:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module("vision_eval.grading"), name)
    globals()[name] = value
    return value


__all__ = [
    "ERROR",
    "PROCESSED",
    "SKIPPED",
    "AppConfig",
    "ConfigError",
    "DatasetConfig",
    "DatasetError",
    "EvalContext",
    "EvalOutput",
    "EvalResult",
    "Evaluator",
    "EvaluatorSettings",
    "Example",
    "FieldRow",
    "Grade",
    "GradeFailure",
    "GradedEvaluator",
    "GradedSettings",
    "GraderError",
    "ImagePolicy",
    "JudgeConfig",
    "RowResult",
    "RowRule",
    "RunConfig",
    "VisionEvalError",
    "evaluate",
    "register",
    "run_config",
    "validate_config",
]
