"""``bbox_iou``: detection boxes against expected boxes — Hungarian matching, P/R/F1, mean IoU, dataset AP.

One function scores a row (:func:`score_row`): it parses both sides, matches the boxes, and writes the row's metrics
with what dataset AP needs (each detection's score, label and true-positive bits at the ten COCO thresholds, and the
ground-truth boxes counted per label) into its details. ``evaluate`` reads the AP inputs back from those details;
``summarize_from`` computes AP over every batch's.
"""

from __future__ import annotations

import functools
import json
import math
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
import polars as pl
from pydantic import Field

from vision_eval.evaluator import EvalOutput, EvaluatorSettings
from vision_eval.evaluators.boxes import geometry as bx
from vision_eval.example import Example
from vision_eval.results import PROCESSED, RESULT_ROW_SCHEMA, conform, to_json
from vision_eval.rowwise import RowResult, RowRule, score_rows

AP_DETS, AP_GTS = "ap_dets", "ap_gts"
"""Names of the metric inputs dataset AP is computed from."""
AP_DETS_SCHEMA = {"sample_id": pl.Utf8, "s": pl.Float64, "l": pl.Utf8, "b": pl.Int64}
AP_GTS_SCHEMA = {"l": pl.Utf8, "n": pl.Int64}
AP_DTYPE = pl.Struct(
    {
        "ap_dets": pl.List(pl.Struct({"s": pl.Float64, "l": pl.Utf8, "b": pl.Int64})),
        "ap_gt": pl.List(pl.Struct({"l": pl.Utf8, "n": pl.Int64})),
    }
)
"""The AP inputs of a row's details."""
Metric = Literal["f1", "precision", "recall", "mean_iou"]


class BboxIouSettings(EvaluatorSettings):
    """Settings of ``bbox_iou``."""

    format: bx.BoxFormat = "xyxy"
    """Box format of both columns: ``xyxy``, ``xywh`` or ``cxcywh``."""
    output_format: bx.BoxFormat | None = None
    """Box format of ``output`` when it differs from ``format``."""
    normalized: bool = False
    """Coordinates of both columns are fractions of the image size (0..1) rather than pixels."""
    output_normalized: bool | None = None
    """``output`` normalization when it differs from ``normalized``; the rows then need ``width_column`` and
    ``height_column`` to bring both sides to pixels."""
    width_column: str = "width"
    """Column with the image width in pixels (only read when normalizations differ)."""
    height_column: str = "height"
    """Column with the image height in pixels (only read when normalizations differ)."""
    iou_threshold: float = Field(0.5, gt=0, le=1)
    """IoU at or above which a matched pair is a true positive."""
    label_aware: bool = True
    """Only boxes with the same label match, when both sides carry labels."""
    score: Metric = "f1"
    """Which per-row metric is the row score."""


@dataclass(frozen=True)
class RowOptions:
    """The settings :func:`score_row` needs (plain values: it is pickled to the process pool's workers)."""

    output_format: bx.BoxFormat
    """Box format of ``output``."""
    expected_format: bx.BoxFormat
    """Box format of ``expected_output``."""
    scaled: Literal["output", "expected_output"] | None
    """The side brought to pixels by the image size (the sides' normalizations differ), else ``None``."""
    size_columns: tuple[str, str]
    """The image width and height columns (named in the error when a row lacks them)."""
    iou_threshold: float
    """IoU at or above which a matched pair is a true positive."""
    label_aware: bool
    """Only boxes with the same label match, when both sides carry labels."""
    score: Metric
    """Which metric is the row score."""


