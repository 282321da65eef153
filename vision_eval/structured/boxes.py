"""Boxes: parsing, IoU (vectorized over padded batches), Hungarian matching, COCO-style AP."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

BoxFormat = Literal["xyxy", "xywh", "cxcywh"]
COCO_THRESHOLDS = np.round(np.arange(0.5, 0.951, 0.05), 2)


@dataclass
class Boxes:
    """Boxes of one row in absolute-or-normalized xyxy, with optional labels and confidence scores."""

    xyxy: np.ndarray
    labels: list[str | None] = field(default_factory=list)
    scores: list[float | None] = field(default_factory=list)

    def __len__(self) -> int:
        return int(self.xyxy.shape[0])


def _item(item: Any, where: str) -> tuple[list[Any], Any, Any]:
    if isinstance(item, dict):
        coords = next((item[k] for k in ("box", "bbox", "xyxy", "coordinates") if k in item), None)
        if coords is None:
            raise ValueError(f"malformed box at {where}: no 'box' or 'bbox' key in {json.dumps(item)[:200]}")
        label = item.get("label", item.get("class", item.get("category")))
        return coords, label, item.get("score", item.get("confidence"))
    return item, None, None


def parse_boxes(value: Any, fmt: BoxFormat = "xyxy", where: str = "boxes") -> Boxes:
    """Boxes from a JSON value (text or parsed): a list of ``[a, b, c, d]`` or of objects with ``box``/``bbox``
    and optional ``label``/``score``, or an object with a ``boxes`` list. Raises ``ValueError`` naming the box."""
    if isinstance(value, str):
        from vision_eval.evaluators.fields.matching import extract_json

        try:
            value = json.loads(value)
        except ValueError:
            ok, value = extract_json(value)
            if not ok:
                raise ValueError(f"{where} is not a JSON list of boxes") from None
    if isinstance(value, dict) and isinstance(value.get("boxes"), list):
        value = value["boxes"]
    if isinstance(value, dict) and any(k in value for k in ("box", "bbox", "xyxy", "coordinates")):
        value = [value]
    if value is None:
        value = []
    if not isinstance(value, list):
        raise ValueError(f"{where} is not a JSON list of boxes")
    coords, labels, scores = [], [], []
    for i, raw in enumerate(value):
        c, label, score = _item(raw, f"{where}[{i}]")
        if not isinstance(c, list | tuple) or len(c) != 4:
            raise ValueError(f"malformed box at {where}[{i}]: expected 4 numbers, got {json.dumps(c)[:100]}")
        if not all(isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) for x in c):
            raise ValueError(f"malformed box at {where}[{i}]: coordinates must be finite numbers: {json.dumps(c)}")
        if score is not None and (not isinstance(score, int | float) or isinstance(score, bool)):
            raise ValueError(f"malformed box at {where}[{i}]: score must be a number")
        coords.append([float(x) for x in c])
        labels.append(None if label is None else str(label))
        scores.append(None if score is None else float(score))
    arr = to_xyxy(np.array(coords, dtype=float).reshape(-1, 4), fmt)
    bad = np.nonzero((arr[:, 2] < arr[:, 0]) | (arr[:, 3] < arr[:, 1]))[0]
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"malformed box at {where}[{i}]: negative width or height ({fmt} {coords[i]})")
    return Boxes(arr, labels, scores)


def to_xyxy(arr: np.ndarray, fmt: BoxFormat) -> np.ndarray:
    """Convert ``(n, 4)`` boxes to xyxy."""
    if fmt == "xyxy":
        return arr
    out = arr.copy()
    if fmt == "xywh":
        out[:, 2] = arr[:, 0] + arr[:, 2]
        out[:, 3] = arr[:, 1] + arr[:, 3]
    else:
        out[:, 0] = arr[:, 0] - arr[:, 2] / 2
        out[:, 1] = arr[:, 1] - arr[:, 3] / 2
        out[:, 2] = arr[:, 0] + arr[:, 2] / 2
        out[:, 3] = arr[:, 1] + arr[:, 3] / 2
    return out


def iou_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of boxes ``a (..., n, 4)`` against ``b (..., m, 4)`` → ``(..., n, m)``. Zero-area boxes: IoU is 1 with
    an identical box and 0 otherwise (the union is 0 only when both are the same degenerate box)."""
    a, b = a[..., :, None, :], b[..., None, :, :]
    iw = np.clip(np.minimum(a[..., 2], b[..., 2]) - np.maximum(a[..., 0], b[..., 0]), 0, None)
    ih = np.clip(np.minimum(a[..., 3], b[..., 3]) - np.maximum(a[..., 1], b[..., 1]), 0, None)
    inter = iw * ih
    area_a = (a[..., 2] - a[..., 0]) * (a[..., 3] - a[..., 1])
    area_b = (b[..., 2] - b[..., 0]) * (b[..., 3] - b[..., 1])
    union = area_a + area_b - inter
    positive = union > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(positive, inter / np.where(positive, union, 1), 0.0)
    degenerate = np.nonzero(~positive)
    if degenerate[0].size:  # two zero-area boxes (rare): compare the coordinates only there
        shape = np.broadcast_shapes(a.shape, b.shape)
        pa, pb = np.broadcast_to(a, shape)[degenerate], np.broadcast_to(b, shape)[degenerate]
        out[degenerate] = np.all(pa == pb, axis=-1)
    return out


