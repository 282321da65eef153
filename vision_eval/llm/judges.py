"""Judge files (``evaluators/llm-judges/*-judge.md``: YAML front matter + prompt body) and the one
parser all judges share.

Front matter keys: ``name``, ``description``, ``dimensions`` (key -> weight, or key -> {weight,
description}), ``threshold``, ``scale`` ([min, max] of the scores the judge gives, default [0, 1]),
``details`` (names of the judge-specific lists it reports), optional ``system``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from vision_eval._resources import resource
from vision_eval.llm.replies import find_json_object

JUDGES_DIR = "evaluators/llm-judges"


@dataclass(frozen=True)
class JudgeSpec:
    """A judge definition."""

    name: str
    body: str
    dimensions: dict[str, float]
    descriptions: dict[str, str] = field(default_factory=dict)
    threshold: float = 0.7
    scale: tuple[float, float] = (0.0, 1.0)
    details: tuple[str, ...] = ()
    system: str | None = None
    path: str = ""

    def with_weights(self, override: dict[str, float] | None) -> JudgeSpec:
        """A copy with ``override`` merged into the weights (unknown keys and a zero total are errors)."""
        if not override:
            return self
        unknown = sorted(set(override) - set(self.dimensions))
        if unknown:
            raise ValueError(f"weights: unknown dimension(s) {unknown}; {self.name} has {sorted(self.dimensions)}")
        weights = {**self.dimensions, **{k: float(v) for k, v in override.items()}}
        _check_weights(weights, self.name)
        return JudgeSpec(**{**self.__dict__, "dimensions": weights})

    def response_format(self) -> str:
        """The reply instructions appended to every judge prompt (lists the exact dimension keys)."""
        low, high = self.scale
        scores = ", ".join(f'"{k}": <{low:g}..{high:g}>' for k in self.dimensions)
        details = ", ".join(f'"{k}": [...]' for k in self.details)
        lines = [
            "Respond with exactly one JSON object and nothing else:",
            f'{{"scores": {{{scores}}}, "reasoning": "<why>", "details": {{{details}}}}}',
            f"Every score is a number from {low:g} to {high:g}.",
        ]
        for key, text in self.descriptions.items():
            lines.append(f"- {key}: {text}")
        return "\n".join(lines)


def _check_weights(weights: dict[str, float], name: str) -> None:
    if any(not math.isfinite(w) or w < 0 for w in weights.values()):
        raise ValueError(f"{name}: weights must be finite and >= 0, got {weights}")
    if sum(weights.values()) <= 0:
        raise ValueError(f"{name}: weights sum to zero; at least one dimension needs a positive weight")


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """``(front matter mapping, body)`` of a Markdown file with ``---`` YAML front matter."""
    import yaml

    if not text.startswith("---"):
        return {}, text
    _, head, body = text.split("---", 2)
    data = yaml.safe_load(head) or {}
    if not isinstance(data, dict):
        raise ValueError("front matter must be a mapping")
    return data, body.lstrip("\n")


def judge_path(prompt: str, search: Path | None = None) -> Path:
    """The file for ``prompt``: a path, or a stem in ``evaluators/llm-judges/`` (``-judge``/``.md`` optional)."""
    candidate = Path(prompt).expanduser()
    if candidate.suffix in (".md", ".j2", ".jinja", ".txt") or "/" in prompt:
        if candidate.is_file():
            return candidate.resolve()
        raise FileNotFoundError(f"judge prompt file not found: {prompt}")
    folder = search or resource(JUDGES_DIR)
    for name in (f"{prompt}.md", f"{prompt}-judge.md"):
        if (folder / name).is_file():
            return folder / name
    known = sorted(p.name.removesuffix(".md") for p in folder.glob("*.md"))
    raise FileNotFoundError(f"no judge named {prompt!r} in {folder}; known: {', '.join(known)}")


@lru_cache(maxsize=64)
def _load(path: str, mtime: float) -> JudgeSpec:
    meta, body = split_front_matter(Path(path).read_text(encoding="utf-8"))
    raw_dims = meta.get("dimensions") or {}
    if not isinstance(raw_dims, dict) or not raw_dims:
        raise ValueError(f"{path}: front matter needs 'dimensions' (a mapping of key -> weight)")
    weights: dict[str, float] = {}
    descriptions: dict[str, str] = {}
    for key, value in raw_dims.items():
        if isinstance(value, dict):
            weights[str(key)] = float(value.get("weight", 1.0))
            if value.get("description"):
                descriptions[str(key)] = str(value["description"])
        else:
            weights[str(key)] = float(value)
    name = str(meta.get("name") or Path(path).stem)
    _check_weights(weights, name)
    scale = meta.get("scale") or [0, 1]
    if len(scale) != 2 or float(scale[1]) <= float(scale[0]):
        raise ValueError(f"{path}: scale must be [min, max] with max > min")
    return JudgeSpec(
        name=name,
        body=body,
        dimensions=weights,
        descriptions=descriptions,
        threshold=float(meta.get("threshold", 0.7)),
        scale=(float(scale[0]), float(scale[1])),
        details=tuple(meta.get("details") or ()),
        system=meta.get("system"),
        path=path,
    )


def load_judge(prompt: str, search: Path | None = None) -> JudgeSpec:
    """The judge for a ``prompt:`` setting (stem or path)."""
    path = judge_path(prompt, search)
    return _load(str(path), path.stat().st_mtime)


class ReplyError(ValueError):
    """A judge reply that cannot be scored; the row becomes ``error`` with the raw reply kept."""


@dataclass
class Verdict:
    """A parsed judge reply."""

    score: float
    scores: dict[str, float]
    """Normalized to 0..1 per dimension."""
    reasoning: str
    details: dict[str, Any]
    judge_total: Any = None
    """A total the judge gave itself (kept, not trusted)."""


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip().rstrip("%"))
        except ValueError:
            return None
    return None


def parse_verdict(text: str, spec: JudgeSpec) -> Verdict:
    """Score a judge reply against ``spec``: every dimension present and in range, else ``ReplyError``."""
    obj = find_json_object(text, required_key="scores")
    if obj is None:
        raise ReplyError("judge reply holds no JSON object")
    scores = obj.get("scores")
    if not isinstance(scores, dict):
        raise ReplyError("judge reply has no 'scores' object")
    low, high = spec.scale
    normalized: dict[str, float] = {}
    for key in spec.dimensions:
        if key not in scores:
            raise ReplyError(f"judge reply misses dimension {key!r}")
        value = _number(scores[key])
        if value is None or not math.isfinite(value):
            raise ReplyError(f"dimension {key!r} is not a number: {scores[key]!r}")
        if not low <= value <= high:
            raise ReplyError(f"dimension {key!r} = {value:g} is outside {low:g}..{high:g}")
        normalized[key] = (value - low) / (high - low)
    total_weight = sum(spec.dimensions.values())
    score = sum(normalized[k] * w for k, w in spec.dimensions.items()) / total_weight
    given = obj.get("details")
    details: dict[str, Any] = given if isinstance(given, dict) else {}
    extra = {k: v for k, v in scores.items() if k not in spec.dimensions}
    if extra:
        details = {**details, "extra_scores": extra}
    judge_total = next((obj[k] for k in ("overall", "total", "overall_score", "score") if k in obj), None)
    reasoning = obj.get("reasoning", obj.get("reason", ""))
    return Verdict(
        score=min(1.0, max(0.0, score)),
        scores=normalized,
        reasoning=reasoning if isinstance(reasoning, str) else json.dumps(reasoning),
        details=details,
        judge_total=judge_total,
    )
