"""tether's own components, registered through the same hooks as any plugin."""

from __future__ import annotations

from .compaction import NoCompaction
from .hookspecs import hookimpl
from .registry import CompactionStrategyRegistrar


@hookimpl
def register_compaction_strategies(strategies: CompactionStrategyRegistrar) -> None:
    strategies.add("none", NoCompaction)
