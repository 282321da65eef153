"""Retrieval of guideline chunks: lexical BM25 offline (bm25s), or embeddings through litellm.

Both return chunks with a normalized similarity the agent's ``similarity_threshold`` applies to:

- lexical: the BM25 score divided by the best chunk's score for that query (the best match is 1.0;
  chunks sharing no term with the query score 0 and are never returned);
- embeddings: the cosine similarity of the query and chunk embeddings (-1..1).

Then the ``top_k`` best chunks at or above the threshold are used, best first.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vision_eval.agents.documents import Chunk, default_cache_dir

STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "been",
        "but",
        "by",
        "for",
        "from",
        "has",
        "have",
        "in",
        "into",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "their",
        "this",
        "to",
        "was",
        "were",
        "will",
        "with",
        "not",
        "no",
        "must",
        "should",
        "can",
        "may",
        "than",
        "then",
        "there",
        "these",
        "those",
        "which",
        "who",
        "what",
        "when",
        "where",
        "how",
        "all",
        "any",
        "each",
        "more",
        "most",
        "other",
        "some",
        "such",
        "only",
        "own",
        "same",
        "so",
        "too",
        "very",
        "just",
        "do",
        "does",
    ]
)
_TOKEN = re.compile(r"[a-z0-9]+(?:['-][a-z0-9]+)*")


def tokenize(text: str) -> list[str]:
    """Lowercased word tokens without English stopwords or single characters."""
    return [t for t in _TOKEN.findall(text.lower()) if len(t) > 1 and t not in STOPWORDS]


@dataclass(frozen=True)
class Retrieved:
    """A chunk and its normalized similarity to the query."""

    chunk: Chunk
    score: float

    @property
    def text(self) -> str:
        return self.chunk.text

    @property
    def document(self) -> str:
        return self.chunk.document

    def record(self) -> dict[str, Any]:
        return self.chunk.record(self.score)


def select(chunks: Sequence[Chunk], scores: Sequence[float], top_k: int, threshold: float) -> list[Retrieved]:
    """The ``top_k`` chunks scoring at least ``threshold``, best first (ties: document order)."""
    ranked = sorted(range(len(chunks)), key=lambda i: (-scores[i], i))
    return [Retrieved(chunks[i], float(scores[i])) for i in ranked if scores[i] >= threshold - 1e-12][:top_k]


class LexicalIndex:
    """BM25 (bm25s, Lucene variant, k1=1.5, b=0.75) over the chunks of a set of documents."""

    def __init__(self, chunks: Sequence[Chunk]) -> None:
        import bm25s

        logging.getLogger("bm25s").setLevel(logging.WARNING)  # bm25s sets DEBUG at import: no per-index chatter
        self.chunks = list(chunks)
        self._bm25 = bm25s.BM25()
        if self.chunks:
            # an empty token list would break indexing; such a chunk just never matches
            self._bm25.index([tokenize(c.text) or ["\x00"] for c in self.chunks], show_progress=False)

    def scores(self, query: str) -> list[float]:
        """Normalized scores (best chunk = 1.0, no shared term = 0.0) for every chunk."""
        tokens = [t for t in tokenize(query) if t in self._bm25.vocab_dict] if self.chunks else []
        if not tokens:
            return [0.0] * len(self.chunks)
        raw = self._bm25.get_scores(tokens)
        best = float(raw.max())
        return [float(s) / best if best > 0 else 0.0 for s in raw]

    def search(self, query: str, top_k: int = 5, threshold: float = 0.7) -> list[Retrieved]:
        """The chunks to use for ``query`` (a chunk sharing no term with it is never used)."""
        scores = [s if s > 0 else float("-inf") for s in self.scores(query)]
        return select(self.chunks, scores, top_k, threshold)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity of two vectors (0 when either is zero)."""
    import numpy as np

    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    norm = float(np.linalg.norm(x) * np.linalg.norm(y))
    return float(x @ y / norm) if norm > 0 else 0.0


class EmbeddingCache:
    """Embeddings on disk, one JSON file per (model, text sha256): shared by runs and processes."""

    def __init__(self, cache_dir: Path | None = None) -> None:
        self.folder = (cache_dir or default_cache_dir()) / "embeddings"

    def _path(self, model: str, text: str) -> Path:
        key = hashlib.sha256(json.dumps([model, text]).encode()).hexdigest()
        return self.folder / key[:2] / f"{key}.json"

    def get(self, model: str, text: str) -> list[float] | None:
        path = self._path(model, text)
        try:
            return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
        except (OSError, ValueError):
            return None

    def put(self, model: str, text: str, vector: list[float]) -> None:
        path = self._path(model, text)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary = path.with_suffix(f".{os.getpid()}.tmp")
            temporary.write_text(json.dumps(vector), encoding="utf-8")
            temporary.replace(path)
        except OSError:
            pass


async def embed(
    texts: Sequence[str],
    model: str,
    *,
    api_base: str | None = None,
    api_key: str | None = None,
    cache: EmbeddingCache | None = None,
    batch_size: int = 64,
) -> list[list[float]]:
    """Embeddings of ``texts`` through ``litellm.aembedding`` (cached texts are not sent again)."""
    vectors: dict[int, list[float]] = {}
    missing = []
    for index, text in enumerate(texts):
        hit = cache.get(model, text) if cache is not None else None
        if hit is None:
            missing.append(index)
        else:
            vectors[index] = hit
    if missing:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        litellm.suppress_debug_info = True
        for start in range(0, len(missing), batch_size):
            part = missing[start : start + batch_size]
            kwargs: dict[str, Any] = {"model": model, "input": [texts[i] for i in part]}
            if api_base:
                kwargs["api_base"] = api_base
            if api_key:
                kwargs["api_key"] = api_key
            response = await litellm.aembedding(**kwargs)
            items = sorted(response.data, key=lambda item: item["index"])
            if len(items) != len(part):
                raise ValueError(f"embedding model returned {len(items)} vectors for {len(part)} texts")
            for index, item in zip(part, items, strict=True):
                vectors[index] = [float(v) for v in item["embedding"]]
                if cache is not None:
                    cache.put(model, texts[index], vectors[index])
    return [vectors[i] for i in range(len(texts))]


class EmbeddingIndex:
    """Cosine similarity between the query's and the chunks' embeddings (built with :meth:`build`)."""

    def __init__(self, chunks: Sequence[Chunk], model: str, **call: Any) -> None:
        self.chunks = list(chunks)
        self.model = model
        self.call = call
        self.vectors: list[list[float]] | None = None

    async def build(self) -> EmbeddingIndex:
        """Embed every chunk (once; cached on disk)."""
        if self.vectors is None:
            self.vectors = await embed([c.text for c in self.chunks], self.model, **self.call) if self.chunks else []
        return self

    async def scores(self, query: str) -> list[float]:
        await self.build()
        assert self.vectors is not None
        if not self.chunks:
            return []
        (vector,) = await embed([query], self.model, **self.call)
        return [cosine(vector, v) for v in self.vectors]

    async def search(self, query: str, top_k: int = 5, threshold: float = 0.7) -> list[Retrieved]:
        """The chunks to use for ``query``."""
        return select(self.chunks, await self.scores(query), top_k, threshold)
