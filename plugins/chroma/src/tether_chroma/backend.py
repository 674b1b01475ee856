"""The Chroma knowledge-base backend: an embedded persistent store or a Chroma server.

Three collections per knowledge base (``<prefix>-documents``, ``<prefix>-chunks``,
``<prefix>-vectors``): document records, chunk texts with their line ranges, and the
embeddings of chunks that have one. Chroma stores every record with a vector; records
that have no meaningful one (documents, chunk texts) carry a 2-dimensional filler
derived from their id, so Chroma never calls its default embedding function, which
would download a model. Real vectors always come from tether's embedder.

Keyword ranking is BM25 in process (:class:`~tether_knowledge.keyword_index.KeywordIndex`),
built from the chunk texts on the first keyword query and kept current with this
process's writes; other clients' writes are noticed through a generation marker in the
documents collection's metadata.

Chroma has no multi-record transactions. A document is replaced in the order that
never loses it: new chunks are written (under new ids), then the document record, then
the old chunks are deleted. A crash in between leaves extra chunks that the next write of
that document removes; a concurrent reader may briefly see old and new chunks together.
"""

from __future__ import annotations

import hashlib
import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from tether.errors import KnowledgeBackendError
from tether_knowledge import Chunk, DocumentInfo, DocumentWrite, KeywordIndex, Tokenizer

__all__ = ["ChromaBackend"]

T = TypeVar("T")

_PAGE = 5000


