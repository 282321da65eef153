"""Boxes: parsing, IoU, optimal matching, COCO true positives and AP (``bbox_iou`` and the code-judge scripts).

A row holds a few boxes, for which plain Python arithmetic costs less than numpy's per-call overhead: a row's boxes
are tuples, and IoU is computed only for pairs of boxes that overlap (:func:`overlaps`), by numpy
(:func:`iou_matrix`) from :data:`DENSE_PAIRS` pairs on. Both do the same float operations in the same order, so
they give the same IoU to the bit.
"""

from __future__ import annotations

import json
import math
import re
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

BoxFormat = Literal["xyxy", "xywh", "cxcywh"]
Box = tuple[float, float, float, float]
Labels = list[str | None]
Overlaps = list[list[tuple[int, float]]]
"""Per prediction, the ground truths ``(index, IoU)`` it overlaps enough, in index order."""

COCO_THRESHOLDS = np.round(np.arange(0.5, 0.951, 0.05), 2)
_THRESHOLDS: tuple[float, ...] = tuple(COCO_THRESHOLDS.tolist())
LOWEST_THRESHOLD = _THRESHOLDS[0]
DENSE_PAIRS = 400
"""Box pairs in a row from which IoU is computed by numpy (below, Python's per-pair arithmetic is faster)."""
_COORDS = ("box", "bbox", "xyxy", "coordinates")
_PLAIN_KEYS = frozenset(("box", "label", "score"))
_NUMBERS = frozenset((int, float))


@dataclass
class Boxes:
    """One side of a row: xyxy boxes (pixels or fractions), with optional labels and confidence scores."""

    boxes: list[Box]
    """xyxy coordinates, one tuple per box."""
    labels: Labels = field(default_factory=list)
    """Each box's label (``None``: none given)."""
    scores: list[float | None] = field(default_factory=list)
    """Each box's confidence (``None``: none given)."""
    plain: bool = False
    """The value was JSON text of the simplest shape: a list of objects whose only keys are ``box`` (4 numbers),
    ``label`` (text without escapes, or null) and ``score`` (a number or null), each at most once. ``bbox_iou``
    writes the details of rows whose both sides are plain in the encoding its earlier batch reader wrote them in."""

    def __len__(self) -> int:
        return len(self.boxes)

    @property
    def xyxy(self) -> np.ndarray:
        """The boxes as an ``(n, 4)`` array."""
        return np.array(self.boxes, dtype=float).reshape(-1, 4)


