"""Start-up stays cheap: a judge run on the direct path never imports litellm, and looking up one evaluator
type imports only the module that defines it (the index read from the sources matches the registrations)."""

from __future__ import annotations

import ast
import subprocess
import sys

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
