"""The evaluator protocol: settings in, a batch frame in, result frames out.

Deterministic evaluators implement :meth:`Evaluator.evaluate` with column operations
over the whole batch. Model-graded evaluators set ``is_async = True`` and implement
:meth:`Evaluator.aevaluate`; the engine runs them concurrently on one event loop and
hands them the shared :class:`EvalContext` (scheduler, cache, judge settings).

An evaluator declares its settings type once, as the type argument of its base class:
``class CountValidator(Evaluator[CountValidatorSettings])``. That sets ``settings_model`` (the model the config
is validated with) and types ``self.settings`` as that model. A bare ``Evaluator`` subclass gets the base
``EvaluatorSettings`` (or the ``settings_model`` it sets itself).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, cast, get_args, get_origin

import polars as pl
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError
from typing_extensions import TypeVar

from vision_eval.example import Example
from vision_eval.results import DIMENSION_ROW_SCHEMA, FIELD_ROW_SCHEMA, RESULT_ROW_SCHEMA, conform, empty

if TYPE_CHECKING:
    from vision_eval.config import JudgeConfig, RunConfig
    from vision_eval.images.roots import ImageRoots

T = TypeVar("T")


class ColumnMap(BaseModel):
    """Dataset columns an evaluator reads instead of the canonical ones (unset: the canonical column)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    output: str | None = None
    """Column read as ``output`` (the response being judged)."""
    expected_output: str | None = None
    """Column read as ``expected_output`` (the reference)."""
    input: str | None = None
    """Column read as ``input`` (the question or prompt)."""
    images: list[str] | None = None
    """Columns whose images are read as ``images``, in order (one column name is accepted too)."""

    @field_validator("images", mode="before")
    @classmethod
    def _one_column(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    def mapped(self) -> dict[str, list[str]]:
        """Canonical column -> the dataset columns read as it (only the mapped ones)."""
        out: dict[str, list[str]] = {}
        for canonical in ("input", "output", "expected_output"):
            column = getattr(self, canonical)
            if column is not None:
                out[canonical] = [column]
        if self.images is not None:
            out["images"] = list(self.images)
        return out


class EvaluatorSettings(BaseModel):
    """Settings every evaluator accepts. Subclasses add their own fields."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, use_attribute_docstrings=True)

    type: str | None = None
    """Registered evaluator type name (set by the config; informational here)."""

    threshold: float | None = None
    """Score at or above which a processed row passes (within the score range: 0..1, or the grader's ``scale``
    where a type compares raw scores). ``None`` uses the type's default."""

    where: str | None = None
    """Polars SQL predicate selecting the rows this evaluator applies to (e.g. ``task = 'count'``).
    Rows it does not select are reported as ``skipped``."""

    description: str = ""
    """Free text shown in reports."""

    columns: ColumnMap = ColumnMap()
    """Other dataset columns to read as the canonical ones, e.g. ``{expected_output: answer_json}`` or
    ``{images: [photo, sketch]}``, so one dataset can feed evaluators from different columns (checked before
    the run; ``where`` still sees the dataset's own columns)."""

    min_pass_rate: float | None = Field(None, ge=0, le=1)
    """Quality gate: the share of processed rows that pass must be at least this, else the run exits 1."""

    min_mean_score: float | None = Field(None, ge=0, le=1)
    """Quality gate: the mean score of processed rows must be at least this, else the run exits 1."""

    max_error_rate: float | None = Field(None, ge=0, le=1)
    """Reliability gate: the share of ``error`` rows among the rows this evaluator applies to (not skipped)
    may be at most this, else the run exits 3. Default: ``run.max_error_rate``."""

    @model_validator(mode="after")
    def _threshold_in_range(self) -> EvaluatorSettings:
        low, high = getattr(self, "scale", None) or (0.0, 1.0)
        if self.threshold is not None and not low <= self.threshold <= high:
            message = f"{self.threshold:g} is outside the score range {low:g}..{high:g}"
            error = PydanticCustomError("threshold_range", message)
            details = InitErrorDetails(type=error, loc=("threshold",), input=self.threshold)
            raise ValidationError.from_exception_data(type(self).__name__, [details])
        return self


@dataclass
class EvalOutput:
    """What an evaluator returns for a batch."""

    results: pl.DataFrame
    """One row per sample, columns of ``RESULT_ROW_SCHEMA`` (missing ones are filled with nulls)."""
    dimensions: pl.DataFrame | None = None
    """Per-dimension scores (``DIMENSION_ROW_SCHEMA``), or ``None``."""
    fields: pl.DataFrame | None = None
    """Per-field comparisons (``FIELD_ROW_SCHEMA``), or ``None``."""
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)
    """Extra named tables (e.g. ``rankings``); each is written as ``<name>.parquet``."""
    metric_inputs: dict[str, pl.DataFrame] = field(default_factory=dict)
    """Named tables the dataset-level metrics need (e.g. AP's detections): saved with the batch's part (so a
    resumed run has every batch's), handed back to :meth:`Evaluator.summarize` over all batches, never written as
    output files. Keep them compact (a few numeric columns per row)."""

    def conformed(self) -> EvalOutput:
        """The same output with every frame cast to its schema."""
        return EvalOutput(
            results=conform(self.results, RESULT_ROW_SCHEMA),
            dimensions=conform(self.dimensions, DIMENSION_ROW_SCHEMA)
            if self.dimensions is not None
            else empty(DIMENSION_ROW_SCHEMA),
            fields=conform(self.fields, FIELD_ROW_SCHEMA) if self.fields is not None else empty(FIELD_ROW_SCHEMA),
            tables=dict(self.tables),
            metric_inputs=dict(self.metric_inputs),
        )


