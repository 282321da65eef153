"""Imports run downward only: the module import graph of ``vision_eval`` (every ``import`` and ``from ... import``,
at module level and inside functions, relative ones resolved; ``if TYPE_CHECKING:`` blocks left out, they never
run) has no cycle, and lower layers never import higher ones (:data:`LAYER_RULES`)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

import vision_eval

PACKAGE = Path(vision_eval.__file__).parent

Graph = dict[str, dict[str, int]]
"""Module -> the modules it imports, each with the line of its first import."""

UPPER = ("vision_eval.engine", "vision_eval.api", "vision_eval.cli", "vision_eval.report", "vision_eval.evaluators")
LAYER_RULES: list[tuple[str, tuple[str, ...]]] = [
    ("vision_eval.llm", UPPER),
    ("vision_eval.images", (*UPPER, "vision_eval.evaluator")),
    ("vision_eval.data", UPPER),
    ("vision_eval.grading", UPPER),
    ("vision_eval.leaderboard", ("vision_eval.report", "vision_eval.compare")),
    ("vision_eval.pairing", (*UPPER, "vision_eval.leaderboard", "vision_eval.compare")),
    ("vision_eval.stats", (*UPPER, "vision_eval.leaderboard", "vision_eval.compare")),
    ("vision_eval.report", ("vision_eval.compare", "vision_eval.commands")),
    ("vision_eval.registry", ("vision_eval.evaluators",)),
    ("vision_eval.rowwise", ("vision_eval.evaluators", "vision_eval.engine")),
    ("vision_eval.evaluators", ("vision_eval.engine", "vision_eval.api", "vision_eval.cli", "vision_eval.report")),
]
"""(modules under this name, the names none of them may import)."""

NOT_CHECKED_FOR_CYCLES: tuple[str, ...] = ()


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _modules(package: Path) -> dict[str, tuple[Path, bool]]:
    """Every module of the package at ``package``: dotted name -> (file, is a package ``__init__``)."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = [package.name, *path.relative_to(package).with_suffix("").parts]
        is_package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement under ``node``, wherever it is, except in the body of ``if TYPE_CHECKING:``."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child
        elif isinstance(child, ast.If) and _type_checking(child.test):
            for statement in child.orelse:
                yield from _imports(ast.Module(body=[statement], type_ignores=[]))
        else:
            yield from _imports(child)


def import_graph(package: Path) -> Graph:
    """The import graph of the package at ``package`` (imports of other packages left out). ``from a import b``
    imports the module ``a.b`` when there is one, else ``a``; ``import a.b.c`` imports the longest known prefix."""
    modules = _modules(package)

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: Graph = {}
    for module, (path, is_package) in modules.items():
        edges = graph.setdefault(module, {})
        for statement in _imports(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(statement, ast.Import):
                targets = [known(alias.name) for alias in statement.names]
            else:
                base = statement.module or ""
                if statement.level:
                    parts = module.split(".") if is_package else module.split(".")[:-1]
                    parts = parts[: len(parts) - statement.level + 1]
                    base = ".".join([*parts, *([statement.module] if statement.module else [])])
                targets = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else known(base)
                    for alias in statement.names
                ]
            for target in targets:
                if target is not None and target != module:
                    edges.setdefault(target, statement.lineno)
    return graph


def cycles(graph: Graph) -> list[tuple[list[str], set[str]]]:
    """Each strongly connected group of modules (Tarjan) with one cycle through it, as ``([a, b, ..., a], group)``."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, {}):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [(_cycle_in(graph, group), group) for group in groups]


def _cycle_in(graph: Graph, group: set[str]) -> list[str]:
    """A shortest cycle through the first module of ``group`` (breadth first, inside the group)."""
    start = min(group)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for target in sorted(graph[node]):
                if target == start:
                    return [*paths[node], start]
                if target in group and target not in paths:
                    paths[target] = [*paths[node], target]
                    following.append(target)
        frontier = following
    raise AssertionError(f"no cycle through {start}")


def _described(graph: Graph, cycle: list[str], group: set[str]) -> str:
    steps = "; ".join(f"{a} -> {b} (line {graph[a][b]})" for a, b in pairwise(cycle))
    others = sorted(group - set(cycle))
    return steps + (f" (other modules in cycles with these: {', '.join(others)})" if others else "")


def layer_violations(graph: Graph) -> list[str]:
    return [
        f"{module} imports {target} (line {line}): {prefix} must not import {forbidden}"
        for prefix, forbidden_all in LAYER_RULES
        for module, edges in sorted(graph.items())
        if _under(module, prefix)
        for target, line in sorted(edges.items())
        for forbidden in forbidden_all
        if _under(target, forbidden)
    ]


def test_vision_eval_has_no_import_cycle() -> None:
    graph = import_graph(PACKAGE)
    assert len(graph) > 20  # the walk found the package
    checked = {
        module: {t: line for t, line in edges.items() if not any(_under(t, p) for p in NOT_CHECKED_FOR_CYCLES)}
        for module, edges in graph.items()
        if not any(_under(module, p) for p in NOT_CHECKED_FOR_CYCLES)
    }
    found = cycles(checked)
    assert not found, "import cycles:\n" + "\n".join(_described(checked, *c) for c in found)


def test_lower_layers_never_import_higher_ones() -> None:
    violations = layer_violations(import_graph(PACKAGE))
    assert not violations, "\n".join(violations)


def test_the_graph_sees_function_level_and_relative_imports_but_not_type_checking_ones(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("from . import b\n")
    (package / "a.py").write_text("def f():\n    from pkg.sub import b\n")
    (package / "sub" / "b.py").write_text("from ..a import f\nimport pkg.sub.c\n")
    (package / "sub" / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.a\nelse:\n    from .. import d\n"
    )
    (package / "d.py").write_text("import os\n")
    graph = import_graph(package)
    assert graph == {
        "pkg": {},
        "pkg.a": {"pkg.sub.b": 2},
        "pkg.d": {},
        "pkg.sub": {"pkg.sub.b": 1},
        "pkg.sub.b": {"pkg.a": 1, "pkg.sub.c": 2},
        "pkg.sub.c": {"pkg.d": 5},
    }
    assert cycles(graph) == [(["pkg.a", "pkg.sub.b", "pkg.a"], {"pkg.a", "pkg.sub.b"})]
    graph["pkg.d"]["pkg.sub.b"] = 1
    [(cycle, group)] = cycles(graph)
    assert cycle == ["pkg.a", "pkg.sub.b", "pkg.a"]
    assert group == {"pkg.a", "pkg.sub.b", "pkg.sub.c", "pkg.d"}
