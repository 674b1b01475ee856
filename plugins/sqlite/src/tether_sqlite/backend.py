"""The SQLite knowledge-base backend: one file, durable, incremental.

Everything lives in one database (``kb.sqlite3`` in tether's data directory unless
``path`` says otherwise): documents, chunks with their text and line ranges, each
chunk's keyword terms (ids and counts) and its vector (a float32 blob), in 64 KB pages.
Every change to a document is one transaction, so a crash leaves the old document or the
new one.

Queries do not scan the database. On open, the terms and vectors are loaded once into
an in-memory BM25 inverted index and a vector index
(:class:`~tether_knowledge.keyword_index.KeywordIndex`,
:class:`~tether_knowledge.vector_index.VectorIndex`), which this process then updates
incrementally with its own writes. Writes by another process are noticed through
SQLite's ``data_version`` and trigger a reload. A hybrid query then costs a few
milliseconds at 100k chunks, where an FTS5 ``bm25()`` query over common words costs
tens to hundreds (the benchmark in ``bench/kb_bench.py`` measures both).
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np

from tether.errors import KnowledgeBackendError
from tether_knowledge import (
    Chunk,
    DocumentInfo,
    DocumentWrite,
    KeywordIndex,
    Tokenizer,
    VectorIndex,
)

__all__ = ["SqliteBackend"]

log = logging.getLogger("tether_knowledge.sqlite")

SCHEMA_VERSION = 2
#: Page size of a new database. A chunk row is a few KB (a 384-dimensional float32
#: vector alone is 1.5 KB), so 4 KB pages hold one row each, mostly empty: 64 KB pages
#: make the file 40% smaller and a bulk build a quarter cheaper (``bench/kb_bench.py``).
PAGE_SIZE = 65536
#: Bytes of the database read through a memory map, not copied by ``read()``: fetching
#: the chunks of a result then costs no more with 64 KB pages than with 4 KB ones.
MMAP_SIZE = 1 << 30

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS documents (
    doc_id TEXT PRIMARY KEY,
    content_hash TEXT NOT NULL,
    chunks INTEGER NOT NULL,
    embedder TEXT
);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    doc_id TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    text TEXT NOT NULL,
    context TEXT NOT NULL DEFAULT '',
    term_ids BLOB NOT NULL,
    term_counts BLOB NOT NULL,
    vector BLOB
);
CREATE INDEX IF NOT EXISTS chunks_by_doc ON chunks(doc_id);
CREATE TABLE IF NOT EXISTS terms (id INTEGER PRIMARY KEY, term TEXT NOT NULL UNIQUE);
"""


