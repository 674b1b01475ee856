"""Sessions: where a conversation's history lives between and during runs.

``InMemorySession`` keeps it in a list; ``JsonlSession`` (the production default) writes
one message per line and survives crashes. Anything with the :class:`Session` shape
works: the runner only appends messages, reads them back and, when compacting, replaces
the whole history at once.
"""

from __future__ import annotations

from .base import Session
from .jsonl import JsonlSession, load_session_file
from .memory import InMemorySession
from .repair import RepairAction, RepairReport, repair_messages
from .store import SessionInfo, SessionStore

__all__ = [
    "InMemorySession",
    "JsonlSession",
    "RepairAction",
    "RepairReport",
    "Session",
    "SessionInfo",
    "SessionStore",
    "load_session_file",
    "repair_messages",
]