def label_mask(pred: Boxes, gt: Boxes) -> np.ndarray | None:
    """``(n, m)`` True where labels agree, or ``None`` when some box (on either side) has no label."""
    if any(x is None for x in pred.labels + gt.labels):
        return None
    mask: np.ndarray = np.array(pred.labels, dtype=object).reshape(-1, 1) == np.array(gt.labels, dtype=object).reshape(
        1, -1
    )
    return mask


@dataclass
class RowMatch:
    """Per-row detection metrics."""

    tp: int
    n_pred: int
    n_gt: int
    ious: list[float]
    pairs: list[tuple[int, int]]

    @property
    def precision(self) -> float:
        return self.tp / self.n_pred if self.n_pred else (1.0 if self.n_gt == 0 else 0.0)

    @property
    def recall(self) -> float:
        return self.tp / self.n_gt if self.n_gt else (1.0 if self.n_pred == 0 else 0.0)

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r > 0 else 0.0

    @property
    def mean_iou(self) -> float:
        if not self.ious:
            return 1.0 if self.n_pred == 0 and self.n_gt == 0 else 0.0
        return float(np.mean(self.ious))

    def metrics(self) -> dict[str, float]:
        return {"precision": self.precision, "recall": self.recall, "f1": self.f1, "mean_iou": self.mean_iou}


def hungarian(iou: np.ndarray, threshold: float) -> RowMatch:
    """Optimal one-to-one matching: most true positives (IoU ≥ threshold) first, then the highest total IoU."""
    n, m = iou.shape
    if n == 0 or m == 0:
        return RowMatch(0, n, m, [], [])
    from scipy.optimize import linear_sum_assignment

    weight = np.where(iou >= threshold, 1.0 + iou, 0.0)
    rows, cols = linear_sum_assignment(weight, maximize=True)
    keep = iou[rows, cols] >= threshold
    pairs = [(int(i), int(j)) for i, j in zip(rows[keep], cols[keep])]
    return RowMatch(len(pairs), n, m, [float(iou[i, j]) for i, j in pairs], pairs)


def coco_tp(iou: np.ndarray, scores: np.ndarray, thresholds: np.ndarray = COCO_THRESHOLDS) -> np.ndarray:
    """COCO greedy matching of one image: ``(n_pred, n_thresholds)`` true-positive flags. Predictions go in
    descending score order and each takes the unmatched ground truth of highest IoU ≥ the threshold."""
    n, m = iou.shape
    tp = np.zeros((n, len(thresholds)), dtype=bool)
    if n == 0 or m == 0:
        return tp
    matched = np.zeros((len(thresholds), m), dtype=bool)
    for p in np.argsort(-scores, kind="stable"):
        ok = (iou[p][None, :] >= thresholds[:, None]) & ~matched
        masked = np.where(ok, iou[p][None, :], -1.0)
        j = masked.argmax(axis=1)
        hit = masked[np.arange(len(thresholds)), j] >= 0
        matched[np.nonzero(hit)[0], j[hit]] = True
        tp[p] = hit
    return tp


