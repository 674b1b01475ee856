"""Sessions: where a conversation's history lives between and during runs.

``InMemorySession`` keeps it in a list; ``JsonlSession`` (the production default) writes
one message per line and survives crashes. Anything with the :class:`Session` shape
works: the runner only appends messages, reads them back and, when compacting, replaces
the whole history at once. Stores shared by many workers (``SqliteSessionStore`` here,
PostgreSQL and Redis in plugins) hand out :class:`AsyncSession` objects whose writes are
awaited and version-checked; the runner accepts both kinds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .backend import JsonlBackend, SessionBackend, open_session_backend
from .base import (
    AnySession,
    AsyncSession,
    Session,
    append_message,
    close_session,
    is_async_session,
    one_run_at_a_time,
    replace_messages,
)
from .jsonl import JsonlSession, load_session_file
from .memory import InMemorySession
from .repair import RepairAction, RepairReport, repair_messages
from .store import SessionInfo, SessionStore, validate_session_name
from .versioned import SessionSummary, StoredSession, VersionedStore

if TYPE_CHECKING:
    from .sqlite import SqliteSessionStore

__all__ = [
    "AnySession",
    "AsyncSession",
    "InMemorySession",
    "JsonlBackend",
    "JsonlSession",
    "RepairAction",
    "RepairReport",
    "Session",
    "SessionBackend",
    "SessionInfo",
    "SessionStore",
    "SessionSummary",
    "SqliteSessionStore",
    "StoredSession",
    "VersionedStore",
    "append_message",
    "close_session",
    "is_async_session",
    "load_session_file",
    "one_run_at_a_time",
    "open_session_backend",
    "repair_messages",
    "replace_messages",
    "validate_session_name",
]


def __getattr__(name: str) -> Any:
    """``SqliteSessionStore``, imported on first use (with :mod:`sqlite3`): a run whose
    sessions live elsewhere never needs it."""
    if name == "SqliteSessionStore":
        from .sqlite import SqliteSessionStore

        return SqliteSessionStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
