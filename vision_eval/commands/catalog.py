"""``vision-eval list``: what there is to use, each with one line of description.

Evaluator types (built-in, and your own classes or functions named by ``_target_`` in the evaluator stacks on
the config path), the judge files of ``evaluators/llm-judges/``, the judge agent templates, and the config
group options (dataset presets, evaluator stacks, judges, candidates) of the shipped folder and of every
``--config-dir``.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from vision_eval import registry
from vision_eval._resources import conf_dir, resource

GROUPS = (
    ("dataset", "Dataset presets (dataset=<name>)"),
    ("evaluators", "Evaluator stacks (evaluators=<name>)"),
    ("judge", "Judges (judge=<name>)"),
    ("candidate", "Models under test (candidate=<name>)"),
    ("project", "Projects written by `vision-eval init` (project=<name>; `default` is picked up by itself)"),
)


def first_line(text: str | None) -> str:
    """The first sentence of the first paragraph of a docstring or comment block, on one line."""
    paragraph = re.split(r"\n\s*\n", (text or "").strip(), maxsplit=1)[0]
    joined = " ".join(paragraph.split()).replace("``", "`")
    end = re.search(r"\.(\s|$)", joined)
    return joined[: end.start() + 1] if end and end.start() > 20 else joined


def family(cls: type) -> str:
    """The family of an evaluator class: its folder of ``vision_eval.evaluators`` (``code``, ``fields``,
    ``benchmarks``...; a user class: its module path)."""
    return _family_of_module(cls.__module__)


def _family_of_module(module: str) -> str:
    prefix = "vision_eval.evaluators."
    return module[len(prefix) :].split(".", 1)[0] if module.startswith(prefix) else module


@dataclass
class Entry:
    """One line of the listing."""

    name: str
    family: str
    description: str


def builtin_types() -> list[Entry]:
    """Every declared evaluator type (and every one registered at run time), each described by its class's
    docstring read from its source file: listing imports no evaluator module, nor what they import (Polars,
    pydantic). A class whose docstring is not in its source (inherited, generated, or the file unreadable) is
    imported; one that then fails to import is left out, as a lookup would refuse it."""
    entries = []
    for name, target in registry.index().items():
        module, _, attribute = target.partition(":")
        doc = _source_docstring(module, attribute)
        if doc is None:
            try:
                cls = registry.get(name)
            except KeyError:
                continue
            module, doc = cls.__module__, inspect.getdoc(cls)
        entries.append(Entry(name, _family_of_module(module), first_line(doc)))
    for name, cls in registry.added_at_run_time().items():
        entries.append(Entry(name, family(cls), first_line(inspect.getdoc(cls))))
    return sorted(entries, key=lambda entry: (entry.family, entry.name))


def _source_docstring(module: str, class_name: str) -> str | None:
    """The docstring of the top-level class ``class_name`` in the source file of ``module``, cleaned as
    :func:`inspect.getdoc` cleans it (``None`` when the file or the class or its docstring is not there)."""
    try:
        spec = importlib.util.find_spec(module)  # imports the parent packages only
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    try:
        tree = ast.parse(Path(spec.origin).read_bytes())
    except (OSError, SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            return ast.get_docstring(node, clean=True)
    return None


def _yaml_files(folder: Path) -> Iterator[Path]:
    yield from sorted(folder.glob("*.yaml")) if folder.is_dir() else iter(())


def _targets(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "_target_" and isinstance(item, str):
                yield item
            else:
                yield from _targets(item)
    elif isinstance(value, list):
        for item in value:
            yield from _targets(item)


def user_types(dirs: list[Path]) -> list[Entry]:
    """The ``_target_`` classes and functions named in the evaluator stacks of ``dirs``."""
    found: list[Entry] = []
    seen: set[str] = set()
    for folder in dirs:
        for path in _yaml_files(folder / "evaluators"):
            try:
                data = yaml.safe_load(path.read_text(encoding="utf-8"))
            except (OSError, yaml.YAMLError):
                continue
            for target in _targets(data):
                if target in seen:
                    continue
                seen.add(target)
                from vision_eval.evaluator import Evaluator  # only for a stack that names a `_target_`
                from vision_eval.stack import import_object

                try:
                    obj = import_object(target)
                except Exception as exc:  # a user's module can fail in any way; say so and go on
                    found.append(Entry(target, path.name, f"(cannot import: {type(exc).__name__}: {exc})"))
                    continue
                if inspect.isclass(obj) and issubclass(obj, Evaluator):
                    name = f"{target} (type {obj.type_name})" if obj.type_name else target
                    found.append(Entry(name, family(obj), first_line(inspect.getdoc(obj))))
                else:
                    doc = first_line(inspect.getdoc(obj)) if callable(obj) else "not callable"
                    found.append(Entry(target, "python function", doc))
    return found


def judge_files() -> list[Entry]:
    """The shipped judge prompt files (``type: llm_judge``, ``prompt: <name>``)."""
    from vision_eval.llm.judges import split_front_matter

    entries = []
    for path in sorted(resource("evaluators/llm-judges").glob("*.md")):
        try:
            meta, _ = split_front_matter(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            meta = {}
        dims = ", ".join(str(d) for d in (meta.get("dimensions") or {}))
        entries.append(Entry(path.stem, "", f"{meta.get('description') or ''} Dimensions: {dims}.".strip()))
    return entries


def agent_templates() -> list[Entry]:
    """The shipped judge agents (``type: judge_agents``, ``agents: [<name>]``)."""
    entries = []
    for path in _yaml_files(conf_dir() / "agents"):
        entries.append(Entry(path.stem, "", first_line(_comment(path)).removeprefix("Shipped judge agent: ")))
    return entries


def _comment(path: Path) -> str:
    """The leading comment block of a YAML file, without the ``#``."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        if not line.startswith("# @package"):
            lines.append(line.lstrip("#").strip())
    return "\n".join(lines)


