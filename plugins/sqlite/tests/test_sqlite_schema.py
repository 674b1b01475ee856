"""An index written by an older tether-sqlite opens, gains what the new schema adds,
and keeps what it held."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tether.errors import KnowledgeBackendError
from tether_knowledge.backend import DocumentInfo
from tether_knowledge.chunking import Chunker
from tether_sqlite.backend import SqliteBackend


def test_a_schema_1_index_gains_chunk_context_and_keeps_its_chunks(tmp_path: Path) -> None:
    path = tmp_path / "kb.sqlite3"
    backend = SqliteBackend(path)
    chunks = Chunker(context=False).split("a.md", "alpha beta\ngamma")
    backend.put_document(DocumentInfo("a.md", "h", len(chunks)), chunks, None)
    backend.close()
    db = sqlite3.connect(path)  # what tether-sqlite wrote before chunks had a context
    db.execute("ALTER TABLE chunks DROP COLUMN context")
    db.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    db.commit()
    db.close()

    backend = SqliteBackend(path)
    assert [c.text for c in backend.keyword_search("gamma", 5)] == ["alpha beta\ngamma"]
    contextual = Chunker(max_chars=10, max_lines=1, overlap_lines=0).split("b.md", "Title\nbody")
    backend.put_document(DocumentInfo("b.md", "h2", len(contextual)), contextual, None)
    found = backend.keyword_search("title", 5)
    assert {(c.doc_id, c.start_line) for c in found} == {("b.md", 1), ("b.md", 2)}
    backend.close()
    version = (
        sqlite3.connect(path)
        .execute("SELECT value FROM meta WHERE key = 'schema_version'")
        .fetchone()
    )
    assert version == ("2",)


def test_an_index_from_a_newer_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "kb.sqlite3"
    SqliteBackend(path).close()
    db = sqlite3.connect(path)
    db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    with pytest.raises(KnowledgeBackendError, match="newer tether-sqlite"):
        SqliteBackend(path)


def test_a_new_index_has_large_pages_and_an_old_one_keeps_its_own(tmp_path: Path) -> None:
    chunks = Chunker().split("a.md", "alpha beta")
    new = SqliteBackend(tmp_path / "new.sqlite3")
    new.put_document(DocumentInfo("a.md", "h", len(chunks)), chunks, None)
    new.close()
    old = sqlite3.connect(tmp_path / "old.sqlite3")  # written with SQLite's default pages
    old.execute("CREATE TABLE early (x)")
    old.commit()
    old.close()
    backend = SqliteBackend(tmp_path / "old.sqlite3")
    backend.put_document(DocumentInfo("a.md", "h", len(chunks)), chunks, None)
    assert [c.text for c in backend.keyword_search("alpha", 5)] == ["alpha beta"]
    backend.close()
    sizes = {
        name: sqlite3.connect(tmp_path / name).execute("PRAGMA page_size").fetchone()[0]
        for name in ("new.sqlite3", "old.sqlite3")
    }
    assert sizes == {"new.sqlite3": 65536, "old.sqlite3": 4096}
