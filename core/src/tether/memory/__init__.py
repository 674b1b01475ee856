"""Cross-session memory: a user profile and project facts injected into the system prompt.

- :class:`CrossSessionMemory` — pass it as ``Agent(memory=...)`` and add its ``tool``;
- :class:`MemoryStore` / :class:`MemoryFile` — the capped plain-text files;
- :func:`scan` — the check every write passes first.

Kept apart from the knowledge base (:mod:`tether.knowledge`), which is consulted on
demand; this memory is small and always present.
"""

from __future__ import annotations

from .scanner import ScanResult, scan
from .snapshot import CrossSessionMemory
from .store import MemoryFile, MemoryStore, WriteResult
from .tool import memory_tool

__all__ = [
    "CrossSessionMemory",
    "MemoryFile",
    "MemoryStore",
    "ScanResult",
    "WriteResult",
    "memory_tool",
    "scan",
]
