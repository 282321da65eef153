"""Code lines per package at two git revisions: lines holding code, not blank lines, comments or docstrings (module,
class, function and attribute docstrings: any statement that is a bare string).

    python tools/count_lines.py 97d4b67 HEAD

Every package of ``vision_eval/`` (its top-level modules as ``vision_eval``), then ``tests/reference`` (the frozen
row-wise copies the validators once had), then the groups the line goals are about. Files are read with
``git show REV:path``, so the working tree does not matter.
"""

from __future__ import annotations

import argparse
import ast
import io
import subprocess
import tokenize
from collections import defaultdict
from pathlib import PurePosixPath

NOT_CODE = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}
NOT_CODE |= {tokenize.ENCODING}
GRADING = ["vision_eval/grading/", "vision_eval/evaluators/graded", "vision_eval/evaluators/graded/output_graders.py"]
GRADING += ["vision_eval/evaluators/graded/context_graders.py", "vision_eval/evaluators/graded/select_best.py"]
GRADING += [f"vision_eval/llm/{m}.py" for m in ("graded", "grading", "graders", "grader_prompts", "calibration")]
GRADING += ["vision_eval/llm/reliability.py"]
GROUPS = {
    "validators (+ tests/reference)": ["vision_eval/evaluators/code/", "tests/reference/"],
    "structured": ["vision_eval/structured/", "vision_eval/evaluators/fields/", "vision_eval/evaluators/boxes/"],
    "llm + grading": ["vision_eval/llm/", "vision_eval/grading/"],
    "model grading (llm's, grading/, evaluators')": GRADING,
}
"""The parts the line goal is measured on, as path prefixes (the grading modules lived in ``llm/`` before
``grading/`` existed; the validators' row-wise definitions lived in ``tests/reference``)."""


def git(*args: str) -> str:
    return subprocess.run(["git", *args], check=True, capture_output=True, text=True).stdout


def code_lines(source: str) -> int:
    """Lines with a token that is not a comment, and not inside a statement that is only a string (a docstring)."""
    lines = {
        row
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type not in NOT_CODE
        for row in range(token.start[0], token.end[0] + 1)
    }
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            lines -= set(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return len(lines)


def package_of(path: str) -> str:
    parts = PurePosixPath(path).parts
    if parts[0] == "vision_eval":
        return "/".join(parts[:2]) if len(parts) > 2 else "vision_eval"
    return "/".join(parts[:2])


def count(rev: str) -> dict[str, int]:
    """Code lines per Python file at ``rev``."""
    files = git("ls-tree", "-r", "--name-only", rev, "--", "vision_eval", "tests/reference").split()
    return {path: code_lines(git("show", f"{rev}:{path}")) for path in files if path.endswith(".py")}


def by_package(files: dict[str, int]) -> dict[str, int]:
    totals: dict[str, int] = defaultdict(int)
    for path, lines in files.items():
        totals[package_of(path)] += lines
    return dict(totals)


def table(base: dict[str, int], head: dict[str, int], labels: tuple[str, str], width: int) -> None:
    print(f"{'':<{width}}{labels[0]:>10}{labels[1]:>10}{'change':>9}")
    for name in sorted(set(base) | set(head), key=lambda n: (n.startswith("tests"), n)):
        old, new = base.get(name, 0), head.get(name, 0)
        print(f"{name:<{width}}{old:>10}{new:>10}{new - old:>+9}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base", nargs="?", default="97d4b67")
    parser.add_argument("head", nargs="?", default="HEAD")
    parser.add_argument("--files", metavar="PACKAGE", help="one line per file of this package (vision_eval/llm...)")
    args = parser.parse_args()
    labels, width = (args.base, args.head), 46
    base, head = count(args.base), count(args.head)
    if args.files:
        files = [{k: v for k, v in side.items() if package_of(k) == args.files} for side in (base, head)]
        table(files[0], files[1], labels, width)
        return
    table(by_package(base), by_package(head), labels, width)
    print()
    for group, prefixes in GROUPS.items():
        old, new = (sum(v for k, v in side.items() if k.startswith(tuple(prefixes))) for side in (base, head))
        print(f"{group:<{width}}{old:>10}{new:>10}{new - old:>+9}")
    old, new = (sum(v for k, v in side.items() if k.startswith("vision_eval/")) for side in (base, head))
    print(f"{'vision_eval (all)':<{width}}{old:>10}{new:>10}{new - old:>+9}")


if __name__ == "__main__":
    main()