@dataclass
class EvalContext:
    """Run-wide state shared by all evaluators of a run."""

    dataset_root: Path | None = None
    """Directory that relative image paths resolve against."""
    image_roots: ImageRoots | None = None
    """Where image files may be read from (set with the dataset); ``None``: the dataset root only."""
    judge: JudgeConfig | None = None
    """The run's judge settings, or ``None`` when no judge is configured."""
    run: RunConfig | None = None
    """The run settings (``None`` outside a configured run, e.g. a bare ``EvalContext()``)."""
    dry_run: bool = False
    """Plan only: model-graded evaluators return the requests they would send (``skipped`` rows), send nothing."""
    services: dict[str, Any] = field(default_factory=dict)
    """Shared services created lazily by evaluators (scheduler, cache, ...), keyed by name."""

    def service(self, name: str, factory: Callable[[], T]) -> T:
        """The shared service ``name``, created by ``factory()`` on first use (threads racing here share one)."""
        service = self.services.get(name)
        if service is None:
            service = self.services.setdefault(name, factory())
        return cast(T, service)


SettingsT = TypeVar("SettingsT", bound=EvaluatorSettings, default=EvaluatorSettings, covariant=True)
"""An evaluator's settings model. Covariant: an ``Evaluator[CountValidatorSettings]`` is an ``Evaluator`` (whose
settings are at least ``EvaluatorSettings``), so registries and stacks hold any evaluator as ``Evaluator``."""


