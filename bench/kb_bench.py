"""Knowledge-base scale benchmark: index build time and query latency (p50/p95).

For each backend (memory, sqlite, chroma) at each size, documents of synthetic text
(Zipf-distributed words, English function words included, one 80-word chunk per line)
with random 384-dimensional unit vectors are indexed through ``KnowledgeBase.add_many``
(what ``tether kb add`` runs), then
queries (5 words of a random chunk; that chunk's vector plus noise) are timed through
``KnowledgeBase.search`` in hybrid, keyword and vector modes. Beside them, in the same
run and on the same data: rank-bm25 alone, SQLite FTS5 ``bm25()`` alone and chromadb
alone, and the overlap of the sqlite backend's vector top-10 with exact search. Each
tether build is also printed as a ratio to the bare store it is built on (sqlite to FTS5,
chroma to chromadb), both measured in this run, in wall time and in CPU time of this
process (all its threads); on a busy machine the CPU ratio is the steadier one.

Usage::

    python bench/kb_bench.py [--sizes 5000,100000] [--backends memory,sqlite,chroma] [--queries 200]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tether_knowledge.chunking import Chunker
from tether_knowledge.knowledge_base import KnowledgeBase

DIM = 384
CHUNKS_PER_DOC = 50
STOP = [
    "the",
    "of",
    "and",
    "to",
    "a",
    "in",
    "is",
    "that",
    "for",
    "it",
    "as",
    "was",
    "with",
    "be",
    "by",
    "on",
    "not",
    "he",
    "this",
    "are",
    "or",
    "his",
    "from",
    "at",
    "which",
    "but",
    "have",
    "an",
    "they",
    "you",
    "were",
    "her",
    "she",
    "there",
    "been",
    "one",
    "all",
    "we",
    "their",
]
SYLLABLES = [
    "ka",
    "lo",
    "mi",
    "ter",
    "an",
    "ro",
    "sen",
    "vi",
    "da",
    "pol",
    "tion",
    "er",
    "in",
    "mar",
    "cu",
    "sta",
    "ble",
    "ing",
    "ex",
    "pre",
]


def corpus(n: int, seed: int = 0) -> tuple[list[str], np.ndarray]:
    rng = np.random.default_rng(seed)
    r = random.Random(seed)
    vocab = list(STOP)
    seen = set(vocab)
    while len(vocab) < 50_000:
        word = "".join(r.choice(SYLLABLES) for _ in range(r.randint(2, 4)))
        if word not in seen:
            seen.add(word)
            vocab.append(word)
    p = 1 / np.arange(1, len(vocab) + 1) ** 1.07
    words = rng.choice(len(vocab), size=(n, 80), p=p / p.sum())
    texts = [f"c{i} " + " ".join(vocab[j] for j in row) for i, row in enumerate(words)]
    vectors = rng.standard_normal((n, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return texts, vectors


def queries(
    texts: Sequence[str], vectors: np.ndarray, count: int, seed: int = 1
) -> list[tuple[str, np.ndarray]]:
    r = random.Random(seed)
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        i = r.randrange(len(texts))
        words = texts[i].split()[1:]
        q = vectors[i] + rng.standard_normal(DIM).astype(np.float32) * (0.8 / np.sqrt(DIM))
        out.append((" ".join(r.sample(words, 5)), q / np.linalg.norm(q)))
    return out


class TableEmbedder:
    name = "bench-random-384"
    dimensions = DIM

    def __init__(self, table: dict[str, np.ndarray]) -> None:
        self.table = table

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        # a chunk is one line, indexed after its context lines
        return [self.table[t.rsplit("\n", 1)[-1]] for t in texts]  # type: ignore[misc]

    async def embed_query(self, text: str) -> list[float]:
        return self.table[text].tolist()


def pct(samples: list[float]) -> tuple[float, float]:
    samples = sorted(samples)
    return (
        1000 * statistics.median(samples),
        1000 * samples[min(len(samples) - 1, int(0.95 * len(samples)))],
    )


def timed(fn: Callable[[Any], Any], items: Sequence[Any]) -> list[float]:
    out = []
    for item in items:
        start = time.perf_counter()
        fn(item)
        out.append(time.perf_counter() - start)
    return out


class Build:
    """Wall and process CPU seconds of one build."""

    def __init__(self) -> None:
        self.wall = time.perf_counter()
        self.cpu = time.process_time()

    def stop(self) -> Build:
        self.wall = time.perf_counter() - self.wall
        self.cpu = time.process_time() - self.cpu
        return self


def row(name: str, build: float | None, lat: dict[str, tuple[float, float]]) -> None:
    cells = " ".join(f"{mode} {p50:7.2f}/{p95:7.2f}" for mode, (p50, p95) in lat.items())
    b = f"{build:8.1f}s" if build is not None else "        -"
    print(f"  {name:24} build {b}  p50/p95 ms: {cells}", flush=True)


def make_backend(name: str, directory: Path) -> Any:
    if name == "memory":
        from tether_knowledge.memory_backend import MemoryBackend

        return MemoryBackend()
    if name == "sqlite":
        from tether_sqlite.backend import SqliteBackend

        return SqliteBackend(directory / "bench.sqlite3")
    from tether_chroma.backend import ChromaBackend

    return ChromaBackend(directory / "chroma")


async def bench_backend(
    name: str,
    texts: list[str],
    vectors: np.ndarray,
    qs: list[tuple[str, np.ndarray]],
    directory: Path,
    n_queries: int,
) -> tuple[Any, Build]:
    table = {t: v for t, v in zip(texts, vectors, strict=True)}
    table.update({q: v for q, v in qs})
    kb = KnowledgeBase(
        make_backend(name, directory),
        TableEmbedder(table),
        chunker=Chunker(max_chars=10_000, max_lines=1, overlap_lines=0),
    )
    build = Build()
    await kb.add_many(
        (f"doc{d // CHUNKS_PER_DOC}", "\n".join(texts[d : d + CHUNKS_PER_DOC]))
        for d in range(0, len(texts), CHUNKS_PER_DOC)
    )
    await kb.search(qs[0][0], k=10)  # first query folds pending index work in
    build.stop()
    lat = {}
    for mode in ("hybrid", "keyword", "vector"):
        samples = []
        for q, _ in qs[:n_queries]:
            t0 = time.perf_counter()
            await kb.search(q, k=10, mode=mode)  # type: ignore[arg-type]
            samples.append(time.perf_counter() - t0)
        lat[mode] = pct(samples)
    row(f"tether {name}", build.wall, lat)
    return kb, build


def bench_rank_bm25(texts: list[str], qs: list[tuple[str, np.ndarray]], n_queries: int) -> None:
    from rank_bm25 import BM25Okapi

    from tether_knowledge.text import Tokenizer

    tok = Tokenizer()
    start = time.perf_counter()
    bm25 = BM25Okapi([tok(t) for t in texts])
    build = time.perf_counter() - start
    samples = timed(lambda q: np.argsort(-bm25.get_scores(tok(q[0])))[:10], qs[:n_queries])
    row("rank-bm25 alone", build, {"keyword": pct(samples)})


def bench_fts5(
    texts: list[str], qs: list[tuple[str, np.ndarray]], directory: Path, n_queries: int
) -> Build:
    db = sqlite3.connect(directory / "fts5.sqlite3")
    db.execute("CREATE VIRTUAL TABLE f USING fts5(text, tokenize='porter unicode61')")
    build = Build()
    db.executemany("INSERT INTO f(rowid, text) VALUES (?, ?)", enumerate(texts))
    db.commit()
    build.stop()

    def one(q: tuple[str, np.ndarray]) -> None:
        match = " OR ".join(f'"{w}"' for w in q[0].split())
        db.execute(
            "SELECT rowid FROM f WHERE f MATCH ? ORDER BY rank LIMIT 10", (match,)
        ).fetchall()

    row("SQLite FTS5 alone", build.wall, {"keyword": pct(timed(one, qs[:n_queries]))})
    db.close()
    return build


def bench_chromadb(
    texts: list[str],
    vectors: np.ndarray,
    qs: list[tuple[str, np.ndarray]],
    directory: Path,
    n_queries: int,
) -> Build:
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(
        path=str(directory / "chroma-alone"), settings=Settings(anonymized_telemetry=False)
    )
    col = client.create_collection(
        "alone", embedding_function=None, configuration={"hnsw": {"space": "ip"}}
    )
    batch = client.get_max_batch_size()
    build = Build()
    for i in range(0, len(texts), batch):
        col.add(
            ids=[str(j) for j in range(i, min(i + batch, len(texts)))],
            embeddings=vectors[i : i + batch],
            documents=texts[i : i + batch],
        )
    build.stop()
    samples = timed(
        lambda q: col.query(query_embeddings=[q[1].tolist()], n_results=10), qs[:n_queries]
    )
    row("chromadb alone", build.wall, {"vector": pct(samples)})
    return build


def vector_overlap(
    kb: KnowledgeBase, vectors: np.ndarray, qs: list[tuple[str, np.ndarray]]
) -> float:
    backend: Any = kb.backend
    total = 0.0
    for _, q in qs[:100]:
        exact = set(np.argsort(-(vectors @ q))[:10].tolist())
        got = {int(c.text.split()[0][1:]) for c in backend.vector_search(q.tolist(), 10)}
        total += len(exact & got) / 10
    return total / min(100, len(qs))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="5000,100000")
    parser.add_argument("--backends", default="memory,sqlite,chroma")
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    for n in (int(s) for s in args.sizes.split(",")):
        texts, vectors = corpus(n)
        qs = queries(texts, vectors, args.queries)
        slow = max(20, args.queries // 10) if n > 20_000 else args.queries
        print(
            f"{n} chunks, {args.queries} queries (rank-bm25 and memory: {slow}), k=10", flush=True
        )
        with tempfile.TemporaryDirectory() as tmp:
            directory = Path(tmp)
            bench_rank_bm25(texts, qs, slow)
            bare = {"sqlite": bench_fts5(texts, qs, directory, args.queries)}
            if "chroma" in args.backends:
                bare["chroma"] = bench_chromadb(texts, vectors, qs, directory, args.queries)
            for name in args.backends.split(","):
                kb, build = await bench_backend(
                    name, texts, vectors, qs, directory, slow if name == "memory" else args.queries
                )
                if name in bare:
                    store = "FTS5" if name == "sqlite" else "chromadb"
                    print(
                        f"  tether {name} build / {store} build: {build.wall / bare[name].wall:.2f}x"
                        f" (CPU time {build.cpu / bare[name].cpu:.2f}x: {build.cpu:.1f} s /"
                        f" {bare[name].cpu:.1f} s)",
                        flush=True,
                    )
                if name == "sqlite":
                    print(
                        f"  sqlite vector top-10 overlap with exact search: {vector_overlap(kb, vectors, qs):.3f}",
                        flush=True,
                    )
                kb.close()


if __name__ == "__main__":
    asyncio.run(main())