class ChromaBackend:
    """A :class:`~tether_knowledge.backend.KnowledgeBackend` on Chroma.

    :param path: directory of an embedded persistent store (default
        ``<data_dir>/chroma``). Ignored when ``host`` is given.
    :param host: a Chroma server to use instead (``port``, ``ssl``, ``headers`` apply).
    :param collection: prefix of the collection names.
    :param client: an already built chromadb client (for applications and tests).
    :param language: stemming language of the keyword tokenizer.
    """

    name = "chroma"

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        data_dir: str | Path | None = None,
        host: str | None = None,
        port: int = 8000,
        ssl: bool = False,
        headers: dict[str, str] | None = None,
        collection: str = "tether",
        client: Any = None,
        language: str | None = "english",
        **unknown: Any,
    ) -> None:
        if unknown:
            raise KnowledgeBackendError(
                f"Unknown chroma backend settings: {', '.join(sorted(unknown))}. Valid: path, "
                f"host, port, ssl, headers, collection, language."
            )
        self._tokenize = Tokenizer(language)
        self._lock = threading.RLock()
        where = f"Chroma server {host}:{port}" if host else "Chroma store"
        with _errors(where):
            import chromadb
            from chromadb.config import Settings

            settings = Settings(anonymized_telemetry=False)
            if client is None:
                if host is not None:
                    client = chromadb.HttpClient(
                        host=host, port=port, ssl=ssl, headers=headers, settings=settings
                    )
                else:
                    if path is None:
                        if data_dir is None:
                            raise KnowledgeBackendError(
                                "The chroma backend needs a path, a host, or a data_dir."
                            )
                        path = Path(data_dir) / "chroma"
                    Path(path).mkdir(parents=True, exist_ok=True)
                    client = chromadb.PersistentClient(path=str(path), settings=settings)
                    where = f"Chroma store {path}"
            self._where = where
            self._client = client
            self._documents = client.get_or_create_collection(
                f"{collection}-documents", embedding_function=None
            )
            self._chunks = client.get_or_create_collection(
                f"{collection}-chunks", embedding_function=None
            )
            self._vectors = client.get_or_create_collection(
                f"{collection}-vectors",
                embedding_function=None,
                configuration={"hnsw": {"space": "ip", "ef_search": 200}},
            )
            self._batch = int(client.get_max_batch_size())
        self._keywords: KeywordIndex | None = None
        self._slot_of: dict[str, int] = {}
        self._id_of: dict[int, str] = {}
        self._generation: str | None = None
        self._closed = False

    # -- the backend protocol ----------------------------------------------------------
    def get_document(self, doc_id: str) -> DocumentInfo | None:
        with self._lock, _errors(self._where):
            found = self._documents.get(ids=[doc_id], include=["metadatas"])
            if not found["ids"]:
                return None
            return _info(doc_id, found["metadatas"][0])

    def list_documents(self) -> list[DocumentInfo]:
        with self._lock, _errors(self._where):
            infos = [
                _info(record_id, metadata)
                for record_id, _, metadata in self._all(self._documents, ["metadatas"])
            ]
            return sorted(infos, key=lambda info: info.doc_id)

    def put_document(
        self,
        info: DocumentInfo,
        chunks: Sequence[Chunk],
        vectors: Sequence[Sequence[float]] | None,
    ) -> None:
        self.put_documents([(info, chunks, vectors)])

    def put_documents(self, documents: Sequence[DocumentWrite]) -> None:
        """Store many documents with a few large Chroma calls instead of several per
        document. Chroma has no multi-record transactions: new chunks are written under
        fresh ids first, then the document records, and only then are the old chunks
        deleted, so an interruption leaves every document readable (old or new chunks)
        and a rerun of the same add replaces any leftovers."""
        ids: list[str] = []
        metadatas: list[Any] = []
        texts: list[str] = []
        indexed: list[str] = []
        embeddings: list[list[float]] = []
        vector_rows: list[int] = []
        for info, chunks, vectors in documents:
            if vectors is not None and len(vectors) != len(chunks):
                raise ValueError(f"{len(chunks)} chunks but {len(vectors)} vectors.")
            version = uuid.uuid4().hex[:12]
            key = _key(info.doc_id)
            for i, chunk in enumerate(chunks):
                if vectors is not None:
                    vector_rows.append(len(ids))
                    embeddings.append([float(x) for x in vectors[i]])
                ids.append(f"{key}-{version}-{i}")
                metadatas.append(
                    {
                        "doc_id": chunk.doc_id,
                        "start_line": chunk.start_line,
                        "end_line": chunk.end_line,
                        "context": chunk.context,
                    }
                )
                texts.append(chunk.text)
                indexed.append(chunk.indexed_text)
        doc_ids = [info.doc_id for info, _, _ in documents]
        with self._lock, _errors(self._where):
            old = self._chunks.get(where={"doc_id": {"$in": doc_ids}}, include=[])["ids"]
            for start in range(0, len(ids), self._batch):
                part = slice(start, start + self._batch)
                self._chunks.add(
                    ids=ids[part],
                    documents=texts[part],
                    metadatas=metadatas[part],
                    embeddings=[_filler(i) for i in ids[part]],
                )
            for start in range(0, len(vector_rows), self._batch):
                rows = vector_rows[start : start + self._batch]
                self._vectors.add(
                    ids=[ids[r] for r in rows],
                    documents=[texts[r] for r in rows],
                    metadatas=[metadatas[r] for r in rows],
                    embeddings=embeddings[start : start + self._batch],
                )
            for start in range(0, len(documents), self._batch):
                part_docs = documents[start : start + self._batch]
                self._documents.upsert(
                    ids=[info.doc_id for info, _, _ in part_docs],
                    metadatas=[
                        {
                            "content_hash": info.content_hash,
                            "chunks": info.chunks,
                            "embedder": info.embedder or "",
                        }
                        for info, _, _ in part_docs
                    ],
                    embeddings=[_filler(info.doc_id) for info, _, _ in part_docs],
                )
            self._delete_chunks(old)
            self._touch()
            if self._keywords is not None:
                for chunk_id in old:
                    self._forget(chunk_id)
                for chunk_id, text in zip(ids, indexed, strict=True):
                    self._index(chunk_id, text)

    def delete_document(self, doc_id: str) -> bool:
        with self._lock, _errors(self._where):
            exists = bool(self._documents.get(ids=[doc_id], include=[])["ids"])
            old = self._chunks.get(where={"doc_id": doc_id}, include=[])["ids"]
            self._delete_chunks(old)
            if exists:
                self._documents.delete(ids=[doc_id])
            self._touch()
            if self._keywords is not None:
                for chunk_id in old:
                    self._forget(chunk_id)
            return exists

    def keyword_search(self, query: str, limit: int) -> list[Chunk]:
        terms = self._tokenize(query)
        with self._lock, _errors(self._where):
            keywords = self._keyword_index()
            hits = [(self._id_of[slot], score) for slot, score in keywords.search(terms, limit)]
            if not hits:
                return []
            found = self._chunks.get(
                ids=[record_id for record_id, _ in hits], include=["documents", "metadatas"]
            )
            by_id = {
                record_id: (text, metadata)
                for record_id, text, metadata in zip(
                    found["ids"], found["documents"], found["metadatas"], strict=True
                )
            }
            return [_chunk(*by_id[i], score) for i, score in hits if i in by_id]

    def vector_search(self, vector: Sequence[float], limit: int) -> list[Chunk]:
        with self._lock, _errors(self._where):
            count = self._vectors.count()
            if count == 0 or limit <= 0:
                return []
            found = self._vectors.query(
                query_embeddings=[list(vector)],
                n_results=min(limit, count),
                include=["documents", "metadatas", "distances"],
            )
            # inner-product space: distance = 1 - inner product
            return [
                _chunk(text, metadata, 1.0 - float(distance))
                for text, metadata, distance in zip(
                    found["documents"][0], found["metadatas"][0], found["distances"][0], strict=True
                )
            ]

    def close(self) -> None:
        with self._lock:
            self._keywords = None
            self._closed = True

    # -- keyword index -----------------------------------------------------------------
    def _keyword_index(self) -> KeywordIndex:
        generation = self._current_generation()
        if self._keywords is None or generation != self._generation:
            self._keywords = KeywordIndex()
            self._slot_of.clear()
            self._id_of.clear()
            slots: list[int] = []
            texts: list[str] = []
            for record_id, text, metadata in self._all(self._chunks, ["documents", "metadatas"]):
                slot = len(self._slot_of)
                self._slot_of[record_id] = slot
                self._id_of[slot] = record_id
                slots.append(slot)
                texts.append(_chunk(text or "", metadata).indexed_text)
            self._keywords.add_many(slots, self._keywords.encode_texts(texts, self._tokenize))
            self._generation = generation
        return self._keywords

    def _index(self, chunk_id: str, text: str) -> None:
        assert self._keywords is not None
        slot = len(self._id_of)
        while slot in self._id_of:
            slot += 1
        self._slot_of[chunk_id] = slot
        self._id_of[slot] = chunk_id
        ((ids, counts),) = self._keywords.encode_texts([text], self._tokenize)
        self._keywords.add(slot, ids, counts)

    def _forget(self, chunk_id: str) -> None:
        assert self._keywords is not None
        slot = self._slot_of.pop(chunk_id, None)
        if slot is not None:
            del self._id_of[slot]
            self._keywords.remove(slot)

    def _current_generation(self) -> str | None:
        metadata = self._client.get_collection(self._documents.name).metadata or {}
        value = metadata.get("generation")
        return None if value is None else str(value)

    def _touch(self) -> None:
        """Mark a write, so other clients rebuild their keyword index."""
        generation = uuid.uuid4().hex
        self._documents.modify(metadata={"generation": generation})
        self._generation = generation

    # -- helpers -----------------------------------------------------------------------
    def _delete_chunks(self, ids: list[str]) -> None:
        for start in range(0, len(ids), self._batch):
            part = ids[start : start + self._batch]
            self._chunks.delete(ids=part)
            self._vectors.delete(ids=part)

    def _all(self, collection: Any, include: list[str]) -> Iterator[tuple[str, Any, Any]]:
        offset = 0
        while True:
            page = collection.get(include=include, limit=_PAGE, offset=offset)
            ids = page["ids"]
            if not ids:
                return
            texts = page.get("documents") or [None] * len(ids)
            metadatas = page.get("metadatas") or [None] * len(ids)
            yield from zip(ids, texts, metadatas, strict=True)
            offset += len(ids)


