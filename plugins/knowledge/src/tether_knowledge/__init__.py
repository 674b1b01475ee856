"""The knowledge base: large material consulted on demand through hybrid retrieval.

Documents are split on line boundaries with overlap; each chunk is indexed for keywords
(BM25) and, when an embedder is configured, for vectors. Queries fuse both rankings with
weighted reciprocal rank fusion, deduplicate by (document, start line), drop results
under a threshold and return the top k. Backends are plugins registered through
``register_knowledge_backends``: ``memory`` (in-process, core), ``sqlite`` (persistent
default, ``tether-sqlite``) and ``chroma`` (``tether-chroma``).

Backends build on the public pieces exported here: :class:`KnowledgeBackend` (the
protocol), :class:`DocumentInfo`/:data:`DocumentWrite`, :class:`Chunk`,
:class:`Tokenizer` (the keyword terms of a text), :class:`KeywordIndex` (BM25 over term
ids) and :class:`VectorIndex` (inner-product search); their tests subclass
:class:`tether.testing.KnowledgeBackendContract`.

Everything here is imported lazily: ``import tether_knowledge`` loads no numpy.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .backend import DocumentInfo, DocumentWrite, KnowledgeBackend
    from .chunking import Chunk, Chunker
    from .embedders import Embedder, EmbedderFactory, available_embedders, load_embedder
    from .fusion import Passage, fuse
    from .keyword_index import KeywordIndex
    from .knowledge_base import AddOutcome, KnowledgeBase
    from .memory_backend import MemoryBackend
    from .text import Tokenizer
    from .tool import kb_search_tool
    from .vector_index import VectorIndex

_LAZY = {
    "AddOutcome": "knowledge_base",
    "Chunk": "chunking",
    "Chunker": "chunking",
    "DocumentInfo": "backend",
    "DocumentWrite": "backend",
    "KeywordIndex": "keyword_index",
    "Tokenizer": "text",
    "VectorIndex": "vector_index",
    "Embedder": "embedders",
    "EmbedderFactory": "embedders",
    "KnowledgeBackend": "backend",
    "KnowledgeBase": "knowledge_base",
    "MemoryBackend": "memory_backend",
    "Passage": "fusion",
    "available_embedders": "embedders",
    "fuse": "fusion",
    "kb_search_tool": "tool",
    "load_embedder": "embedders",
}

__all__ = [
    "AddOutcome",
    "Chunk",
    "Chunker",
    "DocumentInfo",
    "DocumentWrite",
    "Embedder",
    "EmbedderFactory",
    "KeywordIndex",
    "KnowledgeBackend",
    "KnowledgeBase",
    "MemoryBackend",
    "Passage",
    "Tokenizer",
    "VectorIndex",
    "available_embedders",
    "fuse",
    "kb_search_tool",
    "load_embedder",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tether_knowledge' has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
