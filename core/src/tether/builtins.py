"""tether's own components, registered through the same hooks as any plugin.

The one exception is the CLI's own sub-commands: they are listed in
``tether.cli.BUILTIN_COMMANDS`` so that ``tether --help`` can name them without loading
any plugin.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from .compaction import NoCompaction, SummarizeStrategy, TruncateStrategy
from .errors import ConfigError
from .hookspecs import hookimpl
from .registry import (
    CompactionStrategyRegistrar,
    EmbedderRegistrar,
    KnowledgeBackendRegistrar,
    ObserverRegistrar,
    ProviderRegistrar,
    SessionStoreRegistrar,
    StrategyRegistrar,
    ToolRegistrar,
)


@hookimpl
def register_compaction_strategies(strategies: CompactionStrategyRegistrar) -> None:
    strategies.add("none", NoCompaction)
    strategies.add("summarize", SummarizeStrategy)
    strategies.add("truncate", TruncateStrategy)


@hookimpl
def register_providers(providers: ProviderRegistrar) -> None:
    from .demo import SETTINGS, make_demo_provider

    providers.add(
        "demo",
        make_demo_provider,
        description="Key-free demo model: echoes, calls the tools a prompt names",
        default_model="echo",
        settings=SETTINGS,
    )


@hookimpl
def register_session_stores(stores: SessionStoreRegistrar) -> None:
    from .sessions.backend import JsonlBackend
    from .sessions.sqlite import SqliteSessionStore

    stores.add("jsonl", JsonlBackend)
    stores.add("sqlite", SqliteSessionStore)


def memory_backend(**settings: Any) -> Any:
    """The in-memory knowledge-base backend. It needs numpy (the ``kb`` extra), imported
    only here, so a core-only install loads tether's built-ins without errors and says
    what to install when a knowledge base is actually used."""
    try:
        from .knowledge.memory_backend import MemoryBackend
    except ImportError as exc:
        raise ConfigError(
            f"The in-memory knowledge-base backend needs {exc.name or 'numpy'}, which is not "
            'installed. Install the kb extra, in a clone of tether: uv pip install "./core[kb]" '
            "(or uv sync --all-packages --all-extras)."
        ) from exc
    return MemoryBackend(**settings)


@hookimpl
def register_knowledge_backends(backends: KnowledgeBackendRegistrar) -> None:
    backends.add("memory", memory_backend)


@hookimpl
def register_tools(tools: ToolRegistrar) -> None:
    from .knowledge.tool import kb_toolset

    def open_knowledge_base() -> Any:
        from .config import load_config
        from .knowledge.knowledge_base import KnowledgeBase

        return KnowledgeBase.open(
            tools.config if tools.config is not None else load_config(),
            backends=tools.sibling(KnowledgeBackendRegistrar),
            embedders=tools.sibling(EmbedderRegistrar),
        )

    tools.add(kb_toolset(open_knowledge_base), settings={"k": Annotated[int, Field(ge=1, le=50)]})


@hookimpl
def register_observers(observers: ObserverRegistrar) -> None:
    from .runlog import recorder_for

    observers.add("runlog", recorder_for, configure=True)


@hookimpl
def register_strategies(strategies: StrategyRegistrar) -> None:
    from .strategies import PlanAndExecute, ReAct, Reflexion

    strategies.add("react", ReAct)
    strategies.add("plan-and-execute", PlanAndExecute)
    strategies.add("reflexion", Reflexion)
