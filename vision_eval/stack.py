"""Turn the ``evaluators:`` mapping of a config into evaluator instances (validating everything)."""

from __future__ import annotations

import difflib
import importlib
import inspect
import os
import sys
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from vision_eval import registry
from vision_eval.config import ConfigSources, config_error_from
from vision_eval.errors import ConfigError
from vision_eval.evaluator import EvalContext, Evaluator


def import_object(path: str) -> Any:
    """Import ``module:attr`` or ``module.attr`` (a module on the path, or in the current directory)."""
    if ":" in path:
        module_name, _, attr = path.partition(":")
    else:
        module_name, _, attr = path.rpartition(".")
    if not module_name or not attr:
        raise ImportError(f"{path!r} is not 'module:attribute' or 'module.attribute'")
    try:
        obj: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        # A module next to where the user runs vision-eval (a console script does not put that folder on the path).
        here = os.getcwd()
        if exc.name != module_name.split(".")[0] or here in sys.path:
            raise
        sys.path.append(here)
        obj = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def _resolve_class(
    name: str, spec: Mapping[str, Any], sources: ConfigSources | None
) -> tuple[type[Evaluator], dict[str, Any]]:
    settings = dict(spec)
    target = settings.pop("_target_", None)
    if target is not None:
        key = f"evaluators.{name}._target_"
        try:
            obj = import_object(str(target))
        except (ImportError, AttributeError) as exc:
            raise ConfigError(key, f"cannot import {target!r}: {exc}", _file(key, sources)) from None
        if inspect.isclass(obj) and issubclass(obj, Evaluator):
            settings.setdefault("type", obj.type_name or None)
            return obj, settings
        if callable(obj):
            settings["function"] = str(target)
            settings["type"] = "python"
            return registry.get("python"), settings
        raise ConfigError(key, f"{target!r} is neither an Evaluator subclass nor a function", _file(key, sources))
    type_name = settings.get("type")
    key = f"evaluators.{name}.type"
    if not type_name:
        raise ConfigError(f"evaluators.{name}", "needs a 'type' (registered name) or a '_target_'", _file(key, sources))
    try:
        return registry.get(str(type_name)), settings
    except registry.BrokenEvaluatorType as exc:
        raise ConfigError(key, str(exc), _file(key, sources)) from None
    except KeyError:
        names = registry.names()
        close = difflib.get_close_matches(str(type_name), names, n=3, cutoff=0.5)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        message = (
            f"unknown evaluator type {type_name!r}{hint} (known types: {', '.join(names)}; "
            "`vision-eval list` describes each)"
        )
        raise ConfigError(key, message, _file(key, sources)) from None


def _file(key: str, sources: ConfigSources | None) -> str | None:
    return sources.file_for(key) if sources else None


def build_evaluator(
    name: str, spec: Mapping[str, Any], context: EvalContext, sources: ConfigSources | None = None
) -> Evaluator:
    """One evaluator from its config mapping; raises ``ConfigError`` naming the bad key."""
    if not isinstance(spec, Mapping):
        raise ConfigError(f"evaluators.{name}", "must be a mapping of settings", _file(f"evaluators.{name}", sources))
    cls, settings = _resolve_class(name, spec, sources)
    try:
        model = cls.settings_model.model_validate(settings)
    except ValidationError as exc:
        raise config_error_from(exc, prefix=f"evaluators.{name}", sources=sources, model=cls.settings_model) from None
    try:
        return cls(name, model, context)
    except (ValueError, TypeError, FileNotFoundError) as exc:
        key = f"evaluators.{name}"
        raise ConfigError(key, str(exc), _file(key, sources)) from None


def build_stack(
    specs: Mapping[str, Mapping[str, Any]], context: EvalContext, sources: ConfigSources | None = None
) -> list[Evaluator]:
    """All evaluators of a stack, in config order."""
    return [build_evaluator(str(name), spec, context, sources) for name, spec in specs.items()]
