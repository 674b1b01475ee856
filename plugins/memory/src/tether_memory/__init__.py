"""Cross-session memory: a user profile and project facts injected into the system prompt.

- :class:`CrossSessionMemory` — pass it as ``Agent(memory=...)`` and add its ``tool``;
- :class:`MemoryStore` / :class:`MemoryFile` — the capped plain-text files;
- :func:`scan` — the check every write passes first.

Kept apart from the knowledge base (:mod:`tether_knowledge`), which is consulted on
demand; this memory is small and always present.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_LAZY = {
    "CrossSessionMemory": "snapshot",
    "MemoryFile": "store",
    "MemoryStore": "store",
    "WriteResult": "store",
    "memory_tool": "tool",
    "scan": "scanner",
    "ScanResult": "scanner",
}


def __getattr__(name: str) -> Any:
    """Every name, imported on first use: ``tether memory --help`` and an agent that only
    reads its memory load neither pydantic-heavy modules nor the scanner's patterns."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
