"""``vision-eval init <dir> [--data <file or folder>]``: a config folder a user then edits.

It reads the data (JSONL, JSON, CSV, Parquet, an imagefolder...), maps the columns whose names make their meaning
obvious onto the canonical ones, picks a starter stack from what the expected outputs look like, and writes
``dataset/``, ``evaluators/``, ``judge/`` and ``project/default.yaml``. The shipped ``config.yaml`` picks up an
optional ``project/default.yaml`` from every config folder, so ``vision-eval --config-dir <dir>`` runs it as is.
"""

from __future__ import annotations

import json
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import yaml

from vision_eval._resources import conf_dir
from vision_eval.commands.inspect_data import Shape, expected_shape, map_columns
from vision_eval.errors import VisionEvalError
from vision_eval.wording import counted

JUDGE_NAME = "my_judge"
EXAMPLE_ROWS = [
    {"id": "q1", "input": "How many bottles are on the shelf?", "output": "5 bottles", "expected_output": "5 bottles"},
    {"id": "q2", "input": "What colour is the car?", "output": "dark blue", "expected_output": "blue"},
]


@dataclass
class Starter:
    """One evaluator of the starter stack."""

    name: str
    settings: dict[str, Any]
    why: str


def project_name(data: Path, taken: set[str]) -> str:
    """A config option name from the data's file name, not clashing with a shipped option."""
    stem = data.name.split(".")[0] if data.is_file() else data.name
    name = re.sub(r"[^a-z0-9_]+", "_", stem.lower()).strip("_") or "mydata"
    if name[0].isdigit():
        name = f"data_{name}"
    return f"my_{name}" if name in taken else name


def _field(key: str, kind: str) -> dict[str, Any]:
    if kind == "number":
        return {"path": key, "match": "numeric_tolerance", "tolerance": 0.01, "relative": True}
    if kind == "date":
        return {"path": key, "match": "date"}
    if kind == "text":
        return {"path": key, "match": "fuzzy"}
    return {"path": key}


BY_SHAPE: dict[str, tuple[str, dict[str, Any], str]] = {
    "boxes": (
        "boxes",
        {"type": "bbox_iou", "format": "xyxy"},
        "expected outputs are boxes: IoU-matched (check `format`: xyxy, xywh or cxcywh)",
    ),
    "answers": ("answer", {"type": "anls"}, "expected outputs are lists of answers: best similarity over them (ANLS)"),
    "count": (
        "count",
        {"type": "exact_count", "protocol": "lenient"},
        "expected outputs are whole numbers: protocol lenient reads the count anywhere in the reply (digits or a "
        "number word); protocol lmms_eval is CountBench's reading, where a reply that is not just the number is "
        "unreadable",
    ),
    "number": (
        "number",
        {"type": "relaxed_accuracy"},
        "expected outputs are numbers: within 5% (ChartQA's relaxed accuracy)",
    ),
    "yes_no": ("yes_no", {"type": "pope"}, "expected outputs are yes/no: the yes or no of the reply"),
    "short_text": (
        "exact",
        {"type": "exact_match"},
        "expected outputs are short texts: equal after case and whitespace normalization",
    ),
    "long_text": ("similarity", {"type": "ocr_validator"}, "expected outputs are longer texts: normalized similarity"),
}
"""The evaluator comparing ``output`` with ``expected_output``, by the shape of the expected outputs."""
IMAGE_JUDGE = Starter(
    "image_judge",
    {"type": "llm_judge", "prompt": "image-description-judge"},
    "there are images: a vision judge grades the output against them (rows are `skipped`, with the request they "
    "would send, until you pick a judge)",
)
RUBRIC = Starter(
    "rubric",
    {"type": "llm_rubric", "rubric": "The output answers the input correctly."},
    "no expected outputs: a model grades the output against a rubric (skipped until you pick a judge)",
)


def starter_stack(shape: Shape, numbers_are_counts: bool, has_output: bool, has_images: bool) -> list[Starter]:
    """Evaluators that fit the data: one comparing ``output`` with ``expected_output`` by the latter's shape, and a
    vision judge when there are images."""
    stack: list[Starter] = []
    kind = "count" if shape.kind == "number" and numbers_are_counts else shape.kind
    if kind == "object":
        fields = [_field(key, value_kind) for key, value_kind in shape.keys.items()]
        why = "expected outputs are JSON objects: their top-level keys compared field by field"
        stack.append(Starter("fields", {"type": "field_accuracy", "fields": fields}, why))
    elif kind in BY_SHAPE:
        name, settings, why = BY_SHAPE[kind]
        stack.append(Starter(name, dict(settings), why))
    if has_images:
        stack.append(IMAGE_JUDGE)
    elif kind == "none" and has_output:
        stack.append(RUBRIC)
    return stack


