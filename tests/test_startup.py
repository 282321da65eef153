"""Start-up stays cheap: a judge run on the direct path never imports litellm, looking up one evaluator type imports
only the module that defines it (the index read from the sources matches the registrations), and the listing
commands import nothing they do not print (benchmarks/bench_startup.py measures what that saves)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys

import pytest

from vision_eval.testing.fake_providers import FakeProviders

DIRECT_RUN = """
import sys
import vision_eval as ve
rows = [{"id": f"r{i}", "input": "Is it red?", "output": f"red {i}"} for i in range(5)]
judge = {"model": "openai/gpt-4o-mini", "api_base": sys.argv[1], "api_key": "k", "cache": False}
result = ve.evaluate(rows, evaluators={"j": {"type": "llm_rubric", "rubric": "says red", "images": []}},
                     judge=judge, run={"progress": False})
assert result.results["status"].to_list() == ["processed"] * 5, result.results
assert result.results["cost_usd"].min() > 0  # priced from litellm's price map, read as data
heavy = [m for m in ("litellm", "numpy", "scipy", "pyarrow", "duckdb") if m in sys.modules]
print(",".join(heavy) or "none")
"""


def test_a_direct_path_judge_run_imports_no_litellm(fresh_fake: FakeProviders, subprocess_env: dict) -> None:
    fresh_fake.push(*[{"reply": '{"reason": "it says red", "pass": true, "score": 1}'}] * 5)
    proc = subprocess.run([sys.executable, "-c", DIRECT_RUN, fresh_fake.openai_base], capture_output=True,
                          text=True, timeout=120, env=subprocess_env)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "none"
    assert fresh_fake.calls == 5


def test_looking_up_a_type_imports_only_its_module(subprocess_env: dict) -> None:
    code = (
        "import sys\n"
        "from vision_eval.registry import get\n"
        "get('exact_match'); get('llm_judge')\n"
        "print(sorted(m for m in sys.modules if m.startswith('vision_eval.evaluators.')))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=subprocess_env)
    assert proc.returncode == 0, proc.stderr
    loaded = [
        m for m in ast.literal_eval(proc.stdout.strip()) if not m.endswith(("graded", "text"))
    ]  # their packages aside
    assert loaded == ["vision_eval.evaluators.graded.llm_judge", "vision_eval.evaluators.text.text_match"]


COMMAND_PROBE = """
import json, runpy, sys
watched = set(sys.argv[1].split(","))

class Probe:  # says on stdout, in order with what the command prints, when a watched package is first looked for
    def find_spec(self, name, path=None, target=None):
        if name in watched:
            watched.discard(name)
            sys.stdout.write(f"<<import {name}>>\\n")
            sys.stdout.flush()
        return None

sys.meta_path.insert(0, Probe())
sys.argv = ["vision-eval", *sys.argv[2:]]
try:
    runpy.run_module("vision_eval.cli", run_name="__main__")
except SystemExit as exc:
    code = exc.code
sys.stdout.flush()
print(json.dumps({"code": code, "modules": sorted(sys.modules)}), file=sys.__stderr__)
"""
ENGINE = ("hydra", "omegaconf", "polars", "pydantic", "numpy", "pyarrow", "PIL", "jinja2", "litellm")
"""Third-party packages the run loads; a listing prints none of what they are for."""


def run_command(args: list[str], env: dict[str, str]) -> tuple[str, int, set[str]]:
    """``vision-eval <args>`` in a fresh interpreter: its stdout (with a ``<<import pkg>>`` line where each of
    :data:`ENGINE` was first imported), exit code and every module it imported."""
    proc = subprocess.run([sys.executable, "-c", COMMAND_PROBE, ",".join(ENGINE), *args], capture_output=True,
                          text=True, timeout=120, env=env)  # fmt: skip
    report = json.loads(proc.stderr.strip().splitlines()[-1])
    return proc.stdout, report["code"], set(report["modules"])


def evaluator_modules(modules: set[str]) -> list[str]:
    """The evaluator modules (not their family packages) among ``modules``."""
    return sorted(m for m in modules if m.startswith("vision_eval.evaluators.") and m.count(".") >= 3)


def test_list_imports_no_evaluator_and_nothing_of_the_engine(subprocess_env: dict) -> None:
    stdout, code, modules = run_command(["list"], subprocess_env)
    assert code == 0
    assert "exact_match" in stdout and "Judge files" in stdout  # it printed the whole listing...
    assert "<<import" not in stdout  # ...without Hydra, Polars, pydantic...
    assert sorted(set(ENGINE) & modules) == []
    assert evaluator_modules(modules) == []  # ...or one evaluator module: docstrings are read from the sources
    assert not {"vision_eval.evaluator", "vision_eval.config", "vision_eval.engine", "vision_eval.api"} & modules


def test_describe_imports_the_one_type_it_describes(subprocess_env: dict) -> None:
    stdout, code, modules = run_command(["describe", "exact_match"], subprocess_env)
    assert code == 0 and "exact_match (family: text)" in stdout
    assert evaluator_modules(modules) == ["vision_eval.evaluators.text.text_match"]
    # its settings are a pydantic model and its base reads Polars batches; the run's machinery stays out
    assert sorted({"hydra", "omegaconf", "jinja2", "litellm", "numpy", "PIL"} & modules) == []
    assert not {"vision_eval.config", "vision_eval.engine", "vision_eval.api"} & modules


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_prints_what_the_tool_is_before_hydra_is_imported(flag: str, subprocess_env: dict) -> None:
    stdout, code, _ = run_command([flag], subprocess_env)
    assert code in (0, None)
    before_hydra, marker, hydra_help = stdout.partition("<<import hydra>>")
    assert marker and "vision-eval list" in before_hydra and "Commands:" in before_hydra
    assert "<<import" not in before_hydra  # nothing of the engine before the header either
    assert "Powered by Hydra" in hydra_help or "== Flags ==" in hydra_help
