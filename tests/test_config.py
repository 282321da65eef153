"""Config validation: every bad config fails before evaluation, naming the key (and file)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from secret_scan import assert_no_secret

import vision_eval as ve
from vision_eval.config import ConfigSources, redact
from vision_eval.errors import ConfigError

ROWS = [{"id": "a", "output": "cat", "expected_output": "cat"}, {"id": "b", "output": "dog", "expected_output": "cat"}]


def test_unknown_setting_names_the_key() -> None:
    with pytest.raises(ConfigError) as info:
        ve.evaluate(ROWS, evaluators={"em": {"type": "exact_match", "treshold": 0.5}})
    assert info.value.key == "evaluators.em.treshold"
    assert "unknown key" in str(info.value)


def test_wrong_type_names_the_key() -> None:
    with pytest.raises(ConfigError) as info:
        ve.evaluate(ROWS, evaluators={"em": {"type": "exact_match", "threshold": "high"}})
    assert info.value.key == "evaluators.em.threshold"


def test_unknown_evaluator_type_lists_known_ones() -> None:
    with pytest.raises(ConfigError) as info:
        ve.evaluate(ROWS, evaluators={"x": {"type": "no_such_type"}})
    assert info.value.key == "evaluators.x.type"
    assert "exact_match" in str(info.value)


def test_evaluator_without_type_or_target() -> None:
    with pytest.raises(ConfigError, match="needs a 'type'"):
        ve.evaluate(ROWS, evaluators={"x": {"threshold": 0.5}})


def test_unknown_top_level_and_dataset_keys() -> None:
    with pytest.raises(ConfigError) as info:
        ve.validate_config({"dataset": {"path": "x.jsonl", "colums": {}}})
    assert info.value.key == "dataset.colums"
    with pytest.raises(ConfigError) as info:
        ve.validate_config({"dataset": {"path": "x.jsonl"}, "judgee": {}})
    assert info.value.key == "judgee"


def test_bad_shard_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as info:
        ve.validate_config({"dataset": {"path": "x"}, "run": {"shard": "4/4"}})
    assert info.value.key == "run.shard"


def test_error_names_the_file_or_the_override() -> None:
    sources = ConfigSources(files={"evaluators": "/conf/evaluators/mine.yaml"}, overrides=["run.limit=abc"])
    with pytest.raises(ConfigError) as info:
        ve.validate_config({"dataset": {"path": "x"}, "run": {"limit": "abc"}}, sources)
    assert "command-line override 'run.limit=abc'" in str(info.value)
    assert sources.file_for("evaluators.count.threshold") == "/conf/evaluators/mine.yaml"


def test_invalid_where_filter_fails_before_evaluation() -> None:
    with pytest.raises(ConfigError) as info:
        ve.evaluate(ROWS, evaluators={"em": {"type": "exact_match", "where": "task = = 'x'"}})
    assert info.value.key == "evaluators.em.where"


def test_missing_required_column_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as info:
        ve.evaluate([{"output": "x"}], evaluators={"em": {"type": "exact_match"}})
    assert info.value.key == "evaluators.em"
    assert "expected_output" in str(info.value)


def test_invalid_regex_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="pattern"):
        ve.evaluate(ROWS, evaluators={"r": {"type": "regex", "pattern": "("}})


def double_score(row: dict, config: dict) -> dict:
    """A row function for the _target_ test."""
    return {"score": config["value"], "details": {"seen": row["output"]}}


def frame_score(frame: pl.DataFrame) -> pl.DataFrame:
    """A frame function for the _target_ test."""
    return frame.select(pl.col("id"), (pl.col("output") == "cat").cast(pl.Float64).alias("score"))


def test_target_function_row_and_frame() -> None:
    result = ve.evaluate(
        ROWS,
        evaluators={
            "row": {"_target_": f"{__name__}.double_score", "value": 0.25},
            "frame": {"_target_": f"{__name__}:frame_score"},
        },
    )
    by = {(r["evaluator"], r["sample_id"]): r for r in result.results.iter_rows(named=True)}
    assert by[("row", "a")]["score"] == 0.25
    assert json.loads(by[("row", "b")]["details"]) == {"seen": "dog"}
    assert by[("frame", "a")]["score"] == 1.0 and by[("frame", "b")]["score"] == 0.0
    assert by[("frame", "a")]["type"] == "python"


class ShoutEvaluator(ve.Evaluator):
    """An evaluator defined outside the package, used through _target_."""

    type_name = "shout"
    required_columns = ("output",)

    def evaluate(self, batch: pl.DataFrame) -> ve.EvalOutput:
        upper = pl.col("output") == pl.col("output").str.to_uppercase()
        return ve.EvalOutput(
            batch.select(
                pl.col("id").alias("sample_id"), pl.lit("processed").alias("status"), upper.cast(float).alias("score")
            )
        )


def test_target_evaluator_class() -> None:
    result = ve.evaluate(
        [{"output": "HEY"}, {"output": "hey"}], evaluators={"s": {"_target_": f"{__name__}.ShoutEvaluator"}}
    )
    assert result.results["score"].to_list() == [1.0, 0.0]
    assert result.results["type"].unique().to_list() == ["shout"]


def test_bad_target_names_the_key() -> None:
    with pytest.raises(ConfigError) as info:
        ve.evaluate(ROWS, evaluators={"t": {"_target_": "no.such.module.fn"}})
    assert info.value.key == "evaluators.t._target_"


def test_secrets_are_redacted_in_outputs(tmp_path: Path) -> None:
    secret = "sk-test-0123456789"
    ve.evaluate(
        ROWS,
        evaluators={"em": {"type": "exact_match"}},
        judge={"model": None, "api_key": secret},
        output_dir=tmp_path,
    )
    assert_no_secret(tmp_path, secret, expect=("results.parquet", "samples.parquet", "run.json"))
    assert redact({"judge": {"api_key": "x", "api_key_env": "OPENAI_API_KEY", "max_tokens": 5}}) == {
        "judge": {"api_key": "***", "api_key_env": "OPENAI_API_KEY", "max_tokens": 5}
    }
