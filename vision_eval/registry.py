"""The one registry of evaluator types.

Built-in evaluators live in the modules of ``vision_eval.evaluators`` and register
themselves with :func:`register` when imported. Looking up one type imports only the module
that defines it (found by reading the package's sources for ``type_name`` assignments: importing
every module costs about half a second of start-up, numpy and pyarrow included); listing the
types imports them all. Those modules must keep heavy imports (litellm, scipy, PIL) inside
functions so that looking up a type stays cheap.
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


def get(type_name: str) -> type[Evaluator]:
    """The evaluator class registered as ``type_name``; ``KeyError`` if none."""
    if type_name not in _REGISTRY and not _builtins_loaded:
        module = builtin_index().get(type_name)
        if module is not None:
            importlib.import_module(module)
        if type_name not in _REGISTRY:
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
