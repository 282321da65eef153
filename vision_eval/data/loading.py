"""Read a dataset from any supported source into a raw Polars frame.

Sources: a Polars frame, a list of dicts, an HF ``Dataset`` / ``IterableDataset``, local
Parquet / JSONL / JSON / CSV files, an HF ``imagefolder`` folder, a ``save_to_disk``
folder, or a Hugging Face hub id. ``datasets`` is imported only for the sources that need it.
A JSONL line that does not parse becomes a row with a ``_row_error``, never a crash; so does a row whose
text is not valid Unicode (:mod:`vision_eval.data.text`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from vision_eval.config import DatasetConfig
from vision_eval.data.text import mark_replaced, sanitize_rows
from vision_eval.errors import ConfigError, DatasetError

ROW_ERROR = "_row_error"


@dataclass
class RawDataset:
    """A loaded source before canonicalization."""

    frame: pl.DataFrame
    """The rows, with the source's own column names."""
    root: Path | None
    """Folder that relative image paths resolve against."""
    kind: str
    """What it was loaded from (``python``, ``parquet``, ``jsonl``, ``csv``, ``hf``, ``disk``, ``imagefolder``)."""
    local: bool = True
    """False for hub datasets (a hub id or an HF ``Dataset`` object): absolute image paths need
    ``dataset.image_roots``."""
    confined: bool = True
    """False for rows built in Python: their absolute image paths are read as given unless
    ``dataset.image_roots`` is set (see :mod:`vision_eval.images.roots`)."""


def _from_hf(ds: Any, limit: int | None) -> pl.DataFrame:
    import datasets

    if isinstance(ds, datasets.DatasetDict):
        ds = ds[next(iter(ds))]
    if isinstance(ds, datasets.IterableDataset):
        rows = list(ds.take(limit)) if limit is not None else list(ds)
        return _from_dicts(rows)
    if limit is not None and limit < len(ds):
        ds = ds.select(range(limit))
    return pl.from_arrow(ds.with_format("arrow")[:])  # type: ignore[return-value]


def _is_image_struct(value: Any) -> bool:
    return isinstance(value, dict) and bool(value) and set(value) <= {"bytes", "path"}


def _cell(value: Any) -> Any:
    """Objects become JSON text, so that a missing key and a null stay distinct."""
    if isinstance(value, dict) and not _is_image_struct(value):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list) and any(isinstance(v, dict) and not _is_image_struct(v) for v in value):
        return json.dumps(value, ensure_ascii=False)
    return value


def _from_dicts(rows: list[dict[str, Any]], where: Callable[[int], str] | None = None) -> pl.DataFrame:
    """A frame from dicts: objects kept as JSON text; a column of mixed scalar types becomes text. A row with
    invalid text (a lone surrogate) becomes a row error naming the column and ``where(i)``, its place in the
    source (default: ``row i``)."""
    if not rows:
        return pl.DataFrame()
    rows = [{k: _cell(v) for k, v in row.items()} for row in rows]
    columns: dict[str, None] = {}
    for row in rows:
        columns.update(dict.fromkeys(row))
    mixed_bytes = []
    for column in columns:
        kinds = {type(row.get(column)) for row in rows if row.get(column) is not None}
        if (len(kinds) > 1 and kinds & {bytes, bytearray, memoryview}) or (
            list in kinds and _mixes_bytes(rows, column)
        ):
            mixed_bytes.append(column)
        elif len(kinds) > 1 and not kinds <= {int, float, bool} and str in kinds:
            for row in rows:
                value = row.get(column)
                if value is not None and not isinstance(value, str):
                    row[column] = json.dumps(value) if isinstance(value, list) else str(value)
    if mixed_bytes:  # Polars would read the text as bytes (or the bytes as text): keep both as Python values
        plain = _from_dicts([{k: v for k, v in row.items() if k not in mixed_bytes} for row in rows], where)
        objects = [pl.Series(c, [row.get(c) for row in rows], dtype=pl.Object) for c in mixed_bytes]
        return plain.with_columns(objects) if plain.width else pl.DataFrame(objects)
    try:
        return pl.DataFrame(rows, infer_schema_length=None)
    except (TypeError, ValueError, pl.exceptions.PolarsError):
        pass
    # Only now (clean data never gets here) look for invalid text; then values Polars cannot type (e.g. PIL
    # images) stay Python objects.
    if sanitize_rows(rows, where, ROW_ERROR):
        columns = {}
        for row in rows:
            columns.update(dict.fromkeys(row))
        try:
            return pl.DataFrame(rows, infer_schema_length=None)
        except (TypeError, ValueError, pl.exceptions.PolarsError):
            pass
    return pl.DataFrame({c: pl.Series(c, [r.get(c) for r in rows], dtype=pl.Object) for c in columns})


