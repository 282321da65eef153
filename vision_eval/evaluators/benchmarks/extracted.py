"""Import path of ``pope`` and ``exact_count`` in entry points installed before the metrics got one module each.

Kept only until the package metadata is reinstalled from ``pyproject.toml`` (which names
``benchmarks.pope:Pope`` and ``benchmarks.exact_count:ExactCount``); then delete this module.
"""

from vision_eval.evaluators.benchmarks.exact_count import ExactCount, ExactCountSettings
from vision_eval.evaluators.benchmarks.pope import Pope, PopeSettings

__all__ = ["ExactCount", "ExactCountSettings", "Pope", "PopeSettings"]
