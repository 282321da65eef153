"""Reading a run's files back decoded, to prove a secret reached none of them.

Raw bytes are not enough: Parquet compresses its pages, so a key inside a Parquet text column need not appear in
the file's bytes. Every file is therefore read the way a user would read it (Parquet through Polars, JSON parsed,
HTML/YAML/XML/text as text) and, in addition, searched as raw bytes.
"""

from __future__ import annotations

import contextlib
import html
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl

TEXT_SUFFIXES = {".html", ".htm", ".yaml", ".yml", ".xml", ".txt", ".log", ".csv", ".md", ".jsonl", ".json"}


def strings(value: Any) -> Iterator[str]:
    """Every string inside a decoded value (dict keys too), recursively."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, bytes):
        yield value.decode("utf-8", "replace")
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from strings(key)
            yield from strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from strings(item)


def _parquet_strings(path: Path) -> Iterator[str]:
    frame = pl.read_parquet(path)
    yield from frame.columns
    for column in frame.columns:
        for value in frame[column].to_list():  # every row of every column, nested ones walked
            yield from strings(value)
            if isinstance(value, str) and value[:1] in "{[":  # a JSON text column (details): its decoded strings
                with contextlib.suppress(ValueError, RecursionError):  # too deep for json: the text is read
                    yield from strings(json.loads(value))


def _text_strings(path: Path) -> Iterator[str]:
    text = path.read_text(encoding="utf-8", errors="replace")
    yield text
    yield html.unescape(text)
    if path.suffix == ".json":
        yield from strings(json.loads(text))
    elif path.suffix == ".jsonl":
        for line in text.splitlines():
            if line.strip():
                yield from strings(json.loads(line))


def assert_no_secret(run_dir: Path, secret: str, *, expect: tuple[str, ...] = ()) -> list[Path]:
    """Fail if ``secret`` appears in any file under ``run_dir``, decoded or raw; return the files read.

    ``expect``: file names that must be among them (so a run that wrote nothing cannot pass by accident)."""
    files = sorted(p for p in Path(run_dir).rglob("*") if p.is_file())
    assert files, f"no files under {run_dir}"
    for path in files:
        assert secret.encode() not in path.read_bytes(), f"{secret!r} in the bytes of {path}"
        if path.suffix == ".parquet":
            found = _parquet_strings(path)
        elif path.suffix in TEXT_SUFFIXES:
            found = _text_strings(path)
        else:
            continue
        for text in found:
            assert secret not in text, f"{secret!r} in {path} (decoded): {text[:300]!r}"
    names = {p.name for p in files}
    missing = [name for name in expect if name not in names]
    assert not missing, f"expected {missing} under {run_dir}, found {sorted(names)}"
    return files