class Evaluator(Generic[SettingsT]):
    """Base class of all evaluators.

    Subclasses name their settings model as the type argument (``class X(Evaluator[XSettings])``), set
    ``type_name`` and implement ``evaluate`` (or ``aevaluate`` with ``is_async = True``), then register with
    :func:`vision_eval.registry.register`.
    """

    type_name: ClassVar[str] = ""
    settings_model: ClassVar[type[EvaluatorSettings]] = EvaluatorSettings
    """The model the config's settings are validated with: the type argument of the base class (a subclass may
    also set it directly)."""
    required_columns: ClassVar[tuple[str, ...]] = ("output",)
    default_threshold: ClassVar[float | None] = 1.0
    is_async: ClassVar[bool] = False
    example: ClassVar[Example | None] = None
    """A working example (settings and two rows, one passing): ``vision-eval describe`` prints it and the test suite
    runs it. Every shipped type has one."""
    calls_models: ClassVar[bool] = False
    """True for evaluators whose rows cost model calls: the engine gives them small batches (steady progress,
    checkpoints and budget checks) instead of ``run.batch_size`` rows."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        declared = _declared_settings(cls)
        if declared is None:
            return
        if "settings_model" not in cls.__dict__:
            cls.settings_model = declared
        elif not issubclass(cls.settings_model, declared):
            raise TypeError(
                f"{cls.__name__}.settings_model is {cls.settings_model.__name__}, "
                f"not the {declared.__name__} its base class declares"
            )

    def __init__(self, name: str, settings: SettingsT, context: EvalContext | None = None) -> None:
        self.name = name
        self.settings: SettingsT = settings
        self.context = context or EvalContext()

    @property
    def threshold(self) -> float | None:
        """The effective pass threshold."""
        return self.settings.threshold if self.settings.threshold is not None else self.default_threshold

    def columns_needed(self) -> tuple[str, ...]:
        """Dataset columns this evaluator reads (checked before the run starts)."""
        return self.required_columns

    def nullable_columns(self) -> tuple[str, ...]:
        """Columns of :meth:`columns_needed` a row may leave null (e.g. MMBench's unused option columns): they must
        exist, but a null there is not a missing value."""
        return ()

    def models(self) -> list[JudgeConfig]:
        """The model configs this evaluator calls; checked before the run starts."""
        return []

    def warm_up(self) -> None:
        """One-off work the first batch would otherwise wait for (imports, starting DuckDB, building expressions).
        The run calls it on a background thread of its own once the stack is built, so it overlaps the dataset's
        loading; an exception here is ignored (the batch that needs the work reports it). Default: nothing."""

    def evaluate(self, batch: pl.DataFrame) -> EvalOutput:
        """Score a batch synchronously (vectorized). ``batch`` always has ``id``."""
        raise NotImplementedError(f"{type(self).__name__} does not implement evaluate()")

    async def aevaluate(self, batch: pl.DataFrame) -> EvalOutput:
        """Score a batch asynchronously; the default runs :meth:`evaluate`."""
        return self.evaluate(batch)

    def summarize(self, results: pl.DataFrame) -> dict[str, Any]:
        """Dataset-level metrics over this evaluator's result rows (e.g. AP, F1). Default: none."""
        return {}

    def summarize_from(self, results: pl.DataFrame, inputs: Mapping[str, pl.LazyFrame]) -> dict[str, Any]:
        """Dataset-level metrics of an evaluator whose batches returned ``metric_inputs``: ``inputs`` holds each
        table over every batch, by name (lazy frames read from the saved parts). Default: :meth:`summarize`.

        Keep nothing on the instance between batches: a resumed run evaluates only some of them."""
        return self.summarize(results)

    def finalize(self, results: pl.DataFrame, dimensions: pl.DataFrame) -> dict[str, pl.DataFrame]:
        """Tables computed once over all of this evaluator's rows (rankings, plateaus...). Default: none.

        Each is written as ``<name>.parquet``. Use this, not ``EvalOutput.tables``, for anything that
        needs rows from more than one batch."""
        return {}

    def describe(self) -> dict[str, Any]:
        """A JSON-able description for run.json."""
        return {"type": self.type_name, "threshold": self.threshold}


def _declared_settings(cls: type) -> type[EvaluatorSettings] | None:
    """The settings model ``cls`` names as its base's type argument (``Evaluator[X]`` or a generic evaluator
    base ``Base[X]``), or ``None`` when it names none (a plain subclass, or a type variable)."""
    for base in cls.__dict__.get("__orig_bases__", ()):
        origin = get_origin(base)
        if isinstance(origin, type) and issubclass(origin, Evaluator):
            for argument in get_args(base):
                if isinstance(argument, type) and issubclass(argument, EvaluatorSettings):
                    return argument
    return None
