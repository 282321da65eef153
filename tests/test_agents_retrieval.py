"""Guideline documents (PDF, DOCX, Markdown, text), the chunk cache, and retrieval with both threshold settings."""

from __future__ import annotations

import asyncio
import json
import math
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from vision_eval.agents.documents import Chunk, DocumentError, load_chunks, read_chunks
from vision_eval.agents.retrieval import EmbeddingCache, EmbeddingIndex, LexicalIndex, tokenize


def minimal_pdf(pages: list[list[str]]) -> bytes:
    """A valid PDF with one Helvetica text line per string (enough for pypdf to extract)."""
    objects = ["<< /Type /Catalog /Pages 2 0 R >>", None, "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    kids = []
    for lines in pages:
        ops = "BT /F1 11 Tf 14 TL 40 800 Td " + " ".join(f"({line}) Tj T*" for line in lines) + " ET"
        objects.append(f"<< /Length {len(ops)} >>\nstream\n{ops}\nendstream")
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents {len(objects)} 0 R "
            "/Resources << /Font << /F1 3 0 R >> >> >>"
        )
        kids.append(f"{len(objects)} 0 R")
    objects[1] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {len(kids)} >>"
    out, offsets = b"%PDF-1.4\n", []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode()
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += "".join(f"{o:010d} 00000 n \n" for o in offsets).encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return out


def test_markdown_sections_and_chunk_size(tmp_path: Path) -> None:
    path = tmp_path / "brand.md"
    long_para = " ".join(f"Sentence {i} about gold foil." for i in range(30))
    path.write_text(f"# Brand\n\n## Colours\nGold is #C9A227.\n\nNavy is #1B2A4A.\n\n## Logo\n{long_para}\n")
    chunks = read_chunks(path, chunk_chars=200)
    assert chunks[0].section == "Colours"
    assert chunks[0].text == "Colours\nGold is #C9A227.\nNavy is #1B2A4A."
    logo = [c for c in chunks if c.section == "Logo"]
    assert len(logo) >= 4 and all(len(c.text) <= 200 + len("Logo\n") for c in logo)
    assert [c.index for c in chunks] == list(range(len(chunks)))
    assert all(c.document == "brand.md" for c in chunks)


def test_pdf_pages(tmp_path: Path) -> None:
    path = tmp_path / "guide.pdf"
    path.write_bytes(minimal_pdf([["Labels must read RESERVE 18."], ["Use soft rim lighting."]]))
    chunks = read_chunks(path)
    assert [(c.page, c.text) for c in chunks] == [(1, "Labels must read RESERVE 18."), (2, "Use soft rim lighting.")]


def test_docx_headings_and_tables(tmp_path: Path) -> None:
    import docx

    document = docx.Document()
    document.add_heading("Typography", level=1)
    document.add_paragraph("Headlines use a serif face.")
    table = document.add_table(rows=1, cols=2)
    table.rows[0].cells[0].text, table.rows[0].cells[1].text = "Gold", "#C9A227"
    path = tmp_path / "type.docx"
    document.save(str(path))
    chunks = read_chunks(path)
    assert len(chunks) == 1
    assert chunks[0].section == "Typography"
    assert chunks[0].text == "Typography\nHeadlines use a serif face.\nGold | #C9A227"


def test_bad_documents(tmp_path: Path) -> None:
    (tmp_path / "x.pptx").write_bytes(b"zz")
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4 garbage")
    (tmp_path / "broken.docx").write_bytes(b"not a zip")
    with pytest.raises(DocumentError, match="unsupported document type"):
        read_chunks(tmp_path / "x.pptx")
    with pytest.raises(DocumentError, match="cannot read PDF"):
        read_chunks(tmp_path / "broken.pdf")
    with pytest.raises(DocumentError, match="cannot read DOCX"):
        read_chunks(tmp_path / "broken.docx")


