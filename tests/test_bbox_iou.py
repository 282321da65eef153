"""bbox_iou: formats, IoU edge cases, Hungarian matching, P/R/F1, COCO AP, the process pool; and the code-judge
example script."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import child_env

import vision_eval
from vision_eval.evaluators.boxes import geometry as bx
from vision_eval.evaluators.boxes.bbox_iou import RowOptions, score_row

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
    assert bx.to_xyxy((0.0, 0, 10, 10), "xywh") == (0, 0, 10, 10)
    assert bx.to_xyxy((5.0, 5, 10, 10), "cxcywh") == (0, 0, 10, 10)
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


def test_ap_interpolates_precision_where_it_rises_again() -> None:
    """Detections by descending score: FP (0.9), TP (0.8), TP (0.7), over 2 ground truths. Precision after each is
    0, 1/2, 2/3 at recall 0, 1/2, 1. COCO reads precision at 101 recall points as the best precision at that recall or
    beyond (the running maximum from the end): 2/3 everywhere, AP = 2/3 = 0.6667. Without that maximum the points
    would read 0 (recall 0), 1/2 (50 points up to 0.5) and 2/3 (50 points up to 1): (25 + 100/3) / 101 = 0.5776."""
    rows = [
        {
            "output": [
                {"box": [50, 50, 60, 60], "score": 0.9},
                {"box": [0, 0, 10, 10], "score": 0.8},
                {"box": [20, 20, 30, 30], "score": 0.7},
            ],
            "expected_output": [[0, 0, 10, 10], [20, 20, 30, 30]],
        }
    ]
    metrics = run(rows).run_info["metrics"]["b"]
    assert metrics["ap50"] == pytest.approx(2 / 3, abs=1e-6)
    assert metrics["ap50_95"] == pytest.approx(2 / 3, abs=1e-6)
    assert abs(metrics["ap50"] - (25 + 100 / 3) / 101) > 0.08  # what AP without the running maximum would be


def test_ap_by_threshold() -> None:
    # IoU 0.68: a true positive at 0.50..0.65 (4 of 10 COCO thresholds).
    rows = [{"output": [[20, 20, 30, 30]], "expected_output": [[21, 21, 31, 31]]}]
    metrics = run(rows).run_info["metrics"]["b"]
    assert metrics["ap50"] == 1.0 and metrics["ap50_95"] == pytest.approx(0.4)


def _judge(row: dict[str, Any]) -> dict[str, Any]:
    script = ROOT / "evaluators/code-validators/fuzzy_fields_judge.py"
    env = child_env()
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


def test_a_batch_gives_each_row_the_row_functions_verdict_and_its_ap_inputs() -> None:
    """evaluate() is the row function on every row; its AP inputs are those in the rows' details, and dataset AP from
    them, from the details, and from the rows in another order (equal scores) is the same."""
    import polars as pl

    from vision_eval.evaluators.boxes.bbox_iou import BboxIou, BboxIouSettings, ap_from_frames, ap_inputs

    rows = random_rows(300)
    frame = vision_eval.evaluate(rows, evaluators={"b": {"type": "bbox_iou"}})
    evaluator = BboxIou("b", BboxIouSettings())
    batch = pl.DataFrame(rows)
    output = evaluator.evaluate(batch)
    results = output.results
    function = evaluator.row_function()
    verdicts = [function(o, e) for o, e in zip(batch["output"], batch["expected_output"])]
    assert results["sample_id"].to_list() == batch["id"].to_list()
    assert results["status"].to_list() == ["processed"] * 300
    assert results["score"].to_list() == [v.score for v in verdicts]
    assert results["details"].to_list() == [v.details for v in verdicts]
    assert sum(json.loads(d)["tp"] for d in results["details"]) > 300  # boxes were matched
    from_details = ap_from_frames(*ap_inputs(results["details"], results["sample_id"]))
    inputs = {name: table.lazy() for name, table in output.metric_inputs.items()}
    kept = evaluator.summarize_from(results, inputs)  # from the AP inputs evaluate() returned
    assert {k: kept[k] for k in from_details} == {k: round(v, 6) for k, v in from_details.items()}
    assert evaluator.summarize(results) == kept  # without them, from the details
    shuffled = results.sample(fraction=1.0, shuffle=True, seed=4)  # scores tie: order must not matter
    assert ap_from_frames(*ap_inputs(shuffled["details"], shuffled["sample_id"])) == from_details
    assert frame.run_info["metrics"]["b"]["rows"] == 300
    assert frame.run_info["metrics"]["b"]["ap50"] == kept["ap50"]


def test_the_process_pool_gives_what_the_run_process_gives() -> None:
    """A batch large enough for the pool (here: from one row) gets the verdicts scoring in this process gives."""
    import polars as pl

    from vision_eval.evaluators.boxes.bbox_iou import BboxIou, BboxIouSettings
    from vision_eval.rowwise import score_rows

    rows = [*random_rows(400), {"id": "bad", "output": "[[0, 0, 5]]", "expected_output": "[]"}]
    batch = pl.DataFrame(rows)
    for settings in (BboxIouSettings(), BboxIouSettings(output_normalized=True, label_aware=False)):
        evaluator = BboxIou("b", settings)
        sized = batch.with_columns(width=pl.lit(640), height=pl.lit(480))
        inputs, function = evaluator.row_inputs(sized), evaluator.row_function()
        alone = score_rows(sized["id"], inputs, function, workers=1)
        pooled = score_rows(sized["id"], inputs, function, workers=2, pool_min_rows=1)
        assert pooled.results.equals(alone.results)
        assert alone.results["status"].to_list() == ["processed"] * 400 + ["error"]


def _greedy_reference(iou: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """COCO's greedy matching written plainly over a dense IoU matrix: ``(n_pred, 10)`` true-positive flags."""
    t = bx.COCO_THRESHOLDS
    n, m = iou.shape
    tp = np.zeros((n, len(t)), dtype=bool)
    if n == 0 or m == 0:
        return tp
    matched = np.zeros((len(t), m), dtype=bool)
    for p in np.argsort(-scores, kind="stable"):
        ok = (iou[p][None, :] >= t[:, None]) & ~matched
        masked = np.where(ok, iou[p][None, :], -1.0)
        j = masked.argmax(axis=1)
        hit = masked[np.arange(len(t)), j] >= 0
        matched[np.nonzero(hit)[0], j[hit]] = True
        tp[p] = hit
    return tp


