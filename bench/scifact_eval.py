"""Retrieval quality of the knowledge base on BEIR SciFact, measured the way an agent
sees it.

**Product path** (the default): every abstract is added to a :class:`KnowledgeBase` as
``title\\nabstract`` through the shipped chunker, and each claim is searched with
``kb.search(claim, k)`` exactly as the ``kb_search`` tool calls it, at ``k=10`` and
``k=100``. A document's rank is the rank of its best passage, so the scores are
document-level nDCG@10 and Recall@100 over what the search returned.

**Whole-document protocol** (``--protocol whole``): each abstract indexed as one chunk
and each ranking read 400 deep, as earlier figures were measured.

Fusion parameters (and the passage cap) are chosen on ``qrels/train.tsv`` only and then
applied unchanged to the test set. Every comparison a decision rests on is reported with
a 95% paired bootstrap interval over queries (10,000 resamples): the difference of the
two systems' mean nDCG@10 on the same queries. An interval that excludes zero is a
difference; one that includes it is noise.

Embeddings are cached by text under ``bench/.cache/`` (the first run embeds about 7,500
chunks and 1,109 claims: several minutes with ``local-minilm`` on two cores).

Usage::

    python bench/scifact_eval.py DATA_DIR [--embedder local-minilm] [--backends sqlite]
    python bench/scifact_eval.py DATA_DIR --protocol whole --backends memory,sqlite,chroma
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import itertools
import json
import math
import os
import sqlite3
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tether_knowledge.chunking import Chunk, Chunker
from tether_knowledge.fusion import FusionMethod, fuse
from tether_knowledge.knowledge_base import KnowledgeBase, _unit
from tether_knowledge.passages import merge_passages

CACHE = Path(__file__).resolve().parent / ".cache"
RESAMPLES = 10_000


# -- data and metrics ---------------------------------------------------------------------
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


Runs = dict[str, list[str]]


def per_query(runs: Runs, judged: dict[str, set[str]]) -> np.ndarray:
    """nDCG@10 of each judged query, in sorted query order (paired across systems)."""
    return np.array([ndcg_at(runs[q], judged[q]) for q in sorted(judged)])


def mean_recall(runs: Runs, judged: dict[str, set[str]]) -> float:
    return sum(recall_at(runs[q], judged[q]) for q in judged) / len(judged)


def interval(values: np.ndarray, seed: int = 0) -> tuple[float, float]:
    """95% bootstrap interval of the mean of ``values`` (paired differences or scores)."""
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(values), size=(RESAMPLES, len(values)))
    means = values[picks].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


def documents_of(passages: Sequence[Any]) -> list[str]:
    """Document ids in the order of their best passage."""
    seen: dict[str, None] = {}
    for passage in passages:
        seen.setdefault(passage.doc_id, None)
    return list(seen)


# -- embeddings, cached by text -----------------------------------------------------------
class CachedEmbedder:
    """Wraps a registered embedder; vectors are kept in an SQLite file keyed by text, so
    re-running (or indexing the same text under another chunking) embeds nothing twice."""

    def __init__(self, name: str) -> None:
        from tether.plugins import PluginManager
        from tether_knowledge.embedders import load_embedder

        inner = load_embedder(name, PluginManager().embedders)
        assert inner is not None
        self._inner = inner
        self.name = inner.name
        self.dimensions = getattr(inner, "dimensions", None)
        CACHE.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(CACHE / f"embeddings-{name}.sqlite3")
        self._db.execute("CREATE TABLE IF NOT EXISTS v (key BLOB PRIMARY KEY, vector BLOB)")
        self.embedded = 0

    def _key(self, kind: str, text: str) -> bytes:
        return hashlib.sha256(f"{kind}\0{text}".encode()).digest()

    def _cached(self, keys: list[bytes]) -> dict[bytes, list[float]]:
        found: dict[bytes, list[float]] = {}
        for start in range(0, len(keys), 500):
            part = keys[start : start + 500]
            marks = ",".join("?" * len(part))
            for key, blob in self._db.execute(
                f"SELECT key, vector FROM v WHERE key IN ({marks})", part
            ):
                found[key] = np.frombuffer(blob, dtype=np.float32).tolist()
        return found

    async def prefetch(self, texts: Sequence[str], kind: str = "doc") -> None:
        """Embed (in large batches, with progress) whatever of ``texts`` is not cached."""
        keys = [self._key(kind, t) for t in texts]
        cached = self._cached(keys)
        missing = list({k: t for k, t in zip(keys, texts, strict=True) if k not in cached}.items())
        started = time.perf_counter()
        for start in range(0, len(missing), 256):
            part = missing[start : start + 256]
            if kind == "doc":
                vectors = await self._inner.embed([t for _, t in part])
            else:
                vectors = [await self._inner.embed_query(t) for _, t in part]
            self._db.executemany(
                "INSERT OR REPLACE INTO v VALUES (?, ?)",
                [
                    (k, np.asarray(v, dtype=np.float32).tobytes())
                    for (k, _), v in zip(part, vectors, strict=True)
                ],
            )
            self._db.commit()
            self.embedded += len(part)
            done = start + len(part)
            rate = done / (time.perf_counter() - started)
            print(
                f"  embedded {done}/{len(missing)} {kind} texts "
                f"({rate:.0f}/s, {(len(missing) - done) / rate:.0f} s left)",
                file=sys.stderr,
                flush=True,
            )

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        keys = [self._key("doc", t) for t in texts]
        cached = self._cached(keys)
        if len(cached) < len(set(keys)):
            await self.prefetch(texts, "doc")
            cached = self._cached(keys)
        return [cached[k] for k in keys]

    async def embed_query(self, text: str) -> list[float]:
        key = self._key("query", text)
        cached = self._cached([key])
        if key not in cached:
            await self.prefetch([text], "query")
            cached = self._cached([key])
        return cached[key]


def make_backend(name: str, directory: Path) -> Any:
    if name == "memory":
        from tether_knowledge.memory_backend import MemoryBackend

        return MemoryBackend()
    if name == "sqlite":
        from tether_sqlite.backend import SqliteBackend

        return SqliteBackend(directory / f"scifact-{time.monotonic_ns()}.sqlite3")
    if name == "chroma":
        from tether_chroma.backend import ChromaBackend

        return ChromaBackend(directory / f"chroma-{time.monotonic_ns()}")
    raise SystemExit(f"unknown backend {name!r}; use memory, sqlite or chroma")


# -- the product path ---------------------------------------------------------------------
@dataclass(frozen=True)
class Setting:
    """The search-time parameters a knowledge base is configured with."""

    fusion: FusionMethod
    rrf_k: float
    keyword_weight: float
    max_per_document: int | None

    def label(self) -> str:
        cap = "none" if self.max_per_document is None else self.max_per_document
        if self.fusion == "rrf":
            return f"rrf k={self.rrf_k:g} w={self.keyword_weight:g} cap={cap}"
        return f"convex w={self.keyword_weight:g} cap={cap}"


Rankings = dict[str, tuple[list[Chunk], list[Chunk]]]


async def backend_rankings(kb: KnowledgeBase, texts: dict[str, str], depth: int) -> Rankings:
    """Each query's keyword and vector rankings at ``depth``, as ``kb.search`` gets them."""
    out: Rankings = {}
    for qid, text in texts.items():
        keyword = kb.backend.keyword_search(text, depth)
        vector: list[Chunk] = []
        if kb.embedder is not None:
            vector = kb.backend.vector_search(_unit(await kb.embedder.embed_query(text)), depth)
        out[qid] = (keyword, vector)
    return out


