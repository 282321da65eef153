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

if TYPE_CHECKING:
    from vision_eval.api import evaluate, run_config
    from vision_eval.config import AppConfig, DatasetConfig, ImagePolicy, JudgeConfig, RunConfig, validate_config
    from vision_eval.errors import ConfigError, DatasetError, VisionEvalError
    from vision_eval.evaluator import EvalContext, EvalOutput, Evaluator, EvaluatorSettings
    from vision_eval.example import Example
    from vision_eval.grading import Grade, GradedEvaluator, GradedSettings, GradeFailure, GraderError
    from vision_eval.output import EvalResult
    from vision_eval.registry import register
    from vision_eval.results import ERROR, PROCESSED, SKIPPED
    from vision_eval.rowwise import FieldRow, RowResult, RowRule

__version__ = "0.1.0"

_EXPORTS: dict[str, tuple[str, ...]] = {
    "vision_eval.api": ("evaluate", "run_config"),
    "vision_eval.config": ("AppConfig", "DatasetConfig", "ImagePolicy", "JudgeConfig", "RunConfig", "validate_config"),
    "vision_eval.errors": ("ConfigError", "DatasetError", "VisionEvalError"),
    "vision_eval.evaluator": ("EvalContext", "EvalOutput", "Evaluator", "EvaluatorSettings"),
    "vision_eval.example": ("Example",),
    # The model-graded code brings jinja2, YAML and the model-call modules with it.
    "vision_eval.grading": ("Grade", "GradeFailure", "GradedEvaluator", "GradedSettings", "GraderError"),
    "vision_eval.output": ("EvalResult",),
    "vision_eval.registry": ("register",),
    "vision_eval.results": ("ERROR", "PROCESSED", "SKIPPED"),
    "vision_eval.rowwise": ("FieldRow", "RowResult", "RowRule"),
}
"""Module -> the public names it defines. Each is imported on first use, so that importing a submodule (the
command line's ``vision_eval.cli``, which must print ``list`` without loading the engine) costs only that module."""
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
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
