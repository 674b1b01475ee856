"""tether-sqlite: the persistent knowledge-base backend ``sqlite`` (the default).

Registers :class:`~tether_sqlite.backend.SqliteBackend` through
``register_knowledge_backends``. The backend module (and numpy) is imported only when a
knowledge base is opened.
"""

from __future__ import annotations

from typing import Any

import tether

__all__ = ["register_knowledge_backends"]


def _factory(**settings: Any) -> Any:
    from .backend import SqliteBackend

    return SqliteBackend(**settings)


@tether.hookimpl
def register_knowledge_backends(backends: Any) -> None:
    backends.add("sqlite", _factory)
