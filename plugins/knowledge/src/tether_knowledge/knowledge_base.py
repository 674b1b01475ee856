"""The knowledge base: chunker, embedder and backend behind one small API.

::

    kb = KnowledgeBase(MemoryBackend(), embedder)   # or KnowledgeBase.open(config, ...)
    await kb.add("notes/design.md", text)                  # chunks, embeds, stores
    passages = await kb.search("how are retries capped?", k=5)
    for p in passages:
        print(p.reference, p.score)                        # notes/design.md:40-62 0.031

Re-adding a document whose text (and chunking) is unchanged does nothing; a changed
document has its chunks replaced. Without an embedder the knowledge base still works,
by keywords only: it logs that once and marks every passage ``keyword_only``.
"""

from __future__ import annotations

import asyncio
import enum
import hashlib
import logging
import time
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from tether.errors import ConfigError, KnowledgeBackendError

from .backend import DocumentInfo, DocumentWrite, KnowledgeBackend
from .chunking import Chunk, Chunker
from .embedders import Embedder, load_embedder
from .fusion import FusionMethod, Passage, fuse
from .passages import merge_passages

if TYPE_CHECKING:
    from tether.config import Config
    from tether.registry import EmbedderRegistrar, KnowledgeBackendRegistrar
    from tether.tools import Tool

__all__ = ["AddOutcome", "AddProgress", "KnowledgeBase", "SearchMode"]

log = logging.getLogger("tether_knowledge")

SearchMode = Literal["hybrid", "keyword", "vector"]

#: ``[knowledge] settings`` keys consumed by the knowledge base itself; the rest go to the
#: backend factory (``embedder`` holds the embedder factory's settings).
KB_SETTINGS = (
    "chunk_max_chars",
    "chunk_max_lines",
    "chunk_overlap_lines",
    "fusion",
    "rrf_k",
    "keyword_weight",
    "vector_weight",
    "min_score",
    "depth",
    "max_per_document",
    "chunk_context",
)


class AddOutcome(enum.Enum):
    """What :meth:`KnowledgeBase.add` did."""

    ADDED = "added"
    UPDATED = "updated"
    UNCHANGED = "unchanged"


@dataclass(slots=True)
class AddProgress:
    """Where :meth:`KnowledgeBase.add_many` stands, passed to its ``progress`` callback.

    ``documents``/``chunks`` were written so far, ``skipped`` documents were unchanged;
    ``started`` is a :func:`time.monotonic` time.
    """

    documents: int
    chunks: int
    skipped: int
    started: float

    @property
    def elapsed(self) -> float:
        """Seconds since the run started."""
        return time.monotonic() - self.started

    @property
    def chunks_per_second(self) -> float:
        """Indexing throughput so far."""
        elapsed = self.elapsed
        return self.chunks / elapsed if elapsed > 0 else 0.0


