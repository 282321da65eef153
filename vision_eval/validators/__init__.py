"""Pure extraction and scoring logic of the code validators, shared by the built-in evaluators
(``vision_eval.evaluators.code_validators``) and the standalone scripts in ``evaluators/code-validators/``.

Each ``*_frame`` function takes a frame with ``output`` and ``expected_output`` (and optional extra
columns) plus settings, and returns one row per input row, in order: ``status``, ``score``,
``details`` (JSON text) and ``error``. ``vision_eval.validators.script.validate_one`` runs one
validator on one record (the standalone script protocol).
"""