def score_row(
    opts: RowOptions, output: Any, expected: Any, width: Any = None, height: Any = None, sized: bool = False
) -> RowResult:
    """The verdict on one row: P/R/F1 and mean IoU of the optimal matching, and the row's AP inputs, in ``details``.

    ``width``/``height`` are the row's image size and ``sized`` whether it reads as positive numbers (only used
    when the sides' normalizations differ). A row that cannot be scored is an ``error`` naming the reason."""
    try:
        pred = bx.parse_boxes(output, opts.output_format, "output")
        gt = bx.parse_boxes(expected, opts.expected_format, "expected_output")
        plain = pred.plain and gt.plain
        if opts.scaled is not None:
            w_col, h_col = opts.size_columns
            if not width or not height:
                raise ValueError(f"image size needed ({w_col}, {h_col}) to mix coordinate systems")
            not_sizes = f"image size must be two numbers ({w_col}, {h_col}), got {width!r}, {height!r}"
            try:
                scale = np.array([width, height, width, height], dtype=float)  # (numpy's reading of numbers and text)
            except (ValueError, TypeError):  # lists of different lengths, values numpy does not read as numbers
                raise ValueError(not_sizes) from None
            if scale.shape != (4,):
                raise ValueError(not_sizes)
            w, h = float(scale[0]), float(scale[1])
            side = pred if opts.scaled == "output" else gt
            side.boxes = [(a * w, b * h, c * w, d * h) for a, b, c, d in side.boxes]
            plain = plain and sized
        for i, score in enumerate(pred.scores):  # (ground-truth scores are not read)
            if score is not None and not -math.inf < score < math.inf:
                raise ValueError(f"malformed box at output[{i}]: score must be a finite number")
        if plain and (opts.scaled is not None or opts.output_format != "xyxy" or opts.expected_format != "xyxy"):
            plain = _finite(pred.boxes) and _finite(gt.boxes)  # (conversion or scaling may overflow)
        return _verdict(opts, pred, gt, plain)
    except ValueError as exc:  # including the matching solver's refusal of infinite weights
        return RowResult("error", details=to_json({"raw": str(output)[:2000]}), error=str(exc))
    except RecursionError:  # a value nested deeper than Python reads (handed over parsed, not as text)
        raw = output[:2000] if isinstance(output, str) else None  # (str() of such a value would recurse too)
        return RowResult("error", details=to_json({"raw": raw}), error="boxes nested too deeply")


def _finite(boxes: list[bx.Box]) -> bool:
    return all(-math.inf < c < math.inf for box in boxes for c in box)


def _verdict(opts: RowOptions, pred: bx.Boxes, gt: bx.Boxes, plain: bool) -> RowResult:
    aware = opts.label_aware and None not in pred.labels and None not in gt.labels
    floor = min(opts.iou_threshold, bx.LOWEST_THRESHOLD)  # the pairs matching or COCO's true positives look at
    found = bx.overlaps(pred.boxes, gt.boxes, floor, pred.labels if aware else None, gt.labels if aware else None)
    match = bx.match(found, len(gt), opts.iou_threshold)
    metrics = match.metrics()
    scores = [1.0 if s is None else s for s in pred.scores]
    hits = bx.coco_hits(found, scores, floor)
    dets = list(zip(scores, pred.labels if aware else [None] * len(pred), hits))
    truths = Counter(gt.labels if aware else [None] * len(gt))  # (in order of first appearance)
    counts = (match.tp, match.n_pred - match.tp, match.n_gt - match.tp)
    return RowResult("processed", metrics[opts.score], _details(metrics, counts, dets, truths, plain))


def _details(
    metrics: dict[str, float],
    counts: tuple[int, int, int],
    dets: list[tuple[float, str | None, int]],
    truths: Mapping[str | None, int],
    plain: bool,
) -> str:
    """The details JSON: metrics rounded to 6 decimals, TP/FP/FN, and the AP inputs (``ap_dets``: score, label
    when labels count, true-positive bits; ``ap_gt``: ground-truth boxes per label).

    A row whose both sides are plain lists of boxes (:attr:`.geometry.Boxes.plain`) is written
    the way the earlier batch reader (DuckDB and Polars) wrote it: compact, metrics rounded as ``round(x * 1e6) /
    1e6``, Polars' float notation, ``null`` for an empty list; any other as ``json.dumps`` writes the values."""
    tp, fp, fn = counts
    if plain:
        sep, colon, number, text, empty = ",", ":", _polars_float, _plain_text, "null"
        values = [round(v * 1e6) / 1e6 for v in metrics.values()]
    else:
        sep, colon, number, text, empty = ", ", ": ", _json_float, _json_text, "[]"
        values = [round(v, 6) for v in metrics.values()]
    head = sep.join(f'"{k}"{colon}{number(v)}' for k, v in zip(metrics, values))
    ap_dets = sep.join(
        f'{{"s"{colon}{number(s)}{sep}"l"{colon}{text(label)}{sep}"b"{colon}{b}}}' for s, label, b in dets
    )
    ap_gt = sep.join(f'{{"l"{colon}{text(label)}{sep}"n"{colon}{n}}}' for label, n in truths.items())
    return (
        f'{{{head}{sep}"tp"{colon}{tp}{sep}"fp"{colon}{fp}{sep}"fn"{colon}{fn}{sep}"ap_dets"{colon}'
        f'{f"[{ap_dets}]" if dets else empty}{sep}"ap_gt"{colon}{f"[{ap_gt}]" if truths else empty}}}'
    )