def group_options(group: str, dirs: list[Path]) -> list[Entry]:
    """The options of a config group in ``dirs`` (later folders listed after the shipped one)."""
    entries: dict[str, Entry] = {}
    for folder in dirs:
        for path in _yaml_files(folder / group):
            text = ""
            try:
                data = yaml.safe_load(path.read_text(encoding="utf-8"))
                if isinstance(data, dict) and isinstance(data.get("description"), str):
                    text = data["description"]
            except (OSError, yaml.YAMLError):
                pass
            text = text or first_line(_comment(path))
            where = "" if folder == conf_dir() else str(folder)
            entries.setdefault(path.stem, Entry(path.stem, where, text))
    return list(entries.values())


def _table(entries: list[Entry], with_family: bool = True) -> list[str]:
    if not entries:
        return ["  (none)"]
    name_width = min(max(len(e.name) for e in entries), 34)
    family_width = min(max(len(e.family) for e in entries), 24) if with_family else 0
    lines = []
    for e in entries:
        middle = f"{e.family:<{family_width}}  " if with_family else ""
        lines.append(f"  {e.name:<{name_width}}  {middle}{e.description}".rstrip())
    return lines


def listing(dirs: list[Path]) -> str:
    """The whole ``vision-eval list`` text."""
    out = ["Evaluator types (`vision-eval describe <type>` shows settings, columns and an example):"]
    out += _table(builtin_types())
    user = user_types(dirs)
    if user:
        out += ["", "Your evaluators (`_target_` in the evaluator stacks on the config path):", *_table(user)]
    out += ["", "Judge files in evaluators/llm-judges/ (type: llm_judge, prompt: <name>):"]
    out += _table(judge_files(), with_family=False)
    out += ["", "Judge agents in conf/agents/ (type: judge_agents, agents: [<name>]):"]
    out += _table(agent_templates(), with_family=False)
    for group, title in GROUPS:
        options = group_options(group, dirs)
        if options or group != "project":
            out += ["", f"{title}:", *_table(options)]
    return "\n".join(out)