def test_coco_hits_and_matching_agree_with_dense_references() -> None:
    """Rows without contention take the shortcuts (flags from each prediction's IoU, every pair matched), the others
    the greedy loop and the solver: both give the dense greedy reference's flags and scipy's matching on the dense
    weights; and the overlaps are the dense IoU matrix's entries at or above the floor, to the bit."""
    from scipy.optimize import linear_sum_assignment

    rng = np.random.default_rng(11)
    contested = 0
    for _ in range(1500):
        n_pred, n_gt = int(rng.integers(0, 8)), int(rng.integers(0, 8))
        xy = rng.uniform(0, 100, size=(n_gt, 2))
        gt = np.concatenate([xy, xy + rng.uniform(5, 40, size=(n_gt, 2))], axis=1) if n_gt else np.zeros((0, 4))
        pick = rng.integers(0, max(n_gt, 1), size=n_pred)
        noise = rng.normal(0, rng.choice([1.0, 5.0, 15.0]), size=(n_pred, 4))
        pred = (gt[pick] if n_gt else rng.uniform(0, 100, size=(n_pred, 4))) + noise
        pred[:, 2:] = np.maximum(pred[:, 2:], pred[:, :2])
        scores = np.round(rng.random(n_pred), 1)  # ties too
        threshold = float(rng.choice([0.1, 0.5, 0.75]))
        dense = bx.iou_matrix(pred, gt)
        floor = min(threshold, 0.5)
        boxes = [tuple(b) for b in pred.tolist()], [tuple(b) for b in gt.tolist()]
        found = bx.overlaps(*boxes, floor, None, None)
        assert [[(j, v) for j, v in enumerate(row) if v >= floor] for row in dense.tolist()] == found
        labels = rng.choice(["a", "b"], size=n_pred).tolist(), rng.choice(["a", "b"], size=n_gt).tolist()
        same = np.array(labels[0], dtype=object)[:, None] == np.array(labels[1], dtype=object)[None, :]
        by_label = [
            [(j, v) for j, (v, ok) in enumerate(zip(row, oks)) if v >= floor and ok]
            for row, oks in zip(dense.tolist(), same.reshape(n_pred, n_gt).tolist())
        ]
        assert bx.overlaps(*boxes, floor, *labels) == by_label
        hits = bx.coco_hits(found, scores.tolist(), floor)
        flags = _greedy_reference(dense, scores)
        assert hits == [int(sum(1 << t for t in np.nonzero(f)[0])) for f in flags]
        assert bx.coco_hits(found, scores.tolist()) == hits  # (not told the floor: filters the pairs itself)
        match = bx.match(found, n_gt, threshold)
        weight = np.where(dense >= threshold, 1.0 + dense, 0.0)
        if n_pred and n_gt:
            r, c = linear_sum_assignment(weight, maximize=True)
            keep = dense[r, c] >= threshold
            assert match.pairs == list(zip(r[keep].tolist(), c[keep].tolist()))
            assert match.ious == dense[r[keep], c[keep]].tolist()
        cand = dense >= 0.5
        contested += int((cand.sum(axis=1) > 1).any() or (cand.sum(axis=0) > 1).any())
    assert contested > 100  # the greedy path was exercised


