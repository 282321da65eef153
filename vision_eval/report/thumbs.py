"""Downscaled thumbnails embedded in the report as data URIs (each distinct image once)."""

from __future__ import annotations

import base64
import io
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl


@dataclass(frozen=True)
class Thumb:
    """A thumbnail (``uri``) or the reason there is none (``error``)."""

    uri: str | None
    error: str | None
    width: int = 0
    height: int = 0


def thumbnail(path: str, max_side: int = 256, quality: int = 75) -> Thumb:
    """A JPEG (PNG when the image has transparency) data URI of the image at ``path``, at most ``max_side``."""
    from PIL import Image, ImageOps

    try:
        with Image.open(path) as image:
            image.draft("RGB", (max_side, max_side))  # JPEG decodes at a reduced scale: much faster
            image.seek(0)
            small = ImageOps.exif_transpose(image)
            small.thumbnail((max_side, max_side))
            alpha = small.mode in ("RGBA", "LA", "PA") or (small.mode == "P" and "transparency" in small.info)
            buffer = io.BytesIO()
            if alpha:
                small.convert("RGBA").save(buffer, format="PNG", optimize=True)
                mime = "image/png"
            else:
                small.convert("RGB").save(buffer, format="JPEG", quality=quality, optimize=True)
                mime = "image/jpeg"
            width, height = small.size
    except FileNotFoundError:
        return Thumb(None, f"image file not found: {path}")
    except Exception as exc:  # any undecodable file becomes a placeholder with the reason
        return Thumb(None, f"cannot read image {path}: {type(exc).__name__}: {exc}")
    return Thumb(f"data:{mime};base64,{base64.b64encode(buffer.getvalue()).decode('ascii')}", None, width, height)


def _unavailable(ref: dict[str, Any]) -> str | None:
    """Why a reference cannot be shown without reading it (``None`` when its file can be read)."""
    if ref.get("error"):
        return str(ref["error"])
    source = ref.get("source")
    if source == "url":
        return f"remote image not embedded (the report makes no network requests): {ref.get('path')}"
    if not ref.get("path"):
        return f"image bytes are not stored with the results (source: {source or 'unknown'})"
    return None


def image_key(ref: dict[str, Any]) -> str:
    """The key under which a reference's thumbnail is stored (content hash, else path)."""
    return str(ref.get("sha256") or ref.get("path") or "")


def build_thumbnails(
    images: pl.Series | list[Any], max_side: int = 256, workers: int | None = None
) -> dict[str, Thumb]:
    """Thumbnails for every distinct readable image in an ``images`` column (lists of references)."""
    wanted: dict[str, str] = {}
    for cell in images.to_list() if isinstance(images, pl.Series) else images:
        for ref in cell or []:
            if ref and _unavailable(ref) is None:
                wanted.setdefault(image_key(ref), str(ref["path"]))
    if not wanted:
        return {}
    workers = workers or min(4, os.cpu_count() or 1)
    with ThreadPoolExecutor(max_workers=workers) as pool:  # Pillow releases the GIL while decoding
        made = pool.map(lambda path: thumbnail(path, max_side), wanted.values())
        return dict(zip(wanted, made))


def image_entries(cell: list[dict[str, Any]] | None, thumbs: dict[str, Thumb]) -> list[dict[str, Any]]:
    """What the page shows for one row's images: a thumbnail key or an error, and the file name."""
    entries = []
    for ref in cell or []:
        if not ref:
            continue
        path = ref.get("path")
        entry: dict[str, Any] = {"name": Path(path).name if path and ref.get("source") != "url" else path}
        reason = _unavailable(ref)
        thumb = thumbs.get(image_key(ref)) if reason is None else None
        if thumb is not None and thumb.uri is not None:
            entry["key"] = image_key(ref)
        else:
            entry["error"] = reason or (thumb.error if thumb else "image not available")
        entries.append(entry)
    return entries
