"""Which rows reach an evaluator (vision_eval.prechecks): a failed generation and an unselected row are skipped, a bad
row and a missing value or image are errors, each with its reason, the first that applies winning; the rows that
do reach it keep their values and positions, and every row comes back in batch order."""

from __future__ import annotations

import json
from typing import Any

import polars as pl
import pytest

from vision_eval.config import ConfigSources, DatasetConfig
from vision_eval.errors import ConfigError
from vision_eval.evaluator import EvalContext, Evaluator
from vision_eval.images.refs import IMAGES_DTYPE
from vision_eval.prechecks import check_stack, in_batch_order, split
from vision_eval.stack import build_evaluator


def evaluator(**settings: Any) -> Evaluator:
    return build_evaluator("em", {"type": "exact_match", **settings}, EvalContext())


def batch(**columns: list[Any]) -> pl.DataFrame:
    n = len(next(iter(columns.values())))
    base = {"id": [f"r{i}" for i in range(n)], "output": ["a"] * n, "expected_output": ["a"] * n}
    return pl.DataFrame({**base, **columns})


def held(frame: pl.DataFrame) -> dict[str, tuple[str, str | None, str | None]]:
    """Per held-back sample: (status, error, details.reason)."""
    out = {}
    for row in frame.iter_rows(named=True):
        reason = json.loads(row["details"])["reason"] if row["details"] else None
        out[row["sample_id"]] = (row["status"], row["error"], reason)
    return out


def test_where_selects_rows_and_a_null_filter_value_is_not_selected() -> None:
    rows = batch(task=["ocr", "count", None, "ocr"], output=["a", "b", "c", None])
    ready, positions, rest = split(evaluator(where="task = 'ocr'"), rows)
    assert ready["id"].to_list() == ["r0"] and positions.to_list() == [0]
    assert "_where" not in ready.columns and "_pre" not in ready.columns
    assert rest["_pos"].to_list() == [1, 2, 3]
    skipped = ("skipped", None, "row not selected by where: task = 'ocr'")
    assert held(rest) == {"r1": skipped, "r2": skipped, "r3": ("error", "output is missing", None)}


def test_the_first_reason_that_applies_wins() -> None:
    # candidate failure, then where, then a bad row, then a missing value.
    rows = batch(
        task=["x", "y", "x", "x", "x"],
        candidate_error=["timeout", "timeout", None, None, None],
        _row_error=[None, "bad row", "bad row", None, None],
        output=[None, None, None, None, "fine"],
    )
    ready, positions, rest = split(evaluator(where="task = 'x'"), rows)
    assert ready["id"].to_list() == ["r4"] and positions.to_list() == [4]
    assert held(rest) == {
        "r0": ("skipped", None, "candidate generation failed: timeout"),
        "r1": ("skipped", None, "candidate generation failed: timeout"),
        "r2": ("error", "bad row", None),
        "r3": ("error", "output is missing", None),
    }
    assert rest.schema["status"] == pl.Utf8 and rest["score"].is_null().all() and rest["passed"].is_null().all()


def test_a_missing_mapped_column_is_named_with_what_it_is_read_as() -> None:
    rows = batch(answer=["a", None])
    _, positions, rest = split(evaluator(columns={"output": "answer"}), rows)
    assert positions.to_list() == [0]
    assert held(rest) == {"r1": ("error", "answer (read as output) is missing", None)}


def test_rows_without_images_or_with_an_unusable_image_are_errors() -> None:
    judge = build_evaluator("sim", {"type": "image_similarity"}, EvalContext())
    good = {"path": "a.png", "bytes": None, "sha256": "x", "error": None}
    bad = {"path": "b.png", "bytes": None, "sha256": None, "error": "cannot open b.png"}
    images = pl.Series("images", [[good], [], None, [good, bad]], dtype=IMAGES_DTYPE)
    rows = batch(reference_image=["ref.png"] * 4).with_columns(images)
    _, positions, rest = split(judge, rows)
    assert positions.to_list() == [0]
    assert held(rest) == {
        "r1": ("error", "row has no images", None),
        "r2": ("error", "row has no images", None),
        "r3": ("error", "cannot open b.png", None),
    }


def test_no_checks_no_rows_held() -> None:
    ready, positions, rest = split(evaluator(), batch(output=["a", "b"]))
    assert ready["id"].to_list() == ["r0", "r1"] and positions.to_list() == [0, 1] and rest.height == 0


