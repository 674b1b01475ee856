"""The knowledge-base backend contract, run against every backend: memory, sqlite,
chroma (embedded) and chroma (a real Chroma server on loopback)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tether.knowledge.backend import DocumentInfo, KnowledgeBackend
from tether.knowledge.chunking import Chunk, Chunker
from tether.knowledge.knowledge_base import AddOutcome, KnowledgeBase


def _support() -> Any:
    """``tests/kb_support.py``, loaded by path (tests are not a package)."""
    import importlib.util
    import sys

    module = sys.modules.get("kb_support")
    if module is None:
        spec = importlib.util.spec_from_file_location(
            "kb_support", Path(__file__).with_name("kb_support.py")
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["kb_support"] = module
        spec.loader.exec_module(module)
    return module


HashingEmbedder = _support().HashingEmbedder
chroma_server = _support().chroma_server
make_backend = _support().make_backend

BACKENDS = ["memory", "sqlite", "chroma", "chroma-http"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    with chroma_server(tmp_path_factory.mktemp("chroma-server")) as address:
        yield address


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    server = request.getfixturevalue("server") if request.param == "chroma-http" else None
    store = make_backend(request.param, tmp_path, server)
    yield store
    store.close()


@pytest.fixture
def kb(backend: Any) -> KnowledgeBase:
    return KnowledgeBase(
        backend, HashingEmbedder(), chunker=Chunker(max_chars=200, max_lines=4, overlap_lines=1)
    )


RETRIES = """# Retries
Rate limits and dropped connections are retried.
Backoff is exponential with jitter.
The delay is capped at thirty seconds.
A retry-after header from the provider is honoured.
"""

SESSIONS = """# Sessions
Sessions are stored as JSONL files, one message per line.
A writer lock keeps two processes from appending at once.
Repair synthesises results for interrupted tool calls.
"""

COOKING = """# Bread
Knead the dough for ten minutes.
Let it rise until doubled in size.
Bake in a hot oven.
"""


def refs(passages: Any) -> list[str]:
    return [p.reference for p in passages]


def test_backend_satisfies_the_protocol(backend: Any) -> None:
    assert isinstance(backend, KnowledgeBackend)


async def test_documents_are_listed_with_their_chunk_counts(kb: KnowledgeBase) -> None:
    await kb.add("b.md", SESSIONS)
    await kb.add("a.md", RETRIES)
    docs = kb.documents()
    assert [d.doc_id for d in docs] == ["a.md", "b.md"]
    assert all(
        d.chunks == len(kb.chunker.split(d.doc_id, RETRIES if d.doc_id == "a.md" else SESSIONS))
        for d in docs
    )
    assert all(d.embedder == "hashing-64" for d in docs)
    assert kb.backend.get_document("missing.md") is None


async def test_keyword_search_stems_and_cites_lines(kb: KnowledgeBase) -> None:
    await kb.add("retries.md", RETRIES)
    await kb.add("sessions.md", SESSIONS)
    await kb.add("bread.md", COOKING)
    passages = await kb.search("retrying capped delays", k=3, mode="keyword")
    assert passages, "stemmed terms (retrying → retri, delays → delay) must match"
    top = passages[0]
    assert top.doc_id == "retries.md"
    lines = RETRIES.splitlines()[top.start_line - 1 : top.end_line]
    assert top.text == "\n".join(lines)
    assert "capped" in top.text
    assert re.fullmatch(r"retries\.md:\d+-\d+", top.reference)


async def test_keyword_search_returns_nothing_without_shared_terms(kb: KnowledgeBase) -> None:
    await kb.add("retries.md", RETRIES)
    assert await kb.search("photosynthesis chlorophyll", mode="keyword") == []


async def test_vector_search_ranks_the_closest_text_first(kb: KnowledgeBase) -> None:
    await kb.add("retries.md", RETRIES)
    await kb.add("bread.md", COOKING)
    passages = await kb.search("knead dough rise oven", k=2, mode="vector")
    assert passages[0].doc_id == "bread.md"
    assert passages[0].vector_rank == 1 and passages[0].keyword_rank is None


async def test_hybrid_rewards_agreement(kb: KnowledgeBase) -> None:
    await kb.add("retries.md", RETRIES)
    await kb.add("sessions.md", SESSIONS)
    await kb.add("bread.md", COOKING)
    passages = await kb.search("writer lock for JSONL sessions", k=3)
    assert passages[0].doc_id == "sessions.md"
    assert passages[0].keyword_rank == 1 and passages[0].vector_rank == 1
    assert passages == sorted(passages, key=lambda p: -p.score)
    assert len({(p.doc_id, p.start_line) for p in passages}) == len(passages)


async def test_rankings_carry_their_scores_best_first(kb: KnowledgeBase) -> None:
    await kb.add("retries.md", RETRIES)
    await kb.add("sessions.md", SESSIONS)
    await kb.add("bread.md", COOKING)
    keyword = kb.backend.keyword_search("retries capped delay", 10)
    assert keyword and all(c.score is not None for c in keyword)
    assert [c.score for c in keyword] == sorted((c.score for c in keyword), reverse=True)
    query = HashingEmbedder().vector("knead the dough")
    vector = kb.backend.vector_search(query, 10)
    top = vector[0]
    assert top.doc_id == "bread.md" and top.score is not None
    # the score is the cosine similarity of the query and the chunk's indexed text
    embedded = HashingEmbedder().vector(top.indexed_text)
    expected = sum(a * b for a, b in zip(query, embedded, strict=True))
    assert top.score == pytest.approx(expected, abs=1e-4)


async def test_convex_fusion_ranks_by_normalised_scores(backend: Any) -> None:
    kb = KnowledgeBase(
        backend,
        HashingEmbedder(),
        chunker=Chunker(max_chars=200, max_lines=4, overlap_lines=1),
        fusion="convex",
        keyword_weight=1.0,
    )
    await kb.add("retries.md", RETRIES)
    await kb.add("sessions.md", SESSIONS)
    await kb.add("bread.md", COOKING)
    passages = await kb.search("writer lock for JSONL sessions", k=3)
    # best of both rankings: 1 (normalised keyword) + 1 (normalised vector)
    assert passages[0].doc_id == "sessions.md"
    assert passages[0].score == pytest.approx(2.0)
    assert all(0.0 <= p.score <= 2.0 for p in passages)
    assert passages == sorted(passages, key=lambda p: -p.score)


async def test_unchanged_document_is_skipped_and_changed_one_replaced(kb: KnowledgeBase) -> None:
    assert await kb.add("notes.md", RETRIES) is AddOutcome.ADDED
    assert await kb.add("notes.md", RETRIES) is AddOutcome.UNCHANGED
    assert await kb.add("notes.md", COOKING) is AddOutcome.UPDATED
    assert [d.doc_id for d in kb.documents()] == ["notes.md"]
    assert await kb.search("jitter backoff", mode="keyword") == []
    assert await kb.search("jitter backoff", mode="vector", min_score=0.0) == [] or all(
        "jitter" not in p.text for p in await kb.search("jitter backoff", mode="vector")
    )
    found = await kb.search("knead the dough", k=1)
    assert found[0].doc_id == "notes.md" and "Knead" in found[0].text


async def test_removed_document_is_gone_from_both_indexes(kb: KnowledgeBase) -> None:
    await kb.add("retries.md", RETRIES)
    await kb.add("bread.md", COOKING)
    assert await kb.remove("retries.md") is True
    assert await kb.remove("retries.md") is False
    assert [d.doc_id for d in kb.documents()] == ["bread.md"]
    assert await kb.search("jitter", mode="keyword") == []
    assert all(
        p.doc_id == "bread.md" for p in await kb.search("exponential jitter backoff", mode="vector")
    )


async def test_keyword_only_documents_are_found_by_keywords_not_vectors(backend: Any) -> None:
    plain = KnowledgeBase(backend)
    assert plain.keyword_only
    await plain.add("bread.md", COOKING)
    passages = await plain.search("dough", k=2)
    assert passages and all(p.keyword_only for p in passages)
    assert backend.vector_search(HashingEmbedder().vector("dough"), 5) == []
    assert backend.get_document("bread.md") == DocumentInfo(
        "bread.md", plain.content_hash(COOKING), len(plain.chunker.split("bread.md", COOKING)), None
    )


async def test_many_documents_with_updates_and_deletions(kb: KnowledgeBase) -> None:
    # Interleaved additions, replacements and removals; every document says where it is.
    for i in range(60):
        await kb.add(
            f"doc{i}.md", f"Document number{i} talks about topic{i % 7}.\nfiller line {i}\n"
        )
    for i in range(0, 60, 3):
        await kb.remove(f"doc{i}.md")
    for i in range(1, 60, 3):
        await kb.add(f"doc{i}.md", f"Rewritten number{i} now about subject{i % 5}.\n")
    assert len(kb.documents()) == 40
    assert await kb.search("number0", mode="keyword") == []
    hit = await kb.search("number4", k=1, mode="keyword")
    assert hit[0].doc_id == "doc4.md" and hit[0].text.startswith("Rewritten")
    hit = await kb.search("number5", k=1, mode="keyword")
    assert hit[0].doc_id == "doc5.md" and hit[0].text.startswith("Document")
    topic = await kb.search("topic3", k=100, mode="keyword")
    assert {p.doc_id for p in topic} == {
        f"doc{i}.md" for i in range(60) if i % 3 == 2 and i % 7 == 3
    }


def test_put_document_needs_one_vector_per_chunk(backend: Any) -> None:
    chunk = Chunk("a.md", 1, 1, "text")
    with pytest.raises(ValueError, match="1 chunks but 2 vectors"):
        backend.put_document(DocumentInfo("a.md", "h", 1, "e"), [chunk], [[1.0, 0.0], [0.0, 1.0]])
