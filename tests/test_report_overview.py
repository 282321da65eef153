"""The report's overview numbers (vision_eval.report.aggregates), checked by hand on a small two-variant run: counts by
status, mean score and pass rate over the processed rows, tokens and cost, the first threshold, score histograms
and dimension means."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

import vision_eval as ve
from vision_eval.report import load_runs
from vision_eval.report.aggregates import overview, run_entry, table

RESULTS = pl.DataFrame(
    {
        "run": ["v1"] * 5 + ["v2"] * 3,
        "evaluator": ["em", "em", "em", "em", "j", "em", "em", "em"],
        "type": ["exact_match"] * 4 + ["llm_judge"] + ["exact_match"] * 3,
        "status": ["processed", "processed", "error", "skipped", "processed", "processed", "processed", "processed"],
        "passed": [True, False, None, None, True, True, True, False],
        "score": [1.0, 0.05, None, None, 0.95, 1.0, 0.5, 0.1],
        "input_tokens": [None, None, None, None, 10, None, None, None],
        "output_tokens": [None, None, None, None, 3, None, None, None],
        "cost_usd": [None, None, None, None, 0.01, None, None, None],
        "threshold": [0.5] * 4 + [0.7] + [0.9, 0.8, 0.8],
    }
)
DIMENSIONS = pl.DataFrame(
    {"run": ["v1"] * 3, "evaluator": ["j"] * 3, "dimension": ["a", "a", "b"], "score": [0.2, 0.6, None]}
)


def test_overview_summary_histograms_and_dimensions() -> None:
    found = overview(RESULTS.lazy(), DIMENSIONS.lazy(), ["v1", "v2"])
    assert found["evaluators"] == ["em", "j"]
    summary = {(s["run"], s["evaluator"]): s for s in found["summary"]}
    assert list(summary) == [("v1", "em"), ("v1", "j"), ("v2", "em")]
    assert summary[("v1", "em")] == {
        "run": "v1",
        "evaluator": "em",
        "type": "exact_match",
        "rows": 4,
        "processed": 2,
        "errors": 1,
        "skipped": 1,
        "mean_score": 0.525,
        "pass_rate": 0.5,
        "input_tokens": 0,
        "output_tokens": 0,
        "cost_usd": None,
        "threshold": 0.5,
    }
    judge = summary[("v1", "j")]
    assert (judge["input_tokens"], judge["output_tokens"], judge["cost_usd"], judge["threshold"]) == (10, 3, 0.01, 0.7)
    second = summary[("v2", "em")]
    assert (second["mean_score"], second["pass_rate"], second["threshold"]) == (1.6 / 3, 2 / 3, 0.9)
    histograms = {(h["run"], h["evaluator"]): h["counts"] for h in found["histograms"]}
    assert histograms[("v1", "em")] == [1, 0, 0, 0, 0, 0, 0, 0, 0, 1]  # 0.05 in the first bin, 1.0 in the last
    assert histograms[("v2", "em")] == [0, 1, 0, 0, 0, 1, 0, 0, 0, 1]  # 0.1 and 0.5 open their bins
    assert histograms[("v1", "j")] == [0, 0, 0, 0, 0, 0, 0, 0, 0, 1]
    assert found["dimensions"] == [
        {"run": "v1", "evaluator": "j", "dimension": "a", "mean_score": 0.4, "rows": 2},
        {"run": "v1", "evaluator": "j", "dimension": "b", "mean_score": None, "rows": 0},
    ]


def test_overview_of_one_unlabelled_run() -> None:
    one = RESULTS.filter(pl.col("run") == "v2").with_columns(pl.lit("").alias("run"))
    found = overview(one.lazy(), DIMENSIONS.head(0).lazy(), [])
    assert [(s["run"], s["evaluator"], s["rows"]) for s in found["summary"]] == [("", "em", 3)]
    assert found["dimensions"] == []


def test_table_leaves_out_object_columns() -> None:
    frame = pl.DataFrame({"a": [1, 2], "b": [0.5, None], "o": pl.Series([object(), object()], dtype=pl.Object)})
    assert table(frame) == {"columns": ["a", "b"], "rows": [[1, 0.5], [2, None]]}


def test_run_entry_lists_a_run_s_numbers_without_nested_metrics_or_dataset_paths(tmp_path: Path) -> None:
    """What the page lists about a run directory: its label, folder, id, counts, timings, totals and versions as
    run.json has them; the dataset without its columns and root; each evaluator's flat metrics (a nested
    breakdown is left to the run's files; an evaluator without metrics is left out)."""
    rows = [
        {"id": "0", "output": "The sign says STOP.", "expected_output": '["stop"]', "dataset": "IIIT5K",
         "question_type": "Regular Text Recognition"},
        {"id": "1", "output": "x ^ 2", "expected_output": '["x^{2}"]', "dataset": "HME100k",
         "question_type": "Handwritten Mathematical Expression Recognition"},
    ]  # fmt: skip
    out = tmp_path / "run"
    ve.evaluate(rows, evaluators={"o": {"type": "ocrbench"}, "em": {"type": "exact_match"}},
                run={"progress": False, "write_report": False}, output_dir=out)  # fmt: skip
    info = json.loads((out / "run.json").read_text())
    entry = run_entry(load_runs([out]).runs[0])
    assert entry == {
        "label": "",
        "directory": str(out.resolve()),
        "run_id": info["run_id"],
        "counts": {"samples": 2, "result_rows": 4, "status": {"processed": 4}},
        "timings": info["timings"],
        "totals": {"input_tokens": 0, "output_tokens": 0, "cost_usd": None, "cache_hits": 0},
        "versions": info["versions"],
        "dataset": {"rows": 2, "images": 0, "selected": 2, "first": 0},
        "metrics": {
            "o": {
                "protocol": "lmms_eval",
                "n": 2,
                "errors": 0,
                "unparseable": 0,
                "Final Score": 1,
                "Text Recognition": 1,
                "Handwritten Mathematical Expression Recognition": 0,
            },
        },
    }
    assert "columns" in info["dataset"] and "root" in info["dataset"] and "categories" in info["metrics"]["o"]
    assert set(entry["timings"]) >= {"load_s", "evaluate_s", "total_s"} and "polars" in entry["versions"]