def _plain_text(label: str | None) -> str:
    return "null" if label is None else f'"{label}"'  # a plain text's labels hold nothing JSON escapes


@functools.lru_cache(maxsize=4096)
def _json_text(label: str | None) -> str:
    return json.dumps(label, ensure_ascii=False)


def _json_float(x: float) -> str:
    return repr(x) if -math.inf < x < math.inf else json.dumps(x)


def _polars_float(x: float) -> str:
    """A float as Polars writes it in JSON: Python's shortest form, except below 1e-4: 1e-5 to 1e-4 as decimals
    (``0.00001234``), smaller ones with an unpadded exponent (``1.5e-7``)."""
    text = repr(x)
    if "e-" not in text:
        return text
    mantissa, exponent = text.split("e-")
    if exponent != "05":
        return f"{mantissa}e-{int(exponent)}"
    sign, digits = ("-", mantissa[1:]) if mantissa.startswith("-") else ("", mantissa)
    return f"{sign}0.0000{digits.replace('.', '')}"


class BboxIou(RowRule[BboxIouSettings]):
    """Per-row detection quality of ``output`` boxes against ``expected_output`` boxes."""

    type_name: ClassVar[str] = "bbox_iou"
    example: ClassVar[Example] = Example(
        {"type": "bbox_iou", "format": "xyxy"},
        [
            {
                "id": "a",
                "output": '[{"label": "cat", "box": [10, 10, 50, 50]}]',
                "expected_output": '[{"label": "cat", "box": [12, 10, 50, 52]}]',
            },
            {
                "id": "b",
                "output": '[{"label": "dog", "box": [0, 0, 20, 20]}]',
                "expected_output": '[{"label": "dog", "box": [30, 30, 60, 60]}]',
            },
        ],
    )
    settings_model = BboxIouSettings
    required_columns = ("output", "expected_output")
    default_threshold = 0.5

    def _scaled(self) -> Literal["output", "expected_output"] | None:
        s = self.settings
        out_norm = s.normalized if s.output_normalized is None else s.output_normalized
        if out_norm == s.normalized:
            return None
        return "output" if out_norm else "expected_output"

    def columns_needed(self) -> tuple[str, ...]:
        s = self.settings
        if self._scaled() is not None:
            return (*self.required_columns, s.width_column, s.height_column)
        return self.required_columns

    def row_function(self) -> Callable[..., RowResult]:
        s = self.settings
        opts = RowOptions(
            output_format=s.output_format or s.format,
            expected_format=s.format,
            scaled=self._scaled(),
            size_columns=(s.width_column, s.height_column),
            iou_threshold=s.iou_threshold,
            label_aware=s.label_aware,
            score=s.score,
        )
        return functools.partial(score_row, opts)

    def row_inputs(self, batch: pl.DataFrame) -> pl.DataFrame:
        """``output`` and ``expected_output``; with the image size and whether it reads as positive numbers when
        the sides' normalizations differ."""
        columns = [pl.col("output"), pl.col("expected_output")]
        if self._scaled() is not None:
            size_columns = (self.settings.width_column, self.settings.height_column)
            sizes = [
                pl.col(c).alias(f"_{i}") if c in batch.columns else pl.lit(None).alias(f"_{i}")
                for i, c in enumerate(size_columns)
            ]
            numbers = [_as_number(size, batch.schema.get(c)) for size, c in zip(sizes, size_columns, strict=True)]
            sized = pl.all_horizontal(x.is_finite() & (x > 0) for x in numbers).fill_null(False).alias("_sized")
            columns += [*sizes, sized]
        return batch.select(columns)

    def evaluate(self, batch: pl.DataFrame) -> EvalOutput:
        out = score_rows(batch["id"], self.row_inputs(batch), self.row_function(), self.workers())
        results = conform(out.results, RESULT_ROW_SCHEMA)
        return EvalOutput(results, metric_inputs=ap_tables(results))

    def summarize(self, results: pl.DataFrame) -> dict[str, Any]:
        """Dataset AP from the processed rows' ``details`` (what :meth:`summarize_from` does faster)."""
        done = results.filter(pl.col("status") == PROCESSED)
        ap = ap_from_frames(*ap_inputs(done["details"], done["sample_id"])) if done.height else None
        return _metrics(done, ap)

    def summarize_from(self, results: pl.DataFrame, inputs: Mapping[str, pl.LazyFrame]) -> dict[str, Any]:
        """Dataset AP from the AP inputs of every batch (the compact tables ``evaluate`` returned, read back from the
        saved parts)."""
        if AP_DETS not in inputs or AP_GTS not in inputs:
            return self.summarize(results)
        done = results.filter(pl.col("status") == PROCESSED)
        ap = ap_from_frames(inputs[AP_DETS].collect(), inputs[AP_GTS].collect()) if done.height else None
        return _metrics(done, ap)


