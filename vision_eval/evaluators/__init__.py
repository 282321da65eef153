"""Built-in evaluator families, one folder each (``code/``, ``fields/``, ``boxes/``, ``benchmarks/``, ``graded/``,
``agents/``, ``text/``, ``custom/``, ``images/``), one module per rule or group of close rules. Each type is declared
as an entry point in ``pyproject.toml`` (see :mod:`vision_eval.registry`); keep heavy imports inside functions."""
