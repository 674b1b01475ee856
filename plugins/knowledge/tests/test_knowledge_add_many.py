"""Bulk indexing: the same index as one-by-one adds, written in all-or-nothing batches,
and an interrupted ``tether kb add`` that the next run completes."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from tether.errors import KnowledgeBackendError
from tether_knowledge.backend import DocumentWrite
from tether_knowledge.chunking import Chunker
from tether_knowledge.knowledge_base import AddOutcome, AddProgress, KnowledgeBase
from tether_knowledge.memory_backend import MemoryBackend

DOCS = {
    f"notes/{n}.md": f"# Note {n}\n\n"
    + "\n".join(f"fact {n}.{i} about topic{i % 7}" for i in range(40))
    for n in range(30)
}


async def test_add_many_builds_the_index_add_builds() -> None:
    chunker = Chunker(max_chars=200, max_lines=8, overlap_lines=2)
    one = KnowledgeBase(MemoryBackend(), chunker=chunker)
    for doc_id, text in DOCS.items():
        await one.add(doc_id, text)
    many = KnowledgeBase(MemoryBackend(), chunker=chunker)
    seen: list[AddProgress] = []
    outcomes = await many.add_many(DOCS.items(), batch_chunks=25, progress=seen.append)
    assert set(outcomes.values()) == {AddOutcome.ADDED} and len(outcomes) == len(DOCS)
    assert one.documents() == many.documents()
    for query in ("topic3 fact", "note 12", "fact 7.5"):
        assert await one.search(query, k=8) == await many.search(query, k=8)
    # progress came batch by batch and ended with every chunk written
    assert len(seen) > 3 and seen[-1].documents == len(DOCS)
    assert seen[-1].chunks == sum(d.chunks for d in many.documents())
    again = await many.add_many(DOCS.items())
    assert set(again.values()) == {AddOutcome.UNCHANGED}


class FailingBackend(MemoryBackend):
    """Stores whole batches, then fails on the N-th one (a full disk, a lost server)."""

    def __init__(self, fail_on: int) -> None:
        super().__init__()
        self.fail_on = fail_on
        self.batches = 0

    def put_documents(self, documents: Sequence[DocumentWrite]) -> None:
        self.batches += 1
        if self.batches == self.fail_on:
            raise KnowledgeBackendError("disk full")
        for info, chunks, vectors in documents:
            self.put_document(info, chunks, vectors)


async def test_a_failed_run_leaves_whole_documents_and_the_next_run_finishes() -> None:
    backend = FailingBackend(fail_on=3)
    kb = KnowledgeBase(backend, chunker=Chunker(max_chars=200, max_lines=8, overlap_lines=2))
    with pytest.raises(KnowledgeBackendError, match="disk full"):
        await kb.add_many(DOCS.items(), batch_chunks=20)
    stored = kb.documents()
    assert 0 < len(stored) < len(DOCS)
    for info in stored:  # every stored document has all of its chunks
        assert info.chunks == len(kb.chunker.split(info.doc_id, DOCS[info.doc_id]))
    outcomes = await kb.add_many(DOCS.items(), batch_chunks=20)
    unchanged = [d for d, o in outcomes.items() if o is AddOutcome.UNCHANGED]
    assert sorted(unchanged) == sorted(info.doc_id for info in stored)
    assert len(kb.documents()) == len(DOCS)


async def test_a_document_given_twice_keeps_its_last_text() -> None:
    kb = KnowledgeBase(MemoryBackend())
    await kb.add_many([("a.md", "old words"), ("a.md", "new words")])
    assert [p.text for p in await kb.search("words", k=5)] == ["new words"]


def test_tether_kb_add_interrupted_then_resumed(tmp_path: Path) -> None:
    pytest.importorskip("tether_sqlite")
    docs = tmp_path / "docs"
    docs.mkdir()
    for n in range(400):
        (docs / f"{n:04}.md").write_text(f"# Doc {n}\n\nword{n} shared text line\n")
    (tmp_path / "tether.toml").write_text('[knowledge]\nbackend = "sqlite"\n')
    env = {
        **os.environ,
        "TETHER_DATA_DIR": str(tmp_path / "data"),
        "TETHER_CONFIG": str(tmp_path / "tether.toml"),
    }
    launcher = 'import sys; from tether_cli import main; sys.argv[0] = "tether"; main()'
    command = [sys.executable, "-c", launcher, "kb", "add", "docs", "--batch", "2"]
    process = subprocess.Popen(
        command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    database = tmp_path / "data" / "knowledge" / "kb.sqlite3"
    deadline = time.monotonic() + 60
    while _count(database, "documents") == 0:  # wait until the first batches are written
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "no batch was written within 60 s"
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, (out, err)
    assert "Interrupted" in err and "Traceback" not in err
    indexed = _count(database, "documents")
    assert 0 < indexed < 400
    with sqlite3.connect(database) as db:  # every stored document has all of its chunks
        broken = db.execute(
            "SELECT COUNT(*) FROM documents d WHERE d.chunks != "
            "(SELECT COUNT(*) FROM chunks c WHERE c.doc_id = d.doc_id)"
        ).fetchone()[0]
    assert broken == 0

    finished = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert finished.returncode == 0, finished.stderr
    assert f"{400 - indexed} added" in finished.stdout and f"{indexed} unchanged" in finished.stdout
    assert _count(database, "documents") == 400


def _count(database: Path, table: str) -> int:
    if not database.exists():
        return 0
    try:
        with sqlite3.connect(database, timeout=5) as db:
            return int(db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
    except sqlite3.OperationalError:  # the schema is not there yet
        return 0