def _mixes_bytes(rows: list[dict[str, Any]], column: str) -> bool:
    """True when the column holds bytes in some rows (or list items) and other values in others."""
    binary = other = False
    for row in rows:
        value = row.get(column)
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, bytes | bytearray | memoryview):
                binary = True
            elif item is not None:
                other = True
        if binary and other:
            return True
    return False


def _loads(data: bytes) -> Any:
    """``json.loads``; bytes that are not UTF-8 are read as lone surrogates, which :func:`_from_dicts` reports."""
    try:
        return json.loads(data)
    except UnicodeDecodeError:
        return json.loads(data.decode("utf-8", "surrogateescape"))


def _read_jsonl(path: Path) -> pl.DataFrame:
    rows: list[dict[str, Any]] = []
    lines: list[int] = []
    # Bytes that are not UTF-8 are read as lone surrogates, which _from_dicts reports with their column.
    with path.open(encoding="utf-8", errors="surrogateescape") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                if not isinstance(row, dict):
                    raise ValueError("line is not a JSON object")
            except ValueError as exc:
                row = {
                    "id": f"{path.name}:{number}",
                    ROW_ERROR: f"line {number} of {path.name} is not valid JSON: {exc}",
                }
            rows.append(row)
            lines.append(number)
    return _from_dicts(rows, lambda i: f"line {lines[i]} of {path.name}")


def _read_json(path: Path) -> pl.DataFrame:
    data = _loads(path.read_bytes())
    if isinstance(data, dict):
        data = next((v for v in data.values() if isinstance(v, list)), [data])
    if not isinstance(data, list):
        raise DatasetError(f"{path}: expected a JSON list of objects")
    return _from_dicts(data, lambda i: f"item {i + 1} of {path.name}")


def _read_csv(path: Path, limit: int | None) -> pl.DataFrame:
    try:
        return pl.read_csv(path, n_rows=limit, infer_schema_length=10_000)
    except pl.exceptions.ComputeError as exc:
        if "utf-8" not in str(exc).lower():
            raise
    # Bytes that are not UTF-8: read them as U+FFFD and make their rows errors.
    frame = pl.read_csv(path, n_rows=limit, infer_schema_length=10_000, encoding="utf8-lossy")
    return mark_replaced(frame, lambda n: pl.format("row {} of {}", n, pl.lit(path.name)), ROW_ERROR)


def _load_local(path: Path, cfg: DatasetConfig, limit: int | None) -> RawDataset:
    kind = cfg.source
    if kind == "auto":
        if path.is_dir():
            if (path / "dataset_info.json").exists() or (path / "dataset_dict.json").exists():
                kind = "disk"
            else:
                kind = "imagefolder"
        else:
            kind = {".parquet": "parquet", ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json", ".csv": "csv"}.get(
                path.suffix.lower(), ""
            )
            if not kind:
                raise ConfigError("dataset.path", f"cannot tell the format of {str(path)!r}; set dataset.source")
    root = Path(cfg.image_root).expanduser().resolve() if cfg.image_root else (path if path.is_dir() else path.parent)
    if kind == "parquet":
        frame = pl.read_parquet(path, n_rows=limit)
    elif kind == "jsonl":
        frame = _read_jsonl(path)
    elif kind == "json":
        frame = _read_json(path)
    elif kind == "csv":
        frame = _read_csv(path, limit)
    elif kind == "disk":
        import datasets

        frame = _from_hf(datasets.load_from_disk(str(path)), limit)
    elif kind == "imagefolder":
        import datasets

        ds = datasets.load_dataset("imagefolder", data_dir=str(path), split=cfg.split or "train")
        frame = _from_hf(ds, limit)
    else:
        raise ConfigError("dataset.source", f"source {kind!r} needs a local file or folder")
    return RawDataset(frame, root, kind)


