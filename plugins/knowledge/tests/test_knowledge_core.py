"""Knowledge-base building blocks: chunking, fusion, the in-memory indexes, the tool
and the ``tether kb`` command."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from tether.config import load_config
from tether.errors import ConfigError
from tether.plugins import PluginManager
from tether_cli import cli
from tether_knowledge import plugin as knowledge_plugin
from tether_knowledge.chunking import Chunk, Chunker
from tether_knowledge.fusion import fuse
from tether_knowledge.keyword_index import KeywordIndex
from tether_knowledge.knowledge_base import KnowledgeBase
from tether_knowledge.memory_backend import MemoryBackend
from tether_knowledge.vector_index import VectorIndex


def test_chunks_follow_lines_with_overlap_and_cover_the_document() -> None:
    text = "\n".join(f"line {i}" for i in range(1, 11))
    chunks = Chunker(max_chars=1000, max_lines=4, overlap_lines=1).split("a.txt", text)
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 4), (4, 7), (7, 10)]
    assert chunks[1].text == "line 4\nline 5\nline 6\nline 7"
    assert chunks[1].reference == "a.txt:4-7"


def test_a_long_line_is_kept_whole_and_blank_chunks_are_skipped() -> None:
    text = "short\n" + "x" * 50 + "\n\n\n\nend"
    chunks = Chunker(max_chars=20, max_lines=10, overlap_lines=0).split("d", text)
    assert ("x" * 50) in [c.text for c in chunks]
    assert all(c.text.strip() for c in chunks)
    assert chunks[-1].text.endswith("end")


def test_chunker_rejects_overlap_as_large_as_the_chunk() -> None:
    with pytest.raises(ValueError, match="overlap_lines"):
        Chunker(max_lines=3, overlap_lines=3)


def test_fusion_sums_weighted_reciprocal_ranks_and_deduplicates() -> None:
    a, b, c = Chunk("a", 1, 2, "A"), Chunk("b", 1, 2, "B"), Chunk("c", 5, 6, "C")
    a_again = Chunk("a", 1, 3, "A, indexed twice")
    passages = fuse([a, a_again, b], [c, a], k=10, rrf_k=60, keyword_weight=1.0, vector_weight=2.0)
    scores = {p.doc_id: p.score for p in passages}
    assert scores["a"] == pytest.approx(1 / 61 + 2 / 62)
    assert scores["c"] == pytest.approx(2 / 61)
    assert scores["b"] == pytest.approx(1 / 62)  # a's duplicate did not take rank 2's place
    assert [p.doc_id for p in passages] == ["a", "c", "b"]
    assert passages[0].keyword_rank == 1 and passages[0].vector_rank == 2


def test_fusion_threshold_and_top_k() -> None:
    chunks = [Chunk(str(i), 1, 1, "") for i in range(10)]
    assert len(fuse(chunks, [], k=3)) == 3
    kept = fuse(chunks, [], k=10, min_score=1 / 63)
    assert [p.doc_id for p in kept] == ["0", "1", "2"]


def test_convex_fusion_weighs_min_max_normalised_scores() -> None:
    a, b, c = (Chunk(d, 1, 1, d.upper()) for d in "abc")
    keyword = [replace(a, score=9.0), replace(b, score=8.0), replace(c, score=1.0)]
    vector = [replace(c, score=0.9), replace(b, score=0.5), replace(a, score=0.1)]
    passages = fuse(keyword, vector, k=3, keyword_weight=1.0, vector_weight=1.0, method="convex")
    scores = {p.doc_id: p.score for p in passages}
    # b is close to the top of both lists; a and c are each best in one and last in the other
    assert scores["b"] == pytest.approx(7 / 8 + 0.5)
    assert scores["a"] == pytest.approx(1.0) and scores["c"] == pytest.approx(1.0)
    assert passages[0].doc_id == "b"
    # the same lists by reciprocal ranks put b (rank 2 twice) level with a and c
    rrf = {p.doc_id: p.score for p in fuse(keyword, vector, k=3, rrf_k=1)}
    assert rrf["b"] < rrf["a"]


def test_convex_fusion_without_scores_normalises_by_rank() -> None:
    chunks = [Chunk(str(i), 1, 1, "") for i in range(5)]
    passages = fuse(chunks, [], k=5, method="convex")
    assert [p.score for p in passages] == pytest.approx([1.0, 0.75, 0.5, 0.25, 0.0])


def test_unknown_fusion_is_refused() -> None:
    with pytest.raises(ValueError, match="convex"):
        fuse([], [], method="mean")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="convex"):
        KnowledgeBase(MemoryBackend(), fusion="mean")  # type: ignore[arg-type]


def test_keyword_index_scores_like_bm25_and_survives_rebuilds() -> None:
    index = KeywordIndex()
    docs = {i: f"alpha beta{i % 3} gamma{i}".split() for i in range(5000)}
    for slot, terms in docs.items():
        index.add(slot, *index.encode(terms))
    for slot in range(0, 5000, 2):
        index.remove(slot)
    hits = index.search(["gamma7"], 5)
    assert [slot for slot, _ in hits] == [7]
    assert index.search(["gamma8"], 5) == []
    beta = index.search(["beta1"], 10_000)
    assert {slot for slot, _ in beta} == {i for i in range(1, 5000, 2) if i % 3 == 1}
    # idf counts live chunks only: matches a fresh index of the survivors
    fresh = KeywordIndex()
    for slot in range(1, 5000, 2):
        fresh.add(slot, *fresh.encode(docs[slot]))
    got, want = index.search(["beta1", "gamma9"], 3), fresh.search(["beta1", "gamma9"], 3)
    assert [s for s, _ in got] == [s for s, _ in want]
    assert [v for _, v in got] == pytest.approx([v for _, v in want], rel=1e-5)


def test_vector_index_binary_stage_keeps_the_exact_neighbours() -> None:
    rng = np.random.default_rng(0)
    centres = rng.standard_normal((50, 64))
    data = centres[rng.integers(0, 50, 3000)] + 0.3 * rng.standard_normal((3000, 64))
    data /= np.linalg.norm(data, axis=1, keepdims=True)
    quantised = VectorIndex(exact_limit=100, candidates=300)
    exact = VectorIndex(exact_limit=10**9)
    for index in (quantised, exact):
        index.add_many(list(range(3000)), data)
    overlap = 0
    for q in data[:50]:
        overlap += len(
            {s for s, _ in quantised.search(q, 10)} & {s for s, _ in exact.search(q, 10)}
        )
    assert overlap / 500 > 0.9
    quantised.remove(0)
    assert 0 not in {s for s, _ in quantised.search(data[0], 10)}


async def test_kb_search_tool_cites_lines_and_says_when_keyword_only() -> None:
    kb = KnowledgeBase(MemoryBackend(), chunker=Chunker(max_lines=2, overlap_lines=0))
    await kb.add("guide.md", "Intro.\nMore intro.\nRetries are capped at 30 s.\nThe end.\n")
    tool = kb.as_tool()
    assert tool.name == "kb_search"
    output = await tool.fn(query="capped retries")
    assert "keyword search only" in output
    assert "[1] guide.md:3-4" in output and "Retries are capped" in output
    assert "No passages found" in await tool.fn(query="zebra")


def test_tether_kb_add_search_list_rm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("tether_sqlite")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TETHER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("TETHER_CONFIG", str(tmp_path / "tether.toml"))
    (tmp_path / "tether.toml").write_text('[knowledge]\nbackend = "sqlite"\n')
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "retries.md").write_text("Backoff is exponential.\nThe delay is capped at 30 s.\n")
    (docs / "bread.md").write_text("Knead the dough.\n")
    (docs / "image.bin").write_bytes(b"\x00\x01binary")
    runner = CliRunner()

    added = runner.invoke(cli, ["kb", "add", "docs"])
    assert added.exit_code == 0, added.output
    assert "2 added" in added.output and "Skipped 1" in added.output
    assert "Keyword-only" in added.output
    again = runner.invoke(cli, ["kb", "add", "docs"])
    assert "2 unchanged" in again.output

    found = runner.invoke(cli, ["kb", "search", "delay capped", "--json"])
    rows = [json.loads(line) for line in found.output.splitlines() if line.startswith("{")]
    assert rows[0]["doc"] == (docs / "retries.md").resolve().as_posix()  # the id: absolute
    assert rows[0]["keyword_only"] is True
    assert (rows[0]["start_line"], rows[0]["end_line"]) == (1, 2)

    listed = runner.invoke(cli, ["kb", "list"])
    assert "docs/bread.md" in listed.output and "2 documents." in listed.output
    removed = runner.invoke(cli, ["kb", "rm", "docs/bread.md"])
    assert removed.exit_code == 0 and "Removed" in removed.output
    missing = runner.invoke(cli, ["kb", "rm", "docs/bread.md"])
    assert missing.exit_code == 1 and "Not in the knowledge base" in missing.output


async def test_fusion_is_configured_in_memory_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("TETHER_CONFIG", str(tmp_path / "tether.toml"))
    (tmp_path / "tether.toml").write_text(
        '[knowledge]\nbackend = "memory"\n[knowledge.settings]\nfusion = "convex"\nkeyword_weight = 2.0\n'
    )
    manager = PluginManager(plugins=[knowledge_plugin], entry_points=False)
    kb = KnowledgeBase.open(
        load_config(), backends=manager.knowledge_backends, embedders=manager.embedders
    )
    assert kb.fusion == "convex"
    await kb.add("retries.md", "Backoff is exponential.\nThe delay is capped at 30 s.\n")
    await kb.add("bread.md", "Knead the dough.\n")
    passages = await kb.search("capped delay", k=2)
    # the only keyword match, normalised to 1 and weighted 2 (there is no embedder)
    assert [p.doc_id for p in passages] == ["retries.md"]
    assert passages[0].score == pytest.approx(2.0)