def _as_number(size: pl.Expr, dtype: pl.DataType | None) -> pl.Expr:
    """An image size column read as numbers: cast when its type casts (numbers, text: what does not read is null);
    a column of lists, or of numbers mixed with other values, value by value (a number is itself, anything else
    null), so that a row holding a list is that row's error (:func:`score_row`), not the batch's."""
    if dtype is None or dtype.is_numeric() or dtype in (pl.Utf8, pl.Boolean, pl.Null):
        return size.cast(pl.Float64, strict=False)
    return size.map_elements(_number, return_dtype=pl.Float64, skip_nulls=True)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _metrics(done: pl.DataFrame, ap: dict[str, float] | None) -> dict[str, Any]:
    """AP (rounded; null without processed rows), the mean score and the processed rows' count."""
    rounded = {k: round(v, 6) for k, v in ap.items()} if ap is not None else {"ap50": None, "ap50_95": None}
    mean = done.select(pl.col("score").mean()).item() if done.height else None
    return {**rounded, "mean_score": mean, "rows": done.height}


def ap_inputs(details: pl.Series, sample_ids: pl.Series) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The AP inputs in the ``details`` of processed rows: detections (sample_id, s, l, b) and ground-truth counts
    (l, n)."""
    decoded = pl.DataFrame({"sample_id": sample_ids, "d": details.str.json_decode(AP_DTYPE)}).unnest("d")
    dets = decoded.select("sample_id", "ap_dets").explode("ap_dets").drop_nulls("ap_dets").unnest("ap_dets")
    gts = decoded.select(pl.col("ap_gt").explode()).drop_nulls().unnest("ap_gt")
    return dets, gts


def ap_tables(results: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """A batch's AP inputs: every detection of a processed row (sample id, score, label, per-threshold hit bits)
    and the batch's ground-truth boxes counted per label."""
    done = results.filter(pl.col("status") == PROCESSED)
    dets, gts = ap_inputs(done["details"], done["sample_id"])
    per_label = gts.group_by("l", maintain_order=True).agg(pl.col("n").sum())
    return {
        AP_DETS: dets.select(list(AP_DETS_SCHEMA)).cast(AP_DETS_SCHEMA),  # type: ignore[arg-type]
        AP_GTS: per_label.cast(AP_GTS_SCHEMA),  # type: ignore[arg-type]
    }


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
