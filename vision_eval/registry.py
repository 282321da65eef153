"""The one registry of evaluator types.

Every type, built-in or from another package, is declared the same way: an entry point of the
``vision_eval.evaluators`` group (``type_name = "package.module:Class"``; the built-ins' are in this project's
``pyproject.toml``). Looking up one type imports only the module that defines it; listing the types imports them
all. Evaluator modules keep heavy imports (litellm, scipy, PIL) inside functions so that a lookup stays cheap.

A module that fails to import breaks only its own types: looking one of them up raises
:class:`BrokenEvaluatorType` with the import error; every other type works. :func:`register` adds a class at
run time (a user's own type, defined in a script or a test).
"""

from __future__ import annotations

import importlib
from functools import lru_cache
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from vision_eval.evaluator import Evaluator

E = TypeVar("E", bound="type[Evaluator]")

ENTRY_POINTS = "vision_eval.evaluators"
"""The entry point group evaluator types are declared in."""

_REGISTRY: dict[str, type[Evaluator]] = {}
_BROKEN: dict[str, str] = {}
"""Module -> why it could not be imported (its types are unavailable, the others are not)."""


class BrokenEvaluatorType(KeyError):
    """The module defining an evaluator type failed to import."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def register(cls: E) -> E:
    """Class decorator: make ``cls`` available under ``cls.type_name`` (for types defined at run time)."""
    name = cls.type_name
    if not name:
        raise ValueError(f"{cls.__name__} has no type_name")
    existing = _REGISTRY.get(name)
    if existing is not None and existing is not cls and existing.__qualname__ != cls.__qualname__:
        raise ValueError(f"evaluator type {name!r} is already registered by {existing.__module__}.{existing.__name__}")
    _REGISTRY[name] = cls
    return cls


@lru_cache(maxsize=1)
def index() -> dict[str, str]:
    """Type name -> ``module:Class`` of every declared evaluator type (the first declaration of a name wins)."""
    from importlib.metadata import entry_points

    declared: dict[str, str] = {}
    for entry in entry_points(group=ENTRY_POINTS):
        declared.setdefault(entry.name, entry.value)
    return declared


def _load(type_name: str, target: str) -> None:
    """Import the class ``target`` names and register it as ``type_name`` (an import failure is recorded)."""
    from vision_eval.evaluator import Evaluator  # here: the index alone (`vision-eval list`) needs no pydantic

    module, _, attribute = target.partition(":")
    if module in _BROKEN:
        return
    try:
        loaded = importlib.import_module(module)
    except Exception as exc:  # a broken module must not break the other types
        _BROKEN[module] = f"{type(exc).__name__}: {exc}"
        return
    cls = getattr(loaded, attribute, None) if attribute else None
    if isinstance(cls, type) and issubclass(cls, Evaluator) and type_name not in _REGISTRY:
        _REGISTRY[type_name] = cls


def _load_all() -> None:
    for name, target in index().items():
        if name not in _REGISTRY:
            _load(name, target)


def _broken(type_name: str) -> str | None:
    """Why ``type_name`` is unavailable, when the module that defines it failed to import."""
    module = index().get(type_name, "").partition(":")[0]
    if module not in _BROKEN:
        return None
    return f"evaluator type {type_name!r} could not be loaded: {module} failed to import ({_BROKEN[module]})"


def get(type_name: str) -> type[Evaluator]:
    """The evaluator class registered as ``type_name``; ``KeyError`` if none (:class:`BrokenEvaluatorType`, a
    ``KeyError``, when the module defining it failed to import)."""
    if type_name not in _REGISTRY and type_name in index():
        _load(type_name, index()[type_name])
    if type_name not in _REGISTRY:
        reason = _broken(type_name)
        raise BrokenEvaluatorType(reason) if reason else KeyError(type_name)
    return _REGISTRY[type_name]


def broken() -> dict[str, str]:
    """Modules of evaluators that failed to import, with the error (their types are unavailable)."""
    _load_all()
    return dict(_BROKEN)


def names() -> list[str]:
    """All registered type names, sorted (the types of a module that failed to import are missing)."""
    _load_all()
    return sorted(_REGISTRY)


def added_at_run_time() -> dict[str, type[Evaluator]]:
    """The types :func:`register` added that no entry point declares (nothing is imported)."""
    return {name: cls for name, cls in _REGISTRY.items() if name not in index()}


def registered() -> dict[str, type[Evaluator]]:
    """A copy of the registry."""
    _load_all()
    return dict(_REGISTRY)