class SqliteBackend:
    """A :class:`~tether_knowledge.backend.KnowledgeBackend` in one SQLite file.

    :param path: the database file; default ``<data_dir>/kb.sqlite3``.
    :param data_dir: the knowledge directory tether passes to backend factories.
    :param language: stemming language of the keyword tokenizer (``None``: no stemming).
    :param busy_timeout: seconds to wait for another process's write lock.
    """

    name = "sqlite"

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        data_dir: str | Path | None = None,
        language: str | None = "english",
        busy_timeout: float = 10.0,
        **unknown: Any,
    ) -> None:
        if unknown:
            raise KnowledgeBackendError(
                f"Unknown sqlite backend settings: {', '.join(sorted(unknown))}. Valid: path, "
                f"language, busy_timeout."
            )
        if path is None:
            if data_dir is None:
                raise KnowledgeBackendError("The sqlite backend needs a path (or a data_dir).")
            path = Path(data_dir) / "kb.sqlite3"
        self.path = Path(path)
        self._tokenize = Tokenizer(language)
        self._lock = threading.RLock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(
                self.path, check_same_thread=False, isolation_level=None, timeout=busy_timeout
            )
            # Only a new database takes the page size (before WAL is set).
            self._db.execute(f"PRAGMA page_size={PAGE_SIZE}")
            self._db.execute(f"PRAGMA mmap_size={MMAP_SIZE}")
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA foreign_keys=ON")
            with self._transaction():
                self._create_schema()
        except sqlite3.Error as exc:
            raise KnowledgeBackendError(
                f"Cannot open the knowledge base {self.path}: {exc}. Check that the directory "
                f"is writable and the file is an SQLite database (or delete it to start over)."
            ) from exc
        self._closed = False
        self._load()

    # -- schema and loading ------------------------------------------------------------
    def _create_schema(self) -> None:
        for statement in _SCHEMA.split(";"):
            if statement.strip():
                self._db.execute(statement)
        version = self._meta("schema_version")
        if version is not None and int(version) > SCHEMA_VERSION:
            raise KnowledgeBackendError(
                f"{self.path} was written by a newer tether-sqlite (schema {version}); "
                f"upgrade tether-sqlite to open it."
            )
        if version is not None and int(version) < 2:
            # Schema 2 adds each chunk's context (indexed with its text).
            self._db.execute("ALTER TABLE chunks ADD COLUMN context TEXT NOT NULL DEFAULT ''")
        if version is None or int(version) < SCHEMA_VERSION:
            self._set_meta("schema_version", str(SCHEMA_VERSION))
        signature = self._meta("tokenizer")
        if signature is None:
            self._set_meta("tokenizer", self._tokenize.signature)
        elif signature != self._tokenize.signature:
            self._retokenize()

    def _meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def _set_meta(self, key: str, value: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    def _retokenize(self) -> None:
        """The stored terms came from another tokenizer: recompute them from the text."""
        log.warning("Re-indexing keywords of %s for a changed tokenizer.", self.path)
        index = KeywordIndex()
        rows = self._db.execute("SELECT id, text, context FROM chunks").fetchall()
        self._db.execute("DELETE FROM terms")
        for chunk_id, text, context in rows:
            ids, counts = index.encode(self._tokenize(f"{context}\n{text}" if context else text))
            self._db.execute(
                "UPDATE chunks SET term_ids = ?, term_counts = ? WHERE id = ?",
                (_ids_blob(ids), _counts_blob(counts), chunk_id),
            )
        self._db.executemany(
            "INSERT INTO terms(id, term) VALUES (?, ?)", list(enumerate(index.terms))
        )
        self._set_meta("tokenizer", self._tokenize.signature)

    def _load(self) -> None:
        """Build the in-memory indexes from the database."""
        with self._lock:
            keywords = KeywordIndex()
            vectors = VectorIndex()
            terms = self._db.execute("SELECT term FROM terms ORDER BY id").fetchall()
            keywords.load_vocabulary([t for (t,) in terms])
            slots: list[int] = []
            encoded: list[tuple[Any, Any]] = []
            vector_slots: list[int] = []
            blobs: list[bytes] = []
            for chunk_id, ids, counts, vector in self._db.execute(
                "SELECT id, term_ids, term_counts, vector FROM chunks"
            ):
                slots.append(chunk_id)
                encoded.append(
                    (np.frombuffer(ids, dtype=np.uint32), np.frombuffer(counts, dtype=np.uint16))
                )
                if vector is not None:
                    vector_slots.append(chunk_id)
                    blobs.append(vector)
            keywords.add_many(slots, encoded)
            if blobs:
                dims = len(blobs[0]) // 4
                if any(len(b) != 4 * dims for b in blobs):
                    raise KnowledgeBackendError(
                        f"{self.path} holds vectors of different lengths, from different "
                        f"embedders. Re-add the documents with one embedder "
                        f"(`tether kb add --force`)."
                    )
                matrix = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), dims)
                vectors.add_many(vector_slots, matrix)
            self._keywords = keywords
            self._vectors = vectors
            self._persisted_terms = len(keywords.terms)
            self._data_version = self._current_data_version()

    def _current_data_version(self) -> int:
        return int(self._db.execute("PRAGMA data_version").fetchone()[0])

    def _refresh(self) -> None:
        """Reload if another connection committed since we last looked."""
        if self._current_data_version() != self._data_version:
            log.debug("%s changed in another process; reloading its index.", self.path)
            self._load()

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    # -- the backend protocol ----------------------------------------------------------
    def get_document(self, doc_id: str) -> DocumentInfo | None:
        with self._lock, _errors(self.path):
            row = self._db.execute(
                "SELECT doc_id, content_hash, chunks, embedder FROM documents WHERE doc_id = ?",
                (doc_id,),
            ).fetchone()
            return DocumentInfo(*row) if row is not None else None

    def list_documents(self) -> list[DocumentInfo]:
        with self._lock, _errors(self.path):
            rows = self._db.execute(
                "SELECT doc_id, content_hash, chunks, embedder FROM documents ORDER BY doc_id"
            ).fetchall()
            return [DocumentInfo(*row) for row in rows]

    def put_document(
        self,
        info: DocumentInfo,
        chunks: Sequence[Chunk],
        vectors: Sequence[Sequence[float]] | None,
    ) -> None:
        self.put_documents([(info, chunks, vectors)])

    def put_documents(self, documents: Sequence[DocumentWrite]) -> None:
        """Store many documents in one transaction: all of them, or (on failure) none.

        Each item is what :meth:`put_document` takes. Much faster than one call per
        document when indexing a whole tree.
        """
        prepared = [self._prepare(info, chunks, vectors) for info, chunks, vectors in documents]
        with self._lock, _errors(self.path):
            with self._transaction():
                # Under the write lock: no other process can add terms until we commit.
                self._refresh()
                term_ids, tfs, bounds = self._keywords.encode_batch(
                    [c.indexed_text for _, chunks, _ in prepared for c in chunks], self._tokenize
                )
                old_slots = self._delete_rows(*(info.doc_id for info, _, _ in prepared))
                first = self._next_chunk_id()
                slots = list(range(first, first + len(bounds) - 1))
                self._db.executemany(
                    "INSERT INTO documents(doc_id, content_hash, chunks, embedder) VALUES (?, ?, ?, ?)",
                    [(i.doc_id, i.content_hash, i.chunks, i.embedder) for i, _, _ in prepared],
                )
                self._db.executemany(
                    "INSERT INTO terms(id, term) VALUES (?, ?)",
                    [
                        (i, self._keywords.terms[i])
                        for i in range(self._persisted_terms, len(self._keywords.terms))
                    ],
                )
                self._db.executemany(
                    "INSERT INTO chunks(id, doc_id, start_line, end_line, text, context, "
                    "term_ids, term_counts, vector) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    _chunk_rows(prepared, slots, term_ids, tfs, bounds),
                )
            self._persisted_terms = len(self._keywords.terms)
            for slot in old_slots:
                self._keywords.remove(slot)
                self._vectors.remove(slot)
            self._keywords.add_many(
                slots,
                [(term_ids[a:b], tfs[a:b]) for a, b in pairwise(bounds.tolist())],
            )
            offset = 0
            vector_slots: list[int] = []
            matrices = []
            for _, chunks, matrix in prepared:
                if matrix is not None:
                    vector_slots += slots[offset : offset + len(chunks)]
                    matrices.append(matrix)
                offset += len(chunks)
            if matrices:
                self._vectors.add_many(vector_slots, np.concatenate(matrices))

    def _prepare(
        self,
        info: DocumentInfo,
        chunks: Sequence[Chunk],
        vectors: Sequence[Sequence[float]] | None,
    ) -> tuple[DocumentInfo, Sequence[Chunk], Any]:
        """Check one document's vectors (before taking the lock)."""
        if vectors is not None and len(vectors) != len(chunks):
            raise ValueError(f"{len(chunks)} chunks but {len(vectors)} vectors.")
        matrix = None
        if vectors is not None and len(vectors):
            matrix = np.asarray(vectors, dtype=np.float32)
            dims = self._vectors.dimensions
            if dims is not None and matrix.shape[1] != dims:
                raise KnowledgeBackendError(
                    f"{self.path} holds {dims}-dimensional vectors; these have "
                    f"{matrix.shape[1]}. One knowledge base needs one embedder: re-add every "
                    f"document with the new one, or use another path."
                )
        return info, chunks, matrix

    def _next_chunk_id(self) -> int:
        """The first unused chunk id (ids are never reused, as with AUTOINCREMENT)."""
        row = self._db.execute(
            "SELECT MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'chunks'), 0), "
            "COALESCE((SELECT MAX(id) FROM chunks), 0))"
        ).fetchone()
        return int(row[0]) + 1

    def delete_document(self, doc_id: str) -> bool:
        with self._lock, _errors(self.path):
            with self._transaction():
                self._refresh()
                exists = self._db.execute(
                    "SELECT 1 FROM documents WHERE doc_id = ?", (doc_id,)
                ).fetchone()
                old_slots = self._delete_rows(doc_id)
            for slot in old_slots:
                self._keywords.remove(slot)
                self._vectors.remove(slot)
            return exists is not None

    def keyword_search(self, query: str, limit: int) -> list[Chunk]:
        terms = self._tokenize(query)
        with self._lock, _errors(self.path):
            self._refresh()
            hits = self._keywords.search(terms, limit)
            return self._chunks(hits)

    def vector_search(self, vector: Sequence[float], limit: int) -> list[Chunk]:
        with self._lock, _errors(self.path):
            self._refresh()
            if self._vectors.dimensions is not None and len(vector) != self._vectors.dimensions:
                raise KnowledgeBackendError(
                    f"The query vector has {len(vector)} dimensions but {self.path} holds "
                    f"{self._vectors.dimensions}-dimensional vectors: query with the embedder "
                    f"the documents were indexed with."
                )
            hits = self._vectors.search(vector, limit)
            return self._chunks(hits)

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._db.close()

    def __len__(self) -> int:
        """Chunks stored."""
        return len(self._keywords)

    # -- helpers -----------------------------------------------------------------------
    def _delete_rows(self, *doc_ids: str) -> list[int]:
        """Delete the documents and their chunks; the ids of the deleted chunks."""
        slots: list[int] = []
        for start in range(0, len(doc_ids), 500):
            part = doc_ids[start : start + 500]
            marks = ",".join("?" * len(part))
            slots += [
                row[0]
                for row in self._db.execute(
                    f"SELECT id FROM chunks WHERE doc_id IN ({marks})", part
                )
            ]
            self._db.execute(f"DELETE FROM chunks WHERE doc_id IN ({marks})", part)
            self._db.execute(f"DELETE FROM documents WHERE doc_id IN ({marks})", part)
        return slots

    def _chunks(self, hits: list[tuple[int, float]]) -> list[Chunk]:
        """The chunks of ``(slot, score)`` hits, in order, with their scores."""
        if not hits:
            return []
        marks = ",".join("?" * len(hits))
        rows = self._db.execute(
            f"SELECT id, doc_id, start_line, end_line, text, context FROM chunks "
            f"WHERE id IN ({marks})",
            [slot for slot, _ in hits],
        ).fetchall()
        by_id = {row[0]: row for row in rows}
        return [
            Chunk(row[1], row[2], row[3], row[4], score, context=row[5])
            for slot, score in hits
            if (row := by_id.get(slot)) is not None
        ]


