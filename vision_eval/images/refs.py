"""Image references in the dataset frame: where an image is, its bytes when in memory, its hash.

Every image value a dataset can hold (a path, a ``file://`` URI, a data URI, raw base64,
bytes, an HF Image struct, a PIL image, an http(s) URL) becomes one ``IMAGE_REF`` struct.
Pixels are not decoded here; a reference that cannot be resolved carries an ``error``
so the rows that need it fail alone, with that reason. Which local files a row may name is decided by
:class:`~vision_eval.images.roots.ImageRoots` (after symlinks are resolved, before anything is opened).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import polars as pl

from vision_eval.images.media import too_many_bytes
from vision_eval.images.roots import ImageRoots, as_roots, open_checked, read_checked

IMAGE_REF = pl.Struct(
    {
        "path": pl.Utf8(),
        "bytes": pl.Binary(),
        "sha256": pl.Utf8(),
        "source": pl.Utf8(),
        "error": pl.Utf8(),
    }
)
"""``path`` (resolved file path or URL), ``bytes`` (in-memory images only), ``sha256`` of the
bytes, ``source`` (path, file_uri, data_uri, base64, bytes, hf, pil, url) and ``error``."""

IMAGES_DTYPE = pl.List(IMAGE_REF)

_DATA_URI = re.compile(r"^data:(?P<mime>[\w/+.-]*)?(?P<params>(;[\w-]+=[^;,]*)*)(?P<b64>;base64)?,(?P<data>.*)$", re.S)
_BASE64 = re.compile(r"^[A-Za-z0-9+/\s]+={0,2}$")
_IMAGE_MAGIC = (b"\x89PNG", b"\xff\xd8\xff", b"GIF8", b"RIFF", b"BM", b"II*\x00", b"MM\x00*")


def _ref(
    path: str | None = None,
    data: bytes | None = None,
    source: str = "path",
    error: str | None = None,
    sha256: str | None = None,
) -> dict[str, Any]:
    if data is not None and sha256 is None:
        sha256 = hashlib.sha256(data).hexdigest()
    return {"path": path, "bytes": data, "sha256": sha256, "source": source, "error": error}


def _file_ref(raw: str, roots: ImageRoots, source: str) -> dict[str, Any]:
    resolved, refused = roots.resolve(raw)
    if resolved is None:
        return _ref(raw, source=source, error=refused)
    if not resolved.is_file():
        missing = f"image file not found: {raw}" if not resolved.exists() else f"image path {raw!r} is not a file"
        return _ref(str(resolved), source=source, error=missing)
    try:
        with open(open_checked(str(resolved)), "rb") as handle:
            digest = hashlib.file_digest(handle, "sha256").hexdigest()
            size = handle.tell()
    except OSError as exc:
        return _ref(str(resolved), source=source, error=f"cannot read image {raw!r}: {exc.strerror or exc}")
    if size == 0:
        return _ref(str(resolved), source=source, error=f"image file is empty: {raw}")
    return _ref(str(resolved), source=source, sha256=digest)


def _file_uri_ref(text: str, roots: ImageRoots) -> dict[str, Any]:
    parsed = urlparse(text)
    if parsed.netloc not in ("", "localhost"):
        return _ref(text, source="file_uri", error=f"file URI {text!r} names another host: not a local file")
    return _file_ref(unquote(parsed.path), roots, "file_uri")


def _decode_base64(text: str) -> bytes | None:
    try:
        return base64.b64decode("".join(text.split()), validate=True)
    except (binascii.Error, ValueError):
        return None


def image_ref(
    value: Any,
    root: ImageRoots | Path | None = None,
    *,
    allow_urls: bool = False,
) -> dict[str, Any] | None:
    """Normalize one image value to an ``IMAGE_REF`` dict (``None`` for a null value); local files only within
    ``root`` (:class:`ImageRoots`, or a folder: the default roots of a local dataset there)."""
    roots = as_roots(root)
    if value is None:
        return None
    if isinstance(value, bytes | bytearray | memoryview):
        data: bytes | None = bytes(value)
        return _ref(data=data, source="bytes", error=None if data else "image bytes are empty")
    if isinstance(value, dict):
        if set(value) >= {"path", "bytes", "sha256", "source", "error"}:
            return value  # already a reference
        data = value.get("bytes")
        if data:
            return _ref(value.get("path"), bytes(data), source="hf")
        if value.get("path"):
            return image_ref(value["path"], roots, allow_urls=allow_urls)
        return _ref(source="hf", error="image struct has neither bytes nor path")
    if hasattr(value, "save") and hasattr(value, "size"):  # a PIL image
        buffer = io.BytesIO()
        value.save(buffer, format="PNG")
        return _ref(data=buffer.getvalue(), source="pil")
    if isinstance(value, Path):
        return _file_ref(str(value), roots, "path")
    if not isinstance(value, str):
        return _ref(source="unknown", error=f"unsupported image value of type {type(value).__name__}")
    text = value.strip()
    if not text:
        return _ref(source="path", error="image reference is an empty string")
    match = _DATA_URI.match(text[:256]) if text.startswith("data:") else None
    if match:
        match = _DATA_URI.match(text)
        payload = match.group("data") if match else ""
        data = _decode_base64(payload) if match and match.group("b64") else unquote(payload).encode("latin-1")
        if not data:
            return _ref(text[:64], source="data_uri", error="data URI does not hold valid base64 data")
        return _ref(None, data, source="data_uri")
    scheme = urlparse(text).scheme.lower() if "://" in text[:16] else ""
    if scheme == "file":
        return _file_uri_ref(text, roots)
    if scheme in ("http", "https"):
        if not allow_urls:
            return _ref(
                text, source="url", error="image URLs are disabled (set dataset.allow_urls: true to fetch them)"
            )
        return _ref(text, source="url", sha256=None)
    if len(text) >= 32 and "." not in text[-6:] and _BASE64.match(text[:4096]):
        data = _decode_base64(text)
        if data and data.startswith(_IMAGE_MAGIC):
            return _ref(None, data, source="base64")
    return _file_ref(text, roots, "path")


def image_refs(
    value: Any,
    root: ImageRoots | Path | None = None,
    *,
    allow_urls: bool = False,
) -> list[dict[str, Any]]:
    """Normalize one cell of the images column (a single image or a list) to a list of refs."""
    roots = as_roots(root)
    refs = (image_ref(item, roots, allow_urls=allow_urls) for item in cell_items(value))
    return [ref for ref in refs if ref is not None]


def cell_items(cell: Any) -> list[Any]:
    """The image values of one cell: a list's items, a text that is a JSON list's items (how a JSON column mixing
    lists and single values reads its lists, :mod:`vision_eval.data.rows`; a CSV cell), else the value alone."""
    if cell is None:
        return []
    if isinstance(cell, list | tuple):
        return list(cell)
    if isinstance(cell, str) and cell.lstrip().startswith("["):
        try:
            items = json.loads(cell)
        except ValueError:
            return [cell]
        return items if isinstance(items, list) else [cell]
    return [cell]


def images_series(
    values: pl.Series | list[Any],
    root: ImageRoots | Path | None = None,
    *,
    allow_urls: bool = False,
) -> pl.Series:
    """The canonical ``images`` column built from any column of image values. A text value (a path, a URI) that
    repeats is resolved and hashed once (a dataset often names the same image in many rows); the file is checked
    again when it is read."""
    roots = as_roots(root)
    if isinstance(values, pl.Series) and _holds_lists(values):
        values = _listed(values)
    if isinstance(values, pl.Series) and values.dtype in (pl.Utf8, pl.List(pl.Utf8)):
        return _text_images(values, roots, allow_urls)
    cells = values.to_list() if isinstance(values, pl.Series) else list(values)
    seen: dict[str, dict[str, Any] | None] = {}

    def ref(item: Any) -> dict[str, Any] | None:
        if not isinstance(item, str):
            return image_ref(item, roots, allow_urls=allow_urls)
        if item not in seen:
            seen[item] = image_ref(item, roots, allow_urls=allow_urls)
        return seen[item]

    normalized = []
    for cell in cells:
        normalized.append([r for r in map(ref, cell_items(cell)) if r is not None])
    return pl.Series("images", normalized, dtype=IMAGES_DTYPE)


def _holds_lists(values: pl.Series) -> bool:
    """True for a text column with a cell that may be a JSON list (read by :func:`cell_items`)."""
    return values.dtype == pl.Utf8 and bool(values.str.strip_chars_start().str.starts_with("[").any())


def _listed(values: pl.Series) -> pl.Series | list[list[Any]]:
    """Each cell's :func:`cell_items`, each distinct text read once: a column of text lists when every item is text,
    else the Python lists (an item that is a number or an image struct is read cell by cell)."""
    distinct = values.drop_nulls().unique()
    try:
        lists = pl.Series([cell_items(text) for text in distinct.to_list()], dtype=pl.List(pl.Utf8), strict=True)
    except TypeError:
        return [cell_items(cell) for cell in values.to_list()]
    which = values.replace_strict(distinct, pl.int_range(distinct.len(), eager=True), return_dtype=pl.Int64)
    return lists.gather(which).alias(values.name)


def _text_images(values: pl.Series, roots: ImageRoots, allow_urls: bool) -> pl.Series:
    """``images_series`` of a text column (one reference per row) or a column of text lists: each distinct text
    resolved once, then every row's references gathered by Polars (no Python per row)."""
    lists = pl.concat_list(pl.col("v")) if values.dtype == pl.Utf8 else pl.col("v")
    frame = pl.DataFrame({"v": values}).select(lists.list.drop_nulls())
    distinct = frame["v"].explode().drop_nulls().unique(maintain_order=True)
    refs = pl.Series([image_ref(text, roots, allow_urls=allow_urls) for text in distinct], dtype=IMAGE_REF)
    found = pl.col("v").list.eval(pl.element().replace_strict(distinct, refs, return_dtype=IMAGE_REF))
    return frame.select(found.fill_null(pl.lit([], IMAGES_DTYPE)).alias("images"))["images"]


def image_error_expr(column: str = "images") -> pl.Expr:
    """Per row: the first image error, or null when every image is usable."""
    return pl.col(column).list.eval(pl.element().struct.field("error").drop_nulls()).list.first()


def load_bytes(ref: dict[str, Any], max_bytes: int | None = None) -> bytes:
    """The bytes of a reference (reading the file for paths), at most ``max_bytes`` (a larger image is refused
    unread). Raises ``ValueError`` on failure."""
    if ref.get("error"):
        raise ValueError(ref["error"])
    if ref.get("bytes") is not None:
        if max_bytes is not None and len(ref["bytes"]) > max_bytes:
            raise too_many_bytes(len(ref["bytes"]), max_bytes)
        return bytes(ref["bytes"])
    path = ref.get("path")
    if not path:
        raise ValueError("image reference has neither bytes nor path")
    if ref.get("source") == "url":
        raise ValueError("URL images must be fetched by the caller")
    try:
        return read_checked(path, max_bytes)
    except OSError as exc:
        raise ValueError(f"cannot read image {path!r}: {exc.strerror or exc}") from None
