"""Settings shared by every model-graded evaluator: images, judge override, prompt, samples, panel, calibration."""

from __future__ import annotations

from typing import Any, Literal

from vision_eval.evaluator import EvaluatorSettings


class GradedSettings(EvaluatorSettings):
    """Settings shared by every model-graded evaluator."""

    images: list[str] = ["images"]
    """Columns whose images are attached to the grading call, in order (labelled Image 1, Image 2, ...)."""
    judge: dict[str, Any] | None = None
    """Judge settings overriding the run's ``judge`` for this evaluator (e.g. ``{model: ..., temperature: 0.7}``)."""
    system: str | None = None
    """Optional system message for every grading call."""
    chat_input_images: bool = True
    """When ``input`` holds chat messages, attach their images too (after the columns' images)."""
    prompt: str | None = None
    """Grading prompt replacing the default (Jinja2 text or a path to a file); it must ask for the same reply."""
    samples: int = 1
    """Independent judgements per row and judge (at the judge's temperature), aggregated by ``aggregate``."""
    aggregate: Literal["mean", "median", "majority"] = "mean"
    """How ``samples`` judgements combine (see the table in the README)."""
    min_valid: int | None = None
    """Valid judgements a row needs, else it is ``error``; default: half of ``samples``, rounded up."""
    panel: list[str | dict[str, Any]] | None = None
    """Several judge models (litellm ids, or judge override mappings); per-model scores go to dimensions."""
    panel_aggregate: Literal["mean", "majority"] = "mean"
    """How the panel's judgements combine: mean score, or strict majority of the verdicts (median score)."""
    panel_min_valid: int | None = None
    """Panel members that must give a valid judgement; default: half of the panel, rounded up."""
    human_score: str | None = None
    """Column with a human score (or a pass/fail label) for calibration (Spearman, Kendall, weighted kappa)."""
    human_pass: str | None = None
    """Column with a human pass label (bool, 1/0, pass/fail, yes/no) for the accuracy of ``passed``."""
    human_scale: tuple[float, float] = (0.0, 1.0)
    """[min, max] of the human scores (mapped onto 0..1 for kappa categories)."""
    kappa_levels: int | None = None
    """Categories for the weighted kappa; default one per point of an integer scale (1..5 -> 5), else 5."""
    kappa_weights: Literal["linear", "quadratic"] = "quadratic"
    """Disagreement weights of Cohen's kappa."""
