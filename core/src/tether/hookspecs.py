"""Hook specifications: the whole plugin surface of tether.

A plugin is a module (named by an entry point in the ``tether`` group) whose functions
are decorated with :data:`tether.hookimpl` and named after these specs::

    # pyproject.toml
    [project.entry-points.tether]
    weather = "tether_weather"

    # tether_weather.py
    @tether.hookimpl
    def register_tools(tools):
        tools.add(get_weather)

Every hook follows one pattern, ``register_<noun>(<registrar>)``: it is called once per
plugin manager (once per :class:`~tether.Agent` or CLI invocation, when the components of
that kind are first needed), receives a registrar and returns nothing. An implementation
may leave out the argument entirely (pluggy passes only the arguments it names), and
specs only ever gain arguments. A hook that raises is reported as a load error of its
plugin; what the plugin registered in that hook is discarded and other plugins are
unaffected. None of these hooks is ``firstresult``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from .registry import (
        CommandRegistrar,
        CompactionStrategyRegistrar,
        EmbedderRegistrar,
        KnowledgeBackendRegistrar,
        ObserverRegistrar,
        ProviderRegistrar,
        SessionStoreRegistrar,
        SkillRegistrar,
        StrategyRegistrar,
        ToolRegistrar,
    )

PROJECT = "tether"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def register_providers(providers: ProviderRegistrar) -> None:
    """Register model providers.

    Called once per plugin manager, the first time a model string is resolved.

    :param providers: call ``providers.add(name, factory, prefixes=(...))``. ``name`` is
        the part before the slash in ``name/model``; ``factory(config)`` receives the
        provider's :class:`~tether.config.ProviderConfig` and returns a
        :class:`~tether.provider.Provider`. It is called lazily, so import vendor SDKs
        inside it. A cloud platform that hosts several vendors' models is served by
        family: ``providers.add("vertex", factory, family="claude-",
        family_plugins={"gemini-": "tether-google"})`` registers this plugin's factory
        for ``vertex/claude-*`` and names the distribution serving the other family, so
        another plugin can add ``family="gemini-"`` to the same name (see
        :class:`~tether.registry.ProviderRegistrar`).

    Since 0.1.

    Example::

        @tether.hookimpl
        def register_providers(providers):
            providers.add("acme", make_acme_provider, prefixes=("acme-",))
            providers.add("acme-cloud", make_acme_cloud_provider, family="acme-")
    """


@hookspec
def register_tools(tools: ToolRegistrar) -> None:
    """Register tools and toolsets that agents and the config can enable by name.

    Called once per plugin manager, the first time a tool is looked up by name.

    :param tools: call ``tools.add(tool_or_toolset)``. A :class:`~tether.Toolset` is
        enabled by its name (``tools = ["fs"]``); a single tool by its own name.
        ``tools.config`` is the :class:`~tether.config.Config` of the agent or CLI
        invocation (``None`` when the manager was built without one), for toolsets that
        are configured, e.g. from a plugin table (``tools.config.section("mcp")``).

    Since 0.1.

    Example::

        @tether.hookimpl
        def register_tools(tools):
            tools.add(tether.Toolset("weather", [get_weather, get_forecast]))
    """


@hookspec
def register_knowledge_backends(backends: KnowledgeBackendRegistrar) -> None:
    """Register knowledge-base backends.

    Called once per plugin manager, the first time a knowledge base is opened.

    :param backends: call ``backends.add(name, factory)``; ``factory(**settings)``
        returns a knowledge-base backend (the :class:`~tether.knowledge.KnowledgeBackend`
        protocol; its tests should subclass
        :class:`tether.testing.KnowledgeBackendContract`). ``settings`` are the
        ``[knowledge] settings`` of the configuration plus ``data_dir``, the directory
        where a persistent backend keeps its files (``<data dir>/knowledge`` unless
        configured).

    Since 0.1 (named ``register_memory_backends`` before; that name is still called).

    Example::

        @tether.hookimpl
        def register_knowledge_backends(backends):
            backends.add("acme", AcmeBackend)  # AcmeBackend(**settings)
    """


@hookspec(
    warn_on_impl=DeprecationWarning(
        "register_memory_backends is deprecated: name the hook register_knowledge_backends "
        "(the old name is still called until tether 1.0)."
    )
)
def register_memory_backends(backends: KnowledgeBackendRegistrar) -> None:
    """The old name of ``register_knowledge_backends`` (deprecated; goes in tether 1.0).

    Called right after :func:`register_knowledge_backends`, on the same registrar, for
    the plugins that still implement it; registering such a plugin warns with a
    ``DeprecationWarning``.

    :param backends: as for :func:`register_knowledge_backends`.

    Since 0.1.

    An old plugin, whose hook should be renamed to ``register_knowledge_backends``.

    Example::

        @tether.hookimpl
        def register_memory_backends(backends):
            backends.add("acme", AcmeBackend)
    """


@hookspec
def register_compaction_strategies(strategies: CompactionStrategyRegistrar) -> None:
    """Register compaction strategies (``summarize``, ``truncate``, ``none`` are built in).

    Called once per plugin manager, the first time a strategy is looked up by name.

    :param strategies: call ``strategies.add(name, factory)``; ``factory(**settings)``
        returns a :class:`~tether.compaction.CompactionStrategy`.

    Since 0.1.

    Example::

        @tether.hookimpl
        def register_compaction_strategies(strategies):
            strategies.add("keep-last", KeepLastStrategy)
    """


@hookspec
def register_session_stores(stores: SessionStoreRegistrar) -> None:
    """Register places where named sessions are kept (``jsonl`` and ``sqlite`` are built in).

    Called once per plugin manager, the first time a session is opened by name.

    :param stores: call ``stores.add(name, factory)``; ``factory(**settings)`` returns a
        :class:`~tether.sessions.SessionBackend`. ``settings`` are the ``[sessions]
        settings`` of the configuration plus ``data_dir``. Connect lazily (on the first
        awaited call), not in the factory. A store's tests should subclass
        :class:`tether.testing.SessionStoreContract`.

    Since 0.1.

    Example::

        @tether.hookimpl
        def register_session_stores(stores):
            stores.add("acme", AcmeSessionStore)  # AcmeSessionStore(**settings)
    """


@hookspec
def register_embedders(embedders: EmbedderRegistrar) -> None:
    """Register text embedders for the knowledge base.

    Called once per plugin manager, the first time a knowledge base loads its embedder.

    :param embedders: call ``embedders.add(name, factory)``; ``factory(**settings)``
        returns a :class:`tether.knowledge.embedders.Embedder`: ``name``, ``dimensions``,
        ``async embed(texts) -> list[list[float]]`` for documents and
        ``async embed_query(text) -> list[float]`` for queries. Import heavy libraries
        inside the factory, not at module import time.

    Since 0.1.

    Example::

        @tether.hookimpl
        def register_embedders(embedders):
            embedders.add("acme", AcmeEmbedder)  # AcmeEmbedder(**settings)
    """


@hookspec
def register_observers(observers: ObserverRegistrar) -> None:
    """Register callbacks that see every event of every run (tracing, metrics).

    Called once per plugin manager, when an agent first runs.

    :param observers: call ``observers.add(name, callback)``; ``callback(event)`` is
        called synchronously for each :data:`~tether.events.RunEvent` and must not block.
        Or ``observers.add(name, factory, configure=True)``: each agent calls
        ``factory(settings, config)`` with its ``[observers.<name>]`` settings and uses the
        callback returned (``None``: inactive). During a callback,
        :func:`tether.observe.current_run` is the run that emitted the event; an observer
        with a ``tool_scope(call)`` method has it entered around every tool body; one with
        an ``observed_events`` attribute (event classes) is called for those types only,
        so it costs nothing for the others, such as each streamed text delta (see
        :mod:`tether.observe`).

    Since 0.1.

    Example::

        @tether.hookimpl
        def register_observers(observers):
            observers.add("print", lambda event: print(type(event).__name__))
    """


@hookspec
def register_commands(commands: CommandRegistrar) -> None:
    """Add sub-commands to the ``tether`` command line.

    Called once when the CLI starts.

    :param commands: call ``commands.add(click_command)``.

    Since 0.1.

    Example::

        @tether.hookimpl
        def register_commands(commands):
            commands.add(acme_command)  # a click command: `tether acme ...`
    """


@hookspec
def register_skills(skills: SkillRegistrar) -> None:
    """Register skills (folders with a ``SKILL.md``) that every agent offers.

    Called once per plugin manager, the first time an agent builds its skill index.
    Project (``.tether/skills/``) and user-config skills of the same name take precedence.

    :param skills: call ``skills.add(path_to_folder)`` or ``skills.add(Skill(...))``.

    Since 0.1.

    Example::

        @tether.hookimpl
        def register_skills(skills):
            skills.add(Path(__file__).parent / "skills" / "release-notes")
    """


@hookspec
def register_strategies(strategies: StrategyRegistrar) -> None:
    """Register strategies: ways an agent works through a task on the one loop
    (``react``, ``plan-and-execute`` and ``reflexion`` are built in).

    Called once per plugin manager, the first time a strategy is looked up by name.

    :param strategies: call ``strategies.add(name, factory)``; ``factory(**settings)``
        returns a :class:`~tether.strategies.Strategy`.

    Since 0.1.

    Example::

        @tether.hookimpl
        def register_strategies(strategies):
            strategies.add("draft-then-check", DraftThenCheck)
    """
