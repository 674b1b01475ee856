"""The :class:`Agent`: configuration of a model, tools and policies, and the way to run it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import weakref
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from .boundary import RunBoundary
from .cancel import CancelToken
from .compaction import CompactionStrategy
from .config import Config, LimitsConfig, load_config
from .depth import check_run_depth
from .errors import ConfigError, TetherError
from .events import Compaction, Done, RunEvent
from .messages import Block, ImageBlock, Message, TextBlock
from .plugins import PluginManager
from .provider import Provider, ThinkingConfig
from .resolve import ModelRef, parse_model_string
from .result import RunResult
from .retry import RetryPolicy
from .runner import Run, RunSettings
from .scrub import install_log_scrubbing, register_secret, secret_environment
from .sessions import (
    AnySession,
    InMemorySession,
    SessionBackend,
    close_session,
    replace_messages,
)
from .tools import Tool, Toolset, as_tool

__all__ = ["Agent"]

ToolSpec = Tool | Toolset | Callable[..., Any] | str
Prompt = str | Message | Sequence[Block]


class Agent:
    """A model with tools, run as a loop of model calls and tool calls.

    :param model: ``"provider/model"`` (or a bare name or alias), or a
        :class:`~tether.provider.Provider` instance (handy with
        :class:`~tether.testing.ScriptedProvider`). Defaults to the configured model.
    :param system: the system prompt; kept byte-identical across turns.
    :param tools: tools, toolsets, plain functions, or names of registered toolsets.
    :param session: the history runs continue from and write to: a session object, or the
        name of a session in the configured store (``[sessions] store``, JSONL files by
        default), opened on the first run and kept open until :meth:`aclose`. ``None``
        gives every run a fresh in-memory session; pass a session (or a name) to
        ``run``/``stream`` per call instead.
    :param compaction: a strategy name (``"summarize"``, ``"truncate"``, ``"none"``) or
        object; defaults to the configured strategy.
    :param memory: cross-session memory (:class:`~tether.memory.CrossSessionMemory`): its
        snapshot is added to the system prompt once per session (and again after a
        compaction), and its ``memory`` tool is offered unless already listed.
    :param limits: run limits (``LimitsConfig`` or a mapping of its fields).
    :param config: configuration; loaded from ``tether.toml`` and the environment when
        omitted.
    :param plugins: extra plugin objects registered next to the entry points.
    :param plugin_manager: a :class:`~tether.plugins.PluginManager` to take components
        from instead of building one (share one between agents, or build it with exactly
        the plugins a test wants). Give either this or ``plugins``/``entry_points``.
    :param entry_points: load plugins from the ``tether`` entry-point group (default).
        ``False`` loads only tether's built-ins and ``plugins``.
    :param deps: any object handed to tools as ``ToolContext.deps``.
    """

    def __init__(
        self,
        model: str | Provider | None = None,
        *,
        system: str | None = None,
        tools: Sequence[ToolSpec] | None = None,
        session: AnySession | str | None = None,
        compaction: str | CompactionStrategy | None = None,
        memory: Any = None,
        limits: LimitsConfig | Mapping[str, Any] | None = None,
        config: Config | None = None,
        plugins: Sequence[object] = (),
        plugin_manager: PluginManager | None = None,
        entry_points: bool = True,
        retry: RetryPolicy | None = None,
        parallel_tools: bool | None = None,
        max_output_tokens: int | None = None,
        temperature: float | None = None,
        thinking: ThinkingConfig | None = None,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        deps: Any = None,
    ) -> None:
        install_log_scrubbing()
        self.config = config if config is not None else load_config()
        self.plugins = _plugin_manager(plugin_manager, plugins, entry_points, self.config)
        chosen = model if model is not None else self.config.model
        if chosen is None:
            raise ConfigError(
                'No model configured. Pass Agent(model="provider/model") or set `model` in '
                "tether.toml (or the TETHER_MODEL environment variable)."
            )
        self._model: str | Provider = chosen
        self.system = system if system is not None else (self.config.system or "")
        self._tool_specs: list[ToolSpec] = (
            list(tools) if tools is not None else list(self.config.tools)
        )
        self.session: AnySession | None = None if isinstance(session, str) else session
        self._session_name = session if isinstance(session, str) else None
        self._session_store: SessionBackend | None = None
        self._compaction_spec = compaction
        self.memory = memory
        self.limits = _limits(limits, self.config)
        self.retry = retry or RetryPolicy()
        self.parallel_tools = (
            self.config.parallel_tools if parallel_tools is None else parallel_tools
        )
        self.max_output_tokens = max_output_tokens or self.config.max_output_tokens
        self.temperature = temperature if temperature is not None else self.config.temperature
        self.thinking = thinking
        self.cwd = Path(cwd) if cwd is not None else Path.cwd()
        self.env = dict(env) if env is not None else {}
        for value in secret_environment(self.env.items()).values():
            register_secret(value)  # tools pass these to subprocesses: keep them out of output
        self.deps = deps
        self._settings: RunSettings | None = None
        self._dynamic: list[Toolset] = []
        self._system_by_session: dict[str, str] = {}
        self._repairs_announced: weakref.WeakSet[Any] = weakref.WeakSet()

    # -- running -------------------------------------------------------------------------------
    async def stream(
        self,
        prompt: Prompt,
        *,
        session: AnySession | str | None = None,
        cancel: CancelToken | None = None,
        deps: Any = None,
        boundary: RunBoundary | None = None,
    ) -> AsyncGenerator[RunEvent, None]:
        """Run the loop for ``prompt``, yielding every event; the last one is ``Done``.

        Provider errors that cannot be retried propagate as :class:`TetherError`; limits,
        refusals and cancellation through ``cancel`` end the run with a ``Done`` whose
        result has the matching :class:`~tether.result.Outcome`. A ``boundary`` wraps the
        run's model requests and tool calls (see :mod:`tether.boundary`; tether-dbos uses
        it to make runs durable).
        """
        check_run_depth(self.limits.max_run_depth)
        settings = self._run_settings()
        if boundary is not None:
            settings = replace(
                settings,
                provider=boundary.wrap_provider(settings.provider),
                tool_boundary=boundary.call_tool,
            )
        owned = isinstance(session, str)
        if isinstance(session, str):
            target: AnySession = await self.open_session(session)
        elif session is not None:
            target = session
        else:
            target = await self._agent_session()
        try:
            if self.memory is not None:
                settings = self._with_memory(settings, target)
            run = Run(
                settings,
                target,
                _as_message(prompt),
                cancel=cancel,
                deps=deps if deps is not None else self.deps,
                repair_report=self._repair_to_announce(target),
            )
            async with contextlib.aclosing(run.events()) as events:
                async for event in events:
                    yield event
        finally:
            if owned:
                await close_session(target)

    async def run(
        self,
        prompt: Prompt,
        *,
        session: AnySession | str | None = None,
        cancel: CancelToken | None = None,
        deps: Any = None,
    ) -> RunResult:
        """Consume :meth:`stream` and return the result carried by its ``Done``."""
        result: RunResult | None = None
        async for event in self.stream(prompt, session=session, cancel=cancel, deps=deps):
            if type(event) is Done:
                result = event.result
        if result is None:  # the loop always ends with Done; this guards a broken contract
            raise TetherError("The run ended without a result.")
        return result

    def run_sync(self, prompt: Prompt, **kwargs: Any) -> RunResult:
        """:meth:`run` for scripts: starts an event loop. Not usable inside one."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.run(prompt, **kwargs))
        raise RuntimeError(
            "run_sync() cannot be called from a running event loop; use `await agent.run(...)`."
        )

    async def compact(self, session: AnySession | None = None) -> Compaction | None:
        """Compact ``session``'s history now with the agent's compaction strategy, as the
        runner does when the context fills up (forced: whatever the history's size).

        Returns the :class:`~tether.events.Compaction` event, or ``None`` when the strategy
        had nothing to do (a short history, or strategy ``none``). The invariant holds: the
        strategy cuts only at clean boundaries.
        """
        from .compaction.base import CompactionContext

        settings = self._run_settings()
        target = session or await self.named_session()
        if target is None:
            raise TetherError("Agent.compact() needs a session: pass one or give the agent one.")
        messages = list(target.messages)
        outcome = await settings.compaction.compact(
            CompactionContext(
                messages=messages,
                system=settings.system or "",
                tools=settings.tool_definitions,
                provider=settings.provider,
                model=settings.model,
                capabilities=settings.capabilities,
                session_id=target.id,
                force=True,
            )
        )
        if outcome is None:
            return None
        await replace_messages(target, outcome.messages)
        self._system_by_session.pop(target.id, None)
        return Compaction(
            strategy=settings.compaction.name,
            tokens_before=outcome.tokens_before,
            tokens_after=outcome.tokens_after,
            messages_before=len(messages),
            messages_after=len(outcome.messages),
        )

    async def aclose(self) -> None:
        """Release the provider's resources, stop what dynamic toolsets started (MCP
        servers, for instance), and close the named session and session store this agent
        opened."""
        for toolset in self._dynamic:
            await toolset.aclose()
        if self._settings is not None:
            await self._settings.provider.aclose()
        if self._session_name is not None and self.session is not None:
            await close_session(self.session)
            self.session = None
        if self._session_store is not None:
            await self._session_store.aclose()
            self._session_store = None

    # -- sessions --------------------------------------------------------------------------------
    def session_store(self) -> SessionBackend:
        """The configured session store (``[sessions] store``), made on first use."""
        if self._session_store is None:
            from .sessions import open_session_backend

            self._session_store = open_session_backend(self.config, self.plugins)
        return self._session_store

    async def open_session(self, name: str, *, read_only: bool = False) -> AnySession:
        """Open session ``name`` in the configured store (created unless ``read_only``).
        The caller closes it (:func:`tether.sessions.close_session`)."""
        return await self.session_store().open(name, read_only=read_only)

    async def _agent_session(self) -> AnySession:
        """The agent's own session: the one it was given, the named one (opened now if
        this is the first run), or a fresh in-memory session for this run only."""
        if self.session is None and self._session_name is not None:
            self.session = await self.open_session(self._session_name)
        return self.session if self.session is not None else InMemorySession()

    async def named_session(self) -> AnySession | None:
        """The session this agent runs in, opening it now if it was given by name
        (``None`` when every run gets a fresh in-memory session)."""
        if self.session is None and self._session_name is None:
            return None
        return await self._agent_session()

    # -- resolution ------------------------------------------------------------------------------
    @property
    def model_ref(self) -> ModelRef:
        if isinstance(self._model, str):
            return parse_model_string(self._model, self.plugins.providers, self.config.aliases)
        provider = self._model
        return ModelRef(provider.name, getattr(provider, "default_model", "default"))

    def provider(self) -> Provider:
        return self._run_settings().provider

    def tools(self) -> list[Tool]:
        """The tools this agent offers the model, in order."""
        return list(self._run_settings().tools.values())

    def _repair_to_announce(self, session: AnySession) -> Any:
        """The session's load-time repair report, the first time this agent runs it."""
        report = getattr(session, "repair_report", None)
        if not report or session in self._repairs_announced:
            return None
        self._repairs_announced.add(session)
        return report

    def _run_settings(self) -> RunSettings:
        if self._settings is not None:
            return self._settings
        ref = self.model_ref
        if isinstance(self._model, str):
            factory = self.plugins.providers.get(ref.provider)
            provider = factory(self.config.provider(ref.provider))
        else:
            provider = self._model
        tools, tool_settings = self._resolve_tools()
        capabilities = provider.capabilities(ref.model)
        self._settings = RunSettings(
            provider=provider,
            model=ref.model,
            model_string=str(ref),
            capabilities=capabilities,
            system=self.system,
            tools=tools,
            tool_definitions=tuple(t.definition for t in tools.values()),
            tool_settings=tool_settings,
            parallel_tools=self.parallel_tools,
            limits=self.limits,
            retry=self.retry,
            compaction=self._resolve_compaction(),
            max_output_tokens=self.max_output_tokens,
            temperature=self.temperature,
            thinking=self.thinking,
            provider_settings=self.config.provider(ref.provider).extra,
            observers=self._observers(),
            cwd=self.cwd,
            env=self.env,
            update_tools=self._update_tools if self._dynamic else None,
            tool_versions=self._tool_versions(),
            cache_warning=(
                (self.config.cache.warn_below, self.config.cache.warn_after_turns)
                if self.config.cache.warn_below > 0 and capabilities.prompt_caching
                else None
            ),
        )
        return self._settings

    def _tool_versions(self) -> tuple[int, ...]:
        return tuple(toolset.version for toolset in self._dynamic)

    async def _update_tools(self, current: RunSettings) -> RunSettings | None:
        """Refresh the dynamic toolsets; settings with the new tool list if it changed
        since ``current`` was built, else ``None``. Later runs start from the new list."""
        for toolset in self._dynamic:
            await toolset.refresh()
        versions = self._tool_versions()
        if versions == current.tool_versions:
            return None
        tools, tool_settings = self._resolve_tools()
        changes: dict[str, Any] = {
            "tools": tools,
            "tool_definitions": tuple(t.definition for t in tools.values()),
            "tool_settings": tool_settings,
            "tool_versions": versions,
        }
        if self._settings is not None:
            self._settings = replace(self._settings, **changes)
        return replace(current, **changes)

    def _observers(self) -> list[Callable[[RunEvent], None]]:
        """The event observers of this agent: registered callbacks, and what registered
        factories build from their ``[observers.<name>]`` settings; minus disabled ones."""
        import logging

        observers: list[Callable[[RunEvent], None]] = []
        for registration in self.plugins.observers:
            settings = dict(self.config.observers.get(registration.name, {}))
            if settings.get("enabled", True) is False:
                continue
            if not registration.options.get("configure"):
                observers.append(registration.component)
                continue
            try:
                observer = registration.component(settings, self.config)
            except TetherError:
                raise
            except Exception:  # a broken observer plugin must not stop the agent
                logging.getLogger("tether.observers").exception(
                    'event observer "%s" could not be set up', registration.name
                )
                continue
            if observer is not None:
                observers.append(observer)
        return observers

    def _resolve_tools(self) -> tuple[dict[str, Tool], dict[str, dict[str, Any]]]:
        """The agent's tools by name, and each tool's settings: ``[tool_settings.<toolset>]``
        overlaid by ``[tool_settings.<tool>]``."""
        resolved: dict[str, Tool] = {}
        settings: dict[str, dict[str, Any]] = {}
        configured = self.config.tool_settings
        for spec in self._tool_specs:
            group: str | None = None
            if isinstance(spec, str):
                items: list[Tool] = list(
                    self.plugins.tools.get(spec, advice="Install the plugin that provides it.")
                )
                group = spec
            elif isinstance(spec, Toolset):
                items = list(spec)
                group = spec.name
            else:
                items = [as_tool(spec)]
            if isinstance(spec, str | Toolset):
                toolset = self.plugins.tools.get(spec) if isinstance(spec, str) else spec
                if toolset.dynamic and toolset not in self._dynamic:
                    self._dynamic.append(toolset)
            for item in items:
                if item.name in resolved and resolved[item.name] is not item:
                    raise ConfigError(
                        f'Two tools are named "{item.name}". Tool names must be unique per agent.'
                    )
                resolved[item.name] = item
                settings[item.name] = {
                    **configured.get(group or "", {}),
                    **configured.get(item.name, {}),
                }
        memory_tool = getattr(self.memory, "tool", None)
        if isinstance(memory_tool, Tool) and memory_tool.name not in resolved:
            resolved[memory_tool.name] = memory_tool
            settings[memory_tool.name] = dict(configured.get(memory_tool.name, {}))
        return resolved, settings

    def _resolve_compaction(self) -> CompactionStrategy:
        spec = self._compaction_spec
        if spec is not None and not isinstance(spec, str):
            return spec
        name = spec or self.config.compaction.strategy
        factory = self.plugins.compaction_strategies.get(name)
        settings = dict(self.config.compaction.settings) if spec is None else {}
        if name != "none":
            settings.setdefault("threshold", self.config.compaction.threshold)
        strategy: CompactionStrategy = factory(**settings)
        return strategy

    def _with_memory(self, settings: RunSettings, session: AnySession) -> RunSettings:
        """Settings whose system prompt carries the memory snapshot taken when ``session``
        was first run by this agent, so the prompt stays byte-stable for that session.
        After a compaction (the cached prefix is gone anyway) the snapshot is taken anew."""
        base = settings.system

        def take_snapshot() -> str:
            snapshot = self.memory.snapshot()
            system = f"{base}\n\n{snapshot}".strip() if snapshot else base
            self._system_by_session[session.id] = system
            return system

        system = self._system_by_session.get(session.id)
        if system is None:
            system = take_snapshot()
        return replace(settings, system=system, refresh_system=take_snapshot)


def _as_message(prompt: Prompt) -> Message:
    if isinstance(prompt, Message):
        return prompt
    if isinstance(prompt, str):
        return Message(role="user", content=[TextBlock(text=prompt)])
    blocks = list(prompt)
    if not all(isinstance(b, TextBlock | ImageBlock) for b in blocks):
        raise TypeError("A prompt is a string, a Message, or a list of text and image blocks.")
    return Message(role="user", content=blocks)


def _plugin_manager(
    given: PluginManager | None, plugins: Sequence[object], entry_points: bool, config: Config
) -> PluginManager:
    if given is None:
        return PluginManager(plugins=plugins, entry_points=entry_points, config=config)
    if plugins or not entry_points:
        raise ConfigError(
            "Give Agent either plugin_manager= or plugins=/entry_points=, not both: "
            "a plugin manager already decided which plugins it loads."
        )
    return given


def _limits(limits: LimitsConfig | Mapping[str, Any] | None, config: Config) -> LimitsConfig:
    if limits is None:
        return config.limits
    if isinstance(limits, LimitsConfig):
        return limits
    return LimitsConfig.model_validate(dict(limits))
