"""Cross-session memory: a user profile and project facts injected into the system prompt.

- :class:`CrossSessionMemory` — pass it as ``Agent(memory=...)`` and add its ``tool``;
- :class:`MemoryStore` / :class:`MemoryFile` — the capped plain-text files;
- :func:`scan` — the check every write passes first.

Kept apart from the knowledge base (:mod:`tether.knowledge`), which is consulted on
demand; this memory is small and always present.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .snapshot import CrossSessionMemory
from .store import MemoryFile, MemoryStore, WriteResult
from .tool import memory_tool

if TYPE_CHECKING:
    from .scanner import ScanResult, scan

__all__ = [
    "CrossSessionMemory",
    "MemoryFile",
    "MemoryStore",
    "ScanResult",
    "WriteResult",
    "memory_tool",
    "scan",
]


def __getattr__(name: str) -> Any:
    """``scan`` and ``ScanResult``, imported on first use: the scanner compiles many
    patterns, and an agent that only reads its memory never needs them."""
    if name in ("scan", "ScanResult"):
        from . import scanner

        return getattr(scanner, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
