"""Structured-output and geometry logic shared by ``field_accuracy``, ``bbox_iou`` and code-judge scripts.

``matching``: the row-wise reference semantics (paths, JSON extraction, exact / numeric / date / fuzzy
comparison, any-order arrays). ``fastpath``: the same semantics vectorized over a batch with Polars.
``boxes``: box parsing, IoU, Hungarian matching and COCO-style AP.
"""
