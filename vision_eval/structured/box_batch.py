"""``bbox_iou`` over a whole batch: plain lists of boxes read by DuckDB (:data:`PLAIN`), IoU / matching / COCO flags
with padded numpy arrays.

Rows this path cannot take (other JSON shapes, aliases, repeated keys, malformed boxes, missing image sizes) are
returned for the row-wise path in :mod:`vision_eval.evaluators.bbox_iou`, which also produces their error messages.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import polars as pl

from vision_eval import duck
from vision_eval.structured import boxes as bx

BOX_TYPE = '[{"label": "VARCHAR", "box": ["DOUBLE"], "score": "DOUBLE"}]'
"""What DuckDB's ``json_transform`` reads a list of boxes into."""
CHUNK = 4096
UNIT_BOX = np.array([0.0, 0.0, 1.0, 1.0])


@dataclass
class BoxOptions:
    """What the batch path needs from the settings."""

    output_format: bx.BoxFormat
    expected_format: bx.BoxFormat
    scale_output: bool
    scale_expected: bool
    iou_threshold: float
    label_aware: bool


def _plain_pattern() -> str:
    """A JSON list of box objects whose every member is ``label`` (a string without escapes, or null), ``box``
    (4 numbers) or ``score`` (a number or null), each at most once, in any order. Such a text means the same to every
    JSON reader; anything else (other keys or aliases, repeated keys, escapes, booleans, wrappers) is left to the
    row-wise path, which also explains what is wrong."""
    ws = r"[ \t\n\r]*"
    num = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"
    members = {
        "label": rf'"label"{ws}:{ws}(?:"[^"\\\x00-\x1f]*"|null)',
        "box": rf'"box"{ws}:{ws}\[{ws}{num}(?:{ws},{ws}{num}){{3}}{ws}\]',
        "score": rf'"score"{ws}:{ws}(?:{num}|null)',
    }
    orders = [
        order
        for size in (1, 2, 3)
        for keys in itertools.combinations(members, size)
        if "box" in keys
        for order in itertools.permutations(keys)
    ]
    sep = f"{ws},{ws}"
    item = "(?:" + "|".join(r"\{" + ws + sep.join(members[k] for k in order) + ws + r"\}" for order in orders) + ")"
    return rf"^{ws}\[{ws}(?:{item}(?:{sep}{item})*)?{ws}\]{ws}$"


PLAIN = _plain_pattern()


def _long(texts: pl.Series, fmt: bx.BoxFormat, sizes: np.ndarray | None) -> tuple[pl.DataFrame, np.ndarray, np.ndarray]:
    """For the rows whose text is :data:`PLAIN`: one row per box (``row, pos, label, score, ok``) and its xyxy
    coordinates, read by DuckDB; and the mask of those rows."""
    plain = texts.str.contains(PLAIN).fill_null(False)
    table = pl.DataFrame({"row": np.arange(texts.len(), dtype=np.int64), "t": texts}).filter(plain)
    query = (
        "SELECT row, pos, b.label AS label, b.score AS score, b.box[1] AS c0, b.box[2] AS c1, b.box[3] AS c2, "
        "b.box[4] AS c3 FROM (SELECT row, unnest(items) AS b, unnest(range(len(items))) AS pos FROM "
        f"(SELECT row, json_transform(t, '{BOX_TYPE}') AS items FROM texts)) ORDER BY row, pos"
    )
    with duck.cursor() as con:
        con.register("texts", table.to_arrow(compat_level=pl.CompatLevel.newest()))
        frame = con.sql(query).pl()
    arr = bx.to_xyxy(frame.select("c0", "c1", "c2", "c3").to_numpy().astype(float).reshape(-1, 4), fmt)
    if sizes is not None:
        arr = arr * sizes[frame["row"].to_numpy()]
    ok = np.isfinite(arr).all(axis=1) & (arr[:, 2] >= arr[:, 0]) & (arr[:, 3] >= arr[:, 1])
    return frame.select("row", "pos", "label", "score").with_columns(pl.Series("ok", ok)), arr, plain.to_numpy()


