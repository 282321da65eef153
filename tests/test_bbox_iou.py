"""bbox_iou: formats, IoU edge cases, Hungarian matching, P/R/F1, COCO AP; and the code-judge example script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import vision_eval
from vision_eval.structured import boxes as bx

ROOT = Path(__file__).resolve().parents[1]


def run(rows: list[dict[str, Any]], **settings: Any) -> Any:
    for i, row in enumerate(rows):
        row.setdefault("id", str(i))
        for key in ("output", "expected_output"):
            if not isinstance(row[key], str):
                row[key] = json.dumps(row[key])
    return vision_eval.evaluate(rows, evaluators={"b": {"type": "bbox_iou", **settings}})


def test_iou_and_formats() -> None:
    a = np.array([[0.0, 0, 10, 10]])
    assert bx.iou_matrix(a, np.array([[5.0, 0, 15, 10]]))[0, 0] == pytest.approx(1 / 3)
    assert np.allclose(bx.to_xyxy(np.array([[0.0, 0, 10, 10]]), "xywh"), a)
    assert np.allclose(bx.to_xyxy(np.array([[5.0, 5, 10, 10]]), "cxcywh"), a)
    point = np.array([[1.0, 1, 1, 1]])
    assert bx.iou_matrix(point, point)[0, 0] == 1.0
    assert bx.iou_matrix(point, np.array([[0.0, 0, 2, 2]]))[0, 0] == 0.0
    line = np.array([[0.0, 0, 10, 0]])
    assert bx.iou_matrix(line, np.array([[0.0, 0, 10, 0]]))[0, 0] == 1.0


def test_hungarian_beats_greedy() -> None:
    iou = np.array([[0.6, 0.55], [0.55, 0.0]])
    match = bx.hungarian(iou, 0.5)
    assert match.tp == 2 and sorted(match.pairs) == [(0, 1), (1, 0)]
    assert match.mean_iou == pytest.approx(0.55)


def test_row_metrics_and_score_choice() -> None:
    gt = [{"label": "circle", "box": [0, 0, 10, 10]}, {"label": "square", "box": [20, 20, 30, 30]}]
    pred = [
        {"label": "circle", "box": [0, 0, 10, 10]},
        {"label": "circle", "box": [20, 20, 30, 30]},  # right place, wrong label
        {"label": "square", "box": [50, 50, 60, 60]},
    ]
    res = run([{"output": pred, "expected_output": gt}])
    d = json.loads(res.results["details"][0])
    assert (d["tp"], d["fp"], d["fn"]) == (1, 2, 1)
    assert d["precision"] == pytest.approx(1 / 3) and d["recall"] == 0.5 and d["f1"] == pytest.approx(0.4)
    assert res.results["score"][0] == pytest.approx(0.4)
    blind = run([{"output": pred, "expected_output": gt}], label_aware=False)
    assert json.loads(blind.results["details"][0])["tp"] == 2
    recall = run([{"output": pred, "expected_output": gt}], score="recall")
    assert recall.results["score"][0] == 0.5


def test_empty_and_formats_end_to_end() -> None:
    rows = [
        {"output": [], "expected_output": []},
        {"output": [], "expected_output": [[0, 0, 1, 1]]},
        {"output": [[5, 5, 10, 10]], "expected_output": [[0, 0, 10, 10]]},  # IoU 25/175 in cxcywh
    ]
    res = run(rows, format="cxcywh")
    assert res.results["score"].to_list() == [1.0, 0.0, 0.0]
    assert json.loads(res.results["details"][0])["mean_iou"] == 1.0
    res = run(
        [{"output": [[0, 0, 10, 10]], "expected_output": [[5, 5, 10, 10]]}], format="cxcywh", output_format="xyxy"
    )
    assert res.results["score"][0] == 1.0


def test_normalized_against_pixels_uses_image_size() -> None:
    row = {"output": [[0.0, 0.0, 0.5, 0.5]], "expected_output": [[0, 0, 50, 100]], "width": 100, "height": 200}
    res = run([row], output_normalized=True)
    assert res.results["score"][0] == 1.0


@pytest.mark.parametrize(
    ("output", "message"),
    [
        ("[[0, 0, 5]]", "malformed box at output[0]: expected 4 numbers"),
        ("[[10, 0, 5, 5]]", "malformed box at output[0]: negative width or height"),
        ('[{"label": "a"}]', "malformed box at output[0]: no 'box' or 'bbox' key"),
        ('[[0, 0, "a", 1]]', "coordinates must be finite numbers"),
        ("no boxes here", "output is not a JSON list of boxes"),
    ],
)
def test_malformed_boxes_are_row_errors(output: str, message: str) -> None:
    res = run([{"output": output, "expected_output": "[]"}, {"output": "[]", "expected_output": "[]"}])
    assert res.results["status"].to_list() == ["error", "processed"]
    assert message in res.results["error"][0]


def test_ap_hand_checked() -> None:
    rows = [
        {
            "output": [{"box": [0, 0, 10, 10], "score": 0.9}, {"box": [50, 50, 60, 60], "score": 0.8}],
            "expected_output": [[0, 0, 10, 10]],
        },
        {"output": [{"box": [0, 0, 10, 10], "score": 0.7}], "expected_output": [[0, 0, 10, 10]]},
    ]
    metrics = run(rows).run_info["metrics"]["b"]
    # TP .9, FP .8, TP .7 over 2 ground truths: 51 recall points at precision 1, 50 at 2/3.
    expected = (51 + 50 * 2 / 3) / 101
    assert metrics["ap50"] == pytest.approx(expected, abs=1e-6)
    assert metrics["ap50_95"] == pytest.approx(expected, abs=1e-6)


def test_ap_by_threshold() -> None:
    # IoU 0.68: a true positive at 0.50..0.65 (4 of 10 COCO thresholds).
    rows = [{"output": [[20, 20, 30, 30]], "expected_output": [[21, 21, 31, 31]]}]
    metrics = run(rows).run_info["metrics"]["b"]
    assert metrics["ap50"] == 1.0 and metrics["ap50_95"] == pytest.approx(0.4)


def _judge(row: dict[str, Any]) -> dict[str, Any]:
    script = ROOT / "evaluators/code-validators/fuzzy_fields_judge.py"
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run(
        [sys.executable, str(script)], input=json.dumps(row), env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_code_judge_script_fuzzy_and_boxes() -> None:
    row = {
        "output": '```json\n{"vendor": "Acme Crop", "boxes": [[0, 0, 10, 10]]}\n```',
        "expected_output": json.dumps({"vendor": "Acme Corp", "boxes": [[0, 0, 10, 10]]}),
        "config": {"fields": [{"path": "vendor", "threshold": 0.7}], "boxes": "boxes"},
    }
    out = _judge(row)
    assert out["score"] == 1.0
    assert out["hits"][0] == "vendor: similarity 0.778 >= threshold 0.7"
    assert out["hits"][1].startswith("boxes: F1 1.000")
    strict = _judge({**row, "config": {"fields": [{"path": "vendor"}]}})
    assert strict["score"] == 0.0 and strict["misses"] == ["vendor: similarity 0.778 < threshold 0.85"]
    assert set(strict) == {"score", "hits", "misses", "reasoning"}


def random_rows(count: int) -> list[dict[str, Any]]:
    """Labelled boxes near their expected boxes, some near-duplicates, some mislabelled, some without labels."""
    rng = np.random.default_rng(3)
    rows = []
    for i in range(count):
        n = int(rng.integers(0, 7))
        xy = rng.uniform(0, 50, size=(n, 2))
        gt = np.hstack([xy, xy + rng.uniform(0, 20, size=(n, 2))]).round(1)
        labels = rng.choice(["a", "b"], size=n)
        pred = gt[rng.random(n) > 0.2]
        if pred.size and i % 3 == 0:
            pred = np.vstack([pred, pred[:1] + 0.5])  # near-duplicate: several candidates for one box
        pred = (pred + rng.normal(0, 1.5, size=pred.shape)).round(1)
        pred[:, 2:] = np.maximum(pred[:, 2:], pred[:, :2])
        plabels = (
            rng.choice(["a", "b"], size=len(pred))
            if i % 4 == 0
            else labels[: len(pred)].tolist() + ["a"] * max(0, len(pred) - n)
        )
        out = [{"box": b.tolist(), "score": round(float(s), 1)} for b, s in zip(pred, rng.random(len(pred)))]
        if i % 5:
            for item, lab in zip(out, plabels):
                item["label"] = str(lab)
        exp = [{"label": str(lab), "box": b.tolist()} for lab, b in zip(labels, gt)]
        rows.append({"id": str(i), "output": json.dumps(out), "expected_output": json.dumps(exp)})
    return rows


def test_batch_path_matches_row_path() -> None:
    rows = random_rows(300)
    frame = vision_eval.evaluate(rows, evaluators={"b": {"type": "bbox_iou"}})
    from vision_eval.evaluators.bbox_iou import BboxIou, BboxIouSettings

    evaluator = BboxIou("b", BboxIouSettings())
    import polars as pl

    batch = pl.DataFrame(rows)
    slow = evaluator._rows(batch)
    fast_output = evaluator.evaluate(batch)
    fast = fast_output.results
    assert fast["status"].to_list() == ["processed"] * 300
    for f, s in zip(fast.sort("sample_id").to_dicts(), slow.sort("sample_id").to_dicts()):
        assert f["score"] == pytest.approx(s["score"]), f["sample_id"]
        fd, sd = json.loads(f["details"]), json.loads(s["details"])
        for key in ("precision", "recall", "f1", "mean_iou", "tp", "fp", "fn"):
            assert fd[key] == pytest.approx(sd[key]), (f["sample_id"], key)
        assert sorted((d["s"], d["l"] or "", d["b"]) for d in fd["ap_dets"] or []) == sorted(
            (d["s"], d["l"] or "", d["b"]) for d in sd["ap_dets"]
        )
    from vision_eval.structured import box_batch

    from_details = box_batch.dataset_ap(slow["details"], slow["sample_id"])  # scores tie: order must not matter
    assert box_batch.dataset_ap(fast["details"], fast["sample_id"]) == pytest.approx(from_details, abs=1e-12)
    inputs = {name: table.lazy() for name, table in fast_output.metric_inputs.items()}
    kept = evaluator.summarize_from(fast, inputs)  # from the AP inputs evaluate() returned
    assert {k: kept[k] for k in from_details} == pytest.approx({k: round(v, 6) for k, v in from_details.items()})
    assert evaluator.summarize(fast) == kept  # without them, from the details
    mixed = BboxIou("m", BboxIouSettings())
    mixed_rows = [*rows[:50], {"id": "lists", "output": "[[0, 0, 2, 2]]", "expected_output": "[[0, 0, 2, 2]]"}]
    mixed_output = mixed.evaluate(pl.DataFrame(mixed_rows))  # one row takes the row-wise path
    mixed_result = mixed_output.results
    mixed_inputs = {name: table.lazy() for name, table in mixed_output.metric_inputs.items()}
    assert mixed.summarize_from(mixed_result, mixed_inputs)["ap50"] == pytest.approx(
        box_batch.dataset_ap(mixed_result["details"], mixed_result["sample_id"])["ap50"], abs=1e-6
    )
    assert frame.run_info["metrics"]["b"]["rows"] == 300


def test_coco_batch_flags_match_per_image_greedy() -> None:
    """Uncontested rows take the shortcut, contested ones the greedy loop: both give coco_tp's flags per image."""
    rng = np.random.default_rng(11)
    contested = 0
    for _ in range(60):
        rows, n_pred, n_gt = 40, int(rng.integers(1, 8)), int(rng.integers(1, 8))
        xy = rng.uniform(0, 100, size=(rows, n_gt, 2))
        gt = np.concatenate([xy, xy + rng.uniform(5, 40, size=(rows, n_gt, 2))], axis=2)
        pick = rng.integers(0, n_gt, size=(rows, n_pred))
        noise = rng.normal(0, rng.choice([1.0, 5.0, 15.0]), size=(rows, n_pred, 4))
        pred = np.take_along_axis(gt, pick[..., None], axis=1) + noise
        pred[..., 2:] = np.maximum(pred[..., 2:], pred[..., :2])
        valid = rng.random((rows, n_pred)) > 0.2
        iou = np.where(valid[..., None], bx.iou_matrix(pred, gt), 0.0)
        scores = np.round(rng.random((rows, n_pred)), 1)  # ties too
        flags = bx.coco_tp_batch(iou, scores, valid)
        for r in range(rows):
            keep = np.nonzero(valid[r])[0]
            assert np.array_equal(flags[r][keep], bx.coco_tp(iou[r][keep], scores[r][keep]))
            assert not flags[r][~valid[r]].any()
            contested += int(((iou[r] >= 0.5).sum(axis=1) > 1).any() or ((iou[r] >= 0.5).sum(axis=0) > 1).any())
    assert contested > 100  # the greedy path was exercised


