"""An evaluator declares its settings model once, as its base's type argument; plain subclasses keep working."""

from __future__ import annotations

from typing import ClassVar

import polars as pl
import pytest

import vision_eval as ve
from vision_eval.errors import ConfigError
from vision_eval.evaluator import EvalOutput, Evaluator, EvaluatorSettings
from vision_eval.evaluators.benchmarks.exact_count import ExactCount, ExactCountSettings
from vision_eval.evaluators.benchmarks.protocols import ProtocolMetric
from vision_eval.evaluators.code.ocr import OcrValidator, OcrValidatorSettings
from vision_eval.evaluators.graded.llm_judge import JudgeFileSettings, LLMJudge
from vision_eval.evaluators.graded.output_graders import LLMRubric, LLMRubricSettings
from vision_eval.grading.base import GradedEvaluator
from vision_eval.grading.settings import GradedSettings


class LengthSettings(EvaluatorSettings):
    """Settings of the test evaluator."""

    max_chars: int = 5
    """Longest passing output."""


class ShortEnough(Evaluator[LengthSettings]):
    type_name: ClassVar[str] = "short_enough_test"

    def evaluate(self, batch: pl.DataFrame) -> EvalOutput:
        short = pl.col("output").str.len_chars() <= self.settings.max_chars
        return EvalOutput(batch.select(pl.col("id").alias("sample_id"), short.cast(pl.Float64).alias("score")))


def test_the_type_argument_is_the_settings_model() -> None:
    assert ShortEnough.settings_model is LengthSettings
    assert OcrValidator.settings_model is OcrValidatorSettings
    # Through a generic intermediate base, and where the intermediate base names a type variable.
    assert ExactCount.settings_model is ExactCountSettings
    assert LLMJudge.settings_model is JudgeFileSettings
    assert LLMRubric.settings_model is LLMRubricSettings
    assert GradedEvaluator.settings_model is GradedSettings
    assert ProtocolMetric.settings_model is EvaluatorSettings


def test_a_generic_evaluator_validates_its_own_settings_from_the_config() -> None:
    rows = [{"id": "a", "output": "abc"}, {"id": "b", "output": "abcdefgh"}]
    target = f"{__name__}:ShortEnough"
    result = ve.evaluate(rows, evaluators={"s": {"_target_": target, "max_chars": 3}})
    assert result.results["score"].to_list() == [1.0, 0.0]
    with pytest.raises(ConfigError, match="max_chars"):
        ve.evaluate(rows, evaluators={"s": {"_target_": target, "max_chars": "many"}})
    with pytest.raises(ConfigError, match="unknown_key"):
        ve.evaluate(rows, evaluators={"s": {"_target_": target, "unknown_key": 1}})


def test_a_plain_subclass_keeps_the_base_settings_or_its_own_settings_model() -> None:
    class Plain(Evaluator):
        type_name: ClassVar[str] = "plain_test"

    class OwnModel(Evaluator):
        type_name: ClassVar[str] = "own_model_test"
        settings_model = LengthSettings

    assert Plain.settings_model is EvaluatorSettings
    assert OwnModel.settings_model is LengthSettings


def test_a_settings_model_contradicting_the_type_argument_is_refused_at_class_definition() -> None:
    with pytest.raises(TypeError, match="settings_model is EvaluatorSettings, not the LengthSettings"):

        class Contradicting(Evaluator[LengthSettings]):
            settings_model = EvaluatorSettings

    class Narrower(LengthSettings):
        """A subclass of the declared model is accepted."""

    class Narrowing(Evaluator[LengthSettings]):
        settings_model = Narrower

    assert Narrowing.settings_model is Narrower
