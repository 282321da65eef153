"""The one registry: a module that fails to import breaks only its own types; other packages add types through
entry points."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import vision_eval as ve
from vision_eval import registry


def test_a_broken_evaluator_module_breaks_only_its_own_types(tmp_path: Path, subprocess_env: dict) -> None:
    """A built-in module that raises on import (simulated by a copy of the package with one module broken, run in
    a subprocess): its types are a clear config error naming the import error; every other type still runs."""
    import shutil

    package = Path(ve.__file__).parent
    copy = tmp_path / "vision_eval"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
    broken = copy / "evaluators" / "images" / "image_similarity.py"
    source = broken.read_text().replace(
        "from __future__ import annotations\n",
        "from __future__ import annotations\n\nimport a_missing_native_library\n",
        1,
    )
    broken.write_text(source)
    script = textwrap.dedent(
        """
        import vision_eval as ve
        from vision_eval import registry
        from vision_eval.errors import ConfigError
        rows = [{"id": "a", "output": "x", "expected_output": "x"}]
        print(ve.evaluate(rows, evaluators={"e": {"type": "exact_match"}}).results["score"][0])
        try:
            ve.evaluate(rows, evaluators={"s": {"type": "image_similarity"}})
        except ConfigError as exc:
            print("config error:", exc)
        print("listed:", "exact_match" in registry.names(), "image_similarity" in registry.names())
        print("broken:", list(registry.broken()))
        """
    )
    env = {**subprocess_env, "PYTHONPATH": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "1.0"
    assert "evaluator type 'image_similarity' could not be loaded" in lines[1]
    assert "ModuleNotFoundError: No module named 'a_missing_native_library'" in lines[1]
    assert lines[2] == "listed: True False" and lines[3] == "broken: ['vision_eval.evaluators.images.image_similarity']"


def test_other_packages_register_types_by_entry_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A distribution declaring ``[vision_eval.evaluators] shouting = plugin_pkg:Shouting`` (installed metadata,
    found through importlib.metadata) adds a type that loads when its name is looked up."""
    (tmp_path / "plugin_pkg.py").write_text(
        textwrap.dedent(
            """
            import polars as pl
            from vision_eval import EvalOutput, Evaluator

            class Shouting(Evaluator):
                type_name = "shouting"

                def evaluate(self, batch):
                    score = (pl.col("output") == pl.col("output").str.to_uppercase()).cast(pl.Float64)
                    return EvalOutput(batch.select(pl.col("id").alias("sample_id"), score.alias("score")))
            """
        )
    )
    info = tmp_path / "plugin_pkg-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: plugin-pkg\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[vision_eval.evaluators]\nshouting = plugin_pkg:Shouting\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry.index.cache_clear()
    try:
        rows = [{"id": "a", "output": "LOUD"}, {"id": "b", "output": "quiet"}]
        result = ve.evaluate(rows, evaluators={"s": {"type": "shouting"}})
        assert result.results["score"].to_list() == [1.0, 0.0]
        assert "shouting" in registry.names()
    finally:
        registry.index.cache_clear()
        registry._REGISTRY.pop("shouting", None)


def test_every_built_in_type_is_declared_as_an_entry_point_of_its_class() -> None:
    """The entry points are the only way built-ins register: each names a class whose ``type_name`` is the entry's
    name, and every evaluator class with a ``type_name`` in the package is declared (a new one without an entry
    point fails here)."""
    import importlib
    import pkgutil

    import vision_eval.evaluators as package
    from vision_eval.evaluator import Evaluator

    declared = {name: target for name, target in registry.index().items() if target.startswith("vision_eval.")}
    for name, target in declared.items():
        cls = registry.get(name)
        assert f"{cls.__module__}:{cls.__name__}" == target
        assert cls.type_name == name
    found = {}
    for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        loaded = importlib.import_module(module.name)
        for value in vars(loaded).values():
            ours = isinstance(value, type) and issubclass(value, Evaluator) and value.__module__ == module.name
            if ours and value.__dict__.get("type_name"):
                found[value.type_name] = f"{value.__module__}:{value.__name__}"
    assert found == declared
    assert len(declared) >= 26