def evaluate_batch(outputs: pl.Series, expected: pl.Series, opts: BoxOptions, sizes: np.ndarray | None) -> BatchResult:
    """Metrics, details and AP inputs for the rows decided here (see :data:`PLAIN`); the others are returned as
    ``fallback`` for the row-wise path."""
    n = outputs.len()
    pred, parr, p_plain = _long(outputs.cast(pl.Utf8), opts.output_format, sizes if opts.scale_output else None)
    gt, garr, g_plain = _long(expected.cast(pl.Utf8), opts.expected_format, sizes if opts.scale_expected else None)
    bad = ~(p_plain & g_plain)
    if sizes is not None and (opts.scale_output or opts.scale_expected):
        bad |= ~np.isfinite(sizes).all(axis=1) | (sizes <= 0).any(axis=1)
    for frame in (pred, gt):
        bad[frame.filter(~pl.col("ok"))["row"].to_numpy()] = True
    keep = np.nonzero(~bad)[0]
    n_p = np.bincount(pred["row"].to_numpy(), minlength=n)
    n_g = np.bincount(gt["row"].to_numpy(), minlength=n)
    unlabeled = np.zeros(n, dtype=bool)
    for frame in (pred, gt):
        unlabeled[frame.filter(pl.col("label").is_null())["row"].to_numpy()] = True
    aware = ~unlabeled if opts.label_aware else np.zeros(n, dtype=bool)
    names = pl.concat([pred["label"], gt["label"]]).drop_nulls().unique().sort().to_list()
    code = {name: i for i, name in enumerate(names)}
    p_code = pred["label"].replace_strict(code, default=-1, return_dtype=pl.Int64).to_numpy()
    g_code = gt["label"].replace_strict(code, default=-1, return_dtype=pl.Int64).to_numpy()
    p_score = pred["score"].fill_null(1.0).to_numpy()

    tp = np.zeros(n)
    iou_sum = np.zeros(n)
    p_bits = np.zeros(pred.height, dtype=np.int64)
    p_rows, p_pos, g_rows, g_pos = (f[c].to_numpy() for f in (pred, gt) for c in ("row", "pos"))
    p_order, g_order = np.argsort(p_rows, kind="stable"), np.argsort(g_rows, kind="stable")
    p_start = np.concatenate([[0], np.cumsum(n_p)])
    g_start = np.concatenate([[0], np.cumsum(n_g)])

    def match_chunk(rows: np.ndarray) -> None:
        """IoU, matching and COCO flags of some rows (writes their entries of ``tp``, ``iou_sum``, ``p_bits``)."""
        mp, mg = int(n_p[rows].max(initial=0)), int(n_g[rows].max(initial=0))
        if mp == 0 or mg == 0:
            return
        local = np.full(n, -1)
        local[rows] = np.arange(rows.size)
        sel_p = np.concatenate([p_order[p_start[r] : p_start[r + 1]] for r in rows])
        sel_g = np.concatenate([g_order[g_start[r] : g_start[r + 1]] for r in rows])
        # Padding is a unit box (masked out below): zero-area padding would take IoU's slow degenerate branch.
        P = np.broadcast_to(UNIT_BOX, (rows.size, mp, 4)).copy()
        G = np.broadcast_to(UNIT_BOX, (rows.size, mg, 4)).copy()
        vp = np.zeros((rows.size, mp), dtype=bool)
        vg = np.zeros((rows.size, mg), dtype=bool)
        lp = np.full((rows.size, mp), -2)
        lg = np.full((rows.size, mg), -3)
        sp = np.zeros((rows.size, mp))
        rp, rg = local[p_rows[sel_p]], local[g_rows[sel_g]]
        P[rp, p_pos[sel_p]], vp[rp, p_pos[sel_p]] = parr[sel_p], True
        G[rg, g_pos[sel_g]], vg[rg, g_pos[sel_g]] = garr[sel_g], True
        lp[rp, p_pos[sel_p]], lg[rg, g_pos[sel_g]] = p_code[sel_p], g_code[sel_g]
        sp[rp, p_pos[sel_p]] = p_score[sel_p]
        iou = bx.iou_matrix(P, G)
        same = ~aware[rows][:, None, None] | (lp[:, :, None] == lg[:, None, :])
        iou = np.where(vp[:, :, None] & vg[:, None, :] & same, iou, 0.0)
        cand = iou >= opts.iou_threshold
        conflict = (cand.sum(axis=2) > 1).any(axis=1) | (cand.sum(axis=1) > 1).any(axis=1)
        tp[rows] = cand.sum(axis=(1, 2))
        iou_sum[rows] = np.where(cand, iou, 0.0).sum(axis=(1, 2))
        for k in np.nonzero(conflict)[0]:
            r = rows[k]
            match = bx.hungarian(iou[k, : n_p[r], : n_g[r]], opts.iou_threshold)
            tp[r], iou_sum[r] = match.tp, sum(match.ious)
        packed = bx.bits(bx.coco_tp_batch(iou, sp, vp))
        p_bits[sel_p] = packed[rp, p_pos[sel_p]]

    # Rows in chunks of similar box counts, so the padded arrays are mostly real boxes (each chunk writes only its
    # own rows). Threads are the engine's: bbox_iou is splittable, a large batch comes as two halves on two threads.
    by_size = keep[np.lexsort((n_g[keep], n_p[keep]))]
    for lo in range(0, by_size.size, CHUNK):
        match_chunk(by_size[lo : lo + CHUNK])

    kp, kg = n_p[keep].astype(float), n_g[keep].astype(float)
    t = tp[keep]
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(kp > 0, t / np.maximum(kp, 1), np.where(kg == 0, 1.0, 0.0))
        recall = np.where(kg > 0, t / np.maximum(kg, 1), np.where(kp == 0, 1.0, 0.0))
        f1 = np.where(precision + recall > 0, 2 * precision * recall / (precision + recall), 0.0)
        mean_iou = np.where(t > 0, iou_sum[keep] / np.maximum(t, 1), np.where((kp == 0) & (kg == 0), 1.0, 0.0))
    aware_label = pl.when(pl.col("aware")).then(pl.col("label"))
    pred = pred.with_columns(pl.Series("aware", aware[pred["row"].to_numpy()]))
    gt = gt.with_columns(pl.Series("aware", aware[gt["row"].to_numpy()]))
    dets = (
        pred.with_columns(pl.Series("s", p_score), pl.Series("b", p_bits))
        .filter(pl.col("row").is_in(keep))
        .select("row", pl.struct(pl.col("s"), aware_label.alias("l"), pl.col("b")).alias("d"))
        .group_by("row", maintain_order=True)
        .agg(pl.col("d").alias("ap_dets"))
    )
    gts = (
        gt.filter(pl.col("row").is_in(keep))
        .select("row", aware_label.alias("l"))
        .group_by("row", "l", maintain_order=True)
        .len("n")
        .group_by("row", maintain_order=True)
        .agg(pl.struct("l", "n").alias("ap_gt"))
    )
    metrics = pl.DataFrame(
        {
            "row": keep,
            "precision": precision,
            "recall": recall,
            "f1": f1,
            "mean_iou": mean_iou,
            "tp": t.astype(np.int64),
            "fp": (kp - t).astype(np.int64),
            "fn": (kg - t).astype(np.int64),
        }
    )
    metrics = metrics.join(dets, on="row", how="left").join(gts, on="row", how="left").sort("row")
    rounded = [pl.col(c).round(6) for c in ("precision", "recall", "f1", "mean_iou")]
    details = pl.struct(*rounded, "tp", "fp", "fn", "ap_dets", "ap_gt").struct.json_encode()
    out = metrics.select("row", "precision", "recall", "f1", "mean_iou", details.alias("details"))
    ap_dets = dets.explode("ap_dets").drop_nulls().unnest("ap_dets")
    ap_gts = gts.explode("ap_gt").drop_nulls().unnest("ap_gt")
    return BatchResult(out, np.nonzero(bad)[0], ap_dets, ap_gts)