def parse_boxes(value: Any, fmt: BoxFormat = "xyxy", where: str = "boxes") -> Boxes:
    """Boxes from a JSON value (text or parsed): a list of ``[a, b, c, d]`` or of objects with ``box``/``bbox``
    and optional ``label``/``score``, or an object with a ``boxes`` list. Raises ``ValueError`` naming the box."""
    text = value if isinstance(value, str) else None
    if text is not None:
        from vision_eval.evaluators.code.json_depth import MAX_DEPTH, nesting_depth

        if nesting_depth(text) > MAX_DEPTH:  # deeper would exhaust Python's recursion while parsing
            raise ValueError(f"{where}: boxes nested too deeply (JSON deeper than {MAX_DEPTH} levels)")
        try:
            value = json.loads(text)
        except ValueError:
            from vision_eval.evaluators.fields.matching import extract_json

            ok, value = extract_json(text)
            if not ok:
                raise ValueError(f"{where} is not a JSON list of boxes") from None
            text = None
    if isinstance(value, dict) and isinstance(value.get("boxes"), list):
        value, text = value["boxes"], None
    if isinstance(value, dict) and any(k in value for k in _COORDS):
        value, text = [value], None
    if value is None:
        value, text = [], None
    if not isinstance(value, list):
        raise ValueError(f"{where} is not a JSON list of boxes")
    plain = text is not None and "\\" not in text
    quotes = 0  # the quotes a plain text has: its keys' and its text labels' (a repeated key adds two)
    raws: list[Box] = []
    labels: Labels = []
    scores: list[float | None] = []
    for i, item in enumerate(value):
        if type(item) is dict and item.keys() <= _PLAIN_KEYS and "box" in item:  # the usual shape, no aliases
            coords, label, score = item["box"], item.get("label"), item.get("score")
            if coords is None:
                raise ValueError(f"malformed box at {where}[{i}]: no 'box' or 'bbox' key in {json.dumps(item)[:200]}")
            if plain:
                quotes += 2 * len(item) + (0 if label is None else 2)
                plain = label is None or type(label) is str
        elif isinstance(item, dict):
            coords = next((item[k] for k in _COORDS if k in item), None)
            if coords is None:
                raise ValueError(f"malformed box at {where}[{i}]: no 'box' or 'bbox' key in {json.dumps(item)[:200]}")
            label = item.get("label", item.get("class", item.get("category")))
            score = item.get("score", item.get("confidence"))
            plain = False
        else:
            coords, label, score, plain = item, None, None, False
        box = None
        if type(coords) is list and len(coords) == 4:  # four plain numbers: checked without a call per number
            a, b, c, d = coords
            if type(a) is float and type(b) is float and type(c) is float and type(d) is float:
                if -math.inf < a + b + c + d < math.inf:  # (a sum of finite coordinates may overflow: then the
                    box = (a, b, c, d)  # check below decides)
            elif type(a) in _NUMBERS and type(b) in _NUMBERS and type(c) in _NUMBERS and type(d) in _NUMBERS:
                try:
                    box = (float(a), float(b), float(c), float(d))
                except OverflowError:  # an integer beyond floats
                    box = None
                if box is not None and not -math.inf < box[0] + box[1] + box[2] + box[3] < math.inf:
                    box = None
        raws.append(box or _coords(coords, f"{where}[{i}]"))
        labels.append(label if label is None or type(label) is str else str(label))
        scores.append(score if score is None or type(score) is float else _score(score, f"{where}[{i}]"))
    if plain and not all(-math.inf < score < math.inf for score in scores if score is not None):
        bare = re.sub(r'"[^"]*"', "", text or "")  # NaN and Infinity are Python's JSON, not JSON
        plain = "N" not in bare and "I" not in bare
    boxes = raws if fmt == "xyxy" else [to_xyxy(box, fmt) for box in raws]
    for i, (x0, y0, x1, y1) in enumerate(boxes):
        if x1 < x0 or y1 < y0:
            raise ValueError(f"malformed box at {where}[{i}]: negative width or height ({fmt} {list(raws[i])})")
    return Boxes(boxes, labels, scores, plain and text is not None and text.count('"') == quotes)


def _finite(x: Any) -> bool:
    if isinstance(x, bool) or not isinstance(x, int | float):
        return False
    try:
        return math.isfinite(x)
    except OverflowError:  # an integer beyond floats
        return False


def _coords(coords: Any, where: str) -> Box:
    if not isinstance(coords, list | tuple) or len(coords) != 4:
        raise ValueError(f"malformed box at {where}: expected 4 numbers, got {json.dumps(coords)[:100]}")
    a, b, c, d = coords
    if not (_finite(a) and _finite(b) and _finite(c) and _finite(d)):
        raise ValueError(f"malformed box at {where}: coordinates must be finite numbers: {json.dumps(coords)}")
    return float(a), float(b), float(c), float(d)


def _score(score: Any, where: str) -> float:
    if isinstance(score, bool) or not isinstance(score, int | float):
        raise ValueError(f"malformed box at {where}: score must be a number")
    try:
        return float(score)
    except OverflowError:  # an integer beyond floats
        return math.inf if score > 0 else -math.inf


def to_xyxy(box: Box, fmt: BoxFormat) -> Box:
    """One box converted to xyxy."""
    a, b, c, d = box
    if fmt == "xyxy":
        return box
    if fmt == "xywh":
        return a, b, a + c, b + d
    return a - c / 2, b - d / 2, a + c / 2, b + d / 2


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


def box_iou(a: Box, b: Box) -> float:
    """:func:`iou_matrix` of two boxes, in plain Python (the same operations, so the same bits)."""
    ax0, ay0, ax1, ay1 = a
    bx0, by0, bx1, by1 = b
    iw = (ax1 if ax1 < bx1 else bx1) - (ax0 if ax0 > bx0 else bx0)
    ih = (ay1 if ay1 < by1 else by1) - (ay0 if ay0 > by0 else by0)
    inter = (iw if iw > 0 else 0.0) * (ih if ih > 0 else 0.0)
    union = (ax1 - ax0) * (ay1 - ay0) + (bx1 - bx0) * (by1 - by0) - inter
    if union > 0:
        return inter / union
    return 1.0 if ax0 == bx0 and ay0 == by0 and ax1 == bx1 and ay1 == by1 else 0.0


