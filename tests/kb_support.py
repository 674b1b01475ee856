"""Shared helpers for the knowledge-base tests: backends by name and a small embedder.

``HashingEmbedder`` is a real (if simple) embedding: the feature-hashing bag of stemmed
words, so texts sharing words have close vectors. It lets the contract suite check
vector behaviour without model weights.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tether_knowledge.text import Tokenizer


class HashingEmbedder:
    name = "hashing-64"
    dimensions = 64

    def __init__(self) -> None:
        self._tokenize = Tokenizer("english")

    def vector(self, text: str) -> list[float]:
        out = [0.0] * self.dimensions
        for term in self._tokenize(text):
            digest = hashlib.blake2b(term.encode(), digest_size=4).digest()
            index = int.from_bytes(digest[:3], "big") % self.dimensions
            out[index] += 1.0 if digest[3] & 1 else -1.0
        norm = math.sqrt(sum(v * v for v in out)) or 1.0
        return [v / norm for v in out]

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.vector(t) for t in texts]

    async def embed_query(self, text: str) -> list[float]:
        return self.vector(text)


def make_backend(kind: str, directory: Path, server: tuple[str, int] | None = None) -> Any:
    """A fresh backend of ``kind`` storing under ``directory``."""
    if kind == "memory":
        from tether_knowledge.memory_backend import MemoryBackend

        return MemoryBackend()
    if kind == "sqlite":
        from tether_sqlite.backend import SqliteBackend

        return SqliteBackend(directory / "kb.sqlite3")
    if kind == "chroma":
        from tether_chroma.backend import ChromaBackend

        return ChromaBackend(directory / "chroma")
    if kind == "chroma-http":
        from tether_chroma.backend import ChromaBackend

        assert server is not None
        return ChromaBackend(host=server[0], port=server[1], collection=f"t{directory.name[-20:]}")
    raise ValueError(kind)