def average_precision(scores: np.ndarray, tp: np.ndarray, n_gt: int) -> np.ndarray | float:
    """101-point interpolated AP (COCO) for one class: ``tp`` flags ``(n,)`` give one AP, ``(T, n)`` one per
    threshold (the detections are ranked once)."""
    flags = np.atleast_2d(tp)
    if n_gt == 0:
        out = np.full(flags.shape[0], np.nan)
    elif scores.size == 0:
        out = np.zeros(flags.shape[0])
    else:
        hits = flags[:, np.argsort(-scores, kind="stable")].astype(float)
        ctp, cfp = np.cumsum(hits, axis=1), np.cumsum(1.0 - hits, axis=1)
        recall = ctp / n_gt
        precision = ctp / np.maximum(ctp + cfp, np.finfo(float).eps)
        precision = np.maximum.accumulate(precision[:, ::-1], axis=1)[:, ::-1]
        padded = np.hstack([precision, np.zeros((precision.shape[0], 1))])  # a point past the last recall: 0
        points = np.linspace(0.0, 1.0, 101)
        out = np.array([np.mean(p[np.searchsorted(r, points, side="left")]) for p, r in zip(padded, recall)])
    return float(out[0]) if tp.ndim == 1 else out


def coco_tp_batch(iou: np.ndarray, scores: np.ndarray, pred_valid: np.ndarray) -> np.ndarray:
    """:func:`coco_tp` for a padded batch: ``iou (R, P, G)``, ``scores (R, P)`` → ``(R, P, T)`` flags.

    In a row where every prediction has at most one ground truth with IoU ≥ the lowest threshold, and every ground
    truth at most one prediction, no two predictions contend for a ground truth: each prediction's flags are its best
    IoU against the thresholds. The other rows run the greedy matching, a loop over prediction ranks (≤ P) vectorized
    over rows and thresholds."""
    rows, n_pred, n_gt = iou.shape
    t = COCO_THRESHOLDS
    if n_pred == 0 or n_gt == 0:
        return np.zeros((rows, n_pred, len(t)), dtype=bool)
    cand = iou >= t[0]
    contested = (cand.sum(axis=2) > 1).any(axis=1) | (cand.sum(axis=1) > 1).any(axis=1)
    tp = (iou.max(axis=2)[..., None] >= t) & pred_valid[..., None]
    hard = np.nonzero(contested)[0]
    if hard.size:
        tp[hard] = _greedy_tp(iou[hard], scores[hard], pred_valid[hard])
    flags: np.ndarray = tp
    return flags


def _greedy_tp(iou: np.ndarray, scores: np.ndarray, pred_valid: np.ndarray) -> np.ndarray:
    """COCO's greedy matching over a padded batch (predictions in descending score order)."""
    rows, n_pred, n_gt = iou.shape
    t = COCO_THRESHOLDS
    tp = np.zeros((rows, n_pred, len(t)), dtype=bool)
    order = np.argsort(np.where(pred_valid, -scores, np.inf), axis=1, kind="stable")
    matched = np.zeros((rows, len(t), n_gt), dtype=bool)
    r = np.arange(rows)
    for k in range(n_pred):
        p = order[:, k]
        row_iou = iou[r, p, :]
        ok = (row_iou[:, None, :] >= t[None, :, None]) & ~matched
        masked = np.where(ok, row_iou[:, None, :], -1.0)
        j = masked.argmax(axis=2)
        hit = (np.take_along_axis(masked, j[..., None], axis=2)[..., 0] >= 0) & pred_valid[r, p][:, None]
        rr, tt = np.nonzero(hit)
        matched[rr, tt, j[rr, tt]] = True
        tp[r, p, :] = hit
    return tp


def bits(flags: np.ndarray) -> np.ndarray:
    """Threshold flags ``(..., T)`` packed into ints (bit t = TP at ``COCO_THRESHOLDS[t]``)."""
    packed: np.ndarray = (flags.astype(np.int64) << np.arange(flags.shape[-1], dtype=np.int64)).sum(axis=-1)
    return packed


def ap_from_classes(
    dets: dict[str | None, tuple[np.ndarray, np.ndarray]], gt: dict[str | None, int]
) -> dict[str, float]:
    """AP50 and AP@[.5:.95] over a dataset: per class, every detection's scores and packed TP bits, and the
    ground-truth count. Classes without ground truth are left out (COCO)."""
    classes = [c for c, n in gt.items() if n > 0]
    if not classes:
        return {"ap50": float("nan"), "ap50_95": float("nan")}
    empty = (np.zeros(0), np.zeros(0, dtype=np.int64))
    per_t = np.zeros((len(COCO_THRESHOLDS), len(classes)))
    shifts = np.arange(len(COCO_THRESHOLDS), dtype=np.int64)
    for ci, c in enumerate(classes):
        scores, packed = dets.get(c, empty)
        per_t[:, ci] = average_precision(scores, ((packed[None, :] >> shifts[:, None]) & 1).astype(bool), gt[c])
    means = per_t.mean(axis=1)
    return {"ap50": float(means[0]), "ap50_95": float(means.mean())}
