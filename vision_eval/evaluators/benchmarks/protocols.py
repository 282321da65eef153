"""Scoring protocols of the benchmark metrics: which reference implementation a score reproduces.

``official`` follows the benchmark authors' evaluation script, ``lmms_eval`` follows lmms-eval's task code (for
parity with numbers produced by it), ``lenient`` is this project's own more forgiving reading (not comparable with
published numbers). What each protocol does, where they differ and the agreement figures: ``docs/benchmarks.md``.
"""

from __future__ import annotations

from typing import Any, Literal

Protocol = Literal["official", "lmms_eval", "lenient"]

LENIENT = "vision_eval's own reading, more forgiving than the references; not comparable with published numbers"

SOURCES: dict[str, dict[str, str]] = {
    "relaxed_accuracy": {
        "official": "relaxed accuracy as defined in the ChartQA paper (Masry et al. 2022, sec. 5.1), implemented as "
        "relaxed_correctness in google-research/pix2struct metrics.py (max over the labels)",
        "lmms_eval": "lmms-eval tasks/chartqa/utils.py relaxed_correctness (copied from Qwen-VL, itself pix2struct's)",
        "lenient": LENIENT,
    },
    "anls": {
        "official": "DocVQA / RRC evaluation script (rrc.cvc.uab.es, Task 1): ANLS with raw lengths, threshold 0.5",
        "lmms_eval": "lmms-eval api/metrics.py anls (the RRC script's computation)",
        "lenient": LENIENT,
    },
    "vqa_accuracy": {
        "official": "GT-Vision-Lab/VQA PythonEvaluationTools/vqaEvaluation/vqaEval.py (VQA accuracy)",
        "lmms_eval": "lmms-eval tasks/textvqa/utils.py with _task_utils/vqa_eval_metric.py EvalAIAnswerProcessor "
        "(also TextVQA's EvalAI / mmf evaluation)",
        "lenient": LENIENT,
    },
    "pope": {
        "official": "POPE evaluate.py (AoiDragon/POPE, the RUCAIBox POPE release): first sentence, 'No'/'not'/'no' "
        "words -> no, anything else -> yes",
        "lmms_eval": "lmms-eval tasks/pope/utils.py: the whole reply, lowercased and stripped, must equal the answer",
        "lenient": LENIENT,
    },
    "exact_count": {
        "lmms_eval": "lmms-eval tasks/countbench/utils.py: the whole reply, stripped and lowercased, number words "
        "none..twenty as digits, must equal the count",
        "lenient": LENIENT,
    },
}
"""Per metric type: the protocols it offers and the reference each reproduces."""

NO_OFFICIAL = {
    "exact_count": "CountBench (Paiss et al. 2023) publishes no scoring script for model replies",
}


def check_protocol(metric: str, protocol: str) -> str:
    """``protocol`` if ``metric`` offers it, else ``ValueError`` naming the ones it offers."""
    offered = SOURCES[metric]
    if protocol not in offered:
        why = f" ({NO_OFFICIAL[metric]})" if protocol == "official" and metric in NO_OFFICIAL else ""
        raise ValueError(f"{metric} has no {protocol!r} protocol{why}; choose one of: {', '.join(offered)}")
    return protocol


def describe_protocol(metric: str, protocol: str) -> dict[str, Any]:
    """The run.json entries naming the protocol and the reference it reproduces."""
    return {"protocol": protocol, "protocol_source": SOURCES[metric][protocol], "comparable": protocol != "lenient"}
