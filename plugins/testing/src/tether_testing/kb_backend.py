"""The knowledge-backend contract: one suite that every knowledge-base backend must pass.

Subclass :class:`KnowledgeBackendContract` in your backend's tests and give it a
``backend_factory`` fixture returning a function that makes a fresh, empty backend::

    import pytest
    from tether_testing import KnowledgeBackendContract

    class TestMyBackend(KnowledgeBackendContract):
        @pytest.fixture
        def backend_factory(self, tmp_path):
            return lambda: MyBackend(tmp_path / "kb")

The suite stores, replaces and removes documents through a
:class:`~tether_knowledge.KnowledgeBase` and checks what searches return: stemmed
keyword matches with line references and scores, vector rankings by cosine similarity
(with :class:`HashingEmbedder`, a real if simple embedding that needs no model weights),
hybrid fusion, keyword-only documents, and a larger mix of updates and deletions. Each
backend made by the factory is closed at the end of its test.

The tests are plain functions that run their own event loop, so the suite needs no
asyncio plugin for pytest.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import re
from collections.abc import Callable, Coroutine, Iterator, Sequence
from typing import Any, TypeVar

import pytest

from tether_knowledge.backend import DocumentInfo, KnowledgeBackend
from tether_knowledge.chunking import Chunk, Chunker
from tether_knowledge.knowledge_base import AddOutcome, KnowledgeBase
from tether_knowledge.text import Tokenizer

__all__ = ["HashingEmbedder", "KnowledgeBackendContract"]

T = TypeVar("T")


class HashingEmbedder:
    """A feature-hashing bag of stemmed words (64 dimensions): texts that share words get
    close vectors. Deterministic and instant, for tests that need vectors."""

    name = "hashing-64"
    dimensions: int | None = 64

    def __init__(self) -> None:
        self._tokenize = Tokenizer("english")

    def vector(self, text: str) -> list[float]:
        size = 64
        out = [0.0] * size
        for term in self._tokenize(text):
            digest = hashlib.blake2b(term.encode(), digest_size=4).digest()
            index = int.from_bytes(digest[:3], "big") % size
            out[index] += 1.0 if digest[3] & 1 else -1.0
        norm = math.sqrt(sum(v * v for v in out)) or 1.0
        return [v / norm for v in out]

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.vector(t) for t in texts]

    async def embed_query(self, text: str) -> list[float]:
        return self.vector(text)


def _run(coroutine: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coroutine)


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


class KnowledgeBackendContract:
    """The tests every knowledge-base backend must pass; subclass and provide
    ``backend_factory`` (see the module documentation)."""

    @pytest.fixture
    def backend_factory(self) -> Callable[[], KnowledgeBackend]:
        raise NotImplementedError(
            "Give your KnowledgeBackendContract subclass a backend_factory fixture that "
            "returns a function making a fresh, empty backend."
        )

    @pytest.fixture
    def backend(self, backend_factory: Callable[[], Any]) -> Iterator[Any]:
        store = backend_factory()
        yield store
        store.close()

    @pytest.fixture
    def kb(self, backend: Any) -> KnowledgeBase:
        return KnowledgeBase(
            backend, HashingEmbedder(), chunker=Chunker(max_chars=200, max_lines=4, overlap_lines=1)
        )

    def test_backend_satisfies_the_protocol(self, backend: Any) -> None:
        assert isinstance(backend, KnowledgeBackend)

    def test_documents_are_listed_with_their_chunk_counts(self, kb: KnowledgeBase) -> None:
        async def check() -> None:
            await kb.add("b.md", SESSIONS)
            await kb.add("a.md", RETRIES)
            docs = kb.documents()
            assert [d.doc_id for d in docs] == ["a.md", "b.md"]
            assert all(
                d.chunks
                == len(kb.chunker.split(d.doc_id, RETRIES if d.doc_id == "a.md" else SESSIONS))
                for d in docs
            )
            assert all(d.embedder == "hashing-64" for d in docs)
            assert kb.backend.get_document("missing.md") is None

        _run(check())

    def test_keyword_search_stems_and_cites_lines(self, kb: KnowledgeBase) -> None:
        async def check() -> None:
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

        _run(check())

    def test_keyword_search_returns_nothing_without_shared_terms(self, kb: KnowledgeBase) -> None:
        async def check() -> None:
            await kb.add("retries.md", RETRIES)
            assert await kb.search("photosynthesis chlorophyll", mode="keyword") == []

        _run(check())

    def test_vector_search_ranks_the_closest_text_first(self, kb: KnowledgeBase) -> None:
        async def check() -> None:
            await kb.add("retries.md", RETRIES)
            await kb.add("bread.md", COOKING)
            passages = await kb.search("knead dough rise oven", k=2, mode="vector")
            assert passages[0].doc_id == "bread.md"
            assert passages[0].vector_rank == 1 and passages[0].keyword_rank is None

        _run(check())

    def test_hybrid_rewards_agreement(self, kb: KnowledgeBase) -> None:
        async def check() -> None:
            await kb.add("retries.md", RETRIES)
            await kb.add("sessions.md", SESSIONS)
            await kb.add("bread.md", COOKING)
            passages = await kb.search("writer lock for JSONL sessions", k=3)
            assert passages[0].doc_id == "sessions.md"
            assert passages[0].keyword_rank == 1 and passages[0].vector_rank == 1
            assert passages == sorted(passages, key=lambda p: -p.score)
            assert len({(p.doc_id, p.start_line) for p in passages}) == len(passages)

        _run(check())

    def test_rankings_carry_their_scores_best_first(self, kb: KnowledgeBase) -> None:
        async def check() -> None:
            await kb.add("retries.md", RETRIES)
            await kb.add("sessions.md", SESSIONS)
            await kb.add("bread.md", COOKING)
            keyword = kb.backend.keyword_search("retries capped delay", 10)
            assert keyword and all(c.score is not None for c in keyword)
            scores = [c.score or 0.0 for c in keyword]
            assert scores == sorted(scores, reverse=True)
            query = HashingEmbedder().vector("knead the dough")
            vector = kb.backend.vector_search(query, 10)
            top = vector[0]
            assert top.doc_id == "bread.md" and top.score is not None
            # the score is the cosine similarity of the query and the chunk's indexed text
            embedded = HashingEmbedder().vector(top.indexed_text)
            expected = sum(a * b for a, b in zip(query, embedded, strict=True))
            assert top.score == pytest.approx(expected, abs=1e-4)

        _run(check())

    def test_convex_fusion_ranks_by_normalised_scores(self, backend: Any) -> None:
        async def check() -> None:
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

        _run(check())

    def test_unchanged_document_is_skipped_and_changed_one_replaced(
        self, kb: KnowledgeBase
    ) -> None:
        async def check() -> None:
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

        _run(check())

    def test_removed_document_is_gone_from_both_indexes(self, kb: KnowledgeBase) -> None:
        async def check() -> None:
            await kb.add("retries.md", RETRIES)
            await kb.add("bread.md", COOKING)
            assert await kb.remove("retries.md") is True
            assert await kb.remove("retries.md") is False
            assert [d.doc_id for d in kb.documents()] == ["bread.md"]
            assert await kb.search("jitter", mode="keyword") == []
            assert all(
                p.doc_id == "bread.md"
                for p in await kb.search("exponential jitter backoff", mode="vector")
            )

        _run(check())

    def test_keyword_only_documents_are_found_by_keywords_not_vectors(self, backend: Any) -> None:
        async def check() -> None:
            plain = KnowledgeBase(backend)
            assert plain.keyword_only
            await plain.add("bread.md", COOKING)
            passages = await plain.search("dough", k=2)
            assert passages and all(p.keyword_only for p in passages)
            assert backend.vector_search(HashingEmbedder().vector("dough"), 5) == []
            assert backend.get_document("bread.md") == DocumentInfo(
                "bread.md",
                plain.content_hash(COOKING),
                len(plain.chunker.split("bread.md", COOKING)),
                None,
            )

        _run(check())

    def test_many_documents_with_updates_and_deletions(self, kb: KnowledgeBase) -> None:
        async def check() -> None:
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

        _run(check())

    def test_put_document_needs_one_vector_per_chunk(self, backend: Any) -> None:
        chunk = Chunk("a.md", 1, 1, "text")
        with pytest.raises(ValueError, match="1 chunks but 2 vectors"):
            backend.put_document(
                DocumentInfo("a.md", "h", 1, "e"), [chunk], [[1.0, 0.0], [0.0, 1.0]]
            )