class KnowledgeBase:
    """Hybrid keyword + vector retrieval over documents.

    :param backend: where chunks live (see :mod:`tether_knowledge.backend`).
    :param embedder: text → vectors; ``None`` searches by keywords only.
    :param chunker: how documents are split (default: 1500 characters, 60 lines,
        3 lines of overlap).
    :param fusion: ``"rrf"`` (reciprocal rank fusion) or ``"convex"`` (weighted sum of
        min-max normalised scores); see :mod:`tether_knowledge.fusion`.
    :param rrf_k: reciprocal rank fusion constant.
    :param keyword_weight: weight of the keyword ranking in the fusion.
    :param vector_weight: weight of the vector ranking; higher than the keyword weight
        by default, favouring meaning over wording.
    :param min_score: fused scores below this are dropped.
    :param depth: how many results each ranking contributes, at least; a search for
        ``k`` passages fuses ``max(depth, 4 k)`` from each.
    :param max_per_document: at most this many passages of one document in a search
        result (``None``: no cap). Overlapping or adjacent chunks of a document are
        merged into one passage first (see :mod:`tether_knowledge.passages`).
    :param batch_size: texts per embedder call.
    """

    def __init__(
        self,
        backend: KnowledgeBackend,
        embedder: Embedder | None = None,
        *,
        chunker: Chunker | None = None,
        fusion: FusionMethod = "rrf",
        rrf_k: float = 5.0,
        keyword_weight: float = 1.2,
        vector_weight: float = 1.0,
        min_score: float = 0.0,
        depth: int = 50,
        max_per_document: int | None = 2,
        batch_size: int = 64,
    ) -> None:
        self.backend = backend
        self.embedder = embedder
        self.chunker = chunker or Chunker()
        if fusion not in ("rrf", "convex"):
            raise ConfigError(
                f'Unknown fusion {fusion!r}: use "rrf" (reciprocal rank fusion) or "convex" '
                f"(weighted sum of normalised scores)."
            )
        self.fusion: FusionMethod = fusion
        self.rrf_k = rrf_k
        self.keyword_weight = keyword_weight
        self.vector_weight = vector_weight
        self.min_score = min_score
        self.depth = depth
        if max_per_document is not None and max_per_document < 1:
            raise ConfigError(
                f"max_per_document must be at least 1 (or unset for no cap), got "
                f"{max_per_document}."
            )
        self.max_per_document = max_per_document
        self.batch_size = batch_size
        self._checked = False
        if embedder is None:
            log.info("Knowledge base has no embedder: searching by keywords only.")

    # -- construction from configuration ------------------------------------------------
    @classmethod
    def open(
        cls,
        config: Config,
        *,
        backends: KnowledgeBackendRegistrar,
        embedders: EmbedderRegistrar,
        backend: str | None = None,
        embedder: str | None = None,
        **settings: Any,
    ) -> KnowledgeBase:
        """The knowledge base described by ``[knowledge]`` in ``config``, built from the
        components in ``backends`` and ``embedders`` (a plugin manager's registrars:
        ``manager.knowledge_backends``, ``manager.embedders``).

        ``backend``/``embedder`` override the configured names; ``settings`` override
        ``[knowledge] settings``. Backend factories receive the remaining settings plus
        ``data_dir`` (where tether keeps its data).
        """
        from tether.config import data_dir

        merged: dict[str, Any] = {**config.knowledge.settings, **settings}
        embedder_settings = merged.pop("embedder", None) or {}
        options = {key: merged.pop(key) for key in KB_SETTINGS if key in merged}
        backend_name = backend or config.knowledge.backend
        factory = backends.get(
            backend_name,
            advice='Install its plugin (the persistent default is "sqlite", from '
            "tether-sqlite) or set [knowledge] backend.",
        )
        merged.setdefault("data_dir", str(Path(data_dir(config)) / "knowledge"))
        store = factory(**merged)
        model = load_embedder(embedder or config.knowledge.embedder, embedders, embedder_settings)
        chunker = Chunker(
            max_chars=int(options.pop("chunk_max_chars", 1500)),
            max_lines=int(options.pop("chunk_max_lines", 60)),
            overlap_lines=int(options.pop("chunk_overlap_lines", 3)),
            context=bool(options.pop("chunk_context", True)),
        )
        return cls(store, model, chunker=chunker, **options)

    # -- properties -------------------------------------------------------------------
    @property
    def keyword_only(self) -> bool:
        """True when there is no embedder: search ranks by keywords alone."""
        return self.embedder is None

    def documents(self) -> list[DocumentInfo]:
        """Every stored document, ordered by id."""
        return self.backend.list_documents()

    # -- writing ----------------------------------------------------------------------
    def content_hash(self, text: str) -> str:
        """Hash of ``text`` and the chunking settings: equal hashes mean equal chunks."""
        header = f"{self.chunker.signature}\n".encode()
        return hashlib.sha256(header + text.encode("utf-8", "surrogatepass")).hexdigest()

    async def add(self, doc_id: str, text: str, *, force: bool = False) -> AddOutcome:
        """Index ``text`` as document ``doc_id``.

        Unchanged text (same hash, same embedder) is skipped unless ``force``; changed
        text replaces the document's chunks atomically.
        """
        if not doc_id:
            raise ValueError("A document needs a non-empty id (its path or name).")
        digest = self.content_hash(text)
        embedder_name = self.embedder.name if self.embedder is not None else None
        existing = await asyncio.to_thread(self.backend.get_document, doc_id)
        if (
            existing is not None
            and not force
            and existing.content_hash == digest
            and (embedder_name is None or existing.embedder == embedder_name)
        ):
            return AddOutcome.UNCHANGED
        chunks = self.chunker.split(doc_id, text)
        vectors = await self._embed_chunks(chunks) if self.embedder is not None else None
        info = DocumentInfo(
            doc_id, digest, len(chunks), embedder_name if vectors is not None else None
        )
        await asyncio.to_thread(self.backend.put_document, info, chunks, vectors)
        return AddOutcome.ADDED if existing is None else AddOutcome.UPDATED

    async def add_many(
        self,
        documents: Iterable[tuple[str, str]] | AsyncIterable[tuple[str, str]],
        *,
        force: bool = False,
        batch_chunks: int = 2048,
        progress: Callable[[AddProgress], None] | None = None,
    ) -> dict[str, AddOutcome]:
        """Index many ``(doc_id, text)`` documents, faster than :meth:`add` one by one.

        Documents are chunked as they arrive and written in batches of about
        ``batch_chunks`` chunks: embedded together, and stored in one transaction where
        the backend supports it (``put_documents``). Each batch is stored whole or not at
        all, so an interrupted run leaves every document either indexed or untouched, and
        running it again skips what was finished (unchanged text is never re-indexed).
        ``progress`` is called after each batch. A ``doc_id`` given twice keeps its last
        text. Returns what happened to each document.
        """
        if batch_chunks < 1:
            raise ValueError(f"batch_chunks must be at least 1, got {batch_chunks}.")
        stored = {
            info.doc_id: info for info in await asyncio.to_thread(self.backend.list_documents)
        }
        bulk = _BulkAdd(self, stored, force=force, batch_chunks=batch_chunks, progress=progress)
        try:
            async for doc_id, text in _aiter(documents):
                await bulk.offer(doc_id, text)
            await bulk.flush()
        finally:
            await bulk.finish()
        return bulk.outcomes

    async def _embed_batch(
        self, documents: list[tuple[DocumentInfo, list[Chunk]]]
    ) -> list[DocumentWrite]:
        """The chunks of ``documents`` embedded together, as writes for the backend."""
        chunks = [chunk for _, doc_chunks in documents for chunk in doc_chunks]
        vectors = await self._embed_chunks(chunks) if self.embedder is not None else None
        writes: list[DocumentWrite] = []
        offset = 0
        for info, doc_chunks in documents:
            own = vectors[offset : offset + len(doc_chunks)] if vectors is not None else None
            offset += len(doc_chunks)
            if own is None:
                info = replace(info, embedder=None)
            writes.append((info, doc_chunks, own))
        return writes

    async def _store(self, writes: list[DocumentWrite]) -> None:
        """One write of many documents: ``put_documents`` where the backend has it."""
        put_many = getattr(self.backend, "put_documents", None)
        if put_many is not None:
            await asyncio.to_thread(put_many, writes)
            return

        def one_by_one() -> None:
            for info, doc_chunks, own in writes:
                self.backend.put_document(info, doc_chunks, own)

        await asyncio.to_thread(one_by_one)

    async def remove(self, doc_id: str) -> bool:
        """Remove document ``doc_id`` and its chunks; ``False`` if it was not stored."""
        return await asyncio.to_thread(self.backend.delete_document, doc_id)

    # -- reading ----------------------------------------------------------------------
    async def search(
        self,
        query: str,
        k: int = 5,
        *,
        mode: SearchMode = "hybrid",
        min_score: float | None = None,
    ) -> list[Passage]:
        """The ``k`` best passages for ``query``, best first.

        Overlapping or adjacent chunks of one document come back merged into one
        passage, and no document holds more than ``max_per_document`` of the ``k``.

        ``mode="keyword"`` or ``"vector"`` ranks by one signal alone (still through the
        fusion, so scores stay comparable). Without an embedder, ``hybrid`` falls back to
        keywords and every passage has ``keyword_only=True``; ``vector`` is an error.
        """
        if k <= 0 or not query.strip():
            return []
        if mode not in ("hybrid", "keyword", "vector"):
            raise ValueError(f'mode must be "hybrid", "keyword" or "vector", not {mode!r}.')
        if mode == "vector" and self.embedder is None:
            raise ConfigError(
                "Vector search needs an embedder: set [knowledge] embedder (for example "
                '"local-minilm" from tether-minilm), or search in keyword mode.'
            )
        depth = max(self.depth, 4 * k)
        keyword: list[Chunk] = []
        vector: list[Chunk] = []
        if mode != "vector":
            keyword = await asyncio.to_thread(self.backend.keyword_search, query, depth)
        if mode != "keyword" and self.embedder is not None:
            await self._check_embedder()
            query_vector = _unit(await self.embedder.embed_query(query))
            vector = await asyncio.to_thread(self.backend.vector_search, query_vector, depth)
        fused = fuse(
            keyword,
            vector,
            k=len(keyword) + len(vector),
            rrf_k=self.rrf_k,
            keyword_weight=self.keyword_weight,
            vector_weight=self.vector_weight,
            min_score=self.min_score if min_score is None else min_score,
            keyword_only=self.embedder is None,
            method=self.fusion,
        )
        return merge_passages(fused, max_per_document=self.max_per_document)[:k]

    def as_tool(self, *, name: str = "kb_search", default_k: int = 5) -> Tool:
        """A ``kb_search`` tool bound to this knowledge base (see :mod:`.tool`)."""
        from .tool import kb_search_tool

        return kb_search_tool(self, name=name, default_k=default_k)

    # -- lifecycle --------------------------------------------------------------------
    def close(self) -> None:
        """Close the backend."""
        self.backend.close()

    async def __aenter__(self) -> KnowledgeBase:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    # -- internals --------------------------------------------------------------------
    async def _embed_chunks(self, chunks: Sequence[Chunk]) -> Any:
        """Unit vectors of the chunks' indexed texts: a float32 matrix, a row per chunk."""
        import numpy as np

        assert self.embedder is not None
        parts = []
        for start in range(0, len(chunks), self.batch_size):
            batch = [c.indexed_text for c in chunks[start : start + self.batch_size]]
            embedded = await self.embedder.embed(batch)
            if len(embedded) != len(batch):
                raise KnowledgeBackendError(
                    f'Embedder "{self.embedder.name}" returned {len(embedded)} vectors for '
                    f"{len(batch)} texts; it must return one per text."
                )
            parts.append(_units(embedded))
        return np.concatenate(parts) if parts else np.zeros((0, 0), dtype=np.float32)

    async def _check_embedder(self) -> None:
        """Once: refuse to compare query vectors with another embedder's vectors."""
        if self._checked or self.embedder is None:
            return
        documents = await asyncio.to_thread(self.backend.list_documents)
        foreign = sorted(
            {d.embedder for d in documents if d.embedder not in (None, self.embedder.name)}, key=str
        )
        if foreign:
            raise KnowledgeBackendError(
                f"This knowledge base was indexed with embedder {', '.join(map(str, foreign))} "
                f'but "{self.embedder.name}" is configured; vectors of different models '
                f"cannot be compared. Configure the original embedder, or re-index with "
                f"`tether kb add --force PATH...`."
            )
        missing = sum(1 for d in documents if d.embedder is None)
        if missing:
            log.warning(
                "%d documents were indexed without vectors and are found by keywords only; "
                "add them again to embed them.",
                missing,
            )
        self._checked = True