def test_degenerate_boxes_in_a_padded_batch() -> None:
    a = np.array([[[1.0, 1, 1, 1], [0, 0, 4, 4]], [[2.0, 2, 2, 6], [3, 3, 3, 3]]])
    b = np.array([[[1.0, 1, 1, 1], [0, 0, 2, 2], [5, 5, 5, 5]], [[2.0, 2, 2, 6], [0, 0, 1, 1], [3, 3, 3, 3]]])
    iou = bx.iou_matrix(a, b)
    assert iou[0].tolist() == [[1.0, 0.0, 0.0], [0.0, 0.25, 0.0]]
    assert iou[1].tolist() == [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]


ODD_OUTPUTS = [
    '[{"label": "a", "box": [true, 0, 10, 10]}]',  # a boolean is not a coordinate
    '[{"label": "a", "box": ["0", 0, 10, 10]}]',  # nor is a string
    '[{"label": "b", "box": [0, 0, 10, 10], "label": "a"}]',  # repeated key: the last one counts (json.loads)
    '[{"class": "a", "box": [0, 0, 10, 10]}]',  # label alias
    '[{"label": "a", "bbox": [0, 0, 10, 10], "confidence": 0.5}]',  # box and score aliases
    '[{"label": "\\u0061", "box": [0, 0, 10, 10]}]',  # escaped label
    '[{"label": 7, "box": [0, 0, 10, 10]}]',  # a number as label
    '[{"label": "a", "box": [0, 0, 10, 10], "score": "0.5"}]',  # a string as score
    '[{"label": "a", "box": [0, 0, 10, 10, 3]}]',  # five coordinates
    '[{"label": "a", "box": [0, 0, 1e400, 10]}]',  # infinite
    '{"boxes": [{"label": "a", "box": [0, 0, 10, 10]}]}',  # wrapped
    '```json\n[{"label": "a", "box": [0, 0, 10, 10]}]\n```',  # fenced
    "[[0, 0, 10, 10]]",  # bare coordinates
    '[{"label": "a", "box": [0, 0, 10, 10]},]',  # trailing comma
    '[{"label": "a", "box": [0, 0, 10, 10], "id": 3}]',  # an extra key
]


