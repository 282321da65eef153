"""A minimal working example of every shipped evaluator type: its YAML settings and two dataset rows.

``vision-eval describe <type>`` prints them; the test suite runs every one of them (a registered type without an
example fails that test), so each example is known to validate and run as printed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

IMAGE_NOTE = "any small image file"


@dataclass(frozen=True)
class Example:
    """An evaluator's settings, two dataset rows it runs on, and the files those rows or settings name."""

    settings: dict[str, Any]
    rows: list[dict[str, Any]]
    files: dict[str, str] = field(default_factory=dict)
    """Relative path -> content (text), or ``IMAGE_NOTE`` for an image the rows reference."""
    note: str = ""


_PHOTOS = {"images/cat.png": IMAGE_NOTE, "images/dog.png": IMAGE_NOTE}
_PHOTO_ROWS = [
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
_GRADED_NOTE = "Model-graded: without a judge (judge=none) rows are `skipped` with the request they would send."
_TEXT_ROWS = [
    {"id": "a", "output": "5 bottles", "expected_output": "5 bottles"},
    {"id": "b", "output": "three cans", "expected_output": "3 cans"},
]
_CODE_JUDGE = (
    "import json, sys; r = json.load(sys.stdin); "
    "print(json.dumps({'score': float(r['expected_output'].lower() in r['output'].lower())}))"
)
_MY_CHECKS = '''def answer_in_output(row):
    """A score for one row (a dict of its columns): 1.0 when the expected answer appears in the output."""
    return float(str(row["expected_output"]).lower() in str(row["output"]).lower())
'''

EXAMPLES: dict[str, Example] = {
    "exact_match": Example({"type": "exact_match"}, _TEXT_ROWS),
    "contains": Example(
        {"type": "contains", "value": ["total", "due"]},
        [
            {"id": "a", "output": "Total due: $42"},
            {"id": "b", "output": "Total: $42"},
        ],
    ),
    "regex": Example(
        {"type": "regex", "pattern": "^[0-9]+ (bottles|cans)$"},
        [{"id": "a", "output": "5 bottles"}, {"id": "b", "output": "five bottles"}],
    ),
    "python": Example(
        {"type": "python", "function": "my_checks:answer_in_output"},
        [
            {"id": "a", "output": "There are 5 bottles.", "expected_output": "5 bottles"},
            {"id": "b", "output": "I see 4 bottles.", "expected_output": "5 bottles"},
        ],
        files={"my_checks.py": _MY_CHECKS},
        note="my_checks.py sits in the directory you run vision-eval from (or on PYTHONPATH).",
    ),
    "code_judge": Example(
        {"type": "code_judge", "command": ["python3", "-c", _CODE_JUDGE], "columns": ["output", "expected_output"]},
        [
            {"id": "a", "output": "There are 5 bottles.", "expected_output": "5 bottles"},
            {"id": "b", "output": "I see 4 bottles.", "expected_output": "5 bottles"},
        ],
        note="The command reads one row as JSON on stdin and prints {score, ...}; any language works.",
    ),
    "count_validator": Example(
        {"type": "count_validator"},
        [
            {"id": "a", "output": "I count 5 bottles and 3 cans.", "expected_output": "5 bottles, 3 cans"},
            {"id": "b", "output": "4 bottles", "expected_output": "5 bottles"},
        ],
    ),
    "ocr_validator": Example(
        {"type": "ocr_validator", "keywords": ["Proposal"]},
        [
            {"id": "a", "output": "Project Proposal Q1 2026", "expected_output": "Project Proposal Q1 2026"},
            {"id": "b", "output": "Project Propsal Q1 2026", "expected_output": "Project Proposal Q1 2026"},
        ],
    ),
    "json_validator": Example(
        {"type": "json_validator", "number_tolerance": 0.01},
        [
            {
                "id": "a",
                "output": '{"vendor": "Acme", "total": 42.0}',
                "expected_output": '{"vendor": "Acme", "total": 42}',
            },
            {"id": "b", "output": '{"vendor": "Acme"}', "expected_output": '{"vendor": "Acme", "total": 42}'},
        ],
    ),
    "chart_validator": Example(
        {"type": "chart_validator"},
        [
            {
                "id": "a",
                "output": "Revenue reached $2.4M in Q3 2024, up 12%.",
                "expected_output": "$2.4M, 12%, Q3 2024",
            },
            {"id": "b", "output": "Revenue reached $3.1M in Q3 2024.", "expected_output": "$2.4M, 12%, Q3 2024"},
        ],
    ),
    "field_accuracy": Example(
        {
            "type": "field_accuracy",
            "fields": [
                {"path": "vendor", "match": "fuzzy"},
                {"path": "total", "match": "numeric_tolerance", "tolerance": 0.01},
                {"path": "date", "match": "date"},
            ],
        },
        [
            {
                "id": "a",
                "output": '```json\n{"vendor": "ACME Corp", "total": 42.0, "date": "2024-03-05"}\n```',
                "expected_output": '{"vendor": "Acme Corp.", "total": 42, "date": "March 5, 2024"}',
            },
            {
                "id": "b",
                "output": '{"vendor": "Acme", "total": 40}',
                "expected_output": '{"vendor": "Acme Corp.", "total": 42, "date": "2024-03-05"}',
            },
        ],
    ),
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
    "relaxed_accuracy": Example(
        {"type": "relaxed_accuracy"},
        [
            {"id": "a", "output": "12.3", "expected_output": "12"},
            {"id": "b", "output": "15", "expected_output": '["12", "twelve"]'},
        ],
    ),
    "anls": Example(
        {"type": "anls"},
        [
            {"id": "a", "output": "ACME Corp", "expected_output": "Acme Corp."},
            {"id": "b", "output": "May 3", "expected_output": '["5 June", "June 5th"]'},
        ],
    ),
    "vqa_accuracy": Example(
        {"type": "vqa_accuracy"},
        [
            {"id": "a", "output": "Red", "expected_output": '["red", "red", "red", "red", "dark red"]'},
            {"id": "b", "output": "two", "expected_output": '["2", "2", "two", "3"]'},
        ],
    ),
    "pope": Example(
        {"type": "pope"},
        [
            {"id": "a", "output": "Yes, there is a dog in the image.", "expected_output": "yes"},
            {"id": "b", "output": "No.", "expected_output": "yes"},
        ],
    ),
    "exact_count": Example(
        {"type": "exact_count"},
        [{"id": "a", "output": "3", "expected_output": "3"}, {"id": "b", "output": "five", "expected_output": "4"}],
        note="protocol lmms_eval (default): the whole reply must be the count; protocol: lenient reads a number "
        "anywhere in the reply.",
    ),
    "llm_judge": Example(
        {"type": "llm_judge", "prompt": "image-description-judge"},
        _PHOTO_ROWS,
        _PHOTOS,
        note=_GRADED_NOTE + " `vision-eval list` shows the judge files.",
    ),
    "llm_rubric": Example(
        {"type": "llm_rubric", "rubric": "Describes only what is visible in the image."},
        _PHOTO_ROWS,
        _PHOTOS,
        note=_GRADED_NOTE,
    ),
    "g_eval": Example(
        {"type": "g_eval", "criteria": {"accuracy": "Every object mentioned is in the image."}},
        _PHOTO_ROWS,
        _PHOTOS,
        note=_GRADED_NOTE,
    ),
    "factuality": Example({"type": "factuality"}, _PHOTO_ROWS, _PHOTOS, note=_GRADED_NOTE),
    "closed_qa": Example(
        {"type": "closed_qa", "criteria": "Does the description mention the animal's count correctly?"},
        _PHOTO_ROWS,
        _PHOTOS,
        note=_GRADED_NOTE,
    ),
    "context_recall": Example(
        {"type": "context_recall", "context": "context"},
        [
            {
                "id": "a",
                "images": ["images/cat.png"],
                "context": "The chart shows revenue of $2.4M in Q3 2024.",
                "expected_output": "Revenue was $2.4M in Q3 2024.",
            },
            {
                "id": "b",
                "images": ["images/dog.png"],
                "context": "The invoice total is $42.",
                "expected_output": "The total is $40.",
            },
        ],
        _PHOTOS,
        note=_GRADED_NOTE,
    ),
    "context_faithfulness": Example(
        {"type": "context_faithfulness", "context": "context"},
        [
            {
                "id": "a",
                "images": ["images/cat.png"],
                "context": "The chart shows revenue of $2.4M in Q3 2024.",
                "output": "Revenue was $2.4M in Q3.",
            },
            {
                "id": "b",
                "images": ["images/dog.png"],
                "context": "The invoice total is $42.",
                "output": "The total is $40, paid in cash.",
            },
        ],
        _PHOTOS,
        note=_GRADED_NOTE,
    ),
    "select_best": Example(
        {"type": "select_best", "criteria": "The most accurate description", "candidates": ["output", "output_b"]},
        [
            {**_PHOTO_ROWS[0], "output_b": "A cat on a sofa."},
            {**_PHOTO_ROWS[1], "output_b": "A dog on a beach."},
        ],
        _PHOTOS,
        note=_GRADED_NOTE,
    ),
    "image_similarity": Example(
        {"type": "image_similarity", "reference_column": "reference_image", "threshold": 0.9},
        [
            {"id": "a", "images": ["images/cat.png"], "reference_image": "images/cat.png"},
            {"id": "b", "images": ["images/dog.png"], "reference_image": "images/cat.png"},
        ],
        _PHOTOS,
    ),
    "judge_agents": Example(
        {"type": "judge_agents", "agents": ["composition"]},
        [
            {"id": "a", "brief_id": "cola", "brief": "A red soda can centred on white.", "images": ["images/cat.png"]},
            {"id": "b", "brief_id": "cola", "brief": "A red soda can centred on white.", "images": ["images/dog.png"]},
        ],
        _PHOTOS,
        note=_GRADED_NOTE + " Agents are names in conf/agents/ or inline definitions (docs/agents.md).",
    ),
}
