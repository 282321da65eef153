"""Pure extraction and scoring logic of the code validators, shared by the built-in evaluators
(``vision_eval.evaluators.code_validators``) and the standalone scripts in ``evaluators/code-validators/``.

Each validator is one row function, its only implementation: ``count.count_row``, ``ocr.ocr_row``,
``chart.chart_row``, ``json_check.json_row``. It takes a row's values (and the validator's options) and returns a
:class:`~vision_eval.rowwise.RowResult`: ``status``, ``score``, ``details`` (JSON text), ``error`` and, for
json_validator, ``passed``. It uses no Polars (it may run in a forked worker). ``vision_eval.validators.script``
runs one validator on one record (the standalone script protocol).
"""