LOCAL_SUFFIXES = (".jsonl", ".ndjson", ".json", ".csv", ".tsv", ".parquet", ".arrow", ".txt", ".zip", ".gz", ".tar")
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def looks_local(text: str) -> bool:
    """True for a dataset path that names a local file or folder: it starts with ``./``, ``../``, ``/`` or
    ``~``, ends in a file extension, or its first part is an existing folder."""
    if text.startswith(("./", "../", "/", "~", ".\\")) or Path(text).suffix.lower() in LOCAL_SUFFIXES:
        return True
    first = text.split("/", 1)[0]
    return "/" in text and Path(first).is_dir()


HF_BUILDERS = ("parquet", "json", "csv", "text", "arrow", "imagefolder", "audiofolder", "videofolder", "webdataset")
"""``datasets`` builders that read ``data_files``: ``path: parquet`` with ``data_files`` is not a local path."""


def _check_hub_id(text: str, cfg: DatasetConfig) -> None:
    """A missing path goes to ``datasets.load_dataset`` only when it has a Hub id's shape (``owner/name``), names a
    builder with ``data_files``, or ``source: hf`` says so; else, at once, a config error: not found locally."""
    hub_shaped = bool(_HUB_ID.match(text)) and not looks_local(text)
    builder = text in HF_BUILDERS and cfg.data_files is not None
    if cfg.source == "hf" or (cfg.source == "auto" and (hub_shaped or builder)):
        return
    hint = "; a Hugging Face dataset id looks like owner/name" if cfg.source == "auto" else ""
    message = f"{text!r} not found locally (no such file or folder; relative to {Path.cwd()}){hint}"
    raise ConfigError("dataset.path", message)


def _load_hub(cfg: DatasetConfig, limit: int | None) -> RawDataset:
    import datasets

    try:
        ds = datasets.load_dataset(
            cfg.path,
            cfg.name,
            split=cfg.split or "train",
            revision=cfg.revision,
            streaming=cfg.streaming,
            data_files=cfg.data_files,
        )
    except Exception as exc:  # the hub raises many kinds; all mean the same to the user
        raise DatasetError(
            f"{cfg.path!r} is not a local file or folder (relative to {Path.cwd()}), and loading it as a Hugging Face "
            f"dataset failed: {exc}"
        ) from exc
    root = Path(cfg.image_root).expanduser().resolve() if cfg.image_root else None
    return RawDataset(_from_hf(ds, limit), root, "hf", local=False)


def load_raw(cfg: DatasetConfig, data: Any = None, limit: int | None = None) -> RawDataset:
    """Load ``data`` (from Python) or the source ``cfg`` names. ``limit`` is a read hint only."""
    read_limit = limit if cfg.sample is None and cfg.shard is None else None
    if data is None and cfg.path is None:
        raise ConfigError("dataset.path", "no dataset: set dataset.path (a file, a folder or a hub id)")
    if data is None:
        path = Path(cfg.path).expanduser()  # type: ignore[arg-type]
        if path.exists():
            return _load_local(path.resolve(), cfg, read_limit)
        _check_hub_id(str(cfg.path), cfg)
        return _load_hub(cfg, read_limit)
    root = Path(cfg.image_root).expanduser().resolve() if cfg.image_root else None
    if isinstance(data, str | Path):
        path = Path(data).expanduser()
        if not path.exists():
            _check_hub_id(str(data), cfg)
            return _load_hub(cfg.model_copy(update={"path": str(data)}), read_limit)
        return _load_local(path.resolve(), cfg, read_limit)
    if isinstance(data, pl.DataFrame):
        return RawDataset(data, root, "python", confined=False)
    if isinstance(data, pl.LazyFrame):
        return RawDataset(data.collect(), root, "python", confined=False)
    if isinstance(data, list):
        if data and not all(isinstance(row, dict) for row in data):
            raise DatasetError("a list dataset must hold dicts (one per sample)")
        return RawDataset(_from_dicts(data), root, "python", confined=False)
    module = type(data).__module__
    if module.startswith("datasets"):  # most often from the hub: its paths are not the caller's
        return RawDataset(_from_hf(data, read_limit), root, "hf", local=False)
    if module.startswith("pandas"):
        try:
            frame = pl.from_pandas(data)
        except (TypeError, ValueError, pl.exceptions.PolarsError):  # e.g. a lone surrogate in an object column
            frame = _from_dicts(data.to_dict("records"))
        return RawDataset(frame, root, "python", confined=False)
    raise DatasetError(f"unsupported dataset object of type {type(data).__name__}")
