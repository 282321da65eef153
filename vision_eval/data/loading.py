"""Read a dataset from any supported source into a raw Polars frame.

Sources: a Polars frame, a list of dicts, an HF ``Dataset`` / ``IterableDataset``, local
Parquet / JSONL / JSON / CSV files, an HF ``imagefolder`` folder, a ``save_to_disk``
folder, or a Hugging Face hub id. ``datasets`` is imported only for the sources that need it.
A JSONL line that does not parse becomes a row with a ``_row_error``, never a crash.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from vision_eval.config import DatasetConfig
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
    """False for hub datasets: absolute image paths are then refused."""


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


def _from_dicts(rows: list[dict[str, Any]]) -> pl.DataFrame:
    """A frame from dicts: objects kept as JSON text; a column of mixed scalar types becomes text."""
    if not rows:
        return pl.DataFrame()
    rows = [{k: _cell(v) for k, v in row.items()} for row in rows]
    columns: dict[str, None] = {}
    for row in rows:
        columns.update(dict.fromkeys(row))
    for column in columns:
        kinds = {type(row.get(column)) for row in rows if row.get(column) is not None}
        if len(kinds) > 1 and not kinds <= {int, float, bool} and str in kinds:
            for row in rows:
                value = row.get(column)
                if value is not None and not isinstance(value, str):
                    row[column] = json.dumps(value) if isinstance(value, list) else str(value)
    try:
        return pl.DataFrame(rows, infer_schema_length=None)
    except (TypeError, ValueError, pl.exceptions.PolarsError):
        # Values Polars cannot type (e.g. PIL images) stay Python objects.
        return pl.DataFrame({c: pl.Series(c, [r.get(c) for r in rows], dtype=pl.Object) for c in columns})


def _read_jsonl(path: Path) -> pl.DataFrame:
    rows: list[dict[str, Any]] = []
    with path.open(encoding="utf-8") as handle:
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
    return _from_dicts(rows)


def _read_json(path: Path) -> pl.DataFrame:
    data = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(data, dict):
        data = next((v for v in data.values() if isinstance(v, list)), [data])
    if not isinstance(data, list):
        raise DatasetError(f"{path}: expected a JSON list of objects")
    return _from_dicts(data)


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
        frame = pl.read_csv(path, n_rows=limit, infer_schema_length=10_000)
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
        return RawDataset(data, root, "python")
    if isinstance(data, pl.LazyFrame):
        return RawDataset(data.collect(), root, "python")
    if isinstance(data, list):
        if data and not all(isinstance(row, dict) for row in data):
            raise DatasetError("a list dataset must hold dicts (one per sample)")
        return RawDataset(_from_dicts(data), root, "python")
    module = type(data).__module__
    if module.startswith("datasets"):
        return RawDataset(_from_hf(data, read_limit), root, "python")
    if module.startswith("pandas"):
        return RawDataset(pl.from_pandas(data), root, "python")
    raise DatasetError(f"unsupported dataset object of type {type(data).__name__}")
