"""tether's own components, registered through the same hooks as any plugin.

The one exception is the CLI's own sub-commands: they are listed in
``tether.cli.BUILTIN_COMMANDS`` so that ``tether --help`` can name them without loading
any plugin.
"""

from __future__ import annotations

from .compaction import NoCompaction, SummarizeStrategy, TruncateStrategy
from .hookspecs import hookimpl
from .registry import (
    CompactionStrategyRegistrar,
    MemoryBackendRegistrar,
    SessionStoreRegistrar,
    ToolRegistrar,
)


@hookimpl
def register_compaction_strategies(strategies: CompactionStrategyRegistrar) -> None:
    strategies.add("none", NoCompaction)
    strategies.add("summarize", SummarizeStrategy)
    strategies.add("truncate", TruncateStrategy)


@hookimpl
def register_session_stores(stores: SessionStoreRegistrar) -> None:
    from .sessions.backend import JsonlBackend
    from .sessions.sqlite import SqliteSessionStore

    stores.add("jsonl", JsonlBackend)
    stores.add("sqlite", SqliteSessionStore)


@hookimpl
def register_memory_backends(backends: MemoryBackendRegistrar) -> None:
    from .knowledge.memory_backend import MemoryBackend

    backends.add("memory", MemoryBackend)


@hookimpl
def register_tools(tools: ToolRegistrar) -> None:
    from .knowledge.tool import kb_toolset

    tools.add(kb_toolset())
