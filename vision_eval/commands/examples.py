"""Examples of the evaluator types whose modules do not hold their own yet (every other type holds its example as
the class attribute ``example``; see :mod:`vision_eval.example`)."""

from __future__ import annotations

from vision_eval.example import Example

EXAMPLES: dict[str, Example] = {
    "bbox_iou": Example(
        {"type": "bbox_iou", "format": "xyxy"},
        [
            {
                "id": "a",
                "output": '[{"label": "cat", "box": [10, 10, 50, 50]}]',
                "expected_output": '[{"label": "cat", "box": [12, 10, 50, 52]}]',
            },
            {
                "id": "b",
                "output": '[{"label": "dog", "box": [0, 0, 20, 20]}]',
                "expected_output": '[{"label": "dog", "box": [30, 30, 60, 60]}]',
            },
        ],
    ),
}
