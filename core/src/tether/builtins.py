"""tether's own components, registered through the same hooks as any plugin."""

from __future__ import annotations

from .compaction import NoCompaction
from .hookspecs import hookimpl
from .registry import (
    CommandRegistrar,
    CompactionStrategyRegistrar,
    MemoryBackendRegistrar,
    ToolRegistrar,
)


@hookimpl
def register_compaction_strategies(strategies: CompactionStrategyRegistrar) -> None:
    strategies.add("none", NoCompaction)


@hookimpl
def register_memory_backends(backends: MemoryBackendRegistrar) -> None:
    from .knowledge.memory_backend import MemoryBackend

    backends.add("memory", MemoryBackend)


@hookimpl
def register_tools(tools: ToolRegistrar) -> None:
    from .knowledge.tool import kb_toolset

    tools.add(kb_toolset())


@hookimpl
def register_commands(commands: CommandRegistrar) -> None:
    from .cli.kb import kb

    commands.add(kb)
