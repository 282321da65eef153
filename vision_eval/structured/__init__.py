"""Structured-output and geometry logic shared by ``field_accuracy``, ``bbox_iou`` and code-judge scripts.

``matching``: the row-wise reference semantics (paths, JSON extraction, exact / numeric / date / fuzzy
comparison, any-order arrays; values and dates in ``values`` and ``dates``). ``candidates``, ``duckpath``,
``fastpath`` and ``datepass``: the same semantics over a whole batch (DuckDB and Polars), tested against the
reference.
``boxes``: box parsing, IoU, Hungarian matching and COCO-style AP.
"""
