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


def test_dense_pairs_at_exactly_the_floor_and_with_labels_on_one_side_only() -> None:
    rng = np.random.default_rng(5)
    pred, gt = random_boxes(rng, 20), random_boxes(rng, 20)  # 400 pairs: the dense path
    pred[0], gt[0] = (0.0, 0.0, 2.0, 1.0), (0.0, 0.0, 1.0, 1.0)  # IoU exactly 0.5
    found = bx.overlaps(pred, gt, 0.5, None, None)
    assert (0, 0.5) in found[0] and found == pairs_by_hand(pred, gt, 0.5, None, None)
    one_side = ["a"] * 20  # labels count only when both sides have them
    assert bx.overlaps(pred, gt, 0.5, one_side, None) == found == bx.overlaps(pred, gt, 0.5, None, one_side)


def test_average_precision_ranks_by_score_keeping_the_order_of_equal_scores() -> None:
    rng = np.random.default_rng(2)
    scores, tp = rng.choice([0.5, 0.9], 40), rng.random(40) < 0.5
    order = np.argsort(-scores, kind="stable")  # by score, equal scores in their given order
    ap = bx.average_precision(scores, tp, 25)
    assert isinstance(ap, float) and 0 < ap < 1
    assert ap == bx.average_precision(scores[order], tp[order], 25)
    assert bx.average_precision(scores, tp[::-1], 25) != ap  # the order within equal scores matters


def test_average_precision_without_ground_truth_or_detections() -> None:
    assert np.isnan(bx.average_precision(np.ones(3), np.array([True, False, True]), 0))
    per_threshold = bx.average_precision(np.ones(3), np.array([[True, False, True]] * 10), 0)
    assert per_threshold.shape == (10,) and np.isnan(per_threshold).all()
    assert bx.average_precision(np.zeros(0), np.zeros(0, dtype=bool), 4) == 0.0


def test_integer_coordinates_beyond_floats_and_long_coordinate_lists_are_refused() -> None:
    with pytest.raises(ValueError, match=r"^malformed box at boxes\[0\]: coordinates must be finite numbers"):
        bx.parse_boxes([[0, 0, 10**400, 1]])
    with pytest.raises(ValueError) as raised:
        bx.parse_boxes([list(range(60))])
    assert str(raised.value) == "malformed box at boxes[0]: expected 4 numbers, got " + str(list(range(60)))[:100]


def test_converted_boxes_that_overflow_are_written_in_the_general_encoding() -> None:
    import vision_eval as ve

    def row(box: str) -> dict[str, str]:
        return {"output": f'[{{"box": {box}}}]', "expected_output": '[{"box": [5, 5, 10, 10]}]'}

    rows = [row("[5, 5, 10, 10]"), row("[-1.7e308, 5, 1e308, 10]"), row("[1.7e308, 5, 1e308, 10]")]
    result = ve.evaluate(
        [{"id": str(i), **r} for i, r in enumerate(rows)],
        evaluators={"b": {"type": "bbox_iou", "format": "cxcywh"}},
        run={"progress": False},
    )
    compact, low, high = result.results["details"].to_list()
    assert compact.startswith('{"precision":1.0,"recall":1.0,') and ", " not in compact
    assert low.startswith('{"precision": 0.0, "recall": 0.0,') and high.startswith('{"precision": 0.0, "recall": 0.0,')


def test_summary_without_processed_rows_has_no_ap() -> None:
    import polars as pl

    from vision_eval.evaluator import EvalContext
    from vision_eval.stack import build_evaluator

    boxes = build_evaluator("b", {"type": "bbox_iou"}, EvalContext())
    errors = pl.DataFrame({"sample_id": ["a"], "status": ["error"], "score": [None], "details": [None]})
    assert boxes.summarize(errors.cast({"score": pl.Float64, "details": pl.Utf8})) == {
        "ap50": None,
        "ap50_95": None,
        "mean_score": None,
        "rows": 0,
    }


def test_dataset_metrics_average_ap_over_labels_and_the_score_over_processed_rows() -> None:
    import vision_eval as ve

    rows = [
        {
            "id": "a",
            "output": '[{"label": "cat", "box": [0, 0, 10, 10], "score": 0.9}]',
            "expected_output": '[{"label": "cat", "box": [0, 0, 10, 10]}, {"label": "dog", "box": [20, 20, 30, 30]}]',
        },
        {"id": "b", "output": "nope", "expected_output": "[]"},  # an error row: left out
    ]
    result = ve.evaluate(rows, evaluators={"b": {"type": "bbox_iou"}}, run={"progress": False})
    # cat: AP 1; dog: never detected, AP 0. The row's F1: precision 1, recall 1/2.
    assert result.run_info["metrics"]["b"] == {"ap50": 0.5, "ap50_95": 0.5, "mean_score": 2 / 3, "rows": 1}
