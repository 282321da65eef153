"""Downscaled thumbnails embedded in the report as data URIs (each distinct image once)."""

from __future__ import annotations

import base64
import hashlib
import io
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from vision_eval.images.media import ImageError
from vision_eval.images.refs import IMAGES_DTYPE
from vision_eval.images.roots import read_checked


@dataclass(frozen=True)
class SourceLimits:
    """The largest image the report decodes: the run's own limits (``max_source_pixels``, ``max_source_bytes``), so
    an image the run refused as a decompression bomb or an oversized file is never decoded for its thumbnail."""

    max_pixels: int = 100_000_000
    max_bytes: int = 50_000_000

    @staticmethod
    def of_runs(configs: list[Any]) -> SourceLimits:
        """The strictest limits any image policy of these runs' configs (``run.json`` ``config``) sets, the
        defaults where none is recorded."""
        found: dict[str, list[int]] = {"max_source_pixels": [], "max_source_bytes": []}

        def walk(value: Any) -> None:
            if isinstance(value, dict):
                for key, item in value.items():
                    if key in found and isinstance(item, int):
                        found[key].append(item)
                    walk(item)
            elif isinstance(value, list):
                for item in value:
                    walk(item)

        walk(configs)
        default = SourceLimits()
        return SourceLimits(
            min(found["max_source_pixels"], default=default.max_pixels),
            min(found["max_source_bytes"], default=default.max_bytes),
        )


THUMB_BYTES = 12_000
"""About the size of a 256 px JPEG thumbnail of a photo, as a data URI."""
MIN_SIDE = 64


@dataclass(frozen=True)
class Thumb:
    """A thumbnail (``uri``) or the reason there is none (``error``)."""

    uri: str | None
    error: str | None
    width: int = 0
    height: int = 0


def _local_paths(images: pl.Series | None) -> list[str]:
    """The distinct paths of the references (not URLs) in an ``images`` column (lists of references)."""
    if images is None or not isinstance(images.dtype, pl.List) or not isinstance(images.dtype.inner, pl.Struct):
        return []  # no references (an all-empty column has no struct type)
    refs = images.explode().drop_nulls().struct.unnest()
    if "path" not in refs.columns:
        return []
    local = pl.col("source").ne_missing("url") if "source" in refs.columns else pl.lit(True)
    paths = refs.filter(local & pl.col("path").is_not_null() & (pl.col("path") != "")).get_column("path")
    return [str(path) for path in paths.unique().to_list()]


class PathDisplay:
    """How the report names local image files: relative to the dataset root, never as absolute local paths
    (a shared report must not carry the machine's folders). Files outside every root show their name only."""

    def __init__(self, roots: list[str], images: pl.Series | None) -> None:
        self.roots = sorted({str(Path(r)) for r in roots if r}, key=len, reverse=True)
        folders = {os.path.dirname(path) for path in _local_paths(images) if os.path.isabs(path)}
        prefixes = {folder.rstrip(os.sep) + os.sep: self._folder(folder) for folder in folders}
        for root in self.roots:
            prefixes.setdefault(root.rstrip(os.sep) + os.sep, "")
        self.prefixes = dict(sorted(prefixes.items(), key=lambda item: len(item[0]), reverse=True))

    def _folder(self, folder: str) -> str:
        for root in self.roots:
            if folder == root or folder.startswith(root.rstrip(os.sep) + os.sep):
                relative = os.path.relpath(folder, root)
                return "" if relative == "." else relative + "/"
        return ""

    def name(self, path: str) -> str:
        """The displayed name of an image file."""
        folder, base = os.path.split(path)
        return self.prefixes.get(folder.rstrip(os.sep) + os.sep, "") + base if os.path.isabs(path) else path

    def text(self, value: str) -> str:
        """``value`` with every local image folder shown relative to its root."""
        for prefix, shown in self.prefixes.items():
            if prefix in value:
                value = value.replace(prefix, shown)
        return value

    def frame(self, frame: pl.DataFrame, columns: list[str]) -> pl.DataFrame:
        """The same replacement over text columns (vectorized)."""
        present = [c for c in columns if c in frame.columns and frame.schema[c] == pl.Utf8]
        if not self.prefixes or not present:
            return frame
        patterns, shown = list(self.prefixes), list(self.prefixes.values())
        return frame.with_columns(pl.col(c).str.replace_many(patterns, shown, leftmost=True) for c in present)


def _fit(size: tuple[int, int], max_side: int) -> tuple[int, int]:
    """``size`` shrunk to fit a ``max_side`` square, its aspect kept (never enlarged)."""
    width, height = size
    scale = max_side / max(width, height, 1)
    if scale >= 1:
        return size
    return max(1, round(width * scale)), max(1, round(height * scale))


