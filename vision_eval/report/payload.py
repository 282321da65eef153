"""The JSON the report page renders: samples with their results, overview tables, thumbnails."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import polars as pl

from vision_eval.report.sources import LEADERBOARD, RUN_COLUMN, ReportInput
from vision_eval.report.thumbs import PathDisplay, build_thumbnails, image_entries
from vision_eval.results import PROCESSED
from vision_eval.summary import summarize

TEXT_LIMIT = 100_000
"""Longest text kept per cell (longer ones are cut, saying how much was cut)."""
BINS = 10
MAX_SAMPLES = 20_000
"""Most samples given a card (the overview always covers every row): keeps huge runs' reports usable."""
_SAMPLE_TEXT = ("id", "input", "output", "expected_output", "images", "row_error", "_row_error", RUN_COLUMN)


def _clean(value: Any) -> Any:
    """JSON-safe values: non-finite floats become null, long texts are cut, anything else becomes text."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        if len(value) > TEXT_LIMIT:
            return value[:TEXT_LIMIT] + f"\n[... {len(value) - TEXT_LIMIT} more characters not shown]"
        return value
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return str(value)


def _meta_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return _clean(value)
    return _clean(json.dumps(value, ensure_ascii=False, default=str))


def _samples(
    data: ReportInput, max_side: int, display: PathDisplay
) -> tuple[list[dict[str, Any]], dict[str, str], dict[tuple[str, str], int]]:
    samples = display.frame(data.samples, ["row_error", "_row_error"])
    if "id" not in samples.columns:
        samples = pl.DataFrame({"id": [], RUN_COLUMN: []}, schema={"id": pl.Utf8, RUN_COLUMN: pl.Utf8})
    thumbs = build_thumbnails(samples["images"], max_side, display=display) if "images" in samples.columns else {}
    meta_columns = [c for c in samples.columns if c not in _SAMPLE_TEXT and not c.startswith("_")]
    rows: list[dict[str, Any]] = []
    index: dict[tuple[str, str], int] = {}
    for row in samples.iter_rows(named=True):
        key = (row.get(RUN_COLUMN) or "", str(row["id"]))
        if key in index:
            continue
        index[key] = len(rows)
        rows.append(
            {
                "id": key[1],
                "run": key[0],
                "input": _meta_text(row.get("input")),
                "output": _meta_text(row.get("output")),
                "expected": _meta_text(row.get("expected_output")),
                "row_error": row.get("row_error") or row.get("_row_error"),
                "images": image_entries(row.get("images"), thumbs, display),
                "meta": {c: _meta_text(row[c]) for c in meta_columns if row[c] is not None},
                "results": [],
            }
        )
    uris = {key: thumb.uri for key, thumb in thumbs.items() if thumb.uri}
    return rows, uris, index


def _grouped(frame: pl.DataFrame, columns: list[str]) -> dict[tuple[str, str, str], list[dict[str, Any]]]:
    out: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for row in frame.iter_rows(named=True):
        key = (row[RUN_COLUMN] or "", str(row["sample_id"]), row["evaluator"])
        out.setdefault(key, []).append({c: _clean(row[c]) for c in columns})
    return out


def _attach_results(data: ReportInput, rows: list[dict[str, Any]], index: dict[tuple[str, str], int]) -> None:
    dims = _grouped(data.dimensions, ["dimension", "score", "weight"])
    fields = _grouped(data.fields, ["path", "match", "expected", "actual", "score", "hit", "reason"])
    for row in data.results.iter_rows(named=True):
        run, sample_id, evaluator = row[RUN_COLUMN] or "", str(row["sample_id"]), row["evaluator"]
        position = index.get((run, sample_id))
        if position is None:  # a result for a sample missing from samples.parquet: still shown
            position = index[(run, sample_id)] = len(rows)
            rows.append({"id": sample_id, "run": run, "images": [], "meta": {}, "results": []})
        key = (run, sample_id, evaluator)
        rows[position]["results"].append(
            {
                "evaluator": evaluator,
                "type": row["type"],
                "status": row["status"],
                "score": _clean(row["score"]),
                "passed": row["passed"],
                "threshold": _clean(row["threshold"]),
                "error": _clean(row["error"]),
                "details": _clean(row["details"]),
                "input_tokens": row["input_tokens"],
                "output_tokens": row["output_tokens"],
                "cost_usd": _clean(row["cost_usd"]),
                "latency_s": _clean(row["latency_s"]),
                "cached": row["cached"],
                "score_std": _clean(row["score_std"]),
                "dimensions": dims.get(key, []),
                "fields": fields.get(key, []),
            }
        )


def _summary(data: ReportInput) -> list[dict[str, Any]]:
    out = []
    for label in data.labels or [""]:
        part = data.results.filter(pl.col(RUN_COLUMN).fill_null("") == label)
        thresholds = dict(part.group_by("evaluator").agg(pl.col("threshold").first()).iter_rows())
        for row in summarize(part).iter_rows(named=True):
            out.append({"run": label, **_clean(row), "threshold": _clean(thresholds.get(row["evaluator"]))})
    return out


def _histograms(results: pl.DataFrame) -> list[dict[str, Any]]:
    processed = results.filter((pl.col("status") == PROCESSED) & pl.col("score").is_not_null())
    binned = processed.with_columns(
        (pl.col("score").clip(0.0, 1.0) * BINS).floor().cast(pl.Int64).clip(0, BINS - 1).alias("bin")
    )
    counts = binned.group_by(RUN_COLUMN, "evaluator", "bin").len()
    out: dict[tuple[str, str], list[int]] = {}
    for key in results.select(RUN_COLUMN, "evaluator").unique(maintain_order=True).iter_rows():
        out[(key[0] or "", key[1])] = [0] * BINS
    for run, evaluator, bin_, n in counts.iter_rows():
        out[(run or "", evaluator)][bin_] = n
    return [{"run": k[0], "evaluator": k[1], "counts": v} for k, v in out.items()]


def _dimension_means(dimensions: pl.DataFrame) -> list[dict[str, Any]]:
    means = dimensions.group_by(RUN_COLUMN, "evaluator", "dimension", maintain_order=True).agg(
        pl.col("score").mean().alias("mean_score"), pl.col("score").count().alias("rows")
    )
    return [_clean(row) for row in means.iter_rows(named=True)]


def _table(frame: pl.DataFrame) -> dict[str, Any]:
    frame = frame.select([c for c in frame.columns if frame[c].dtype != pl.Object])
    return {"columns": frame.columns, "rows": [_clean(list(row)) for row in frame.iter_rows()]}


def _run_entry(source: Any) -> dict[str, Any]:
    info = source.info
    metrics = {
        name: {k: _clean(v) for k, v in (values or {}).items() if not isinstance(v, dict | list)}
        for name, values in (info.get("metrics") or {}).items()
    }
    return {
        "label": source.label,
        "directory": source.directory,
        "counts": _clean(info.get("counts")),
        "timings": _clean(info.get("timings")),
        "totals": _clean(info.get("totals")),
        "versions": _clean(info.get("versions")),
        "dataset": _clean({k: v for k, v in (info.get("dataset") or {}).items() if k not in ("columns", "root")}),
        "metrics": {k: v for k, v in metrics.items() if v},
    }


def _limited(data: ReportInput, max_samples: int) -> tuple[ReportInput, int]:
    """The first ``max_samples`` samples (by run, then dataset order) with their results; and the total."""
    keys = pl.concat(
        [
            data.samples.select(pl.col(RUN_COLUMN), pl.col("id").cast(pl.Utf8).alias("sample_id"))
            if "id" in data.samples.columns
            else pl.DataFrame(schema={RUN_COLUMN: pl.Utf8, "sample_id": pl.Utf8}),
            data.results.select(RUN_COLUMN, "sample_id"),
        ]
    ).unique(maintain_order=True)
    if keys.height <= max_samples:
        return data, keys.height
    kept = keys.head(max_samples)

    def keep(frame: pl.DataFrame, id_column: str = "sample_id") -> pl.DataFrame:
        on = kept.rename({"sample_id": id_column})
        return frame.with_columns(pl.col(id_column).cast(pl.Utf8)).join(on, on=[RUN_COLUMN, id_column], how="semi")

    limited = ReportInput(
        results=keep(data.results),
        dimensions=keep(data.dimensions),
        fields=keep(data.fields),
        samples=keep(data.samples, "id") if "id" in data.samples.columns else data.samples,
        tables=data.tables,
        runs=data.runs,
    )
    return limited, keys.height


def build_payload(
    data: ReportInput, title: str = "vision-eval report", thumb_size: int = 256, max_samples: int = MAX_SAMPLES
) -> dict[str, Any]:
    """The report's data as a JSON-able dict (overview over every row; at most ``max_samples`` sample cards)."""
    shown, total = _limited(data, max_samples)
    roots = [str((source.info.get("dataset") or {}).get("root") or "") for source in data.runs]
    display = PathDisplay(roots, shown.samples["images"] if "images" in shown.samples.columns else None)
    shown = replace(shown, results=display.frame(shown.results, ["error", "details"]))
    rows, thumbs, index = _samples(shown, thumb_size, display)
    _attach_results(shown, rows, index)
    leaderboard = data.tables.get(LEADERBOARD)
    return {
        "title": title,
        "generated": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "total_samples": total,
        "runs": [_run_entry(source) for source in data.runs],
        "labels": data.labels,
        "evaluators": list(dict.fromkeys(data.results["evaluator"].drop_nulls().to_list())),
        "summary": _summary(data),
        "histograms": _histograms(data.results),
        "dimensions": _dimension_means(data.dimensions),
        "leaderboard": _table(leaderboard.drop(RUN_COLUMN, strict=False)) if leaderboard is not None else None,
        "tables": sorted(name for name in data.tables if name != LEADERBOARD),
        "samples": rows,
        "thumbs": thumbs,
    }