def _chunk_rows(
    prepared: Sequence[tuple[DocumentInfo, Sequence[Chunk], Any]],
    slots: list[int],
    term_ids: Any,
    tfs: Any,
    bounds: Any,
) -> Iterator[tuple[Any, ...]]:
    """The ``chunks`` rows of a batch: each blob is a view into one buffer per batch
    (SQLite copies it when binding; no bytes object per blob)."""
    ids_blob = memoryview(_ids_blob(term_ids))
    counts_blob = memoryview(_counts_blob(tfs))
    ends = bounds.tolist()
    position = 0
    for info, chunks, matrix in prepared:
        vectors = (
            memoryview(np.ascontiguousarray(matrix, dtype=np.float32).data).cast("B")
            if matrix is not None
            else memoryview(b"")
        )
        row = len(vectors) // len(chunks) if chunks else 0
        for index, chunk in enumerate(chunks):
            start, end = ends[position], ends[position + 1]
            yield (
                slots[position],
                info.doc_id,
                chunk.start_line,
                chunk.end_line,
                chunk.text,
                chunk.context,
                ids_blob[4 * start : 4 * end],
                counts_blob[2 * start : 2 * end],
                vectors[row * index : row * (index + 1)] if matrix is not None else None,
            )
            position += 1


def _ids_blob(ids: Any) -> bytes:
    return bytes(np.asarray(ids).astype(np.uint32).tobytes())


def _counts_blob(counts: Any) -> bytes:
    return bytes(np.minimum(counts, 65535).astype(np.uint16).tobytes())


@contextmanager
def _errors(path: Path) -> Iterator[None]:
    try:
        yield
    except sqlite3.Error as exc:
        raise KnowledgeBackendError(
            f"The knowledge base {path} failed: {exc}. If another process holds it, retry; "
            f"if the file is damaged, delete it and add the documents again."
        ) from exc
