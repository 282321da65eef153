"""A JSON Lines file's rows are counted (every shard counts them) by scanning its bytes, with the reader's rules:
lines end at ``\\n``, a last line without one is a row, a line of whitespace alone (what ``bytes.strip`` strips)
is not. The count is checked against the rows the reader yields, on files built from every kind of line edge."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from vision_eval.data import sources
from vision_eval.data.sources import JsonlSource, count_lines

PIECES = [
    b'{"id": "a"}',
    b'{"id": "b"}\r',  # a CRLF line
    b"",  # an empty line
    b" ",
    b"\t \x0b\x0c\r",  # whitespace alone, every kind bytes.strip strips
    b' {"id": "c"}',  # a row starting with a space
    b'\r{"id": "d"}',
    b"\x85",  # not whitespace to bytes.strip (a row: not JSON, a row error)
    b"\x1c",  # str.strip strips it, bytes.strip does not: a row
    b'{"id": "' + b"x" * 40 + b'"}',  # longer than the small blocks below
    b"{not json",
]


def _rows_read(path: Path) -> int:
    return sum(chunk.height for chunk in JsonlSource(path, None).chunks(7))


def _files(tmp_path: Path) -> list[Path]:
    rng = random.Random(0)
    contents = [b"", b"\n", b"\n\n", b" ", b"  \n ", b'{"id": "a"}', b'{"id": "a"}\n', b'\n{"id": "a"}', b" \n\r\n\t"]
    for _ in range(200):
        lines = [rng.choice(PIECES) for _ in range(rng.randint(1, 12))]
        ending = rng.choice([b"\n", b""])  # the last line with a newline or without
        contents.append(b"\n".join(lines) + ending)
    paths = []
    for i, content in enumerate(contents):
        path = tmp_path / f"f{i}.jsonl"
        path.write_bytes(content)
        paths.append(path)
    return paths


@pytest.mark.parametrize("block", [1, 2, 3, 7, 64, sources.READ_BLOCK])
def test_the_count_is_the_rows_the_reader_yields(tmp_path: Path, block: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever the block size (blocks that end inside a line, on a newline, between a CR and its LF), both the
    byte scan (``small=0``) and the small-file path count what the reader reads."""
    monkeypatch.setattr(sources, "READ_BLOCK", block)
    for path in _files(tmp_path):
        expected = _rows_read(path)
        assert count_lines(path, small=0) == expected, path.read_bytes()
        assert count_lines(path) == expected
        assert JsonlSource(path, None).count() == expected


def test_a_large_file_is_counted_by_the_scan(tmp_path: Path) -> None:
    """Past the small-file size the scan counts (a file of rows, blank lines between some, no final newline)."""
    path = tmp_path / "large.jsonl"
    lines = [json.dumps({"id": str(i), "input": "q" * (i % 50)}) for i in range(30_000)]
    for i in range(0, len(lines), 97):
        lines[i] = " \r" if i % 2 else ""
    path.write_text("\n".join(lines))
    expected = sum(1 for line in lines if line.strip())
    assert path.stat().st_size > 1 << 20
    assert count_lines(path, small=1 << 20) == expected == _rows_read(path)