def search_runs(ranks: Rankings, setting: Setting, k: int, mode: str = "hybrid") -> Runs:
    """What ``kb.search(query, k, mode=mode)`` returns under ``setting``, as documents:
    the same fusion and passage merging, applied to rankings fetched once."""
    runs: Runs = {}
    for qid, (keyword, vector) in ranks.items():
        keyword = keyword if mode != "vector" else []
        vector = vector if mode != "keyword" else []
        fused = fuse(
            keyword,
            vector,
            k=len(keyword) + len(vector),
            rrf_k=setting.rrf_k,
            keyword_weight=setting.keyword_weight,
            vector_weight=1.0,
            method=setting.fusion,
        )
        passages = merge_passages(fused, max_per_document=setting.max_per_document)[:k]
        runs[qid] = documents_of(passages)
    return runs


RRF_K = (1, 2, 5, 10, 20, 30, 45, 60, 80, 100)
WEIGHTS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.2, 1.5, 2.0)
#: SciFact documents are one or two adjacent chunks, merged into one passage, so the
#: per-document cap cannot change a SciFact result (the evaluation checks this): the grid
#: keeps the shipped cap.
CAPS: tuple[int | None, ...] = (2,)


def grid() -> list[Setting]:
    rrf = [Setting("rrf", k, w, c) for k, w, c in itertools.product(RRF_K, WEIGHTS, CAPS)]
    convex = [Setting("convex", 60.0, w, c) for w, c in itertools.product(WEIGHTS, CAPS)]
    return rrf + convex