def overlaps(
    pred: list[Box], gt: list[Box], floor: float, pred_labels: Labels | None, gt_labels: Labels | None
) -> Overlaps:
    """For each prediction, the ground truths whose IoU with it is at least ``floor`` (> 0), as ``(index, IoU)`` in
    index order; with labels, only boxes of the same label are compared."""
    if len(pred) * len(gt) >= DENSE_PAIRS:
        return _dense_overlaps(pred, gt, floor, pred_labels, gt_labels)
    if pred_labels is None or gt_labels is None:
        everyone = list(enumerate(gt))
        peers = [everyone] * len(pred)
    else:
        by_label: dict[str | None, list[tuple[int, Box]]] = {}
        for j, (box, label) in enumerate(zip(gt, gt_labels)):
            by_label.setdefault(label, []).append((j, box))
        peers = [by_label.get(label, []) for label in pred_labels]
    out: Overlaps = []
    for (ax0, ay0, ax1, ay1), candidates in zip(pred, peers):
        area_a = (ax1 - ax0) * (ay1 - ay0)
        row = []
        for j, (bx0, by0, bx1, by1) in candidates:  # box_iou, inlined
            if bx0 >= ax1 or ax0 >= bx1 or by0 >= ay1 or ay0 >= by1:  # apart: IoU 0 unless the same zero-area box
                if not (ax0 == bx0 and ay0 == by0 and ax1 == bx1 and ay1 == by1):
                    continue
                v = box_iou((ax0, ay0, ax1, ay1), (bx0, by0, bx1, by1))
            else:
                iw = (ax1 if ax1 < bx1 else bx1) - (ax0 if ax0 > bx0 else bx0)
                ih = (ay1 if ay1 < by1 else by1) - (ay0 if ay0 > by0 else by0)
                inter = (iw if iw > 0 else 0.0) * (ih if ih > 0 else 0.0)
                union = area_a + (bx1 - bx0) * (by1 - by0) - inter
                v = inter / union if union > 0 else box_iou((ax0, ay0, ax1, ay1), (bx0, by0, bx1, by1))
            if v >= floor:
                row.append((j, v))
        out.append(row)
    return out


def _dense_overlaps(
    pred: list[Box], gt: list[Box], floor: float, pred_labels: Labels | None, gt_labels: Labels | None
) -> Overlaps:
    iou = iou_matrix(np.array(pred, dtype=float), np.array(gt, dtype=float))
    hit = iou >= floor
    if pred_labels is not None and gt_labels is not None:
        hit &= np.array(pred_labels, dtype=object)[:, None] == np.array(gt_labels, dtype=object)[None, :]
    out: Overlaps = [[] for _ in pred]
    rows, cols = np.nonzero(hit)
    for i, j, v in zip(rows.tolist(), cols.tolist(), iou[rows, cols].tolist()):
        out[i].append((j, v))
    return out


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
        return mean(self.ious)

    def metrics(self) -> dict[str, float]:
        return {"precision": self.precision, "recall": self.recall, "f1": self.f1, "mean_iou": self.mean_iou}


def mean(values: list[float]) -> float:
    """``numpy.mean`` of a non-empty list, to the bit, without numpy's per-call cost: numpy adds up to 7 values in
    order, up to 128 in 8 interleaved partial sums (pairwise summation), more in halves (left to numpy here)."""
    n = len(values)
    if n < 8:
        total = 0.0
        for v in values:
            total += v
        return total / n
    if n > 128:
        return float(np.mean(values))
    r0, r1, r2, r3, r4, r5, r6, r7 = values[:8]
    i = 8
    while i + 8 <= n:
        r0, r1, r2, r3 = r0 + values[i], r1 + values[i + 1], r2 + values[i + 2], r3 + values[i + 3]
        r4, r5, r6, r7 = r4 + values[i + 4], r5 + values[i + 5], r6 + values[i + 6], r7 + values[i + 7]
        i += 8
    total = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    for v in values[i:]:
        total += v
    return total / n


