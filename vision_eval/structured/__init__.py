"""Structured-output and geometry logic shared by ``field_accuracy``, ``bbox_iou`` and code-judge scripts.

``matching``: the field comparison rules (paths, JSON extraction, exact / numeric / date / fuzzy comparison,
any-order arrays; values and dates in ``values`` and ``dates``); ``field_row``: ``field_accuracy`` over one row.
``boxes``: box parsing, IoU, Hungarian matching and COCO-style AP.
"""