def best_on_train(
    ranks: Rankings, judged: dict[str, set[str]], settings: Sequence[Setting]
) -> tuple[Setting, float]:
    scored = [(per_query(search_runs(ranks, s, 10), judged).mean(), s) for s in settings]
    score, setting = max(scored, key=lambda pair: pair[0])
    return setting, float(score)


def report(
    title: str, rows: list[tuple[str, Runs, Runs]], judged: dict[str, set[str]]
) -> dict[str, np.ndarray]:
    """Print nDCG@10 of the k=10 search with its interval, nDCG@10 of the k=100 search
    and Recall@100 of the k=100 search."""
    print(f"\n{title}")
    print(f"  {'system':56} {'nDCG@10, k=10 [95% CI]':>26} {'k=100':>7} {'R@100':>7}")
    scores = {}
    for name, at10, at100 in rows:
        values = per_query(at10, judged)
        low, high = interval(values)
        scores[name] = values
        print(
            f"  {name:56} {values.mean():8.4f} [{low:.4f}, {high:.4f}] "
            f"{per_query(at100, judged).mean():7.4f} {mean_recall(at100, judged):7.4f}"
        )
    return scores


def compare(label: str, a: np.ndarray, b: np.ndarray) -> None:
    diff = a - b
    low, high = interval(diff, seed=1)
    verdict = "excludes 0" if low > 0 or high < 0 else "includes 0: noise"
    print(f"  {label:60} {diff.mean():+.4f} [{low:+.4f}, {high:+.4f}] {verdict}")


async def build(
    backend: str, directory: Path, corpus: dict[str, str], embedder: Any, chunker: Chunker
) -> KnowledgeBase:
    kb = KnowledgeBase(make_backend(backend, directory), embedder, chunker=chunker)
    if isinstance(embedder, CachedEmbedder):
        texts = [c.indexed_text for d, t in corpus.items() for c in chunker.split(d, t)]
        await embedder.prefetch(texts)
    started = time.perf_counter()
    for doc_id, text in corpus.items():
        await kb.add(doc_id, text)
    chunks = sum(info.chunks for info in kb.documents())
    print(
        f"  {backend}: indexed {len(corpus)} documents as {chunks} chunks in "
        f"{time.perf_counter() - started:.1f} s ({chunker.signature})",
        file=sys.stderr,
    )
    return kb


