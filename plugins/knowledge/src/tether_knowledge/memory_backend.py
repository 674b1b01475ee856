"""The in-memory backend (``memory``): for tests, notebooks and short-lived agents.

Keywords are ranked by rank-bm25's ``BM25Okapi`` (rebuilt lazily after a change, so a
burst of additions costs one rebuild), vectors by :class:`VectorIndex`. Nothing is
persisted; use the ``sqlite`` backend for an index that outlives the process.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from .backend import DocumentInfo
from .chunking import Chunk
from .text import Tokenizer

__all__ = ["MemoryBackend"]


class MemoryBackend:
    """A :class:`~tether_knowledge.backend.KnowledgeBackend` kept in process memory.

    :param language: stemming language of the keyword tokenizer (``None``: no stemming).
    """

    name = "memory"

    def __init__(self, language: str | None = "english", **_: Any) -> None:
        from .vector_index import VectorIndex

        self._tokenize = Tokenizer(language)
        self._lock = threading.RLock()
        self._documents: dict[str, DocumentInfo] = {}
        self._chunks: dict[int, Chunk] = {}
        self._tokens: dict[int, list[str]] = {}
        self._by_doc: dict[str, list[int]] = {}
        self._vectors = VectorIndex()
        self._next_slot = 0
        self._bm25: Any = None
        self._bm25_slots: list[int] = []
        self._postings: dict[str, list[int]] = {}

    def get_document(self, doc_id: str) -> DocumentInfo | None:
        return self._documents.get(doc_id)

    def list_documents(self) -> list[DocumentInfo]:
        with self._lock:
            return [self._documents[d] for d in sorted(self._documents)]

    def put_document(
        self,
        info: DocumentInfo,
        chunks: Sequence[Chunk],
        vectors: Sequence[Sequence[float]] | None,
    ) -> None:
        if vectors is not None and len(vectors) != len(chunks):
            raise ValueError(f"{len(chunks)} chunks but {len(vectors)} vectors.")
        tokens = [self._tokenize(chunk.indexed_text) for chunk in chunks]
        with self._lock:
            self.delete_document(info.doc_id)
            slots = list(range(self._next_slot, self._next_slot + len(chunks)))
            self._next_slot += len(chunks)
            for slot, chunk, terms in zip(slots, chunks, tokens, strict=True):
                self._chunks[slot] = chunk
                self._tokens[slot] = terms
            if vectors is not None and slots:
                self._vectors.add_many(slots, vectors)
            self._by_doc[info.doc_id] = slots
            self._documents[info.doc_id] = info
            self._bm25 = None

    def delete_document(self, doc_id: str) -> bool:
        with self._lock:
            info = self._documents.pop(doc_id, None)
            if info is None:
                return False
            for slot in self._by_doc.pop(doc_id, []):
                del self._chunks[slot]
                del self._tokens[slot]
                self._vectors.remove(slot)
            self._bm25 = None
            return True

    def keyword_search(self, query: str, limit: int) -> list[Chunk]:
        terms = self._tokenize(query)
        with self._lock:
            if not terms or not self._chunks:
                return []
            bm25 = self._index()
            # Only chunks sharing a term qualify: on tiny corpora BM25Okapi's idf (and so
            # every score) can be negative, so a score alone does not tell a match.
            hits: set[int] = set()
            for term in set(terms):
                hits.update(self._postings.get(term, ()))
            if not hits:
                return []
            scores = bm25.get_scores(terms)
            matching = np.sort(np.fromiter(hits, dtype=np.int64, count=len(hits)))
            ranked = matching[np.argsort(-scores[matching], kind="stable")][:limit]
            return [
                replace(self._chunks[self._bm25_slots[i]], score=float(scores[i]))
                for i in ranked.tolist()
            ]

    def vector_search(self, vector: Sequence[float], limit: int) -> list[Chunk]:
        with self._lock:
            return [
                replace(self._chunks[slot], score=score)
                for slot, score in self._vectors.search(vector, limit)
            ]

    def close(self) -> None:
        with self._lock:
            self._documents.clear()
            self._chunks.clear()
            self._tokens.clear()
            self._by_doc.clear()
            self._bm25 = None

    def _index(self) -> Any:
        if self._bm25 is None:
            from rank_bm25 import BM25Okapi

            self._bm25_slots = list(self._chunks)
            corpus = [self._tokens[slot] for slot in self._bm25_slots]
            self._bm25 = BM25Okapi(corpus)
            self._postings = {}
            for index, tokens in enumerate(corpus):
                for term in set(tokens):
                    self._postings.setdefault(term, []).append(index)
        return self._bm25
