"""The knowledge-base backend protocol: what a storage plugin implements.

A backend stores chunks (and, when the knowledge base has an embedder, one unit-length
vector per chunk) grouped by document, and answers two kinds of query: keywords (BM25)
and nearest vectors (inner product of unit vectors, i.e. cosine). It does not chunk,
embed or fuse: :class:`~tether_knowledge.KnowledgeBase` does, so every backend returns
the same passages for the same rankings.

Plugins register a factory through ``register_knowledge_backends``::

    @tether.hookimpl
    def register_knowledge_backends(backends):
        backends.add("sqlite", SqliteBackend)   # SqliteBackend(**settings)

Contract (checked by the shared contract test suite):

- :meth:`~KnowledgeBackend.put_document` replaces a document's chunks atomically: a
  reader sees the old chunks or the new ones, never a mix; a crash leaves one of the two.
- A backend may also implement ``put_documents(documents)``, storing many
  ``(info, chunks, vectors)`` items (:data:`DocumentWrite`) in one transaction, all or
  none; :meth:`~tether_knowledge.KnowledgeBase.add_many` uses it when present and calls
  :meth:`~KnowledgeBackend.put_document` per document otherwise.
- Methods are synchronous and may be called from a worker thread; a backend serialises
  its own access if it needs to.
- Rankings are best first and hold each chunk at most once.
- Failures raise :class:`~tether.errors.KnowledgeBackendError` with a message saying what
  to do, never a vendor exception.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from .chunking import Chunk

__all__ = ["DocumentInfo", "DocumentWrite", "KnowledgeBackend"]


@dataclass(frozen=True, slots=True)
class DocumentInfo:
    """What the knowledge base knows of a stored document.

    ``content_hash`` detects changes (re-adding identical text is a no-op);
    ``embedder`` names the embedder whose vectors the chunks carry, ``None`` when the
    document was indexed for keywords only.
    """

    doc_id: str
    content_hash: str
    chunks: int
    embedder: str | None = None


#: One document to store: its record, its chunks and their vectors (or ``None``).
DocumentWrite = tuple[DocumentInfo, Sequence[Chunk], Sequence[Sequence[float]] | None]


@runtime_checkable
class KnowledgeBackend(Protocol):
    """Storage and ranking of chunks. See the module docstring for the contract."""

    def get_document(self, doc_id: str) -> DocumentInfo | None:
        """The stored document ``doc_id``, or ``None``."""
        ...

    def list_documents(self) -> list[DocumentInfo]:
        """Every stored document, ordered by id."""
        ...

    def put_document(
        self,
        info: DocumentInfo,
        chunks: Sequence[Chunk],
        vectors: Sequence[Sequence[float]] | None,
    ) -> None:
        """Store ``chunks`` as the whole content of ``info.doc_id``, atomically replacing
        what was there. ``vectors`` (unit length, one per chunk) or ``None``."""
        ...

    def delete_document(self, doc_id: str) -> bool:
        """Remove the document and its chunks; ``False`` if it was not stored."""
        ...

    def keyword_search(self, query: str, limit: int) -> list[Chunk]:
        """Up to ``limit`` chunks by BM25 score for ``query``, best first, each with its
        score in :attr:`Chunk.score`. Chunks that share no term with the query are not
        returned."""
        ...

    def vector_search(self, vector: Sequence[float], limit: int) -> list[Chunk]:
        """Up to ``limit`` chunks whose vectors are nearest ``vector`` (unit length),
        best first, each with its inner product (cosine similarity) in
        :attr:`Chunk.score`. Chunks stored without vectors are not returned."""
        ...

    def close(self) -> None:
        """Release files, connections and memory. Idempotent."""
        ...