def test_python_iou_is_numpys_to_the_bit() -> None:
    """Rows of few boxes take Python's IoU (skipping pairs apart), rows of many numpy's matrix: both give the matrix's
    values on ordinary, touching, zero-area, identical, reversed and infinite boxes."""
    rng = np.random.default_rng(5)
    values = [0.0, 1.0, 1e-300, 5.0, np.inf, -np.inf, 1e308, *rng.uniform(-10, 10, 12).round(1).tolist()]
    for size in (12, 30):  # 144 pairs: Python; 900: numpy
        for _ in range(30):
            a, b = rng.choice(values, size=(size, 4)), rng.choice(values, size=(size, 4))
            a[: size // 2, 2:] = np.maximum(a[: size // 2, 2:], a[: size // 2, :2])
            b[: size // 3] = a[: size // 3]
            with np.errstate(all="ignore"):
                dense = bx.iou_matrix(a, b)
                found = bx.overlaps([tuple(x) for x in a.tolist()], [tuple(x) for x in b.tolist()], 1e-12, None, None)
                scalar = [bx.box_iou(tuple(x), tuple(y)) for x, y in zip(a.tolist(), b.tolist())]
            assert found == [[(j, v) for j, v in enumerate(row) if v >= 1e-12] for row in dense.tolist()]
            assert scalar == np.diagonal(dense).tolist()


def test_mean_iou_is_numpys_mean_to_the_bit() -> None:
    rng = np.random.default_rng(6)
    for n in range(1, 150):
        for _ in range(30):
            values = rng.random(n).tolist()
            assert bx.mean(values) == float(np.mean(values))


def test_nested_values_are_read_like_their_json_text() -> None:
    """A column of lists (boxes as lists, or objects) is scored row by row like the same boxes as JSON text."""
    import polars as pl

    from vision_eval.evaluators.boxes.bbox_iou import BboxIou, BboxIouSettings

    outputs = [[[0.0, 0, 10, 10]], [], [[0.0, 0, 5, 5], [1.0, 1, 2, 2]], [[0.0, 0, 10, 10]]]
    expected = ["[[0, 0, 10, 10]]", "[[0, 0, 1, 1]]", "[]", "[[0, 0, 10, 10]]"]
    nested = pl.DataFrame({"id": ["a", "b", "c", "d"], "output": outputs, "expected_output": expected})
    texts = nested.with_columns(pl.Series("output", [json.dumps(o) for o in outputs]))
    evaluator = BboxIou("b", BboxIouSettings())
    got, want = evaluator.evaluate(nested).results, evaluator.evaluate(texts).results
    assert got["score"].to_list() == want["score"].to_list() == [1.0, 0.0, 0.0, 1.0]
    assert got["details"].to_list() == want["details"].to_list()


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


def test_plain_rows_keep_the_details_encoding_of_the_earlier_batch_reader() -> None:
    """Plain lists of box objects (any key order, optional label/score, nulls, exponents, spacing) on both sides get
    the compact details the earlier batch reader wrote; every other shape the spaced ones of the earlier row-wise
    path. Both say the same."""
    import polars as pl

    from vision_eval.evaluators.boxes.bbox_iou import BboxIou, BboxIouSettings

    expected = '[{"label": "a", "box": [0, 0, 10, 10]}, {"label": "b", "box": [20, 20, 30, 30]}]'
    plain = [
        '[{"box": [0, 0, 10, 10], "label": "a"}, {"score": 0.5, "label": "b", "box": [20, 20, 30, 30]}]',
        '[ {"label": null, "box": [0.0, -0.0, 1e1, 1E+1], "score": null} ]',
        '[\n  {\n    "label": "b",\n    "box": [20, 20, 31, 30]\n  }\n]',
        "[]",
    ]
    assert [bx.parse_boxes(t).plain for t in plain] == [True] * len(plain)
    parsed = 0
    for text in ODD_OUTPUTS:
        try:
            assert not bx.parse_boxes(text).plain, text
            parsed += 1
        except ValueError:  # malformed (a row error)
            continue
    assert parsed == 10
    assert not bx.parse_boxes('[{"box": [0, 0, 1, 1], "score": NaN}]').plain  # not JSON
    assert bx.parse_boxes('[{"box": [0, 0, 1, 1], "score": 1e400}]').plain  # JSON, beyond floats

    texts = plain + ODD_OUTPUTS
    rows = [{"id": str(i), "output": t, "expected_output": expected} for i, t in enumerate(texts)]
    results = BboxIou("b", BboxIouSettings()).evaluate(pl.DataFrame(rows)).results
    details = results["details"].to_list()
    assert [d.startswith('{"precision":') for d in details[: len(plain)]] == [True] * len(plain)
    assert details[3].endswith('"ap_dets":null,"ap_gt":[{"l":"a","n":1},{"l":"b","n":1}]}')
    statuses = dict(zip(results["sample_id"].to_list(), results["status"].to_list()))
    assert statuses[str(len(plain))] == "error"  # the boolean coordinate
    repeated = json.loads(details[len(plain) + 2])
    assert details[len(plain) + 2].startswith('{"precision": ')
    assert repeated["tp"] == 1  # labelled "a" (the last label), so it matches the expected "a" box
    for text, encoded in zip(plain, details):
        compact = json.loads(encoded)
        assert {k: [] if v is None else v for k, v in compact.items()} == json.loads(_spaced(text, expected)), text


def test_plain_details_write_floats_as_polars_json_does() -> None:
    """The earlier batch reader's details were Polars' JSON: its float notation differs from Python's below 1e-4."""
    import polars as pl

    from vision_eval.evaluators.boxes.bbox_iou import _polars_float

    values = [0.1, 1e-7, 2.5e-6, 1.234e-05, 5e-05, -1e-06, 0.0001, 1e15, 1e16, 1e22, 123456789.123, 5e-324, -0.0]
    encoded = pl.DataFrame({"s": values}).select(pl.struct("s").struct.json_encode()).to_series().to_list()
    assert [f'{{"s":{_polars_float(v)}}}' for v in values] == encoded


def _spaced(output: str, expected: str) -> str:
    """The details of a row whose output is not plain (a wrapping object makes it so)."""
    from vision_eval.evaluators.boxes.bbox_iou import BboxIou, BboxIouSettings

    verdict = BboxIou("b", BboxIouSettings()).row_function()('{"boxes": ' + output + "}", expected)
    assert verdict.details is not None and verdict.details.startswith('{"precision": ')
    return verdict.details


def test_average_precision_of_all_thresholds_at_once() -> None:
    rng = np.random.default_rng(2)
    for _ in range(50):
        n = int(rng.integers(0, 40))
        scores, flags = np.round(rng.random(n), 1), rng.random((10, n)) > 0.5
        n_gt = int(rng.integers(1, 50))
        each = [bx.average_precision(scores, flags[t], n_gt) for t in range(10)]
        assert bx.average_precision(scores, flags, n_gt).tolist() == each


def test_rows_and_ap_do_not_depend_on_how_the_rows_are_batched() -> None:
    """AP is computed from every batch's saved inputs: three batches give the rows and dataset metrics of one."""
    rows = random_rows(300)
    stack = {"b": {"type": "bbox_iou"}}
    split = vision_eval.evaluate(rows, evaluators=stack, run={"batch_size": 100})
    whole = vision_eval.evaluate(rows, evaluators=stack, run={"batch_size": 300})
    volatile = ["run_id", "latency_s"]
    assert split.results.drop(volatile).equals(whole.results.drop(volatile))
    assert split.run_info["metrics"]["b"] == whole.run_info["metrics"]["b"]


def pycocotools_ap(rows: list[dict[str, Any]]) -> tuple[float, float]:
    """AP50 and AP@[.5:.95] of ``rows`` (xyxy boxes with labels; scores on the predictions) by pycocotools."""
    import contextlib
    import io

    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    labels = sorted({b["label"] for r in rows for b in [*r["output"], *r["expected_output"]]})
    category = {label: i + 1 for i, label in enumerate(labels)}

    def xywh(box: list[float]) -> list[float]:
        return [box[0], box[1], box[2] - box[0], box[3] - box[1]]

    annotations, detections = [], []
    for image, row in enumerate(rows):
        for b in row["expected_output"]:
            w, h = xywh(b["box"])[2:]
            annotations.append({"id": len(annotations) + 1, "image_id": image, "category_id": category[b["label"]],
                                "bbox": xywh(b["box"]), "area": w * h, "iscrowd": 0})  # fmt: skip
        detections += [{"image_id": image, "category_id": category[b["label"]], "bbox": xywh(b["box"]),
                        "score": b["score"]} for b in row["output"]]  # fmt: skip
    with contextlib.redirect_stdout(io.StringIO()):
        truth = COCO()
        truth.dataset = {"images": [{"id": i} for i in range(len(rows))], "annotations": annotations,
                         "categories": [{"id": c, "name": n} for n, c in category.items()]}  # fmt: skip
        truth.createIndex()
        found = truth.loadRes(detections)
        evaluation = COCOeval(truth, found, iouType="bbox")
        evaluation.evaluate()
        evaluation.accumulate()
        evaluation.summarize()
    return float(evaluation.stats[1]), float(evaluation.stats[0])


def _box(label: str, box: list[float], score: float | None = None) -> dict[str, Any]:
    return {"label": label, "box": box} if score is None else {"label": label, "box": box, "score": score}


def _tied(k: int) -> dict[str, Any]:
    """Detection ``k`` of the tied-scores case: a false positive every third, else its ground truth shifted 0-2 px."""
    score = 0.9 if k in (0, 2, 3, 5, 8, 9, 11, 12, 14, 15, 18, 21) else 0.5
    if k % 3 == 0:
        return _box("t", [500 + 20 * k, 0, 510 + 20 * k, 10], score)
    x = 20 * (k // 2) + k % 3
    return _box("t", [x, 0, x + 10, 10], score)


COCO_CASES = {
    # FP first, then two TPs: precision rises again (the running maximum matters).
    "precision_rises": [
        {
            "output": [
                _box("a", [50, 50, 60, 60], 0.9),
                _box("a", [0, 0, 10, 10], 0.8),
                _box("a", [20, 20, 30, 30], 0.7),
            ],
            "expected_output": [_box("a", [0, 0, 10, 10]), _box("a", [20, 20, 30, 30])],
        },
    ],
    # Partial overlaps (IoU 0.82, 0.64, 0.53, so true positives at some thresholds only), two classes, a missed
    # ground truth, a false positive on an image without ground truth, a wrong label.
    "two_classes_partial": [
        {
            "output": [
                _box("cat", [1, 0, 11, 10], 0.95),
                _box("dog", [20, 20, 32, 30], 0.6),
                _box("cat", [40, 40, 50, 50], 0.5),
            ],
            "expected_output": [
                _box("cat", [0, 0, 10, 10]),
                _box("dog", [21, 20, 31, 30]),
                _box("dog", [70, 70, 80, 80]),
            ],
        },
        {
            "output": [
                _box("cat", [0, 0, 13, 10], 0.85),
                _box("dog", [5, 5, 15, 15], 0.75),
                _box("dog", [60, 0, 70, 6], 0.4),
            ],
            "expected_output": [_box("cat", [0, 0, 10, 10]), _box("dog", [60, 0, 70, 10])],
        },
        {"output": [_box("cat", [30, 30, 40, 40], 0.9)], "expected_output": []},
    ],
    # Contention: one prediction overlaps two ground truths; the higher-scored takes the better one first.
    "contention": [
        {
            "output": [_box("p", [0, 0, 10, 10], 0.9), _box("p", [2, 0, 12, 10], 0.8), _box("p", [5, 0, 15, 10], 0.3)],
            "expected_output": [_box("p", [1, 0, 11, 10]), _box("p", [4, 0, 14, 10])],
        },
    ],
    # Many detections, scores interleaving true and false positives across three images.
    "interleaved": [
        {
            "output": [_box("x", [10 * i, 0, 10 * i + 9, 9], s) for i, s in enumerate([0.99, 0.42, 0.77, 0.31])],
            "expected_output": [_box("x", [0, 0, 9, 9]), _box("x", [21, 0, 30, 9])],
        },
        {
            "output": [_box("x", [0, 20, 8, 28], 0.88), _box("x", [40, 40, 48, 48], 0.93)],
            "expected_output": [_box("x", [0, 20, 9, 29]), _box("x", [80, 80, 90, 90])],
        },
        {"output": [_box("x", [0, 0, 5, 5], 0.55)], "expected_output": [_box("x", [0, 0, 5, 6])]},
    ],
    # Two score levels over 24 detections: the order of equal scores (input order, as COCO keeps it) decides AP.
    "tied_scores": [
        {
            "output": [_tied(k) for k in range(24)],
            "expected_output": [_box("t", [20 * i, 0, 20 * i + 10, 10]) for i in range(12)],
        }
    ],
}


@pytest.mark.parametrize("case", sorted(COCO_CASES))
def test_ap_matches_pycocotools(case: str) -> None:
    pytest.importorskip("pycocotools")
    rows = [dict(r) for r in COCO_CASES[case]]
    ap50, ap50_95 = pycocotools_ap(rows)
    metrics = run(rows).run_info["metrics"]["b"]
    assert 0 < ap50_95 < 1 and ap50_95 <= ap50  # cases where the detections are neither all right nor all wrong
    assert metrics["ap50"] == pytest.approx(ap50, abs=1e-6)  # run_info rounds to 6 decimals
    assert metrics["ap50_95"] == pytest.approx(ap50_95, abs=1e-6)


def test_row_errors_name_the_side_the_box_and_the_image_size() -> None:
    """A row error says which column's box is malformed and shows it; a detection's ``confidence`` is its score
    like ``score``; an image size that is not two numbers, and boxes nested deeper than Python reads, are errors
    of their own (each called the way the row function is, with parsed values)."""
    res = run(
        [
            {"output": "[]", "expected_output": "[[0, 0, 5]]"},
            {"output": '[{"label": "a"}]', "expected_output": "[]"},
            {
                "output": [{"box": [0, 0, 10, 10], "confidence": 0.25}, {"box": [20, 20, 30, 30], "score": 0.75}],
                "expected_output": [[0, 0, 10, 10]],
            },
        ]
    )
    assert res.results["error"].to_list()[:2] == [
        "malformed box at expected_output[0]: expected 4 numbers, got [0, 0, 5]",
        "malformed box at output[0]: no 'box' or 'bbox' key in {\"label\": \"a\"}",
    ]
    details = json.loads(res.results["details"][2])
    assert [d["s"] for d in details["ap_dets"]] == [0.25, 0.75]  # the hit at 0.25, the miss at 0.75
    assert res.run_info["metrics"]["b"]["ap50"] == pytest.approx(0.5)  # ranked behind the miss: precision 1/2

    opts = RowOptions("xyxy", "xyxy", "output", ("w", "h"), 0.5, True, "f1")
    sized = score_row(opts, [[0, 0, 0.5, 0.5]], [[0, 0, 50, 100]], [100, 100], [200, 200], False)
    assert (sized.status, sized.error) == ("error", "image size must be two numbers (w, h), got [100, 100], [200, 200]")
    deep: list[Any] = []
    for _ in range(100_000):
        deep = [deep]
    nested = score_row(RowOptions("xyxy", "xyxy", None, ("w", "h"), 0.5, True, "f1"), deep, "[]")
    assert (nested.status, nested.error, json.loads(nested.details or "{}")) == (
        "error",
        "boxes nested too deeply",
        {"raw": None},
    )


@pytest.mark.parametrize("bad", [[100, 100], [100]], ids=["two", "one"])
def test_an_image_size_that_is_a_list_is_that_rows_error_and_the_others_are_scored(tmp_path: Path, bad: Any) -> None:
    """When the sides' normalizations differ, a width or height column holding lists (in every row, or beside
    numbers in others) makes the rows with a list ``error`` rows naming the size; the other rows are scored, as
    they are in a batch without the bad row (their details too)."""
    good = {"output": [[0.0, 0.0, 0.5, 0.5]], "expected_output": [[0, 0, 50, 100]], "width": 100, "height": 200}
    alone = run([dict(good, id="good")], output_normalized=True).results
    for width_of_good in (100, [100]):  # a list column, or numbers mixed with lists (an Object column)
        rows = [
            dict(good, id="good", width=width_of_good),
            dict(good, id="bad", width=bad),
            dict(good, id="missing", width=None),
        ]
        path = tmp_path / "rows.jsonl"
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))
        results = vision_eval.evaluate(str(path), evaluators={"b": {"type": "bbox_iou", "output_normalized": True}})
        by = {r["sample_id"]: r for r in results.results.iter_rows(named=True)}
        assert (by["bad"]["status"], by["bad"]["error"]) == (
            "error",
            f"image size must be two numbers (width, height), got {bad!r}, 200",
        )
        assert (by["missing"]["status"], by["missing"]["error"]) == ("error", "width is missing")
        if width_of_good == 100:
            assert (by["good"]["status"], by["good"]["score"]) == ("processed", 1.0)
            assert by["good"]["details"] == alone["details"][0]
        else:
            assert by["good"]["error"] == "image size must be two numbers (width, height), got [100], 200"
