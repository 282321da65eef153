"""The one registry of evaluator types.

Built-in evaluators live in the modules of ``vision_eval.evaluators`` and register
themselves with :func:`register` when imported. Looking up one type imports only the module
that defines it (found by reading the package's sources for ``type_name`` assignments: importing
every module costs about half a second of start-up, numpy and pyarrow included); listing the
types imports them all. Those modules must keep heavy imports (litellm, scipy, PIL) inside
functions so that looking up a type stays cheap.

A module that fails to import breaks only its own types: looking one of them up raises
:class:`BrokenEvaluatorType` with the import error; every other type works. Other packages add types
through the ``vision_eval.evaluators`` entry point group (``name = "package.module:Class"``), loaded
when the name is looked up.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from functools import lru_cache
from pathlib import Path
from typing import TypeVar

from vision_eval.evaluator import Evaluator

E = TypeVar("E", bound=type[Evaluator])

ENTRY_POINTS = "vision_eval.evaluators"
"""The entry point group third-party packages register evaluator types in."""

_REGISTRY: dict[str, type[Evaluator]] = {}
_BROKEN: dict[str, str] = {}
"""Module -> why it could not be imported (its types are unavailable, the others are not)."""
_builtins_loaded = False


class BrokenEvaluatorType(KeyError):
    """The module defining an evaluator type failed to import."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def _import(module: str) -> None:
    """Import a module of evaluators, recording (not raising) an import failure."""
    if module in _BROKEN:
        return
    try:
        importlib.import_module(module)
    except Exception as exc:  # a broken module must not break the other types
        _BROKEN[module] = f"{type(exc).__name__}: {exc}"


def register(cls: E) -> E:
    """Class decorator: make ``cls`` available under ``cls.type_name``."""
    name = cls.type_name
    if not name:
        raise ValueError(f"{cls.__name__} has no type_name")
    existing = _REGISTRY.get(name)
    if existing is not None and existing is not cls and existing.__qualname__ != cls.__qualname__:
        raise ValueError(f"evaluator type {name!r} is already registered by {existing.__module__}.{existing.__name__}")
    _REGISTRY[name] = cls
    return cls


def _load_builtins() -> None:
    global _builtins_loaded
    if _builtins_loaded:
        return
    _builtins_loaded = True
    import vision_eval.evaluators as package

    for module in pkgutil.iter_modules(package.__path__):
        if not module.name.startswith("_"):
            _import(f"{package.__name__}.{module.name}")
    for name, entry in plugin_index().items():
        if name not in _REGISTRY:
            _load_plugin(name, entry)


_TYPE_NAME = re.compile(r"^\s+type_name(?:\s*:[^=\n]+)?\s*=\s*[\"']([^\"']+)[\"']", re.MULTILINE)


@lru_cache(maxsize=1)
def builtin_index() -> dict[str, str]:
    """Built-in type name -> the module of ``vision_eval.evaluators`` that defines it (read from the sources)."""
    import vision_eval.evaluators as package

    index: dict[str, str] = {}
    for module in pkgutil.iter_modules(package.__path__):
        if module.name.startswith("_"):
            continue
        for folder in package.__path__:
            source = Path(folder) / f"{module.name}.py"
            if source.is_file():
                for name in _TYPE_NAME.findall(source.read_text(encoding="utf-8")):
                    index.setdefault(name, f"{package.__name__}.{module.name}")
    return index


@lru_cache(maxsize=1)
def plugin_index() -> dict[str, str]:
    """Type name -> ``module:attribute`` of every evaluator other installed packages register."""
    from importlib.metadata import entry_points

    return {entry.name: entry.value for entry in entry_points(group=ENTRY_POINTS)}


def _load_plugin(type_name: str, target: str) -> None:
    module, _, attribute = target.partition(":")
    _import(module)
    if module in _BROKEN:
        return
    cls = getattr(importlib.import_module(module), attribute, None) if attribute else None
    if isinstance(cls, type) and issubclass(cls, Evaluator) and type_name not in _REGISTRY:
        _REGISTRY[type_name] = cls


def _broken(type_name: str) -> str | None:
    """Why ``type_name`` is unavailable, when the module that defines it failed to import."""
    module = builtin_index().get(type_name) or plugin_index().get(type_name, "").partition(":")[0]
    return (
        f"evaluator type {type_name!r} could not be loaded: {module} failed to import ({_BROKEN[module]})"
        if (module in _BROKEN)
        else None
    )


def get(type_name: str) -> type[Evaluator]:
    """The evaluator class registered as ``type_name``; ``KeyError`` if none (:class:`BrokenEvaluatorType`, a
    ``KeyError``, when the module defining it failed to import)."""
    if type_name not in _REGISTRY:
        module = builtin_index().get(type_name)
        if module is not None:
            _import(module)
        elif type_name in plugin_index():
            _load_plugin(type_name, plugin_index()[type_name])
        if type_name not in _REGISTRY:
            _load_builtins()
    if type_name not in _REGISTRY:
        reason = _broken(type_name)
        raise BrokenEvaluatorType(reason) if reason else KeyError(type_name)
    return _REGISTRY[type_name]


def broken() -> dict[str, str]:
    """Modules of evaluators that failed to import, with the error (their types are unavailable)."""
    _load_builtins()
    return dict(_BROKEN)


def names() -> list[str]:
    """All registered type names, sorted (the types of a module that failed to import are missing)."""
    _load_builtins()
    return sorted(_REGISTRY)


def registered() -> dict[str, type[Evaluator]]:
    """A copy of the registry."""
    _load_builtins()
    return dict(_REGISTRY)