def test_batch_path_takes_plain_rows_and_leaves_the_rest_to_the_row_path() -> None:
    """Plain lists of box objects (any key order, optional label/score, nulls, exponents, spacing) are decided by the
    batch path; every other shape goes to the row-wise path, so each row gets the row-wise answer."""
    import polars as pl

    from vision_eval.evaluators.bbox_iou import BboxIou, BboxIouSettings
    from vision_eval.structured import box_batch

    expected = '[{"label": "a", "box": [0, 0, 10, 10]}, {"label": "b", "box": [20, 20, 30, 30]}]'
    plain = [
        '[{"box": [0, 0, 10, 10], "label": "a"}, {"score": 0.5, "label": "b", "box": [20, 20, 30, 30]}]',
        '[ {"label": null, "box": [0.0, -0.0, 1e1, 1E+1], "score": null} ]',
        '[\n  {\n    "label": "b",\n    "box": [20, 20, 31, 30]\n  }\n]',
        "[]",
    ]
    opts = box_batch.BoxOptions("xyxy", "xyxy", False, False, 0.5, True)
    texts = pl.Series(plain + ODD_OUTPUTS)
    result = box_batch.evaluate_batch(texts, pl.Series([expected] * texts.len()), opts, None)
    assert result.fallback.tolist() == list(range(len(plain), texts.len()))
    assert result.frame["row"].to_list() == list(range(len(plain)))

    rows = [{"id": str(i), "output": t, "expected_output": expected} for i, t in enumerate(texts)]
    evaluator = BboxIou("b", BboxIouSettings())
    batch = evaluator.evaluate(pl.DataFrame(rows)).results.sort("sample_id")
    row_wise = evaluator._rows(pl.DataFrame(rows)).sort("sample_id")
    assert batch["status"].to_list() == row_wise["status"].to_list()
    assert batch["score"].to_list() == pytest.approx(row_wise["score"].to_list(), nan_ok=True)
    statuses = dict(zip(batch["sample_id"].to_list(), batch["status"].to_list()))
    assert statuses[str(len(plain))] == "error"  # the boolean coordinate
    repeated = json.loads(batch.filter(pl.col("sample_id") == str(len(plain) + 2))["details"].item())
    assert repeated["tp"] == 1  # labelled "a" (the last label), so it matches the expected "a" box


