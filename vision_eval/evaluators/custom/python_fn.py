"""``type: python`` (and Hydra ``_target_`` functions): a user's function, in-process.

The function takes either the whole batch frame (vectorized) or one row dict, plus the
settings the evaluator does not know as keyword ``config``. It returns the standard result
(``status, score, passed, details``), the code-judge form (``score, hits, misses, reasoning``)
or a bare number; a frame function returns a frame with those columns (and ``id`` or
``sample_id``) or a list of dicts in batch order.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Literal

import polars as pl
from pydantic import ConfigDict

from vision_eval.evaluator import ColumnMap, EvalContext, EvalOutput, Evaluator, EvaluatorSettings
from vision_eval.example import Example
from vision_eval.results import ERROR, PROCESSED, rows_frame
from vision_eval.wording import counted


class PythonSettings(EvaluatorSettings):
    """Settings of ``type: python``; unknown keys are passed to the function as ``config``."""

    model_config = ConfigDict(extra="allow")

    function: str
    """``module:function`` (or ``module.function``) to call."""
    mode: Literal["auto", "frame", "row"] = "auto"
    """``frame``: called once per batch; ``row``: once per row; ``auto``: ``frame`` when the first
    parameter is annotated as a Polars DataFrame or named ``frame``/``batch``/``df``."""
    columns: list[str] | ColumnMap = ["output"]  # type: ignore[assignment]
    """Dataset columns the function needs (checked before the run); or, as for every evaluator, a mapping of
    canonical columns to the dataset columns read as them (``{output: answer}``)."""


def coerce_result(raw: Any, threshold: float | None) -> dict[str, Any]:
    """The standard result dict from whatever a user's code returned. Raises ``ValueError`` if unusable."""
    if isinstance(raw, bool):
        return {"status": PROCESSED, "score": 1.0 if raw else 0.0, "passed": raw, "details": {}}
    if isinstance(raw, int | float):
        return {"status": PROCESSED, "score": float(raw), "details": {}}
    if not isinstance(raw, Mapping):
        raise ValueError(f"expected a result object, got {type(raw).__name__}")
    result = dict(raw)
    status = result.get("status", PROCESSED)
    details = dict(result.get("details") or {})
    for key in ("hits", "misses", "reasoning"):
        if key in result:
            details[key] = result[key]
    if status == ERROR:
        return {
            "status": ERROR,
            "error": str(result.get("error") or details.get("reason") or "error"),
            "details": details,
        }
    if status != PROCESSED:
        return {"status": status, "details": {**details, "reason": result.get("reason") or details.get("reason")}}
    if "score" not in result or result["score"] is None:
        raise ValueError("result has no score")
    score = float(result["score"])
    passed = result.get("passed")
    out = {"status": PROCESSED, "score": score, "details": details}
    if passed is not None:
        out["passed"] = bool(passed)
    return out


def _accepts_config(function: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):  # builtins without a signature
        return False
    return any(p.name == "config" or p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


def _wants_frame(function: Callable[..., Any]) -> bool:
    params = list(inspect.signature(function).parameters.values())
    if not params:
        return False
    first = params[0]
    annotation = str(first.annotation)
    return "DataFrame" in annotation or first.name in ("frame", "batch", "df")


_MY_CHECKS = '''def answer_in_output(row):
    """A score for one row (a dict of its columns): 1.0 when the expected answer appears in the output."""
    return float(str(row["expected_output"]).lower() in str(row["output"]).lower())
'''


class PythonEvaluator(Evaluator[PythonSettings]):
    """Calls a user's Python function."""

    type_name: ClassVar[str] = "python"
    example: ClassVar[Example] = Example(
        {"type": "python", "function": "my_checks:answer_in_output"},
        [
            {"id": "a", "output": "There are 5 bottles.", "expected_output": "5 bottles"},
            {"id": "b", "output": "I see 4 bottles.", "expected_output": "5 bottles"},
        ],
        files={"my_checks.py": _MY_CHECKS},
        note="my_checks.py sits in the directory you run vision-eval from (or on PYTHONPATH).",
    )
    default_threshold = 0.5

    def __init__(self, name: str, settings: PythonSettings, context: EvalContext | None = None) -> None:
        super().__init__(name, settings, context)
        from vision_eval.stack import import_object

        try:
            self.function = import_object(settings.function)
        except (ImportError, AttributeError) as exc:
            raise ValueError(f"function: cannot import {settings.function!r}: {exc}") from None
        if not callable(self.function):
            raise ValueError(f"function: {settings.function!r} is not callable")
        self.frame_mode = settings.mode == "frame" or (settings.mode == "auto" and _wants_frame(self.function))
        self.config = dict(settings.model_extra or {})
        self.takes_config = _accepts_config(self.function)

    def columns_needed(self) -> tuple[str, ...]:
        columns = self.settings.columns
        return self.required_columns if isinstance(columns, ColumnMap) else tuple(columns)

    def _call(self, arg: Any) -> Any:
        # Decided once from the signature: retrying on TypeError would hide the function's own TypeErrors.
        return self.function(arg, config=self.config) if self.takes_config else self.function(arg)

    def evaluate(self, batch: pl.DataFrame) -> EvalOutput:
        if self.frame_mode:
            return EvalOutput(self._from_frame_result(batch, self._call(batch)))
        rows = []
        for row in batch.drop([c for c, t in batch.schema.items() if t == pl.Object]).iter_rows(named=True):
            try:
                result = coerce_result(self._call(row), self.threshold)
            except Exception as exc:  # one row's failure is that row's error
                result = {"status": ERROR, "error": f"{type(exc).__name__}: {exc}"}
            rows.append({"sample_id": row["id"], **result})
        return EvalOutput(rows_frame(rows))

    def _from_frame_result(self, batch: pl.DataFrame, raw: Any) -> pl.DataFrame:
        if isinstance(raw, pl.Series):
            raw = pl.DataFrame({"score": raw})
        if isinstance(raw, list):
            if len(raw) != batch.height:
                raise ValueError(f"function returned {counted(len(raw), 'result')} for {counted(batch.height, 'row')}")
            results = [
                {"sample_id": sid, **coerce_result(r, self.threshold)} for sid, r in zip(batch["id"], raw, strict=True)
            ]
            return rows_frame(results)
        if not isinstance(raw, pl.DataFrame):
            raise ValueError(f"frame function returned {type(raw).__name__}, expected a DataFrame or a list")
        frame: pl.DataFrame = raw
        if "sample_id" not in frame.columns:
            if "id" in frame.columns:
                frame = frame.rename({"id": "sample_id"})
            elif frame.height == batch.height:
                frame = frame.with_columns(batch["id"].alias("sample_id"))
            else:
                raise ValueError("frame result has no id/sample_id column and a different length than the batch")
        if "details" in frame.columns and frame.schema["details"] != pl.Utf8:
            frame = frame.with_columns(
                pl.struct(pl.col("details").alias("d")).struct.json_encode().str.slice(5).str.head(-1).alias("details")
            )
        return frame
