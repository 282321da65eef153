"""``vision-eval describe <type>``: an evaluator's settings from its pydantic model, the columns it reads and a
minimal working example (YAML settings and two dataset rows; the test suite runs every shipped one)."""

from __future__ import annotations

import difflib
import enum
import inspect
import json
import types
import typing
from typing import Any

import annotated_types
import yaml
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from vision_eval import registry
from vision_eval.commands.catalog import family
from vision_eval.evaluator import EvalContext, Evaluator, EvaluatorSettings
from vision_eval.example import IMAGE_NOTE, Example

_BOUNDS = {
    annotated_types.Ge: ">=",
    annotated_types.Gt: ">",
    annotated_types.Le: "<=",
    annotated_types.Lt: "<",
}


def type_text(annotation: Any) -> str:
    """A readable type: ``float | null``, ``list[str]``, ``one of: a, b``."""
    if annotation is type(None):
        return "null"
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Literal:
        return "one of: " + ", ".join(json.dumps(a) if not isinstance(a, str) else a for a in args)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(type_text(a) for a in args)
    if origin is not None:
        name = getattr(origin, "__name__", str(origin))
        return f"{name}[{', '.join(type_text(a) for a in args)}]" if args else name
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return "one of: " + ", ".join(str(m.value) for m in annotation)
    if annotation is typing.Any:
        return "any"
    return getattr(annotation, "__name__", str(annotation))


def _nested_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _nested_model(arg)
        if found is not None:
            return found
    return None


def default_text(info: FieldInfo) -> str:
    """The default as YAML would write it, or ``required``."""
    if info.is_required():
        return "required"
    value = info.get_default(call_default_factory=True)
    if isinstance(value, BaseModel):
        value = value.model_dump(exclude_defaults=True)
    if value is PydanticUndefined:
        return "required"
    return json.dumps(value, default=str)


def bounds_text(info: FieldInfo) -> str:
    """Numeric bounds of a field (``>= 0, <= 1``)."""
    parts = []
    for meta in info.metadata:
        for kind, symbol in _BOUNDS.items():
            if isinstance(meta, kind):
                parts.append(f"{symbol} {getattr(meta, kind.__name__.lower())}")
    return ", ".join(parts)


def field_lines(model: type[BaseModel], names: list[str], indent: str = "  ") -> list[str]:
    """One entry per field: ``name: type = default (bounds)`` and its docstring, nested models expanded."""
    lines = []
    for name in names:
        info = model.model_fields[name]
        bounds = bounds_text(info)
        head = f"{indent}{name}: {type_text(info.annotation)} = {default_text(info)}"
        lines.append(head + (f"  ({bounds})" if bounds else ""))
        for text in (info.description or "").splitlines():
            lines.append(f"{indent}    {text.strip()}")
        nested = _nested_model(info.annotation)
        if nested is not None and nested is not model:
            lines += field_lines(nested, list(nested.model_fields), indent + "    ")
    return lines


def resolve(name: str) -> type[Evaluator]:
    """The evaluator class for a registered type, or a ``module:Class`` / ``module.Class`` path."""
    try:
        return registry.get(name)
    except KeyError:
        pass
    if ":" in name or "." in name:
        from vision_eval.stack import import_object

        obj = import_object(name)
        if inspect.isclass(obj) and issubclass(obj, Evaluator):
            return obj
        raise ValueError(f"{name!r} is not an Evaluator subclass")
    close = difflib.get_close_matches(name, registry.names(), n=3, cutoff=0.5)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    raise ValueError(f"unknown evaluator type {name!r}{hint} (`vision-eval list` shows every type)")


def columns_read(cls: type[Evaluator], example: Example | None) -> tuple[str, ...]:
    """The columns an instance built from the example (or from no settings) reads."""
    settings = dict(example.settings) if example else {}
    settings.pop("type", None)
    try:
        return cls("example", cls.settings_model.model_validate(settings), EvalContext()).columns_needed()
    except Exception:  # a user class may need settings we cannot guess
        return cls.required_columns


def _yaml(value: Any) -> str:
    return yaml.safe_dump(value, sort_keys=False, allow_unicode=True, width=100).rstrip()


def example_of(cls: type[Evaluator]) -> Example | None:
    """The type's working example, if it has one (every shipped type has)."""
    return cls.example


def describe(name: str) -> str:
    """The whole ``vision-eval describe`` text."""
    cls = resolve(name)
    type_name = cls.type_name or name
    example = example_of(cls)
    doc = inspect.getdoc(cls) or ""
    out = [f"{type_name} (family: {family(cls)})", ""]
    if doc:
        out += [doc, ""]
    columns = columns_read(cls, example)
    out.append(f"Reads columns: {', '.join(columns) or '(none)'} (read others with `columns:`, e.g. "
               "{expected_output: answer})")  # fmt: skip
    threshold = "the judge file's" if type_name == "llm_judge" else cls.default_threshold
    out.append(f"Default threshold: {threshold}  (a processed row passes when score >= threshold)")
    common = list(EvaluatorSettings.model_fields)
    own = [n for n in cls.settings_model.model_fields if n not in common]
    model = cls.settings_model
    extra = model.model_config.get("extra") == "allow"
    out += ["", f"Settings of {type_name}:", *(field_lines(model, own) or ["  (none of its own)"])]
    if extra:
        out.append("  (any other key is passed to your code as its config)")
    out += ["", "Settings every evaluator accepts:", *field_lines(model, common)]
    if example is not None:
        key = f"my_{type_name}"
        out += ["", "Example: an evaluator stack (e.g. my_conf/evaluators/mine.yaml)", ""]
        out += ["  " + line for line in _yaml({key: example.settings}).splitlines()]
        out += ["", "and two dataset rows it runs on (data.jsonl):", ""]
        out += ["  " + json.dumps(row, ensure_ascii=False) for row in example.rows]
        for path, content in example.files.items():
            if content == IMAGE_NOTE:
                out.append(f"  ({path}: {IMAGE_NOTE})")
            else:
                out += ["", f"{path}:", *("  " + line for line in content.splitlines())]
        if example.note:
            out += ["", example.note]
        out += [
            "",
            "Run it: vision-eval --config-dir my_conf dataset.path=data.jsonl evaluators=mine",
        ]
    return "\n".join(out)
