"""Import path of ``relaxed_accuracy``, ``anls`` and ``vqa_accuracy`` in entry points installed before the metrics
got one module each.

Kept only until the package metadata is reinstalled from ``pyproject.toml`` (which names
``benchmarks.relaxed_accuracy:RelaxedAccuracy``, ``benchmarks.anls:Anls`` and ``benchmarks.vqa_accuracy:VqaAccuracy``);
then delete this module.
"""

from vision_eval.evaluators.benchmarks.anls import Anls, AnlsSettings
from vision_eval.evaluators.benchmarks.relaxed_accuracy import RelaxedAccuracy, RelaxedAccuracySettings
from vision_eval.evaluators.benchmarks.vqa_accuracy import VqaAccuracy, VqaSettings

__all__ = ["Anls", "AnlsSettings", "RelaxedAccuracy", "RelaxedAccuracySettings", "VqaAccuracy", "VqaSettings"]
