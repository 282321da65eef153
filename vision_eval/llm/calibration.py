"""Dataset-level reliability of a graded evaluator: calibration against human labels, agreement of a panel.

The rows carry what is needed in ``details`` (``human.score``, ``human.pass``, ``panel.models``), so these
work from ``results.parquet`` alone; per-dimension calibration also reads ``dimensions.parquet``.
"""

from __future__ import annotations

import json
from typing import Any

import polars as pl

from vision_eval.llm import reliability as rel
from vision_eval.results import PROCESSED

CALIBRATION_SCHEMA: dict[str, pl.DataType] = {
    "dimension": pl.Utf8(),
    "n": pl.Int64(),
    "spearman": pl.Float64(),
    "spearman_p": pl.Float64(),
    "kendall": pl.Float64(),
    "kendall_p": pl.Float64(),
    "kappa": pl.Float64(),
    "kappa_levels": pl.Int64(),
    "kappa_weights": pl.Utf8(),
    "pass_n": pl.Int64(),
    "accuracy": pl.Float64(),
}


def _human_values(results: pl.DataFrame) -> pl.DataFrame:
    """sample_id, score, passed, human (raw), human_pass of the processed rows."""
    rows = results.filter(pl.col("status") == PROCESSED).select("sample_id", "score", "passed", "details")
    humans = [json.loads(d or "{}").get("human", {}) for d in rows["details"].to_list()]
    return rows.drop("details").with_columns(
        pl.Series("human", [h.get("score") for h in humans], dtype=pl.Object),
        pl.Series("human_pass", [h.get("pass") for h in humans], dtype=pl.Boolean),
    )


def _numeric(values: list[Any]) -> tuple[list[float | None], bool]:
    """Human values as numbers, and whether they are pass/fail labels rather than scores."""
    if all(v is None or isinstance(v, bool) or (isinstance(v, str) and rel.label(v) is not None) for v in values):
        labels = [rel.label(v) for v in values]
        return [None if x is None else float(x) for x in labels], any(x is not None for x in labels)
    out: list[float | None] = []
    for v in values:
        try:
            out.append(None if v is None or isinstance(v, bool) else float(v))
        except (TypeError, ValueError):
            out.append(None)
    return out, False


def calibration_table(results: pl.DataFrame, dimensions: pl.DataFrame | None, settings: Any) -> pl.DataFrame:
    """One row for the evaluator's score (``dimension`` null) and one per dimension."""
    data = _human_values(results)
    human, is_label = _numeric(data["human"].to_list())
    scale = (0.0, 1.0) if is_label else tuple(settings.human_scale)
    levels = 2 if is_label else (settings.kappa_levels or rel.default_levels(scale))
    weights = "none" if is_label else settings.kappa_weights
    judge = data["score"].to_list()
    pairs = [(j, h) for j, h in zip(judge, human, strict=True) if h is not None and j is not None]
    main = _row(None, pairs, scale, levels, weights)
    if is_label:  # a label column: kappa on the verdicts, not on binned scores
        verdicts = [(bool(p), bool(h)) for p, h in zip(data["passed"].to_list(), human, strict=True) if h is not None]
        main["kappa"] = rel.weighted_kappa([int(p) for p, _ in verdicts], [int(h) for _, h in verdicts], 2, "none")
    if settings.human_pass:
        labels = data["human_pass"].to_list()
    else:
        labels = [None if h is None or not is_label else h == 1.0 for h in human]
    judged = [(p, h) for p, h in zip(data["passed"].to_list(), labels, strict=True) if h is not None and p is not None]
    main["pass_n"] = len(judged)
    main["accuracy"] = sum(p == h for p, h in judged) / len(judged) if judged else None
    rows = [main]
    if dimensions is not None and dimensions.height and any(h is not None for h in human):
        by_id = {s: h for s, h in zip(data["sample_id"].to_list(), human, strict=True) if h is not None}
        for dimension, part in dimensions.group_by("dimension", maintain_order=True):
            pairs = [
                (sc, by_id[sid])
                for sid, sc in zip(part["sample_id"], part["score"], strict=True)
                if sid in by_id and sc is not None
            ]
            rows.append(_row(dimension[0], pairs, scale, levels, weights))
    return pl.DataFrame(rows, schema=CALIBRATION_SCHEMA)


def _row(
    dimension: str | None, pairs: list[tuple[float, float]], scale: tuple[float, float], levels: int, weights: str
) -> dict[str, Any]:
    judge, human = [p[0] for p in pairs], [p[1] for p in pairs]
    row = rel.calibration_row(judge, human, scale, levels, weights)
    return {"dimension": dimension, **row, "pass_n": None, "accuracy": None}


def panel_alpha(results: pl.DataFrame, models: list[str]) -> dict[str, Any]:
    """Krippendorff's alpha (interval on scores, nominal on verdicts) across the panel, plus per-model means."""
    rows = results.filter(pl.col("status") == PROCESSED)["details"].to_list()
    panels = [json.loads(d or "{}").get("panel", {}) for d in rows]
    scores = [[p.get("models", {}).get(m) for m in models] for p in panels]
    verdicts = [[_bool(p.get("passed", {}).get(m)) for m in models] for p in panels]
    means = {}
    for index, model in enumerate(models):
        values = [u[index] for u in scores if u[index] is not None]
        means[model] = sum(values) / len(values) if values else None
    return {
        "models": models,
        "units": len(scores),
        "alpha_interval": rel.krippendorff_alpha(scores, "interval"),
        "alpha_nominal": rel.krippendorff_alpha(verdicts, "nominal"),
        "mean_score": means,
    }


def _bool(value: Any) -> float | None:
    return None if value is None else float(bool(value))
