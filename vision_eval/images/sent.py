"""What a run sent its models, per caller (the candidate, each evaluator), model and image column: how many images,
their sizes and formats, how many went as the dataset's own bytes and why the others were re-encoded.

run.json keeps it as ``images_sent`` (the dry run too: what would be sent). It counts the requests this process
built; a resumed run's finished batches are not built again, so they are not counted (run.json lists them under
``resumed_batches``).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from vision_eval.images.policy import PreparedImage

SERVICE = "images.sent"
"""The name of the run's tally in ``EvalContext.services``."""
TOP_SIZES = 10
"""Distinct sent sizes listed per column (the most frequent); the smallest and largest are always given."""
T = TypeVar("T")


class Services(Protocol):
    """What holds a run's shared services (an ``EvalContext``)."""

    def service(self, name: str, factory: Callable[[], T]) -> T: ...


@dataclass
class ColumnTally:
    """The images of one column sent to one model."""

    images: int = 0
    source_bytes: int = 0
    re_encoded: Counter[str] = field(default_factory=Counter)
    media_types: Counter[str] = field(default_factory=Counter)
    sizes: Counter[tuple[int, int]] = field(default_factory=Counter)
    largest_source: tuple[int, int] = (0, 0)
    most_bytes: int = 0

    def add(self, image: PreparedImage) -> None:
        self.images += 1
        encoding = str(image.meta.get("encoding", ""))
        if encoding == "source bytes":
            self.source_bytes += 1
        else:
            self.re_encoded[encoding.removeprefix("re-encoded: ")] += 1
        self.media_types[image.media_type] += 1
        self.sizes[(image.width, image.height)] += 1
        source = (image.source_width, image.source_height)
        self.largest_source = max(self.largest_source, source, key=lambda s: s[0] * s[1])
        self.most_bytes = max(self.most_bytes, len(image.data))

    def as_dict(self) -> dict[str, Any]:
        by_area = sorted(self.sizes, key=lambda s: (s[0] * s[1], s))
        return {
            "images": self.images,
            "sent_as_source_bytes": self.source_bytes,
            "re_encoded": dict(self.re_encoded.most_common()),
            "media_types": dict(self.media_types.most_common()),
            "sizes": {f"{w}x{h}": n for (w, h), n in self.sizes.most_common(TOP_SIZES)},
            "smallest": list(by_area[0]) if by_area else None,
            "largest": list(by_area[-1]) if by_area else None,
            "largest_source": list(self.largest_source) if self.images else None,
            "most_bytes": self.most_bytes,
        }


@dataclass
class ModelTally:
    """The images one caller sent one model."""

    sizing: set[str] = field(default_factory=set)
    policy: dict[str, Any] = field(default_factory=dict)
    columns: dict[str, ColumnTally] = field(default_factory=dict)


class SentImages:
    """A thread-safe tally of the images a run sent, by caller, model and column."""

    def __init__(self) -> None:
        self._by: dict[tuple[str, str], ModelTally] = {}
        self._lock = threading.Lock()

    def add(self, caller: str, model: str, images: list[PreparedImage]) -> None:
        """Count ``images``, sent (or planned) by ``caller`` (``candidate`` or an evaluator's name) to ``model``."""
        if not images:
            return
        with self._lock:
            tally = self._by.setdefault((caller, model), ModelTally())
            for image in images:
                tally.sizing.add(str(image.meta.get("sizing", "")))
                tally.policy = image.meta.get("policy", tally.policy)
                tally.columns.setdefault(image.column or "images", ColumnTally()).add(image)

    def as_dict(self) -> dict[str, Any]:
        """``{caller: {model: {sizing, policy, columns: {column: counts}}}}`` for run.json."""
        with self._lock:
            out: dict[str, Any] = {}
            for (caller, model), tally in sorted(self._by.items()):
                out.setdefault(caller, {})[model] = {
                    "sizing": sorted(tally.sizing),
                    "policy": tally.policy,
                    "columns": {name: column.as_dict() for name, column in tally.columns.items()},
                }
            return out


def sent_images_of(context: Services | None) -> SentImages | None:
    """The run's tally of sent images (created on first use), or ``None`` without a run context."""
    return context.service(SERVICE, SentImages) if context is not None else None


def sent_record(context: Services | None) -> dict[str, Any]:
    """run.json's ``images_sent``: the run's tally as a dict (empty when nothing was sent)."""
    sent = sent_images_of(context)
    return sent.as_dict() if sent is not None else {}
