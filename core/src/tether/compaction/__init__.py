"""Compaction: keeping the history inside the model's context window.

A strategy is asked after every tool round (and, with ``force=True``, after a provider
reported a context overflow) whether to shorten the history. It returns ``None`` to leave
it alone, or a :class:`CompactionResult` whose messages replace the session's history
atomically. Strategies must keep the invariant: never separate a tool call from its
result, never reorder what they keep.
"""

from __future__ import annotations

from .base import CompactionContext, CompactionResult, CompactionStrategy, NoCompaction
from .prefix import PrefixStability, PrefixTracker, prefix_stability
from .summarize import SUMMARY_MARKER, SUMMARY_PROMPT, SummarizeStrategy, is_summary
from .truncate import TruncateStrategy

__all__ = [
    "SUMMARY_MARKER",
    "SUMMARY_PROMPT",
    "CompactionContext",
    "CompactionResult",
    "CompactionStrategy",
    "NoCompaction",
    "PrefixStability",
    "PrefixTracker",
    "SummarizeStrategy",
    "TruncateStrategy",
    "is_summary",
    "prefix_stability",
]