def test_average_precision_of_all_thresholds_at_once() -> None:
    rng = np.random.default_rng(2)
    for _ in range(50):
        n = int(rng.integers(0, 40))
        scores, flags = np.round(rng.random(n), 1), rng.random((10, n)) > 0.5
        n_gt = int(rng.integers(1, 50))
        each = [bx.average_precision(scores, flags[t], n_gt) for t in range(10)]
        assert bx.average_precision(scores, flags, n_gt).tolist() == each


def test_the_engine_may_score_halves_of_a_batch_with_the_same_rows_and_ap(monkeypatch: pytest.MonkeyPatch) -> None:
    """bbox_iou starts no threads of its own: it is splittable, so the engine scores a large batch as two halves on
    two of its threads; rows, AP inputs and dataset metrics are those of one call on the whole batch."""
    from vision_eval import batch_part
    from vision_eval.evaluators.bbox_iou import BboxIou

    heights: list[int] = []
    evaluate = BboxIou.evaluate

    def recorded(self: BboxIou, batch: Any) -> Any:
        heights.append(batch.height)
        return evaluate(self, batch)

    monkeypatch.setattr(BboxIou, "evaluate", recorded)
    rows = random_rows(300)
    stack = {"b": {"type": "bbox_iou"}}
    monkeypatch.setattr(batch_part, "SPLIT_MIN_ROWS", 50)
    halved = vision_eval.evaluate(rows, evaluators=stack, run={"batch_size": 300})
    assert heights == [150, 150]
    monkeypatch.setattr(batch_part, "SPLIT_MIN_ROWS", 10**9)
    whole = vision_eval.evaluate(rows, evaluators=stack, run={"batch_size": 300})
    assert heights == [150, 150, 300]
    volatile = ["run_id", "latency_s"]
    assert halved.results.drop(volatile).equals(whole.results.drop(volatile))
    assert halved.run_info["metrics"]["b"] == whole.run_info["metrics"]["b"]
    assert 0 < whole.run_info["metrics"]["b"]["ap50"] < 1
