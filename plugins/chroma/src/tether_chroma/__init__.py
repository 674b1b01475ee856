"""tether-chroma: the ``chroma`` knowledge-base backend.

Registers :class:`~tether_chroma.backend.ChromaBackend` through
``register_knowledge_backends``; chromadb is imported only when a knowledge base opens.
"""

from __future__ import annotations

from typing import Any

import tether

__all__ = ["register_knowledge_backends"]


def _factory(**settings: Any) -> Any:
    from .backend import ChromaBackend

    return ChromaBackend(**settings)


@tether.hookimpl
def register_knowledge_backends(backends: Any) -> None:
    backends.add("chroma", _factory)
