"""The one registry of evaluator types.

Built-in evaluators live in the modules of ``vision_eval.evaluators`` and register
themselves with :func:`register` when imported; the registry imports every module of
that package the first time a type is looked up. Those modules must keep heavy imports
(litellm, scipy, PIL) inside functions so that looking up a type stays cheap.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import TypeVar

from vision_eval.evaluator import Evaluator

E = TypeVar("E", bound=type[Evaluator])

_REGISTRY: dict[str, type[Evaluator]] = {}
_builtins_loaded = False


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
            importlib.import_module(f"{package.__name__}.{module.name}")


def get(type_name: str) -> type[Evaluator]:
    """The evaluator class registered as ``type_name``; ``KeyError`` if none."""
    _load_builtins()
    return _REGISTRY[type_name]


def names() -> list[str]:
    """All registered type names, sorted."""
    _load_builtins()
    return sorted(_REGISTRY)


def registered() -> dict[str, type[Evaluator]]:
    """A copy of the registry."""
    _load_builtins()
    return dict(_REGISTRY)
