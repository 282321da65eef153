"""Each distinct image prepared once per policy in a run: a bounded, thread-safe store of prepared images.

The same photo in many rows, or several evaluators and judges with the same image policy and provider rule, decode
and encode it once: the key is the sha256 of the source bytes, the declared media type and the policy fields and
provider rule that decide the preparation (:func:`vision_eval.images.policy.policy_key`). An unusable image is
remembered too (its reason). Two threads asking for the same image at once prepare it once: the second waits for
the first. The store keeps at most ``max_bytes`` of prepared bytes, dropping the least recently used images first.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import replace
from typing import Any, Protocol, TypeVar

from vision_eval.images.media import ImageError
from vision_eval.images.policy import PreparedImage, policy_key, prepare_image
from vision_eval.images.provider_rules import SERVER, ProviderRule

SERVICE = "images.prepared"
"""The name of the run's store in ``EvalContext.services``."""
MAX_BYTES = 256 * 2**20
"""Prepared bytes a run's store keeps (about 1,500 photos under the default policy)."""

_Entry = PreparedImage | str  # a prepared image, or the reason it cannot be used
T = TypeVar("T")


class Services(Protocol):
    """What holds a run's shared services (an ``EvalContext``)."""

    def service(self, name: str, factory: Callable[[], T]) -> T: ...


class PreparedImages:
    """Prepared images by (source sha256, declared type, policy), least recently used dropped past ``max_bytes``."""

    def __init__(self, max_bytes: int = MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self.bytes_held = 0
        self.prepared = 0
        """Images this store prepared (decoded and encoded), refusals included."""
        self.reused = 0
        """Requests answered from the store (or by waiting for the same image being prepared)."""
        self._done: OrderedDict[tuple[str, str, str], _Entry] = OrderedDict()
        self._pending: dict[tuple[str, str, str], Future[_Entry]] = {}
        self._lock = threading.Lock()

    def prepare(
        self, data: bytes, policy: Any, declared: str | None = None, label: str = "", *, rule: ProviderRule = SERVER
    ) -> PreparedImage:
        """``prepare_image(data, policy, declared, label, rule=rule)``, prepared once per distinct image, policy and
        provider rule."""
        source_sha256 = hashlib.sha256(data).hexdigest()
        key = (source_sha256, declared or "", policy_key(policy, rule))
        with self._lock:
            entry = self._done.get(key)
            if entry is not None:
                self._done.move_to_end(key)
                self.reused += 1
            else:
                waiting = self._pending.get(key)
                if waiting is None:
                    self._pending[key] = Future()
                else:
                    self.reused += 1
        if entry is None:
            entry = waiting.result() if waiting is not None else self._prepare(key, data, policy, declared, rule)
        if isinstance(entry, str):
            raise ImageError(entry)
        return replace(entry, label=label)

    def _prepare(
        self, key: tuple[str, str, str], data: bytes, policy: Any, declared: str | None, rule: ProviderRule
    ) -> _Entry:
        entry: _Entry
        try:
            entry = prepare_image(data, policy, declared, source_sha256=key[0], rule=rule)
        except ImageError as exc:
            entry = str(exc)
        except BaseException as exc:  # not a verdict on the image: the waiting threads see the same failure
            with self._lock:
                self._pending.pop(key).set_exception(exc)
            raise
        with self._lock:
            self.prepared += 1
            self._pending.pop(key).set_result(entry)
            self._keep(key, entry)
        return entry

    def _keep(self, key: tuple[str, str, str], entry: _Entry) -> None:
        size = len(entry) if isinstance(entry, str) else len(entry.data)
        if size > self.max_bytes // 8:  # one huge image (a kept source) would push out many
            return
        self._done[key] = entry
        self.bytes_held += size
        while self.bytes_held > self.max_bytes:
            _, dropped = self._done.popitem(last=False)
            self.bytes_held -= len(dropped) if isinstance(dropped, str) else len(dropped.data)


def prepared_images_of(context: Services | None) -> PreparedImages | None:
    """The run's store of prepared images (created on first use), or ``None`` without a run context."""
    return context.service(SERVICE, PreparedImages) if context is not None else None
