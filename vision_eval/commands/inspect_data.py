"""What ``vision-eval init`` reads from a user's data: which columns map to the canonical ones, and what the
expected outputs look like (JSON objects, numbers, yes/no, answer lists, boxes or plain text)."""

from __future__ import annotations

import json
import re
import statistics
from dataclasses import dataclass, field
from typing import Any

import polars as pl

NAMES: dict[str, tuple[str, ...]] = {
    "id": ("id", "sample_id", "uid", "question_id", "qid", "example_id", "key"),
    "input": ("input", "question", "query", "prompt", "instruction", "instructions"),
    "expected_output": (
        "expected_output",
        "answer",
        "answers",
        "label",
        "labels",
        "gt",
        "ground_truth",
        "groundtruth",
        "target",
        "reference",
        "expected",
        "gold",
        "solution",
    ),
    "output": (
        "output",
        "prediction",
        "predictions",
        "pred",
        "response",
        "model_output",
        "model_answer",
        "completion",
        "generation",
        "generated",
    ),
    "images": ("images", "image", "image_path", "image_paths", "image_file", "img", "picture", "photo", "file_name"),
}
"""Per canonical column, the source names that obviously mean it, most obvious first (compared case-blind)."""

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp", ".gif", ".bmp", ".tif", ".tiff")
_NUMBER = re.compile(r"^[+-]?\d+(?:\.\d+)?$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}|^\d{1,2}/\d{1,2}/\d{2,4}$")


def looks_like_images(series: pl.Series) -> bool:
    """True for a column of image values: HF Image structs, bytes, or paths/URLs ending in an image suffix."""
    dtype = series.dtype
    if isinstance(dtype, pl.Struct) and {f.name for f in dtype.fields} >= {"bytes", "path"}:
        return True
    if dtype in (pl.Binary, pl.Object):
        return True
    values = series.drop_nulls().head(50)
    if isinstance(dtype, pl.List):
        values = values.explode().drop_nulls()
        if isinstance(values.dtype, pl.Struct):
            return {f.name for f in values.dtype.fields} >= {"bytes", "path"}
    if values.dtype != pl.Utf8 or values.len() == 0:
        return False
    lowered = values.str.to_lowercase()
    return bool(lowered.str.contains(r"(\.png|\.jpe?g|\.webp|\.gif|\.bmp|\.tiff?)$|^data:image/").all())


def map_columns(frame: pl.DataFrame) -> dict[str, str]:
    """Source column -> canonical column, for the columns whose names (or, for images, values) make it obvious.
    A canonical column the data already has is never mapped onto."""
    by_lower = {c.lower(): c for c in frame.columns}
    mapping: dict[str, str] = {}
    for canonical, names in NAMES.items():
        if canonical in frame.columns:
            continue
        for name in names:
            source = by_lower.get(name)
            if source is not None and source not in mapping:
                if canonical == "images" and not looks_like_images(frame[source]) and name != "image":
                    continue
                mapping[source] = canonical
                break
    if "images" not in frame.columns and "images" not in mapping.values():
        for column in frame.columns:
            if column not in mapping and looks_like_images(frame[column]):
                mapping[column] = "images"
                break
    return mapping


@dataclass
class Shape:
    """What the expected outputs look like."""

    kind: str
    """``object`` (JSON objects), ``boxes``, ``answers`` (lists of strings), ``number``, ``yes_no``,
    ``short_text``, ``long_text`` or ``none``."""
    keys: dict[str, str] = field(default_factory=dict)
    """``object``: top-level key -> kind of its values (``number``, ``date``, ``text``, ``other``)."""


def _value_kind(values: list[Any]) -> str:
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, int | float) and not isinstance(v, bool) for v in present):
        return "number"
    if present and all(isinstance(v, str) and _DATE.match(v) for v in present):
        return "date"
    if present and all(isinstance(v, str) for v in present):
        return "text"
    return "other"


def _is_box(item: Any) -> bool:
    if isinstance(item, dict):
        item = next((item[k] for k in ("box", "bbox", "xyxy") if k in item), None)
    return isinstance(item, list) and len(item) == 4 and all(isinstance(v, int | float) for v in item)


def expected_shape(series: pl.Series | None) -> Shape:
    """The shape of the expected outputs (a sample of them)."""
    if series is None:
        return Shape("none")
    if series.dtype.is_numeric():
        return Shape("number")
    values = series.drop_nulls().head(200).to_list()
    if not values:
        return Shape("none")
    parsed: list[Any] = []
    for value in values:
        try:
            parsed.append(json.loads(value) if isinstance(value, str) and value.lstrip()[:1] in "{[" else value)
        except ValueError:
            parsed.append(value)
    texts = [str(v) for v in parsed]
    if all(isinstance(p, dict) for p in parsed):
        keys: dict[str, list[Any]] = {}
        for p in parsed:
            for key, value in p.items():
                keys.setdefault(str(key), []).append(value)
        return Shape("object", {k: _value_kind(v) for k, v in keys.items()})
    if all(isinstance(p, list) for p in parsed):
        items = [i for p in parsed for i in p]
        if items and all(_is_box(i) for i in items):
            return Shape("boxes")
        if all(isinstance(i, str | int | float) for i in items):
            return Shape("answers")
    if all(_NUMBER.match(t.strip()) for t in texts):
        return Shape("number")
    if all(t.strip().strip(".").lower() in ("yes", "no") for t in texts):
        return Shape("yes_no")
    words = statistics.median(len(t.split()) for t in texts)
    return Shape("short_text" if words <= 5 else "long_text")