def test_rows_come_back_in_batch_order_with_only_the_columns_that_hold_values() -> None:
    rows = batch(output=["a", "b", "c"])
    parts = pl.DataFrame(
        {
            "_pos": [2, 0, 1],
            "sample_id": ["ignored", "ignored", "ignored"],
            "score": [0.2, 0.0, 0.1],
            "error": pl.Series([None, None, None], dtype=pl.Utf8),
        }
    )
    ordered = in_batch_order(rows, parts)
    assert ordered.columns == ["sample_id", "score", "error"]
    assert ordered["sample_id"].to_list() == ["r0", "r1", "r2"]  # the batch's own ids
    assert ordered["score"].to_list() == [0.0, 0.1, 0.2]
    assert ordered["error"].dtype == pl.Utf8 and ordered["error"].null_count() == 3


def test_a_bad_where_filter_fails_before_any_work_naming_the_key() -> None:
    with pytest.raises(ConfigError) as raised:
        check_stack(batch(output=["a"]), [evaluator(where="no_such_column = 1")], DatasetConfig())
    assert "evaluators.em.where" in str(raised.value) and "invalid filter" in str(raised.value)
    with pytest.raises(ConfigError, match=r"evaluators\.em\.where"):  # after an evaluator without a filter too
        check_stack(batch(output=["a"]), [evaluator(), evaluator(where="no_such_column = 1")], DatasetConfig())
    check_stack(batch(output=["a"], task=["x"]), [evaluator(where="task = 'x'"), evaluator()], DatasetConfig())


def test_images_read_from_several_columns_are_named_together_when_missing() -> None:
    judge = build_evaluator(
        "sim", {"type": "image_similarity", "columns": {"images": ["front", "back"]}}, EvalContext()
    )
    image = {"path": "a.png", "bytes": None, "sha256": "x", "source": "path", "error": None}
    rows = batch(reference_image=["ref.png"] * 2).with_columns(
        pl.Series("front", [[image], None], dtype=IMAGES_DTYPE), pl.Series("back", [None, None], dtype=IMAGES_DTYPE)
    )
    _, positions, rest = split(judge, rows)
    assert positions.to_list() == [0]
    assert held(rest) == {"r1": ("error", "row has no front, back (read as images)", None)}


def test_a_mapped_column_the_dataset_lacks_names_the_key_and_its_file() -> None:
    sources = ConfigSources(files={"evaluators": "/conf/evaluators/mine.yaml"}, overrides=["evaluators=mine"])
    with pytest.raises(ConfigError) as raised:
        check_stack(batch(answr=["a"]), [evaluator(columns={"output": "answer"})], DatasetConfig(), sources)
    assert (raised.value.key, raised.value.file) == ("evaluators.em.columns.output", "/conf/evaluators/mine.yaml")
    assert raised.value.message == (
        "dataset column 'answer' is not in the dataset; did you mean 'answr'? (columns: id, output, expected_output, "
        "answr)"
    )


def test_a_filter_that_fails_on_the_values_is_a_config_error_quoting_no_value() -> None:
    """A cast the first batch's values cannot take fails before any work (a config error, not an internal one),
    and its message stops before the values Polars would quote."""
    rows = batch(output=["a secret reply", "another secret"])
    with pytest.raises(ConfigError) as raised:
        check_stack(rows, [evaluator(where="CAST(output AS INT) > 3")], DatasetConfig())
    message = str(raised.value)
    assert message.startswith("evaluators.em.where: invalid filter: ") and "'output'" in message
    assert "secret" not in message
    check_stack(batch(output=["7", "2"]), [evaluator(where="CAST(output AS INT) > 3")], DatasetConfig())


def test_a_filter_that_fails_on_a_later_batch_stops_the_run_with_a_config_error(tmp_path: Any) -> None:
    """The first batch's values cast; a later batch's do not: the run stops with the filter's key, not a bug report,
    and without quoting the row."""
    from vision_eval import evaluate

    data = [{"id": f"r{i}", "output": str(i), "expected_output": str(i)} for i in range(4)]
    data.append({"id": "r4", "output": "a private note", "expected_output": "x"})
    evaluators = {"em": {"type": "exact_match", "where": "CAST(output AS INT) >= 0"}}
    with pytest.raises(ConfigError) as raised:
        evaluate(data, evaluators, run={"batch_size": 2, "progress": False, "output_dir": str(tmp_path / "out")})
    assert str(raised.value).startswith("evaluators.em.where: invalid filter: ")
    assert raised.value.evaluated == "the run stopped there, after 2 finished batches; fix it and run again"
    assert "private" not in str(raised.value)
    assert not any((tmp_path / "out").rglob("*.parquet"))  # no checkpoint left: a resume would stop there again
    kept = evaluate(data[:4], evaluators, run={"batch_size": 2, "progress": False})
    assert kept.results["score"].to_list() == [1.0] * 4
