"""What an evaluator type shows as its working example (``vision-eval describe <type>`` prints it; the test suite
runs every one): the settings, two dataset rows and the files they name. Each type holds its own as the class
attribute ``example``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

IMAGE_NOTE = "any small image file"
"""The content of ``Example.files`` entries that stand for an image (the test suite draws one)."""


@dataclass(frozen=True)
class Example:
    """An evaluator's settings, two dataset rows it runs on (one passing, one not), and the files they name."""

    settings: dict[str, Any]
    """The evaluator's YAML settings, ``type`` included."""
    rows: list[dict[str, Any]]
    """Two dataset rows."""
    files: dict[str, str] = field(default_factory=dict)
    """Relative path -> content (text), or ``IMAGE_NOTE`` for an image the rows reference."""
    note: str = ""
    """One line printed under the example."""


PHOTOS = {"images/cat.png": IMAGE_NOTE, "images/dog.png": IMAGE_NOTE}
"""Two images the model-graded examples' rows show."""
PHOTO_ROWS = [
    {
        "id": "cat",
        "images": ["images/cat.png"],
        "input": "Describe the photo.",
        "output": "A grey cat sleeping on a red sofa.",
        "expected_output": "A cat asleep on a sofa.",
    },
    {
        "id": "dog",
        "images": ["images/dog.png"],
        "input": "Describe the photo.",
        "output": "Two dogs running on a beach.",
        "expected_output": "One dog running on a beach.",
    },
]
"""Two described photos, for the model-graded examples."""
GRADED_NOTE = "Model-graded: without a judge (judge=none) rows are `skipped` with the request they would send."
