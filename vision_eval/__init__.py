"""vision_eval: declarative, dataset-centric batch evaluation for vision AI.

Public API::

    from vision_eval import evaluate
    result = evaluate(frame, evaluators={"exact": {"type": "exact_match"}})
    result.results      # Polars frame, one row per sample x evaluator
    result.write("outputs/run1")
"""

from vision_eval.api import evaluate, run_config
from vision_eval.config import AppConfig, DatasetConfig, ImagePolicy, JudgeConfig, RunConfig, validate_config
from vision_eval.errors import ConfigError, DatasetError, VisionEvalError
from vision_eval.evaluator import EvalContext, EvalOutput, Evaluator, EvaluatorSettings
from vision_eval.output import EvalResult
from vision_eval.registry import register

__version__ = "0.1.0"

__all__ = [
    "AppConfig",
    "ConfigError",
    "DatasetConfig",
    "DatasetError",
    "EvalContext",
    "EvalOutput",
    "EvalResult",
    "Evaluator",
    "EvaluatorSettings",
    "ImagePolicy",
    "JudgeConfig",
    "RunConfig",
    "VisionEvalError",
    "evaluate",
    "register",
    "run_config",
    "validate_config",
]