def test_chunk_cache_keyed_by_content(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("First paragraph.\n\nSecond paragraph.")
    cache = tmp_path / "cache"
    first = load_chunks(path, 800, cache)
    entries = list((cache / "documents").glob("*.json"))
    assert len(entries) == 1
    entries[0].write_text(json.dumps([{**first[0].__dict__, "text": "from the cache"}]))
    assert [c.text for c in load_chunks(path, 800, cache)] == ["from the cache"]  # not re-parsed
    path.write_text("Changed.")
    assert [c.text for c in load_chunks(path, 800, cache)] == ["Changed."]  # new content, new key


CORPUS = ["gold serif label", "marble table backdrop", "gold foil logo", "rim lighting kelvin"]


def chunks() -> list[Chunk]:
    return [Chunk("guide.md", "sha", i, text) for i, text in enumerate(CORPUS)]


def test_bm25_scores_by_hand() -> None:
    index = LexicalIndex(chunks())
    # N=4, equal lengths (tf part = 1). Lucene idf = ln(1 + (N - df + .5) / (df + .5)):
    # gold (df 2) = ln 2, label (df 1) = ln(10/3). chunk 0 = ln(20/3), chunk 2 = ln 2.
    scores = index.scores("The gold label!")
    assert scores == pytest.approx([1.0, 0.0, math.log(2) / math.log(20 / 3), 0.0])
    strict = index.search("The gold label!", top_k=5, threshold=0.7)
    assert [(r.chunk.index, r.score) for r in strict] == [(0, 1.0)]
    loose = index.search("The gold label!", top_k=5, threshold=0.3)
    assert [r.chunk.index for r in loose] == [0, 2]
    assert loose[1].score == pytest.approx(0.36536, abs=1e-5)
    assert [r.chunk.index for r in index.search("gold label", top_k=5, threshold=0.0)] == [0, 2]  # no-match never
    assert [r.chunk.index for r in index.search("gold label", top_k=1, threshold=0.0)] == [0]
    assert index.search("purple elephants", threshold=0.0) == []
    assert LexicalIndex([]).search("gold") == []
    assert loose[0].record() == {"document": "guide.md", "index": 0, "page": None, "section": None, "score": 1.0}


def test_tokenize() -> None:
    assert tokenize("The LOGO's clear-space is 2x, not #C9A227.") == ["logo's", "clear-space", "2x", "c9a227"]


VOCAB = ["gold", "label", "marble", "table", "logo", "lighting"]


class _FakeEmbeddings(BaseHTTPRequestHandler):
    requests: list[list[str]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        type(self).requests.append(texts)
        data = [
            {"object": "embedding", "index": i, "embedding": [float(tokenize(t).count(w)) for w in VOCAB]}
            for i, t in enumerate(texts)
        ]
        payload = json.dumps(
            {"object": "list", "data": data, "model": body["model"], "usage": {"prompt_tokens": 1, "total_tokens": 1}}
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def embedding_server() -> Iterator[str]:
    _FakeEmbeddings.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeEmbeddings)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_embedding_retrieval_through_litellm(embedding_server: str, tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path)
    call = {"api_base": embedding_server, "api_key": "test-key", "cache": cache}

    async def search(threshold: float) -> list[tuple[int, float]]:
        index = EmbeddingIndex(chunks(), "openai/fake-embed", **call)
        return [(r.chunk.index, r.score) for r in await index.search("gold label", top_k=5, threshold=threshold)]

    # query [1,1,0,0,0,0]; chunk 0 [1,1,0..] -> cos 1; chunk 2 "gold foil logo" [1,0,0,0,1,0] -> 1/2; others 0
    strict = asyncio.run(search(0.7))
    assert strict == [(0, pytest.approx(1.0))]
    loose = asyncio.run(search(0.4))
    assert [i for i, _ in loose] == [0, 2] and loose[1][1] == pytest.approx(0.5)
    sent = [t for batch in _FakeEmbeddings.requests for t in batch]
    assert sorted(sent) == sorted([*CORPUS, "gold label"])  # every text embedded once: the rest came from the cache
