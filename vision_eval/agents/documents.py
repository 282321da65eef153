"""Guideline documents split into chunks: PDF (pypdf), DOCX (python-docx), Markdown and plain text.

Chunks keep their document, page (PDF) and section heading (Markdown / DOCX headings). Chunking a
file is cached on disk keyed by the file's sha256 and the chunk size, so a document is parsed once,
whichever run or process asks for it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

CHUNKER_VERSION = 1
"""Bumped whenever chunking changes, so cached chunks of an older chunker are not reused."""
SUFFIXES = {".pdf": "pdf", ".docx": "docx", ".md": "markdown", ".markdown": "markdown", ".txt": "text", ".text": "text"}


class DocumentError(ValueError):
    """A guideline document that cannot be read."""


@dataclass(frozen=True)
class Chunk:
    """One retrievable piece of a guideline document."""

    document: str
    """File name of the document."""
    sha256: str
    """sha256 of the document file."""
    index: int
    """Position of the chunk in its document (0-based)."""
    text: str
    """The chunk text (its section heading first, when it has one)."""
    page: int | None = None
    """1-based page (PDF only)."""
    section: str | None = None
    """The heading the chunk sits under, if any."""

    def record(self, score: float | None = None) -> dict[str, Any]:
        """What details record about a used chunk."""
        out = {"document": self.document, "index": self.index, "page": self.page, "section": self.section}
        if score is not None:
            out["score"] = round(score, 6)
        return out


@dataclass
class _Block:
    text: str
    page: int | None = None
    section: str | None = None


def default_cache_dir() -> Path:
    """``$VISION_EVAL_CACHE_DIR``, else ``$XDG_CACHE_HOME/vision_eval``, else ``~/.cache/vision_eval``."""
    if os.environ.get("VISION_EVAL_CACHE_DIR"):
        return Path(os.environ["VISION_EVAL_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "vision_eval"


def _paragraphs(text: str) -> list[str]:
    return [" ".join(p.split()) for p in re.split(r"\n\s*\n", text) if p.strip()]


def _markdown_blocks(text: str) -> list[_Block]:
    blocks: list[_Block] = []
    section: str | None = None
    buffer: list[str] = []

    def flush() -> None:
        blocks.extend(_Block(p, section=section) for p in _paragraphs("\n".join(buffer)))
        buffer.clear()

    for line in text.splitlines():
        heading = re.match(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
        if heading:
            flush()
            section = heading.group(1).strip() or section
        else:
            buffer.append(line)
    flush()
    return blocks


def _pdf_blocks(path: Path) -> list[_Block]:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(str(path))
        pages = [page.extract_text() or "" for page in reader.pages]
    except (PdfReadError, OSError, ValueError, KeyError) as exc:
        raise DocumentError(f"cannot read PDF {path.name}: {exc}") from None
    blocks = []
    for number, text in enumerate(pages, start=1):
        # pypdf separates lines, rarely paragraphs: a short line ending a sentence closes a paragraph
        text = re.sub(r"(?<=[.!?:])\n", "\n\n", text)
        blocks += [_Block(p, page=number) for p in _paragraphs(text)]
    return blocks


def _docx_blocks(path: Path) -> list[_Block]:
    import docx
    from docx.opc.exceptions import PackageNotFoundError

    try:
        document = docx.Document(str(path))
    except (PackageNotFoundError, OSError, ValueError, KeyError) as exc:
        raise DocumentError(f"cannot read DOCX {path.name}: {exc}") from None
    blocks: list[_Block] = []
    section: str | None = None
    for paragraph in document.paragraphs:
        text = " ".join(paragraph.text.split())
        if not text:
            continue
        style = (paragraph.style.name if paragraph.style is not None else "") or ""
        if style.lower().startswith(("heading", "title")):
            section = text
        else:
            blocks.append(_Block(text, section=section))
    for table in document.tables:
        for row in table.rows:
            cells = [" ".join(c.text.split()) for c in row.cells]
            if any(cells):
                blocks.append(_Block(" | ".join(cells), section=section))
    return blocks


def _split_long(text: str, limit: int) -> list[str]:
    """A paragraph longer than ``limit`` split on sentence ends, then on words."""
    if len(text) <= limit:
        return [text]
    pieces: list[str] = []
    current = ""
    for sentence in re.split(r"(?<=[.!?])\s+", text):
        words = sentence.split(" ") if len(sentence) > limit else [sentence]
        for word in words:
            candidate = f"{current} {word}".strip()
            if current and len(candidate) > limit:
                pieces.append(current)
                current = word
            else:
                current = candidate
    if current:
        pieces.append(current)
    return pieces


def chunk_blocks(blocks: list[_Block], chunk_chars: int) -> list[tuple[str, int | None, str | None]]:
    """Paragraphs packed into chunks of about ``chunk_chars`` without crossing a page or a section."""
    chunks: list[tuple[str, int | None, str | None]] = []
    current: list[str] = []
    key: tuple[int | None, str | None] | None = None

    def flush() -> None:
        if current and key is not None:
            body = "\n".join(current)
            text = f"{key[1]}\n{body}" if key[1] else body
            chunks.append((text, key[0], key[1]))
        current.clear()

    for block in blocks:
        block_key = (block.page, block.section)
        for piece in _split_long(block.text, chunk_chars):
            size = sum(len(c) + 1 for c in current)
            if block_key != key or (current and size + len(piece) > chunk_chars):
                flush()
                key = block_key
            current.append(piece)
    flush()
    return chunks


def file_sha256(path: Path) -> str:
    """sha256 of a file's bytes."""
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def read_chunks(path: Path, chunk_chars: int = 800, sha256: str | None = None) -> list[Chunk]:
    """Parse and chunk one document (no cache). Raises ``DocumentError``."""
    kind = SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise DocumentError(f"unsupported document type {path.suffix!r} ({path.name}); use PDF, DOCX, .md or .txt")
    digest = sha256 or file_sha256(path)
    if kind == "pdf":
        blocks = _pdf_blocks(path)
    elif kind == "docx":
        blocks = _docx_blocks(path)
    else:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise DocumentError(f"cannot read {path.name}: {exc}") from None
        blocks = _markdown_blocks(text) if kind == "markdown" else [_Block(p) for p in _paragraphs(text)]
    return [
        Chunk(path.name, digest, index, text, page, section)
        for index, (text, page, section) in enumerate(chunk_blocks(blocks, chunk_chars))
    ]


def load_chunks(path: Path, chunk_chars: int = 800, cache_dir: Path | None = None) -> list[Chunk]:
    """The chunks of ``path``, from the on-disk cache when this file's content was chunked before."""
    digest = file_sha256(path)
    folder = (cache_dir or default_cache_dir()) / "documents"
    cached = folder / f"{digest}-{chunk_chars}-v{CHUNKER_VERSION}.json"
    if cached.is_file():
        try:
            rows = json.loads(cached.read_text(encoding="utf-8"))
            return [Chunk(**{**row, "document": path.name}) for row in rows]
        except (OSError, ValueError, TypeError):
            pass  # a damaged cache entry is rebuilt below
    chunks = read_chunks(path, chunk_chars, digest)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        temporary = cached.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps([asdict(c) for c in chunks]), encoding="utf-8")
        temporary.replace(cached)  # atomic: concurrent processes never read a half-written file
    except OSError:
        pass  # an unwritable cache only costs re-parsing
    return chunks
