"""The code validators, one module per rule (its settings, its row function, its evaluator): ``count_validator``
(:mod:`.count`), ``ocr_validator`` (:mod:`.ocr`), ``chart_validator`` (:mod:`.chart`), ``json_validator``
(:mod:`.json_check`); how they read text (:mod:`.text`) and write details (:mod:`.details`).

Each rule is one row function, its only implementation (``count_row``, ``ocr_row``, ``chart_row``, ``json_row``): a
row's values (and the validator's options) in, a :class:`~vision_eval.rowwise.RowResult` out, no Polars (it may run
in a forked worker). :mod:`.script` runs one validator on one record: the protocol of the standalone scripts in
``evaluators/code-validators/``.
"""
