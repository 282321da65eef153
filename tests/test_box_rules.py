"""Box geometry (vision_eval.evaluators.boxes.geometry) against plain oracles: the dense IoU path gives the pairs the
per-pair arithmetic gives, box formats convert as defined, and malformed boxes and scores are refused by name."""

from __future__ import annotations

import numpy as np
import pytest

from vision_eval.evaluators.boxes import geometry as bx


def random_boxes(rng: np.random.Generator, n: int) -> list[bx.Box]:
    corners = rng.integers(0, 40, size=(n, 2)).astype(float)
    sizes = rng.integers(0, 20, size=(n, 2)).astype(float)  # some of zero width or height
    return [(x, y, x + w, y + h) for (x, y), (w, h) in zip(corners.tolist(), sizes.tolist())]


def pairs_by_hand(pred: list[bx.Box], gt: list[bx.Box], floor: float, pl_: list | None, gl: list | None) -> bx.Overlaps:
    out = []
    for i, a in enumerate(pred):
        row = []
        for j, b in enumerate(gt):
            if pl_ is not None and gl is not None and pl_[i] != gl[j]:
                continue
            v = bx.box_iou(a, b)
            if v >= floor:
                row.append((j, v))
        out.append(row)
    return out


@pytest.mark.parametrize("labelled", [False, True])
def test_dense_and_sparse_overlaps_give_the_pairs_of_the_per_pair_iou(labelled: bool) -> None:
    rng = np.random.default_rng(4)
    pred, gt = random_boxes(rng, 24), random_boxes(rng, 21)  # 504 pairs: the dense path
    gt[5] = pred[5] = (7.0, 7.0, 7.0, 12.0)  # the same zero-area box on both sides: IoU 1
    pred_labels = [("a", "b", None)[i % 3] for i in range(len(pred))] if labelled else None
    gt_labels = [("b", "a", None)[i % 3] for i in range(len(gt))] if labelled else None
    for floor in (0.1, 0.5, 0.75):
        wanted = pairs_by_hand(pred, gt, floor, pred_labels, gt_labels)
        assert sum(map(len, wanted)) >= (3 if floor < 0.5 else 1)
        assert bx.overlaps(pred, gt, floor, pred_labels, gt_labels) == wanted
        few = pred[:10]  # 210 pairs: the per-pair path
        assert bx.overlaps(few, gt, floor, pred_labels and pred_labels[:10], gt_labels) == wanted[:10]


def test_iou_matrix_is_the_per_pair_iou_for_every_pair_and_batch() -> None:
    rng = np.random.default_rng(8)
    a, b = random_boxes(rng, 7), random_boxes(rng, 6)
    b[0] = a[0] = (3.0, 3.0, 3.0, 3.0)
    b[1] = (0.25, 0.0, 0.75, 0.5)
    a[1] = (0.0, 0.0, 0.5, 0.5)  # boxes smaller than a pixel: IoU 1/3
    wanted = np.array([[bx.box_iou(x, y) for y in b] for x in a])
    got = bx.iou_matrix(np.array(a), np.array(b))
    assert got.shape == (7, 6) and np.array_equal(got, wanted)
    assert wanted[0, 0] == 1.0 and wanted[1, 1] == pytest.approx(1 / 3) and wanted[0, 1] == 0.0
    batched = bx.iou_matrix(np.stack([np.array(a), np.array(a)]), np.stack([np.array(b), np.array(b)[::-1]]))
    assert np.array_equal(batched[0], wanted) and np.array_equal(batched[1], wanted[:, ::-1])


def test_box_iou_of_boxes_smaller_than_a_pixel() -> None:
    assert bx.box_iou((0.0, 0.0, 0.5, 0.5), (0.25, 0.0, 0.75, 0.5)) == pytest.approx(1 / 3)
    assert bx.box_iou((0.0, 0.0, 1.0, 1.0), (1.0, 0.0, 2.0, 1.0)) == 0.0  # touching edges
    assert bx.box_iou((2.0, 2.0, 2.0, 2.0), (2.0, 2.0, 2.0, 2.0)) == 1.0
    assert bx.box_iou((2.0, 2.0, 2.0, 2.0), (2.0, 2.0, 2.0, 3.0)) == 0.0


@pytest.mark.parametrize(
    ("fmt", "box", "xyxy"),
    [
        ("xyxy", (1.0, 2.0, 3.0, 4.0), (1.0, 2.0, 3.0, 4.0)),
        ("xywh", (1.0, 2.0, 3.0, 4.0), (1.0, 2.0, 4.0, 6.0)),
        ("cxcywh", (5.0, 6.0, 4.0, 2.0), (3.0, 5.0, 7.0, 7.0)),
    ],
)
def test_box_formats(fmt: bx.BoxFormat, box: bx.Box, xyxy: bx.Box) -> None:
    assert bx.to_xyxy(box, fmt) == xyxy
    assert bx.parse_boxes([list(box)], fmt).boxes == [xyxy]


def test_coordinates_beyond_a_finite_sum_are_read_exactly() -> None:
    parsed = bx.parse_boxes("[[1e308, 1e308, 1.5e308, 1.7e308]]")  # their sum overflows: checked one by one
    assert parsed.boxes == [(1e308, 1e308, 1.5e308, 1.7e308)]
    assert bx.parse_boxes([(1, 2, 3, 4)]).boxes == [(1.0, 2.0, 3.0, 4.0)]  # a tuple: read one by one too


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("[[0, 0, 1]]", "malformed box at boxes[0]: expected 4 numbers, got [0, 0, 1]"),
        ('[{"box": [0, 0, 1, "2"]}]', 'malformed box at boxes[0]: coordinates must be finite numbers: [0, 0, 1, "2"]'),
        ("[[true, 0, 1, 1]]", "malformed box at boxes[0]: coordinates must be finite numbers: [true, 0, 1, 1]"),
        ("[[0, NaN, 1, 1]]", "malformed box at boxes[0]: coordinates must be finite numbers: [0, NaN, 1, 1]"),
        ("[[0, 0, Infinity, 1]]", "malformed box at boxes[0]: coordinates must be finite numbers: [0, 0, Infinity, 1]"),
        ("[[0, 0, 1, null]]", "malformed box at boxes[0]: coordinates must be finite numbers: [0, 0, 1, null]"),
        ('[[0, 0, 1, 1], {"box": [0, 0, 1, 1], "score": "high"}]', "malformed box at boxes[1]: score must be a number"),
        ('[{"box": [0, 0, 1, 1], "score": true}]', "malformed box at boxes[0]: score must be a number"),
        ("[[2, 0, 1, 1]]", "malformed box at boxes[0]: negative width or height (xyxy [2.0, 0.0, 1.0, 1.0])"),
    ],
)
def test_malformed_boxes_are_refused_by_position(value: str, message: str) -> None:
    with pytest.raises(ValueError) as raised:
        bx.parse_boxes(value)
    assert str(raised.value) == message


def test_scores_are_numbers_and_integers_beyond_floats_are_infinite() -> None:
    big = 10**400
    parsed = bx.parse_boxes([{"box": [0, 0, 1, 1], "score": s} for s in (1, big, -big, 0.5)])
    assert parsed.scores == [1.0, float("inf"), float("-inf"), 0.5]
    assert type(parsed.scores[0]) is float


def test_matching_at_exactly_the_threshold_is_a_true_positive() -> None:
    assert bx.hungarian(np.array([[0.5, 0.2]]), 0.5).tp == 1
    assert bx.hungarian(np.array([[0.4999, 0.2]]), 0.5).tp == 0
