"""tether's own components, registered through the same hooks as any plugin.

Each feature is a named built-in plugin (:data:`PLUGINS`): ``compaction`` (the
``none``, ``summarize`` and ``truncate`` strategies), ``demo`` (the key-free demo model),
``sessions`` (the ``jsonl`` and ``sqlite`` session stores) and ``strategies`` (ReAct,
Plan-and-Execute, Reflexion). Like pytest's, a built-in plugin is left out when its name
is in ``TETHER_PLUGINS_DENY``.

The product parts that are distributions of their own (the knowledge base, the run log,
the command line) register theirs through their entry points, like any other plugin.
"""

from __future__ import annotations

from types import SimpleNamespace

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


def _plugin(**hooks: object) -> object:
    """A built-in plugin holding ``hooks``, shown as from module ``tether.builtins``."""
    return SimpleNamespace(__name__=__name__, **hooks)


#: The built-in plugins by name, registered in this order before any other plugin.
PLUGINS: dict[str, object] = {
    "compaction": _plugin(register_compaction_strategies=register_compaction_strategies),
    "demo": _plugin(register_providers=register_providers),
    "sessions": _plugin(register_session_stores=register_session_stores),
    "strategies": _plugin(register_strategies=register_strategies),
}