async def product_path(
    backend: str,
    directory: Path,
    corpus: dict[str, str],
    queries: dict[str, str],
    qrels: dict[str, dict[str, set[str]]],
    embedder: Any,
) -> None:
    test, train = qrels["test"], qrels["train"]
    test_q = {q: queries[q] for q in sorted(test)}
    train_q = {q: queries[q] for q in sorted(train)}
    if isinstance(embedder, CachedEmbedder):
        await embedder.prefetch(list(queries.values()), "query")
    shipped = KnowledgeBase(make_backend("memory", directory))  # the shipped defaults
    default = Setting(
        shipped.fusion, shipped.rrf_k, shipped.keyword_weight, shipped.max_per_document
    )
    print(f"\n== product path, backend {backend}: {len(test)} test / {len(train)} train claims")
    print(f"shipped defaults: {default.label()}, chunker {Chunker().signature}")

    variants: dict[str, Chunker] = {"context": Chunker(), "no context": Chunker(context=False)}
    results: dict[str, dict[str, np.ndarray]] = {}
    chosen: Setting | None = None
    for variant, chunker in variants.items():
        kb = await build(backend, directory, corpus, embedder, chunker)
        depth10, depth100 = max(kb.depth, 40), max(kb.depth, 400)
        train10 = await backend_rankings(kb, train_q, depth10)
        test10 = await backend_rankings(kb, test_q, depth10)
        test100 = await backend_rankings(kb, test_q, depth100)
        # the shortcut must agree with the real search
        for qid in list(test_q)[:25]:
            for k, ranks in ((10, test10), (100, test100)):
                real = documents_of(await kb.search(test_q[qid], k=k))
                assert real == search_runs({qid: ranks[qid]}, default, k)[qid], (qid, k)

        def row(
            name: str,
            setting: Setting,
            mode: str = "hybrid",
            variant: str = variant,
            at10: Rankings = test10,
            at100: Rankings = test100,
        ) -> tuple[str, Runs, Runs]:
            return (
                f"{variant}: {name}",
                search_runs(at10, setting, 10, mode),
                search_runs(at100, setting, 100, mode),
            )

        caps = {
            cap: search_runs(
                test10, Setting(default.fusion, default.rrf_k, default.keyword_weight, cap), 10
            )
            for cap in (1, 2, None)
        }
        print(
            f"[{variant}] per-document cap 1, 2, none give the same test rankings: "
            f"{caps[1] == caps[2] == caps[None]}"
        )
        rows = [row("keywords", default, "keyword")]
        if embedder is not None:
            rows.append(row("vectors", default, "vector"))
            rows.append(row(f"hybrid, shipped ({default.label()})", default))
            best_rrf, train_rrf = best_on_train(
                train10, train, [s for s in grid() if s.fusion == "rrf"]
            )
            best_convex, train_convex = best_on_train(
                train10, train, [s for s in grid() if s.fusion == "convex"]
            )
            train_default = per_query(search_runs(train10, default, 10), train)
            print(
                f"[{variant}] train nDCG@10: shipped {train_default.mean():.4f}; best rrf "
                f"{best_rrf.label()} {train_rrf:.4f}; best convex {best_convex.label()} "
                f"{train_convex:.4f}"
            )
            print(f"[{variant}] train comparisons (paired bootstrap, 95%):")
            semantic, _ = best_on_train(
                train10,
                train,
                [s for s in grid() if s.fusion == "rrf" and s.keyword_weight <= 1.0],
            )
            print(f"[{variant}] train-best rrf with keyword_weight <= 1: {semantic.label()}")
            rrf_train = per_query(search_runs(train10, best_rrf, 10), train)
            compare(
                "rrf (train-best) - rrf (train-best, keyword_weight <= 1), train",
                rrf_train,
                per_query(search_runs(train10, semantic, 10), train),
            )
            convex_train = per_query(search_runs(train10, best_convex, 10), train)
            compare("convex (train-best) - rrf (train-best), train", convex_train, rrf_train)
            compare("rrf (train-best) - shipped, train", rrf_train, train_default)
            rows.append(row(f"hybrid, train-best rrf ({best_rrf.label()})", best_rrf))
            rows.append(row(f"hybrid, train-best convex ({best_convex.label()})", best_convex))
            if variant == "context":
                chosen = best_rrf
        results[variant] = report(f"[{variant}] SciFact test, product path", rows, test)
        kb.close()

    print("\ntest comparisons (paired bootstrap, 95%):")
    ctx, plain = results["context"], results["no context"]
    names = list(ctx)
    hybrid = next(n for n in names if "hybrid, shipped" in n)
    compare("shipped hybrid - keywords", ctx[hybrid], ctx["context: keywords"])
    if "context: vectors" in ctx:
        compare("shipped hybrid - vectors", ctx[hybrid], ctx["context: vectors"])
    plain_hybrid = next(n for n in plain if "hybrid, shipped" in n)
    compare("context - no context (shipped hybrid)", ctx[hybrid], plain[plain_hybrid])
    compare(
        "context - no context (keywords)", ctx["context: keywords"], plain["no context: keywords"]
    )
    if "context: vectors" in ctx:
        compare(
            "context - no context (vectors)", ctx["context: vectors"], plain["no context: vectors"]
        )
    for name in names:
        if "train-best" in name:
            compare(f"{name[len('context: ') :]} - shipped", ctx[name], ctx[hybrid])
    del chosen