def _unit(vector: Sequence[float]) -> list[float]:
    """``vector`` scaled to length 1 (unchanged if it is all zeros)."""
    unit: list[float] = _units([vector])[0].tolist()
    return unit


class _BulkAdd:
    """The state of one :meth:`KnowledgeBase.add_many`: documents waiting for the next
    batch, and the batch being stored while the next one is read, chunked and embedded
    (each store finishes before the next starts, so batches land in order)."""

    def __init__(
        self,
        kb: KnowledgeBase,
        stored: dict[str, DocumentInfo],
        *,
        force: bool,
        batch_chunks: int,
        progress: Callable[[AddProgress], None] | None,
    ) -> None:
        self.kb = kb
        self.stored = stored
        self.force = force
        self.batch_chunks = batch_chunks
        self.progress = progress
        self.embedder_name = kb.embedder.name if kb.embedder is not None else None
        self.outcomes: dict[str, AddOutcome] = {}
        self.state = AddProgress(documents=0, chunks=0, skipped=0, started=time.monotonic())
        self.pending: dict[str, tuple[DocumentInfo, list[Chunk]]] = {}
        self.pending_chunks = 0
        self.writing: asyncio.Future[None] | None = None

    async def offer(self, doc_id: str, text: str) -> None:
        """Queue one document (or skip it, unchanged); store a batch when one is full."""
        if not doc_id:
            raise ValueError("A document needs a non-empty id (its path or name).")
        digest = self.kb.content_hash(text)
        existing = self.stored.get(doc_id)
        if (
            existing is not None
            and not self.force
            and existing.content_hash == digest
            and (self.embedder_name is None or existing.embedder == self.embedder_name)
        ):
            self.outcomes[doc_id] = AddOutcome.UNCHANGED
            self.state.skipped += 1
            return
        chunks = self.kb.chunker.split(doc_id, text)
        replaced = self.pending.pop(doc_id, None)
        self.pending_chunks -= len(replaced[1]) if replaced is not None else 0
        info = DocumentInfo(doc_id, digest, len(chunks), self.embedder_name)
        self.pending[doc_id] = (info, chunks)
        self.pending_chunks += len(chunks)
        self.outcomes[doc_id] = AddOutcome.ADDED if existing is None else AddOutcome.UPDATED
        if self.pending_chunks >= self.batch_chunks:
            await self.flush()

    async def flush(self) -> None:
        """Embed the queued documents, then store them once the previous batch is in."""
        if not self.pending:
            return
        batch = list(self.pending.values())
        self.pending.clear()
        self.pending_chunks = 0
        writes = await self.kb._embed_batch(batch)
        await self.finish()
        self.writing = asyncio.ensure_future(self._store(writes))

    async def finish(self) -> None:
        """Wait for the batch under way: it lands (or fails) whole."""
        if self.writing is not None:
            await self.writing

    async def _store(self, writes: list[DocumentWrite]) -> None:
        await self.kb._store(writes)
        self.state.documents += len(writes)
        self.state.chunks += sum(len(chunks) for _, chunks, _ in writes)
        if self.progress is not None:
            self.progress(self.state)


def _units(vectors: Sequence[Sequence[float]]) -> Any:
    """``vectors`` as a float32 matrix of unit rows (all-zero rows unchanged)."""
    import numpy as np

    try:
        matrix = np.array(vectors, dtype=np.float32)
    except ValueError as exc:
        raise KnowledgeBackendError(
            f"The embedder returned vectors of different lengths ({exc}); it must return "
            f"one vector of its fixed dimension per text."
        ) from exc
    if matrix.ndim != 2:
        raise KnowledgeBackendError("The embedder must return one flat vector of numbers per text.")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    if not np.isfinite(norms).all():
        raise KnowledgeBackendError("The embedder returned a vector with NaN or infinite values.")
    np.divide(matrix, norms, out=matrix, where=norms > 0)
    return matrix


async def _aiter(
    items: Iterable[tuple[str, str]] | AsyncIterable[tuple[str, str]],
) -> AsyncIterator[tuple[str, str]]:
    if isinstance(items, AsyncIterable):
        async for item in items:
            yield item
    else:
        for item in items:
            yield item