@dataclass
class BatchResult:
    """What the batch path decided: per-row ``frame`` (row, metrics, details), the row positions left for the
    row-wise path, and the AP inputs of the decided rows (``dets``: row, s, l, b; ``gts``: row, l, n)."""

    frame: pl.DataFrame
    fallback: np.ndarray
    dets: pl.DataFrame
    gts: pl.DataFrame


AP_DTYPE = pl.Struct(
    {
        "ap_dets": pl.List(pl.Struct({"s": pl.Float64, "l": pl.Utf8, "b": pl.Int64})),
        "ap_gt": pl.List(pl.Struct({"l": pl.Utf8, "n": pl.Int64})),
    }
)


def ap_inputs(details: pl.Series, sample_ids: pl.Series) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``(dets, gts)`` frames (sample_id, s, l, b) and (l, n) from the ``details`` JSON of processed rows (both paths
    write them)."""
    decoded = pl.DataFrame({"sample_id": sample_ids, "d": details.str.json_decode(AP_DTYPE)}).unnest("d")
    dets = decoded.select("sample_id", "ap_dets").explode("ap_dets").drop_nulls("ap_dets").unnest("ap_dets")
    gts = decoded.select(pl.col("ap_gt").explode()).drop_nulls().unnest("ap_gt")
    return dets, gts


def dataset_ap(details: pl.Series, sample_ids: pl.Series) -> dict[str, float]:
    """AP50 and AP@[.5:.95] from the ``details`` of processed rows (``sample_ids`` break score ties)."""
    return ap_from_frames(*ap_inputs(details, sample_ids))


def ap_from_frames(dets: pl.DataFrame, gts: pl.DataFrame) -> dict[str, float]:
    """AP50 and AP@[.5:.95] from detections (s, l, b[, sample_id]) and ground-truth counts (l, n). Equal scores
    keep sample order (COCO keeps image order), so the answer does not depend on batch order."""
    if "sample_id" in dets.columns:  # sample ids as the ranks of their sorted values: sorting strings is slower
        rank = dets["sample_id"].cast(pl.Enum(dets["sample_id"].unique().sort())).to_physical().alias("_rank")
        dets = dets.with_columns(rank).sort(["s", "_rank"], descending=[True, False], maintain_order=True)
    counts = gts.group_by("l").agg(pl.col("n").sum())
    gt = dict(zip(counts["l"].to_list(), counts["n"].to_list()))
    per_class = {
        key[0]: (part["s"].to_numpy(), part["b"].to_numpy())
        for key, part in dets.partition_by("l", as_dict=True, include_key=False).items()
    }
    return bx.ap_from_classes(per_class, gt)
