"""Chunks carry their document's context; search results are merged passages, capped
per document."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tether_knowledge.chunking import Chunker
from tether_knowledge.fusion import Passage
from tether_knowledge.knowledge_base import KnowledgeBase
from tether_knowledge.memory_backend import MemoryBackend
from tether_knowledge.passages import merge_passages

GUIDE = """# Deployment guide

Intro paragraph about the service.

## Rolling back

Run the previous release's migration in reverse.
Then restart every worker.
"""


def test_a_chunk_from_the_middle_carries_path_title_and_section() -> None:
    chunks = Chunker(max_chars=200, max_lines=2, overlap_lines=0).split("ops/deploy.md", GUIDE)
    body = next(c for c in chunks if c.text.startswith("Run the previous"))
    assert body.context.splitlines() == ["ops/deploy.md", "Deployment guide", "Rolling back"]
    # the text returned is the chunk's own lines, the context only indexed with them
    assert (
        body.text == "Run the previous release's migration in reverse.\nThen restart every worker."
    )
    assert body.indexed_text == body.context + "\n" + body.text


def test_context_leaves_out_what_the_chunk_already_holds() -> None:
    first = Chunker(max_chars=60, max_lines=2, overlap_lines=0).split("ops/deploy.md", GUIDE)[0]
    assert first.text.startswith("# Deployment guide")
    assert first.context == "ops/deploy.md"


def test_a_short_first_line_is_the_title_of_plain_text() -> None:
    text = "Vitamin D and bone density\n" + "An abstract sentence. " * 100
    title, body = Chunker().split("4983", text)
    assert (title.start_line, body.start_line) == (1, 2)
    # a name without letters says nothing, so only the title is context
    assert body.context == "Vitamin D and bone density"


def test_chunks_without_context_are_indexed_as_their_text() -> None:
    chunks = Chunker(max_chars=60, max_lines=2, overlap_lines=0, context=False).split("d", GUIDE)
    assert all(c.context == "" and c.indexed_text == c.text for c in chunks)


def passage(doc: str, start: int, end: int, score: float, kw: int | None = None) -> Passage:
    text = "\n".join(f"{doc} line {n}" for n in range(start, end + 1))
    return Passage(doc, start, end, text, score, kw, None)


def test_overlapping_and_adjacent_chunks_merge_into_one_passage() -> None:
    merged = merge_passages(
        [
            passage("a", 10, 14, 0.9, kw=1),
            passage("b", 1, 3, 0.8),
            passage("a", 12, 18, 0.5, kw=7),
            passage("a", 19, 20, 0.4),
            passage("a", 40, 44, 0.3),
        ]
    )
    assert [(p.doc_id, p.start_line, p.end_line) for p in merged] == [
        ("a", 10, 20),
        ("b", 1, 3),
        ("a", 40, 44),
    ]
    top = merged[0]
    assert top.text == "\n".join(f"a line {n}" for n in range(10, 21))
    assert (top.score, top.keyword_rank) == (0.9, 1)


def test_each_document_keeps_at_most_max_per_document_passages() -> None:
    ranked = [passage("a", 1, 2, 0.9), passage("a", 10, 12, 0.8), passage("b", 1, 1, 0.7)]
    ranked.append(passage("a", 30, 31, 0.6))
    capped = merge_passages(ranked, max_per_document=1)
    assert [(p.doc_id, p.start_line) for p in capped] == [("a", 1), ("b", 1)]
    with pytest.raises(ValueError, match="max_per_document"):
        merge_passages(ranked, max_per_document=0)


@st.composite
def rankings(draw: st.DrawFn) -> list[Passage]:
    spans = draw(
        st.lists(
            st.tuples(st.sampled_from("abc"), st.integers(1, 30), st.integers(0, 6)),
            max_size=25,
        )
    )
    out = [passage(d, s, s + length, 1.0 / (i + 1)) for i, (d, s, length) in enumerate(spans)]
    return out


@settings(deadline=None)
@given(rankings(), st.one_of(st.none(), st.integers(1, 3)))
def test_merging_keeps_every_line_once_and_the_best_first(
    ranked: list[Passage], cap: int | None
) -> None:
    merged = merge_passages(ranked, max_per_document=None)
    # every line of the input is in exactly one output passage, with its own text
    for doc in "abc":
        lines_in = {
            n for p in ranked if p.doc_id == doc for n in range(p.start_line, p.end_line + 1)
        }
        spans = [(p.start_line, p.end_line) for p in merged if p.doc_id == doc]
        lines_out = [n for s, e in spans for n in range(s, e + 1)]
        assert sorted(lines_out) == sorted(lines_in)
    for p in merged:
        assert p.text.split("\n") == [
            f"{p.doc_id} line {n}" for n in range(p.start_line, p.end_line + 1)
        ]
    assert [p.score for p in merged] == sorted((p.score for p in merged), reverse=True)
    if ranked:
        assert merged[0].score == max(p.score for p in ranked)
    capped = merge_passages(ranked, max_per_document=cap)
    if cap is not None:
        for doc in "abc":
            assert sum(p.doc_id == doc for p in capped) <= cap


async def test_search_returns_k_different_pieces_of_evidence() -> None:
    # five matching five-line sections in one document, kept apart by unrelated ones
    # (the title, part of every chunk's context, matches nothing)
    sections = [
        "\n".join(["retry backoff retry backoff detail"] * 5 if n % 2 == 0 else ["filler"] * 5)
        for n in range(10)
    ]
    other = "one retry, in another document, and a lot of other words besides"
    kb = KnowledgeBase(
        MemoryBackend(), chunker=Chunker(max_chars=500, max_lines=5, overlap_lines=0)
    )
    await kb.add("long.md", "\n".join(["# Notes", *["filler"] * 4, *sections]))
    await kb.add("short.md", other)
    for n in range(20):  # unrelated documents, so that the query's words are rare
        await kb.add(f"unrelated-{n}.md", f"bread dough oven flour {n}")
    uncapped = KnowledgeBase(kb.backend, max_per_document=None)
    assert {p.doc_id for p in await uncapped.search("retry backoff", k=5)} == {"long.md"}
    results = await kb.search("retry backoff", k=5)
    assert [p.doc_id for p in results].count("long.md") == 2
    assert "short.md" in {p.doc_id for p in results}


async def test_keywords_of_the_title_find_a_body_chunk() -> None:
    text = "Zygomorphic orchids\n" + "Flowers of this family show bilateral symmetry. " * 40
    kb = KnowledgeBase(MemoryBackend(), max_per_document=None)
    await kb.add("orchids.txt", text)
    results = await kb.search("zygomorphic", k=5, mode="keyword")
    # both chunks match the title word: the body chunk through its context; merged, they
    # are one passage covering the whole document, whose text is the document's
    assert [(p.start_line, p.end_line) for p in results] == [(1, 2)]
    assert results[0].text == text


async def test_changing_the_chunker_reindexes_a_document() -> None:
    backend = MemoryBackend()
    plain = KnowledgeBase(backend, chunker=Chunker(context=False))
    await plain.add("a.md", "# Title\n\nbody")
    contextual = KnowledgeBase(backend)
    assert (await contextual.add("a.md", "# Title\n\nbody")).value == "updated"
