#!/usr/bin/env python3
"""Example code judge: fuzzy field matching and box IoU with config pass-through.

Reads one row as JSON on stdin (``output``, ``expected_output`` and ``config`` = the evaluator's extra YAML
keys) and prints ``{score, hits, misses, reasoning}``. It uses the same logic as the built-in evaluators.

config:
  fields:        [{path, threshold?, algorithm?}]   fuzzy-compared string fields (default threshold 0.85)
  algorithm:     levenshtein | token_sort | token_set | jaro_winkler   (default levenshtein)
  boxes:         path of a box list in both JSON documents (optional; "" = the documents are box lists)
  box_format:    xyxy | xywh | cxcywh        iou_threshold: 0.5
"""

from __future__ import annotations

import json
import sys
from typing import Any

from vision_eval.evaluators.boxes import geometry as bx
from vision_eval.evaluators.fields import matching as m


def judge(row: dict[str, Any]) -> dict[str, Any]:
    config = row.get("config") or {}
    ok_g, got = m.extract_json(row.get("output"))
    ok_w, want = m.extract_json(row.get("expected_output"))
    if not ok_w:
        return {"score": 0.0, "hits": [], "misses": ["expected_output is not JSON"], "reasoning": "bad reference"}
    if not ok_g:
        return {"score": 0.0, "hits": [], "misses": [m.NOT_JSON], "reasoning": m.NOT_JSON}
    hits: list[str] = []
    misses: list[str] = []
    scores: list[float] = []
    for field in config.get("fields") or []:
        spec = m.FieldSpec(
            path=field["path"],
            match="fuzzy",
            threshold=field.get("threshold", config.get("threshold", 0.85)),
            algorithm=field.get("algorithm", config.get("algorithm", "levenshtein")),
        )
        steps = m.parse_path(spec.path)
        result = m.compare_field(spec, m.resolve(got, steps), m.resolve(want, steps))
        if result.score is None:
            continue
        (hits if result.hit else misses).append(f"{spec.path}: {result.reason}")
        scores.append(result.score)
    if "boxes" in config:
        steps = m.parse_path(config["boxes"]) if config["boxes"] else ()
        fmt = config.get("box_format", "xyxy")
        pred = bx.parse_boxes(m.resolve(got, steps) if steps else got, fmt, "output")
        gt = bx.parse_boxes(m.resolve(want, steps) if steps else want, fmt, "expected_output")
        match = bx.hungarian(bx.iou_matrix(pred.xyxy, gt.xyxy), float(config.get("iou_threshold", 0.5)))
        text = f"boxes: F1 {match.f1:.3f}, mean IoU {match.mean_iou:.3f} ({match.tp}/{match.n_gt} matched)"
        (hits if match.f1 >= 0.5 else misses).append(text)
        scores.append(match.f1)
    score = sum(scores) / len(scores) if scores else 0.0
    return {
        "score": score,
        "hits": hits,
        "misses": misses,
        "reasoning": f"{len(hits)} of {len(hits) + len(misses)} checks passed",
    }


def main() -> None:
    try:
        result = judge(json.load(sys.stdin))
    except (ValueError, KeyError, TypeError) as exc:
        result = {"score": 0.0, "hits": [], "misses": [str(exc)], "reasoning": f"judge could not score: {exc}"}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
