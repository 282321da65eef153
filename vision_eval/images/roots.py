"""Which local files a dataset's rows may name as images, and reading them only after that check.

A dataset's row never chooses which local files are read: a relative path resolves inside the dataset root (the
dataset file's folder or ``dataset.image_root``; for rows from Python the working directory) and must stay there
after symlinks are resolved; an absolute path or a ``file://`` URI must fall, after symlinks are resolved, under the
dataset root (local datasets only) or a folder of ``dataset.image_roots``. Hub datasets (a hub id or an HF
``Dataset`` object) have no local root: their absolute paths name files of the machine that built the dataset, so
only ``dataset.image_roots`` admits them, and a relative path is read from the first of them that holds it (an HF
``Dataset`` built in a notebook from relative file paths needs nothing else). Rows built in Python (a list of dicts,
a Polars or pandas frame) are the caller's own values: their absolute paths are read as given unless
``dataset.image_roots`` is set.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vision_eval.images.media import too_many_bytes


@dataclass(frozen=True)
class ImageRoots:
    """The folders image paths may point into."""

    base: Path | None
    """Folder relative paths resolve against and must stay inside (``None``: relative paths are refused)."""
    allowed: tuple[Path, ...] = ()
    """Folders (symlinks resolved) that absolute paths and ``file://`` URIs may point into."""
    anywhere: bool = False
    """Absolute paths and ``file://`` URIs may point anywhere (rows built in Python, no ``image_roots`` set)."""

    @classmethod
    def for_dataset(
        cls,
        root: Path | str | None,
        image_roots: Iterable[str | Path] = (),
        *,
        local: bool = True,
        confined: bool = True,
    ) -> ImageRoots:
        """The roots of a dataset: ``root`` (default for local data: the working directory) and ``image_roots``;
        ``local=False`` for hub datasets, ``confined=False`` for rows built in Python."""
        if root is not None:
            base: Path | None = Path(root).expanduser().resolve()
        else:
            base = Path.cwd().resolve() if local else None
        extra = [Path(p).expanduser().resolve() for p in image_roots]
        allowed = [base] if local and base is not None else []
        return cls(base, tuple(dict.fromkeys(allowed + extra)), anywhere=not confined and not extra)

    def allows(self, resolved: Path) -> bool:
        """True when ``resolved`` (an absolute path without symlinks) is inside an allowed folder."""
        return self.anywhere or any(resolved.is_relative_to(folder) for folder in self.allowed)

    def resolve(self, raw: str) -> tuple[Path | None, str | None]:
        """``(resolved path, None)`` when ``raw`` may be read, else ``(None, reason)``."""
        if "\x00" in raw:
            return None, "image path contains a NUL character"
        try:
            candidate = Path(raw).expanduser()
            if candidate.is_absolute():
                resolved = candidate.resolve()
                if not self.allows(resolved):
                    return None, (
                        f"image path {raw!r} is outside the dataset root and dataset.image_roots: not allowed "
                        f"(dataset.image_roots=['{resolved.parent}'] would admit it)"
                    )
                return resolved, None
            if self.base is None:
                return self._in_image_roots(raw, candidate)
            resolved = (self.base / candidate).resolve()
        except (OSError, RuntimeError, ValueError):
            return None, f"cannot resolve image path {raw!r}"
        # A relative path stays inside the dataset root (or an image root), even for rows built in Python.
        if not any(resolved.is_relative_to(folder) for folder in (self.base, *self.allowed)):
            return None, f"image path {raw!r} escapes the dataset root {str(self.base)!r}"
        return resolved, None

    def _in_image_roots(self, raw: str, candidate: Path) -> tuple[Path | None, str | None]:
        """A relative path of a dataset without a folder of its own (an HF ``Dataset`` built in Python, a hub
        dataset): the first of ``dataset.image_roots`` that holds it, staying inside that root."""
        for root in self.allowed:
            resolved = (root / candidate).resolve()
            if resolved.is_relative_to(root) and resolved.exists():
                return resolved, None
        if self.allowed:
            shown = ", ".join(str(root) for root in self.allowed)
            return None, f"relative image path {raw!r} is in none of dataset.image_roots ({shown})"
        here = Path.cwd().resolve()
        hint = (
            f"dataset.image_roots=['{here}']" if (here / candidate).exists() else "dataset.image_roots=[<its folder>]"
        )
        return None, f"relative image path {raw!r} has no dataset folder to resolve against ({hint} would admit it)"


def as_roots(root: ImageRoots | Path | str | None) -> ImageRoots:
    """``root`` when it is already :class:`ImageRoots`, else the default roots of a local dataset at ``root``."""
    return root if isinstance(root, ImageRoots) else ImageRoots.for_dataset(root)


def roots_of(context: Any) -> ImageRoots:
    """The image roots of an ``EvalContext``: its ``image_roots`` when set, else the default ones of its dataset
    root."""
    roots = getattr(context, "image_roots", None)
    return roots if isinstance(roots, ImageRoots) else as_roots(getattr(context, "dataset_root", None))


def open_checked(path: str) -> int:
    """A read-only descriptor of the regular file at ``path``, an already resolved path: refused (``OSError``)
    when a symlink has appeared on the way since it was checked, or when it is not a regular file (a FIFO, a
    device). Never blocks on a FIFO."""
    if os.path.realpath(path) != path:
        raise OSError(f"image path {path!r} changed since it was checked (a symlink now)")
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    fd = os.open(path, flags)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(f"{path!r} is not a regular file")
    return fd


def read_checked(path: str, max_bytes: int | None = None) -> bytes:
    """The bytes of the file at the resolved ``path`` (see :func:`open_checked`); a file larger than ``max_bytes``
    is not read (:class:`~vision_eval.images.media.ImageError`)."""
    with os.fdopen(open_checked(path), "rb") as handle:
        if max_bytes is not None:
            size = os.fstat(handle.fileno()).st_size
            if size > max_bytes:
                raise too_many_bytes(size, max_bytes)
            data = handle.read(max_bytes + 1)  # (a file that grew since)
            if len(data) > max_bytes:
                raise too_many_bytes(len(data), max_bytes)
            return data
        return handle.read()
