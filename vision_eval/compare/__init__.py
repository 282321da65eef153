"""Two runs compared sample by sample: ``vision-eval compare BASELINE CANDIDATE``.

``load_side`` reads each side (a run directory, or the shards of one run), ``compare`` pairs their samples (same id
and content, :mod:`vision_eval.pairing`) and computes, per evaluator, both means, the difference with a paired
bootstrap interval, a p-value and the flips; ``judged`` adds a verdict; ``write_comparison`` writes
comparison.parquet, comparison_flips.parquet and comparison.html.
"""

from __future__ import annotations

from vision_eval.compare.sides import NotARun, Side, load_side
from vision_eval.compare.table import BETTER, NOT_COMPARED, SAME, WORSE, Comparison, compare, judged
from vision_eval.compare.write import write_comparison

__all__ = [
    "BETTER",
    "NOT_COMPARED",
    "SAME",
    "WORSE",
    "Comparison",
    "NotARun",
    "Side",
    "compare",
    "judged",
    "load_side",
    "write_comparison",
]