# -- the whole-document protocol ----------------------------------------------------------
async def whole_documents(
    backends: list[str],
    directory: Path,
    corpus: dict[str, str],
    queries: dict[str, str],
    qrels: dict[str, dict[str, set[str]]],
    embedder: Any,
) -> None:
    test, train = qrels["test"], qrels["train"]
    chunker = Chunker(max_chars=1_000_000, max_lines=1000, overlap_lines=0, context=False)
    whole = {q: queries[q] for q in test}
    for backend in backends:
        kb = await build(backend, directory, corpus, embedder, chunker)
        ranks = await backend_rankings(kb, whole, 400)
        default = Setting(kb.fusion, kb.rrf_k, kb.keyword_weight, None)
        rows: list[tuple[str, Runs, Runs]] = []

        def runs(setting: Setting, mode: str, ranks: Rankings = ranks) -> Runs:
            return search_runs(ranks, setting, 100, mode)

        rows.append(("keywords", runs(default, "keyword"), runs(default, "keyword")))
        if embedder is not None:
            rows.append(("vectors", runs(default, "vector"), runs(default, "vector")))
            rows.append(
                (f"hybrid ({default.label()})", runs(default, "hybrid"), runs(default, "hybrid"))
            )
            train_ranks = await backend_rankings(kb, {q: queries[q] for q in train}, 400)
            for fusion in ("rrf", "convex"):
                best, _ = best_on_train(
                    train_ranks,
                    train,
                    [s for s in grid() if s.fusion == fusion and s.max_per_document is None],
                )
                rows.append(
                    (
                        f"hybrid train-best {best.label()}",
                        runs(best, "hybrid"),
                        runs(best, "hybrid"),
                    )
                )
        report(f"[whole documents, depth 400] backend {backend}", rows, test)
        kb.close()


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
    parser.add_argument(
        "--backends", default="sqlite", help="memory, sqlite, chroma (comma-separated)"
    )
    parser.add_argument("--protocol", choices=("product", "whole"), default="product")
    args = parser.parse_args()
    if not args.data:
        parser.error("give the SciFact directory as an argument or in $SCIFACT_DIR")
    corpus, queries, qrels = load(Path(args.data))
    embedder = None if args.embedder == "none" else CachedEmbedder(args.embedder)
    with tempfile.TemporaryDirectory() as tmp:
        if args.protocol == "whole":
            await whole_documents(
                args.backends.split(","), Path(tmp), corpus, queries, qrels, embedder
            )
        else:
            for backend in args.backends.split(","):
                await product_path(backend, Path(tmp), corpus, queries, qrels, embedder)


if __name__ == "__main__":
    asyncio.run(main())