def _encoded(image: Any, **params: Any) -> bytes:
    """``image`` saved with ``params``. Pillow holds the GIL while it encodes into a BytesIO but not while it
    encodes into a file descriptor: an in-memory file (Linux) lets the other threads run meanwhile."""
    try:
        file = open(os.memfd_create("thumbnail", os.MFD_CLOEXEC), "w+b")  # noqa: SIM115 (closed below)
    except (AttributeError, OSError):  # no memfd_create on this platform
        buffer = io.BytesIO()
        image.save(buffer, **params)
        return buffer.getvalue()
    with file:
        image.save(file, **params)
        file.seek(0)
        return file.read()


def thumbnail(
    path: str,
    max_side: int = 256,
    quality: int = 75,
    shown: str | None = None,
    sha256: str | None = None,
    limits: SourceLimits = SourceLimits(),
) -> Thumb:
    """A JPEG (PNG when the image has transparency) data URI of the image at ``path``, upright (EXIF orientation),
    at most ``max_side``; errors name the file as ``shown``. With ``sha256`` (what the run recorded of the image),
    a file whose bytes hash to anything else is not embedded: a run directory (``samples.parquet`` is data, and may
    come from someone else) never makes the report embed some other local file. An image past ``limits`` is not
    read (bytes) or not decoded (pixels, read from its header)."""
    shown = shown or os.path.basename(path)
    from PIL import Image, ImageOps

    try:
        data = read_checked(os.path.realpath(path), limits.max_bytes)
        if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
            return Thumb(None, f"image {shown} is not the image the run recorded (its content differs): not embedded")
        with _opened(data, limits.max_pixels) as image:
            if image.width * image.height > limits.max_pixels:
                return Thumb(None, f"image {shown} not embedded: {image.width:,} x {image.height:,} pixels, more than "
                             f"the run's max_source_pixels ({limits.max_pixels:,})")  # fmt: skip
            target = _fit(image.size, max_side)
            # A JPEG decodes at the smallest DCT scale (1/2, 1/4, 1/8) that still covers the thumbnail: much faster.
            image.draft("RGB", target)
            image.seek(0)
            stored = image.size
            ImageOps.exif_transpose(image, in_place=True)  # no copy when the image is already upright
            if image.size != stored:  # a quarter turn
                target = (target[1], target[0])
            small: Image.Image = image
            if image.size != target:  # area average: its resize 0.4x bicubic's time
                small = image.resize(target, Image.Resampling.BOX, reducing_gap=2.0)
            alpha = small.mode in ("RGBA", "LA", "PA") or (small.mode == "P" and "transparency" in small.info)
            if alpha:
                rgba = small if small.mode == "RGBA" else small.convert("RGBA")
                encoded, mime = _encoded(rgba, format="PNG", optimize=True), "image/png"
            else:
                rgb = small if small.mode == "RGB" else small.convert("RGB")
                encoded, mime = _encoded(rgb, format="JPEG", quality=quality, optimize=True), "image/jpeg"
            width, height = small.size
    except FileNotFoundError:
        return Thumb(None, f"image file not found: {shown}")
    except ImageError as exc:  # more bytes than the run's limit
        return Thumb(None, f"image {shown} not embedded: {exc}")
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        return Thumb(None, f"image {shown} not embedded: more than the run's max_source_pixels ({limits.max_pixels:,})")
    except Exception as exc:  # any undecodable file becomes a placeholder with the reason
        return Thumb(None, f"cannot read image {shown}: {type(exc).__name__}")
    return Thumb(f"data:{mime};base64,{base64.b64encode(encoded).decode('ascii')}", None, width, height)


def _opened(data: bytes, max_pixels: int) -> Any:
    """The image in ``data``, opened (its header read) under Pillow's limit set to ``max_pixels``: a larger image
    raises Pillow's ``DecompressionBombError`` or ``DecompressionBombWarning``, before anything is decoded."""
    from PIL import Image

    from vision_eval.images.media import pillow_limit

    with pillow_limit(max_pixels):
        return Image.open(io.BytesIO(data))


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


def _recorded(key: str) -> str | None:
    """The recorded sha256 when the key is one (keys are the content hash, else the path)."""
    return key if len(key) == 64 and all(c in "0123456789abcdef" for c in key) else None


def _text_field(refs: pl.DataFrame, name: str) -> pl.Expr:
    """A field of the exploded references as text, nulls for empty texts and for a field they lack."""
    if name not in refs.columns:
        return pl.lit(None, pl.Utf8)
    value = pl.col(name).cast(pl.Utf8)
    return pl.when(value != "").then(value)