TASK_COLUMNS = ("task", "task_type", "type", "kind", "subtask")
"""Column names that say which task a row belongs to; rows are then grouped, one starter per task."""
MAX_TASKS = 12


@dataclass
class TaskGroup:
    """The rows of one task (all rows when the data has no task column)."""

    value: str | None
    """The task column's value, or ``None`` for the whole data."""
    shape: Shape
    counts: bool
    """Every expected output is a whole number (a count)."""


def task_column(frame: Any) -> str | None:
    """The column naming each row's task, when the data has one with 2 to ``MAX_TASKS`` text values."""
    by_lower = {c.lower(): c for c in frame.columns}
    for name in TASK_COLUMNS:
        column = by_lower.get(name)
        if column is not None and frame.schema[column] == pl.Utf8 and 2 <= frame[column].n_unique() <= MAX_TASKS:
            return str(column)
    return None


def grouped_stack(groups: list[TaskGroup], column: str | None, has_output: bool, has_images: bool) -> list[Starter]:
    """One starter per task (with ``where: "<column> = '<task>'"``), or one for the whole data."""
    if column is None or len(groups) < 2:
        only = groups[0] if groups else TaskGroup(None, Shape("none"), False)
        return starter_stack(only.shape, only.counts, has_output, has_images)
    stack: list[Starter] = []
    for group in groups:
        value = str(group.value)
        for starter in starter_stack(group.shape, group.counts, has_output, has_images=False):
            label = value if starter.name in value.lower() else f"{value}_{starter.name}"
            name = re.sub(r"[^a-z0-9_]+", "_", label.lower()).strip("_")
            quoted = value.replace("'", "''")
            settings = {**starter.settings, "where": f"{column} = '{quoted}'"}
            stack.append(Starter(name, settings, f"{column} {value}: {starter.why}"))
    if has_images:
        stack.append(IMAGE_JUDGE)
    return stack


def _yaml(value: Any) -> str:
    return yaml.safe_dump(value, sort_keys=False, allow_unicode=True, width=110)


def _comment(text: str) -> str:
    lines = [wrapped for line in text.splitlines() for wrapped in (textwrap.wrap(line, 110) or [""])]
    return "".join(f"# {line}\n" if line else "#\n" for line in lines)


def _dataset_yaml(data: Path, frame: Any, mapping: dict[str, str], name: str, folder: Path) -> str:
    described = ", ".join(f"{c} ({frame.schema[c]})" for c in frame.columns)
    head = (
        f"{name}: written by `vision-eval init` from {data.name} ({counted(frame.height, 'row')} read).\n"
        f"Columns: {described}.\n"
        "`path` is relative to this config folder. `columns` maps source columns onto the canonical ones (id, input,\n"
        "output, expected_output, images);\n"
        "unmapped columns stay as metadata, usable in `where:` filters and judge prompts."
    )
    body: dict[str, Any] = {"path": _relative_path(data, folder)}
    if mapping:
        body["columns"] = mapping
    body["description"] = f"{data.name} (vision-eval init)"
    return _comment(head) + _yaml(body)


def _relative_path(data: Path, folder: Path) -> str:
    """The data's path as the dataset file writes it: relative to the config folder (a relative ``dataset.path``
    that names nothing from the working folder is read from the config folder: ``api.dataset_from_config_folder``),
    so the folder and its data can move together."""
    import os

    try:
        return os.path.relpath(data, folder.resolve())
    except ValueError:  # another drive
        return str(data)


def _stack_yaml(stack: list[Starter], name: str) -> str:
    head = (
        f"Starter stack for {name}, written by `vision-eval init`. Edit, add or remove evaluators:\n"
        "`vision-eval list` shows every type and judge, `vision-eval describe <type>` its settings and an example.\n"
        "Every evaluator also takes `threshold`, `where` (a filter on the dataset's columns) and `columns`\n"
        "(read other columns as output / expected_output / input / images)."
    )
    text = _comment(head)
    for starter in stack:
        text += "\n" + _comment(starter.why) + _yaml({starter.name: starter.settings})
    if not stack:
        text += "{}\n"
    return text


JUDGE_YAML = f"""\
# A judge for the model-graded evaluators: `vision-eval --config-dir <this folder> judge={JUDGE_NAME}`, or uncomment
# the judge line of project/default.yaml. Any litellm model id works (anthropic/..., gemini/..., bedrock/...);
# a local OpenAI-compatible server (vLLM, Ollama): model: hosted_vllm/<name>, api_base: http://localhost:8000/v1,
# api_key_env: null. The key is read from the environment variable named here and never written to any output.
model: openai/gpt-4o-mini
api_key_env: OPENAI_API_KEY
temperature: 0
"""


