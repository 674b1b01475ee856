"""Retrieval quality of the knowledge base on BEIR SciFact: nDCG@10 and Recall@100.

For each backend (memory, sqlite, chroma) and each mode (keywords alone, vectors alone,
hybrid), the 300 test claims are searched and the ranked documents scored against
``qrels/test.tsv``. The fusion parameters (for RRF the constant k and the keyword
weight, for the convex combination of normalised scores the keyword weight; the vector
weight fixed at 1) are tuned on ``qrels/train.tsv`` only, then applied unchanged to the
test set; the library's default parameters are reported beside them.

Each SciFact document (title and abstract) is indexed as one chunk, so a passage is a
document. Corpus and query embeddings are cached under ``bench/.cache/``.

Usage::

    python bench/scifact_eval.py DATA_DIR [--embedder local-minilm] [--backends memory,sqlite,chroma]
    SCIFACT_DIR=... python bench/scifact_eval.py

``--embedder none`` evaluates keywords only.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import itertools
import json
import math
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tether.knowledge.chunking import Chunk, Chunker
from tether.knowledge.fusion import FusionMethod, fuse
from tether.knowledge.knowledge_base import KnowledgeBase

CACHE = Path(__file__).resolve().parent / ".cache"


def load(data: Path) -> tuple[dict[str, str], dict[str, str], dict[str, dict[str, set[str]]]]:
    corpus = {}
    for line in (data / "corpus.jsonl").open(encoding="utf-8"):
        row = json.loads(line)
        corpus[row["_id"]] = f"{row['title']}\n{row['text']}"
    queries = {}
    for line in (data / "queries.jsonl").open(encoding="utf-8"):
        row = json.loads(line)
        queries[row["_id"]] = row["text"]
    qrels: dict[str, dict[str, set[str]]] = {}
    for split in ("train", "test"):
        judged: dict[str, set[str]] = {}
        for line in list((data / "qrels" / f"{split}.tsv").open(encoding="utf-8"))[1:]:
            qid, did, score = line.rstrip("\n").split("\t")
            if int(score) > 0:
                judged.setdefault(qid, set()).add(did)
        qrels[split] = judged
    return corpus, queries, qrels


def ndcg_at(ranked: Sequence[str], relevant: set[str], k: int = 10) -> float:
    dcg = sum(1.0 / math.log2(i + 2) for i, d in enumerate(ranked[:k]) if d in relevant)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(relevant), k)))
    return dcg / ideal if ideal else 0.0


def recall_at(ranked: Sequence[str], relevant: set[str], k: int = 100) -> float:
    return len(set(ranked[:k]) & relevant) / len(relevant)


def evaluate(runs: dict[str, list[str]], judged: dict[str, set[str]]) -> tuple[float, float]:
    ndcg = sum(ndcg_at(runs[q], judged[q]) for q in judged) / len(judged)
    recall = sum(recall_at(runs[q], judged[q]) for q in judged) / len(judged)
    return ndcg, recall


class CachedEmbedder:
    """Serves precomputed vectors (documents by text, queries by text)."""

    def __init__(self, name: str, vectors: dict[str, list[float]], dimensions: int) -> None:
        self.name = name
        self.dimensions = dimensions
        self._vectors = vectors

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._vectors[t] for t in texts]

    async def embed_query(self, text: str) -> list[float]:
        return self._vectors["query:" + text]


async def embed_all(name: str, corpus: dict[str, str], queries: dict[str, str]) -> CachedEmbedder:
    from tether.knowledge.embedders import load_embedder
    from tether.plugins import PluginManager

    texts = list(corpus.values())
    query_texts = list(queries.values())
    digest = hashlib.sha256("\0".join(texts + query_texts).encode()).hexdigest()[:12]
    CACHE.mkdir(parents=True, exist_ok=True)
    docs_file = CACHE / f"scifact-{name}-{digest}-docs.npy"
    queries_file = CACHE / f"scifact-{name}-{digest}-queries.npy"
    if docs_file.exists() and queries_file.exists():
        doc_matrix, query_matrix = np.load(docs_file), np.load(queries_file)
    else:
        embedder = load_embedder(name, PluginManager())
        assert embedder is not None
        started = time.perf_counter()
        doc_matrix = np.asarray(await embedder.embed(texts), dtype=np.float32)
        query_matrix = np.asarray(
            [await embedder.embed_query(q) for q in query_texts], dtype=np.float32
        )
        print(
            f"embedded {len(texts)} documents and {len(query_texts)} queries with {name} "
            f"in {time.perf_counter() - started:.0f} s",
            file=sys.stderr,
        )
        np.save(docs_file, doc_matrix)
        np.save(queries_file, query_matrix)
    vectors = {t: v.tolist() for t, v in zip(texts, doc_matrix, strict=True)}
    vectors.update(
        {"query:" + t: v.tolist() for t, v in zip(query_texts, query_matrix, strict=True)}
    )
    return CachedEmbedder(name, vectors, int(doc_matrix.shape[1]))


def make_backend(name: str, directory: Path) -> Any:
    if name == "memory":
        from tether.knowledge.memory_backend import MemoryBackend

        return MemoryBackend()
    if name == "sqlite":
        from tether_sqlite.backend import SqliteBackend

        return SqliteBackend(directory / "scifact.sqlite3")
    if name == "chroma":
        from tether_chroma.backend import ChromaBackend

        return ChromaBackend(directory / "chroma")
    raise SystemExit(f"unknown backend {name!r}; use memory, sqlite or chroma")


def docs_of(chunks: Sequence[Any]) -> list[str]:
    seen: dict[str, None] = {}
    for chunk in chunks:
        seen.setdefault(chunk.doc_id, None)
    return list(seen)


async def rankings(
    kb: KnowledgeBase, queries: dict[str, str], qids: set[str], depth: int
) -> dict[str, tuple[list[Chunk], list[Chunk]]]:
    """Keyword and vector rankings per query, straight from the backend."""
    out = {}
    for qid in sorted(qids):
        text = queries[qid]
        keyword = await asyncio.to_thread(kb.backend.keyword_search, text, depth)
        vector: list[Chunk] = []
        if kb.embedder is not None:
            from tether.knowledge.knowledge_base import _unit

            q = _unit(await kb.embedder.embed_query(text))
            vector = await asyncio.to_thread(kb.backend.vector_search, q, depth)
        out[qid] = (keyword, vector)
    return out


def fused_runs(
    ranks: dict[str, tuple[list[Chunk], list[Chunk]]],
    rrf_k: float,
    kw: float,
    vw: float,
    method: FusionMethod = "rrf",
) -> dict[str, list[str]]:
    return {
        qid: [
            p.doc_id
            for p in fuse(
                k_list,
                v_list,
                k=100,
                rrf_k=rrf_k,
                keyword_weight=kw,
                vector_weight=vw,
                method=method,
            )
        ]
        for qid, (k_list, v_list) in ranks.items()
    }


WEIGHTS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.5, 2.0)


def tune(
    ranks: dict[str, tuple[list[Chunk], list[Chunk]]],
    judged: dict[str, set[str]],
    method: FusionMethod,
) -> tuple[float, float, float]:
    """``(train nDCG@10, rrf_k, keyword_weight)`` of the best grid point of ``method``."""
    best = (-1.0, 60.0, 1.0)
    grid = (1, 2, 3, 5, 8, 10, 15, 20, 30, 45, 60, 80, 100, 150) if method == "rrf" else (60,)
    for rrf_k, kw in itertools.product(grid, WEIGHTS):
        ndcg, _ = evaluate(fused_runs(ranks, rrf_k, kw, 1.0, method), judged)
        if ndcg > best[0]:
            best = (ndcg, rrf_k, kw)
    return best


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "data",
        nargs="?",
        default=os.environ.get("SCIFACT_DIR"),
        help="SciFact directory (or $SCIFACT_DIR)",
    )
    parser.add_argument(
        "--embedder", default="local-minilm", help='registered embedder name, or "none"'
    )
    parser.add_argument("--backends", default="memory,sqlite,chroma")
    args = parser.parse_args()
    if not args.data:
        parser.error("give the SciFact directory as an argument or in $SCIFACT_DIR")
    corpus, queries, qrels = load(Path(args.data))
    test, train = qrels["test"], qrels["train"]
    embedder = None if args.embedder == "none" else await embed_all(args.embedder, corpus, queries)
    chunker = Chunker(max_chars=1_000_000, max_lines=1000, overlap_lines=0)
    depth = 400
    tuned: tuple[float, float, float] | None = None
    convex: tuple[float, float, float] | None = None
    print(f"SciFact test: {len(test)} queries, {len(corpus)} documents; embedder: {args.embedder}")
    print(f"{'backend':8} {'mode':32} {'nDCG@10':>8} {'R@100':>7}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.backends.split(","):
            kb = KnowledgeBase(make_backend(name, Path(tmp)), embedder, chunker=chunker)
            started = time.perf_counter()
            for doc_id, text in corpus.items():
                await kb.add(doc_id, text)
            build = time.perf_counter() - started
            test_ranks = await rankings(kb, queries, set(test), depth)
            if tuned is None and embedder is not None:
                train_ranks = await rankings(kb, queries, set(train), depth)
                tuned = tune(train_ranks, train, "rrf")
                convex = tune(train_ranks, train, "convex")
                print(
                    f"(tuned on train: rrf rrf_k={tuned[1]:g}, keyword_weight={tuned[2]:g}, "
                    f"vector_weight=1: train nDCG@10 {tuned[0]:.4f}; convex "
                    f"keyword_weight={convex[2]:g}, vector_weight=1: train nDCG@10 "
                    f"{convex[0]:.4f})"
                )
            rows = [("keywords", {q: docs_of(k)[:100] for q, (k, _) in test_ranks.items()})]
            if embedder is not None:
                rows.append(("vectors", {q: docs_of(v)[:100] for q, (_, v) in test_ranks.items()}))
                rows.append(
                    (
                        f"hybrid default ({kb.fusion},k={kb.rrf_k:g},w={kb.keyword_weight:g})",
                        fused_runs(
                            test_ranks, kb.rrf_k, kb.keyword_weight, kb.vector_weight, kb.fusion
                        ),
                    )
                )
                rows.append(("hybrid RRF k=60 w=1", fused_runs(test_ranks, 60, 1.0, 1.0)))
                assert tuned is not None and convex is not None
                rows.append(
                    (
                        f"hybrid tuned rrf (k={tuned[1]:g},w={tuned[2]:g})",
                        fused_runs(test_ranks, tuned[1], tuned[2], 1.0),
                    )
                )
                rows.append(
                    (
                        f"hybrid tuned convex (w={convex[2]:g})",
                        fused_runs(test_ranks, 60, convex[2], 1.0, "convex"),
                    )
                )
                # the full path, KnowledgeBase.search, must agree with the fused rankings
                full = {
                    q: [p.doc_id for p in await kb.search(queries[q], k=100)]
                    for q in list(test)[:20]
                }
                expected = fused_runs(
                    {q: test_ranks[q] for q in full},
                    kb.rrf_k,
                    kb.keyword_weight,
                    kb.vector_weight,
                    kb.fusion,
                )
                assert full == expected, (
                    "KnowledgeBase.search disagrees with the fused backend rankings"
                )
            for mode, runs in rows:
                ndcg, recall = evaluate(runs, test)
                print(f"{name:8} {mode:32} {ndcg:8.4f} {recall:7.4f}")
            print(f"{name:8} (indexed {len(corpus)} documents in {build:.1f} s)")
            kb.close()


if __name__ == "__main__":
    asyncio.run(main())