def wanted_images(cells: pl.Series | list[Any]) -> dict[str, str]:
    """Every distinct readable image of an ``images`` column (lists of references), in order: key -> file (the
    key is the content hash, else the path; see :func:`image_key` and :func:`_unavailable`)."""
    if not isinstance(cells, pl.Series):
        cells = pl.Series("images", cells, dtype=IMAGES_DTYPE, strict=False)
    if not isinstance(cells.dtype, pl.List) or not isinstance(cells.dtype.inner, pl.Struct):
        return {}
    refs = cells.explode().drop_nulls().struct.unnest()
    path, sha256 = _text_field(refs, "path"), _text_field(refs, "sha256")
    readable = _text_field(refs, "error").is_null() & path.is_not_null()
    if "source" in refs.columns:
        readable = readable & pl.col("source").cast(pl.Utf8).ne_missing("url")
    keyed = refs.filter(readable).select(sha256.fill_null(path).alias("key"), path.alias("path"))
    first = keyed.unique("key", keep="first", maintain_order=True)
    return dict(zip(first["key"].to_list(), first["path"].to_list(), strict=True))


def budget_side(count: int, max_side: int, budget: int | None) -> int:
    """The longest thumbnail side that lets ``count`` thumbnails fit in ``budget`` bytes (a JPEG thumbnail's size
    grows with its pixel count: about THUMB_BYTES at 256 px), never under MIN_SIDE."""
    if not budget or not count:
        return max_side
    per_image = budget / count
    expected = THUMB_BYTES * (max_side / 256) ** 2
    if per_image >= expected:
        return max_side
    return max(MIN_SIDE, min(max_side, int(max_side * (per_image / expected) ** 0.5)))


def build_thumbnails(
    images: pl.Series | list[Any],
    max_side: int = 256,
    workers: int | None = None,
    display: PathDisplay | None = None,
    budget: int | None = None,
    limits: SourceLimits = SourceLimits(),
) -> dict[str, Thumb]:
    """Thumbnails for every distinct readable image in an ``images`` column (lists of references), in order.

    ``budget``: most bytes of data URIs; the side shrinks so that every image fits when it can, and the images
    past the budget get a reason instead of a thumbnail."""
    wanted = wanted_images(images)
    if not wanted:
        return {}
    side = budget_side(len(wanted), max_side, budget)
    workers = workers or min(4, os.cpu_count() or 1)
    made: dict[str, Thumb] = {}
    spent = 0
    left = Thumb(None, f"thumbnail not embedded: this report holds at most {(budget or 0) / 1e6:.1f} MB of thumbnails")
    if budget is not None and budget <= 0:  # no thumbnails: no image is read
        return dict.fromkeys(wanted, left)

    def make(key: str, path: str) -> Thumb:
        shown = display.name(path) if display else None
        return thumbnail(path, side, shown=shown, sha256=_recorded(key), limits=limits)

    # Every image is submitted at once (no pause between batches) and the budget is spent in order, so the same
    # images always get a thumbnail; once it is spent, the images not started yet are cancelled.
    with ThreadPoolExecutor(max_workers=workers) as pool:  # Pillow releases the GIL while decoding and encoding
        pending = [(key, pool.submit(make, key, path)) for key, path in wanted.items()]
        for key, future in pending:
            if budget is not None and spent >= budget:
                future.cancel()
                made[key] = left
                continue
            thumb = future.result()
            size = len(thumb.uri or "")
            if budget is not None and spent + size > budget:
                made[key], spent = left, budget  # full: the images after this one are not embedded either
                continue
            made[key] = thumb
            spent += size
    return made


def image_entries(
    cell: list[dict[str, Any]] | None, thumbs: dict[str, Thumb], display: PathDisplay | None = None
) -> list[dict[str, Any]]:
    """What the page shows for one row's images: a thumbnail key or an error, and the file's dataset-relative
    name."""
    entries = []
    for ref in cell or []:
        if not ref:
            continue
        path = ref.get("path")
        local = isinstance(path, str) and path and ref.get("source") != "url"
        name = (display.name(path) if display else Path(path).name) if isinstance(path, str) and local else path
        entry: dict[str, Any] = {"name": name}
        reason = _unavailable(ref)
        if reason is not None and display is not None:
            reason = display.text(reason)
        thumb = thumbs.get(image_key(ref)) if reason is None else None
        if thumb is not None and thumb.uri is not None:
            entry["key"] = image_key(ref)
        else:
            entry["error"] = reason or (thumb.error if thumb else "image not available")
        entries.append(entry)
    return entries