def _key(doc_id: str) -> str:
    return hashlib.sha256(doc_id.encode("utf-8", "surrogatepass")).hexdigest()[:20]


def _filler(record_id: str) -> list[float]:
    """A unit 2-d vector from the id: records without a real vector need one, and
    distinct values keep Chroma's HNSW graph well formed."""
    import math

    digest = int.from_bytes(hashlib.blake2b(record_id.encode(), digest_size=8).digest(), "big")
    angle = (digest / 2**64) * 2 * math.pi
    return [math.cos(angle), math.sin(angle)]


def _info(doc_id: str, metadata: Any) -> DocumentInfo:
    return DocumentInfo(
        doc_id,
        str(metadata["content_hash"]),
        int(metadata["chunks"]),
        str(metadata.get("embedder") or "") or None,
    )


def _chunk(text: Any, metadata: Any, score: float | None = None) -> Chunk:
    return Chunk(
        str(metadata["doc_id"]),
        int(metadata["start_line"]),
        int(metadata["end_line"]),
        str(text),
        score,
        context=str(metadata.get("context") or ""),
    )


@contextmanager
def _errors(where: str) -> Iterator[None]:
    try:
        yield
    except KnowledgeBackendError:
        raise
    except (ValueError, TypeError):
        raise
    except Exception as exc:
        raise KnowledgeBackendError(
            f"{where} failed: {exc}. Check that the server is running and reachable (or the "
            f"directory writable), then retry."
        ) from exc
