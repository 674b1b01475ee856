"""tether's own components, registered through the same hooks as any plugin.

The product parts that are distributions of their own (the knowledge base, the run log,
the command line) register theirs through their entry points, like any other plugin.
"""

from __future__ import annotations

from .compaction import NoCompaction, SummarizeStrategy, TruncateStrategy
from .hookspecs import hookimpl
from .registry import (
    CompactionStrategyRegistrar,
    ProviderRegistrar,
    SessionStoreRegistrar,
    StrategyRegistrar,
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


@hookimpl
def register_strategies(strategies: StrategyRegistrar) -> None:
    from .strategies import PlanAndExecute, ReAct, Reflexion

    strategies.add("react", ReAct)
    strategies.add("plan-and-execute", PlanAndExecute)
    strategies.add("reflexion", Reflexion)