def match(found: Overlaps, n_gt: int, threshold: float) -> RowMatch:
    """Optimal one-to-one matching of the overlapping pairs with IoU ≥ ``threshold`` (``found`` per prediction):
    the assignment of highest total weight, a pair weighing 1 + its IoU (scipy's Hungarian solver). When no two
    pairs share a box, every pair is in it, without the solver."""
    pairs = [(i, j, v) for i, row in enumerate(found) for j, v in row if v >= threshold]
    ious = [v for _, _, v in pairs]
    alone = len({j for _, j, _ in pairs}) == len(pairs)
    alone = alone and (max(map(len, found), default=0) <= 1 or len({i for i, _, _ in pairs}) == len(pairs))
    if alone and math.inf not in ious:  # (an infinite IoU, from boxes scaled by odd image sizes: the solver rejects)
        return RowMatch(len(pairs), len(found), n_gt, ious, [(i, j) for i, j, _ in pairs])
    from scipy.optimize import linear_sum_assignment

    weight = np.zeros((len(found), n_gt))
    for i, j, v in pairs:
        weight[i, j] = 1.0 + v
    rows, cols = linear_sum_assignment(weight, maximize=True)
    keep = weight[rows, cols] > 0
    kept = [(int(i), int(j)) for i, j in zip(rows[keep], cols[keep])]
    iou = {(i, j): v for i, j, v in pairs}
    return RowMatch(len(kept), len(found), n_gt, [iou[p] for p in kept], kept)


def hungarian(iou: np.ndarray, threshold: float) -> RowMatch:
    """:func:`match` over a dense IoU matrix ``(n_pred, n_gt)``."""
    n, m = iou.shape
    found: Overlaps = [[] for _ in range(n)]
    rows, cols = np.nonzero(iou >= threshold)
    for i, j, v in zip(rows.tolist(), cols.tolist(), iou[rows, cols].tolist()):
        found[i].append((j, v))
    return match(found, m, threshold)


def coco_hits(found: Overlaps, scores: list[float], floor: float = 0.0) -> list[int]:
    """COCO's greedy matching of one image at the ten :data:`COCO_THRESHOLDS`: per prediction, bit ``t`` set when
    it is a true positive at threshold ``t``. Predictions go in descending score order (ties: in order) and each takes
    the unmatched ground truth of highest IoU ≥ the threshold (ties: the first). ``found`` holds the pairs with IoU
    ≥ ``floor`` (at least those ≥ the lowest threshold).

    When no prediction has two ground truths with IoU ≥ the lowest threshold and no ground truth two predictions,
    nothing is contended: each prediction is a true positive at every threshold up to its IoU."""
    lowest = _THRESHOLDS[0]
    near = found if floor >= lowest else [[(j, v) for j, v in row if v >= lowest] for row in found]
    if max(map(len, near), default=0) <= 1:
        taken = [row[0][0] for row in near if row]
        if len(set(taken)) == len(taken):
            return [(1 << bisect_right(_THRESHOLDS, row[0][1])) - 1 if row else 0 for row in near]
    order = sorted(range(len(near)), key=lambda p: -scores[p])
    hits = [0] * len(near)
    for bit, t in enumerate(_THRESHOLDS):
        matched: set[int] = set()
        for p in order:
            best, best_iou = -1, -1.0
            for j, v in near[p]:
                if v >= t and v > best_iou and j not in matched:
                    best, best_iou = j, v
            if best >= 0:
                matched.add(best)
                hits[p] |= 1 << bit
    return hits


def average_precision(scores: np.ndarray, tp: np.ndarray, n_gt: int) -> np.ndarray | float:
    """101-point interpolated AP (COCO) for one class: ``tp`` flags ``(n,)`` give one AP, ``(T, n)`` one per
    threshold (the detections are ranked once). Precision at a recall is the best precision at that recall or
    beyond (the running maximum from the end)."""
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


def ap_from_classes(
    dets: dict[str | None, tuple[np.ndarray, np.ndarray]], gt: dict[str | None, int]
) -> dict[str, float]:
    """AP50 and AP@[.5:.95] over a dataset: per class, every detection's scores and true-positive bits (see
    :func:`coco_hits`), and the ground-truth count. Classes without ground truth are left out (COCO)."""
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
