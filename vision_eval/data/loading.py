"""Open a dataset from any supported source as a chunked reader (:mod:`vision_eval.data.sources`).

Sources: a Polars frame or lazy frame, a list of dicts, a pandas frame, an HF ``Dataset`` / ``IterableDataset``,
local Parquet / JSONL / JSON / CSV files, an HF ``imagefolder`` folder, a ``save_to_disk`` folder, or a Hugging
Face hub id. ``datasets`` is imported only for the sources that need it. Parquet, CSV, JSONL and HF datasets are
read in chunks; a JSON list file (one document) and rows from Python are in memory already.
A JSONL line that does not parse becomes a row with a ``_row_error``, never a crash; so does a row whose
text is not valid Unicode (:mod:`vision_eval.data.text`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import polars as pl

from vision_eval.config import DatasetConfig
from vision_eval.data.rows import ROW_ERROR, from_dicts
from vision_eval.data.sources import (
    HfSource,
    HfStreamSource,
    JsonlSource,
    LazySource,
    RawDataset,
    Source,
    csv_source,
)
from vision_eval.errors import ConfigError, DatasetError


def hf_source(ds: Any, root: Path | None, kind: str = "hf", local: bool = False) -> Source:
    """An HF ``Dataset`` (or the first split of a ``DatasetDict``) or ``IterableDataset``."""
    import datasets

    if isinstance(ds, datasets.DatasetDict | datasets.IterableDatasetDict):
        ds = ds[next(iter(ds))]
    if isinstance(ds, datasets.IterableDataset):
        return HfStreamSource(ds, root, kind, local=local)
    return HfSource(ds, root, kind, local=local)


def _loads(data: bytes) -> Any:
    """``json.loads``; bytes that are not UTF-8 are read as lone surrogates, which :func:`from_dicts` reports."""
    try:
        return json.loads(data)
    except UnicodeDecodeError:
        return json.loads(data.decode("utf-8", "surrogateescape"))


def _read_json(path: Path) -> pl.DataFrame:
    """A JSON file holds one document: it is read whole (a list of objects, or an object holding one)."""
    data = _loads(path.read_bytes())
    if isinstance(data, dict):
        data = next((v for v in data.values() if isinstance(v, list)), [data])
    if not isinstance(data, list):
        raise DatasetError(f"{path}: expected a JSON list of objects")
    return from_dicts(data, lambda i: f"item {i + 1} of {path.name}")


def _kind_of(path: Path, cfg: DatasetConfig) -> str:
    if cfg.source != "auto":
        return cfg.source
    if path.is_dir():
        if (path / "dataset_info.json").exists() or (path / "dataset_dict.json").exists():
            return "disk"
        return "imagefolder"
    kind = {".parquet": "parquet", ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json", ".csv": "csv"}.get(
        path.suffix.lower(), ""
    )
    if not kind:
        raise ConfigError("dataset.path", f"cannot tell the format of {str(path)!r}; set dataset.source")
    return kind


def _open_local(path: Path, cfg: DatasetConfig) -> Source:
    kind = _kind_of(path, cfg)
    root = Path(cfg.image_root).expanduser().resolve() if cfg.image_root else (path if path.is_dir() else path.parent)
    if kind == "parquet":
        return LazySource(pl.scan_parquet(path), root, "parquet")
    if kind == "jsonl":
        return JsonlSource(path, root)
    if kind == "json":
        return RawDataset(_read_json(path), root, "json")
    if kind == "csv":
        return csv_source(path, root)
    if kind == "disk":
        import datasets

        return hf_source(datasets.load_from_disk(str(path)), root, "disk", local=True)
    if kind == "imagefolder":
        import datasets

        ds = datasets.load_dataset("imagefolder", data_dir=str(path), split=cfg.split or "train")
        return hf_source(ds, root, "imagefolder", local=True)
    raise ConfigError("dataset.source", f"source {kind!r} needs a local file or folder")


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


def _open_hub(cfg: DatasetConfig) -> Source:
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
    return hf_source(ds, root)


def open_source(cfg: DatasetConfig, data: Any = None) -> Source:
    """The source of ``data`` (from Python) or of the dataset ``cfg`` names; nothing is read yet except a JSON
    list file (one document) and rows Python holds already."""
    if data is None and cfg.path is None:
        raise ConfigError("dataset.path", "no dataset: set dataset.path (a file, a folder or a hub id)")
    if data is None:
        path = Path(cfg.path).expanduser()  # type: ignore[arg-type]
        if path.exists():
            return _open_local(path.resolve(), cfg)
        _check_hub_id(str(cfg.path), cfg)
        return _open_hub(cfg)
    root = Path(cfg.image_root).expanduser().resolve() if cfg.image_root else None
    if isinstance(data, str | Path):
        path = Path(data).expanduser()
        if not path.exists():
            _check_hub_id(str(data), cfg)
            return _open_hub(cfg.model_copy(update={"path": str(data)}))
        return _open_local(path.resolve(), cfg)
    if isinstance(data, pl.DataFrame):
        return RawDataset(data, root, "python", confined=False)
    if isinstance(data, pl.LazyFrame):
        return LazySource(data, root, "python", confined=False)
    if isinstance(data, list):
        if data and not all(isinstance(row, dict) for row in data):
            raise DatasetError("a list dataset must hold dicts (one per sample)")
        return RawDataset(from_dicts(data), root, "python", confined=False)
    module = type(data).__module__
    if module.startswith("datasets"):  # most often from the hub: its paths are not the caller's
        return hf_source(data, root)
    if module.startswith("pandas"):
        try:
            frame = pl.from_pandas(data)
        except (TypeError, ValueError, pl.exceptions.PolarsError):  # e.g. a lone surrogate in an object column
            frame = from_dicts(data.to_dict("records"))
        return RawDataset(frame, root, "python", confined=False)
    raise DatasetError(f"unsupported dataset object of type {type(data).__name__}")


def load_raw(cfg: DatasetConfig, data: Any = None, limit: int | None = None) -> RawDataset:
    """The first ``limit`` rows (all without one) of a source, in memory, as the source names its columns."""
    source = open_source(cfg, data)
    chunks = []
    held = 0
    for chunk in source.chunks(limit or 50_000):
        chunks.append(chunk)
        held += chunk.height
        if limit is not None and held >= limit:
            break
    frame = pl.concat(chunks, how="diagonal_relaxed") if chunks else pl.DataFrame()
    frame = frame.head(limit) if limit is not None else frame
    return RawDataset(frame, source.root, source.kind, local=source.local, confined=source.confined)


__all__ = ["ROW_ERROR", "RawDataset", "Source", "load_raw", "looks_local", "open_source"]