def _project_yaml(name: str, folder: Path) -> str:
    return f"""\
# @package _global_
# Written by `vision-eval init`. The shipped config picks up project/default.yaml from every --config-dir, so
#   vision-eval --config-dir {folder}
# runs this project; command-line choices still win (e.g. `judge={JUDGE_NAME} run.limit=10`).
defaults:
  - override /dataset: {name}
  - override /evaluators: {name}
  # - override /judge: {JUDGE_NAME}      # grade the model-graded evaluators with judge/{JUDGE_NAME}.yaml

# run:
#   limit: 100            # evaluate at most this many rows
#   max_error_rate: 0.1   # more error rows than this share of an evaluator's rows: exit 3
"""


@dataclass
class InitResult:
    """What ``init`` wrote and found."""

    name: str
    files: list[Path]
    mapping: dict[str, str]
    stack: list[Starter]
    rows: int
    problems: list[str]


def _taken() -> set[str]:
    shipped = conf_dir()
    return {p.stem for group in ("dataset", "evaluators") for p in (shipped / group).glob("*.yaml")}


def _check(dataset: dict[str, Any], stack: list[Starter], dataset_file: Path) -> list[str]:
    """Problems a run of the written config would stop on (none expected): validated as a run would."""
    from vision_eval.api import run_config
    from vision_eval.config import ConfigSources, validate_config

    config = validate_config(
        {"dataset": dataset, "evaluators": {s.name: s.settings for s in stack}, "run": {"dry_run": True}}
    )
    try:
        run_config(config, sources=ConfigSources(files={"dataset": str(dataset_file)}))
    except VisionEvalError as exc:
        return [str(exc)]
    return []


def init_project(folder: Path, data: Path | None, force: bool = False) -> InitResult:
    """Write the config folder; raises ``VisionEvalError`` (nothing written) when the data cannot be read."""
    from vision_eval.config import DatasetConfig
    from vision_eval.data import load_raw
    from vision_eval.data.stream import canonicalize

    folder = folder.expanduser()
    if data is None:
        data = folder / "data" / "example.jsonl"
        if not data.exists() or force:
            data.parent.mkdir(parents=True, exist_ok=True)
            data.write_text("".join(json.dumps(r) + "\n" for r in EXAMPLE_ROWS), encoding="utf-8")
    data = data.expanduser().resolve()
    raw = load_raw(DatasetConfig(path=str(data)), limit=1000)
    mapping = map_columns(raw.frame)
    canonical = canonicalize(raw, DatasetConfig(path=str(data), columns=mapping), limit=1000)
    name = project_name(data, _taken())
    column = task_column(raw.frame)
    values = [None] if column is None else raw.frame[column].unique(maintain_order=True).to_list()
    groups = []
    for value in values:
        rows = canonical if value is None or column is None else canonical.filter(pl.col(column) == value)
        expected = rows["expected_output"] if "expected_output" in rows.columns else None
        shape = expected_shape(expected)
        counts = shape.kind == "number" and bool(
            expected is not None and expected.cast(str).str.strip_chars().str.contains(r"^[0-9]+$").all()
        )
        groups.append(TaskGroup(value, shape, counts))
    has_images = "images" in canonical.columns and bool(canonical["images"].list.len().fill_null(0).gt(0).any())
    stack = grouped_stack(groups, column, "output" in canonical.columns, has_images)

    files = {
        folder / "dataset" / f"{name}.yaml": _dataset_yaml(data, raw.frame, mapping, name, folder),
        folder / "evaluators" / f"{name}.yaml": _stack_yaml(stack, name),
        folder / "judge" / f"{JUDGE_NAME}.yaml": JUDGE_YAML,
        folder / "project" / "default.yaml": _project_yaml(name, folder),
    }
    existing = [p for p in files if p.exists()]
    if existing and not force:
        raise FileExistsError(", ".join(str(p) for p in existing))
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    problems = []
    if "output" not in canonical.columns:
        problems.append(
            "the data has no output column (model responses): add one (or map yours in the dataset file), or let a "
            "model under test write it: candidate=openai (conf/candidate/)"
        )
    else:
        dataset = yaml.safe_load(files[folder / "dataset" / f"{name}.yaml"])
        problems += _check(dataset, stack, folder / "dataset" / f"{name}.yaml")
    return InitResult(name, list(files), mapping, stack, raw.frame.height, problems)
