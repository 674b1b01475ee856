"""The :class:`Agent`: configuration of a model, tools and policies, and the way to run it."""

from __future__ import annotations

import asyncio
import os
import weakref
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal, TypeVar

from .approvals import Approval, ApprovalCallback, Policy, SessionGrants, normalize_approval
from .boundary import RunBoundary
from .cancel import CancelToken
from .compaction import CompactionStrategy
from .config import Config, LimitsConfig, load_config
from .deadlines import deadline_scope
from .depth import check_run_depth
from .errors import ConfigError, TetherError
from .events import Compaction, Done, RunEvent
from .messages import Block, ImageBlock, Message, TextBlock
from .nested_streams import nested
from .output import OutputSpec
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
from .skills import Skill, SkillSet, discover_skills, parse_skill, skill_dirs
from .strategies import Strategy
from .subagents import DEFAULT_SUBAGENT_DEPTH, agent_tool
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
    :param output_type: the type ``RunResult.output`` must have (see :mod:`tether.output`);
        ``output_retries`` invalid answers are sent back for correction.
    :param permissions: a preset name (``"read-only"``, ``"ask"``, ``"accept-edits"``) or
        a mapping of rules to ``allow``/``ask``/``deny`` (see :mod:`tether.approvals`),
        applied over the configured ``[permissions]``.
    :param approval: called (sync or async) for each call a rule says to ``ask`` about;
        without it such a run suspends until :meth:`resume`.
    :param skills: skills offered besides those discovered (``.tether/skills``, the user
        config dir, plugins); ``False`` offers none.
    :param strategy: how runs work through a task: ``"react"`` (the plain loop),
        ``"plan-and-execute"``, ``"reflexion"``, a plugin's name, or a
        :class:`~tether.strategies.Strategy` object; defaults to ``[strategy] name``.
    :param stop_sequences: strings that end the model's answer.
    :param max_tokens_continuations: how often an answer cut off at the output limit is
        continued (with the limit raised to ``continuation_max_output_tokens``).
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
        early_dispatch: bool | None = None,
        max_output_tokens: int | None = None,
        temperature: float | None = None,
        thinking: ThinkingConfig | None = None,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        deps: Any = None,
        output_type: Any = None,
        output_retries: int | None = None,
        permissions: str | Mapping[str, str] | None = None,
        approval: ApprovalCallback | None = None,
        skills: Sequence[Skill | str | os.PathLike[str]] | bool = True,
        stop_sequences: Sequence[str] | None = None,
        max_tokens_continuations: int | None = None,
        continuation_max_output_tokens: int | None = None,
        strategy: str | Strategy | None = None,
    ) -> None:
        install_log_scrubbing()
        self.config = config if config is not None else load_config()
        self.plugins = _plugin_manager(plugin_manager, plugins, entry_points, self.config)
        self._model: str | Provider = _chosen_model(self.config, model)
        config = self.config
        self.system = _either(system, config.system or "")
        self._tool_specs: list[ToolSpec] = list(_either(tools, config.tools))
        self.session: AnySession | None = None if isinstance(session, str) else session
        self._session_name = session if isinstance(session, str) else None
        self._compaction_spec, self.memory = compaction, memory
        self.limits = _limits(limits, config)
        self.retry = retry or RetryPolicy()
        self.parallel_tools = _either(parallel_tools, config.parallel_tools)
        self.early_dispatch = _either(early_dispatch, config.early_dispatch.enabled)
        self.max_output_tokens = max_output_tokens or config.max_output_tokens
        self.temperature = _either(temperature, config.temperature)
        self.thinking, self.deps = thinking, deps
        self.cwd = Path(cwd) if cwd is not None else Path.cwd()
        self.env = _environment(env)
        self.output = _output_spec(config, output_type, output_retries)
        self.policy, self.approval = _policy(config, permissions), approval
        self.grants, self._skill_specs, self._strategy_spec = SessionGrants(), skills, strategy
        self._answers = (stop_sequences, max_tokens_continuations, continuation_max_output_tokens)
        self._init_state()

    def _init_state(self) -> None:
        """What the agent builds and remembers as it runs (nothing yet)."""
        self._session_store: SessionBackend | None = None
        self._settings: RunSettings | None = None
        self._dynamic: list[Toolset] = []
        self._skill_tool: Tool | None = None
        self._system_by_session: dict[str, str] = {}
        self._repairs_announced: weakref.WeakSet[Any] = weakref.WeakSet()

    # -- running -------------------------------------------------------------------------------
    def stream(
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
        strategy = self._strategy()
        if strategy is None:  # the loop's own generator: no extra hop per event
            return self._loop(_as_message(prompt), session, cancel, deps, boundary=boundary)
        return strategy.stream(
            self, _as_message(prompt).text, session=session, cancel=cancel, deps=deps
        )

    async def _loop(
        self,
        prompt: Message | None,
        session: AnySession | str | None,
        cancel: CancelToken | None,
        deps: Any,
        *,
        boundary: RunBoundary | None = None,
        limits: LimitsConfig | None = None,
        output: OutputSpec | Literal[False] | None = False,
        resume: dict[str, Approval] | None = None,
    ) -> AsyncGenerator[RunEvent, None]:
        """The one loop, with per-call overrides (``output=False``: the agent's own)."""
        check_run_depth(self.limits.max_run_depth)
        settings = self._run_settings()
        if boundary is not None:
            settings = replace(
                settings,
                provider=boundary.wrap_provider(settings.provider),
                tool_boundary=boundary.call_tool,
            )
        if limits is not None or output is not False:
            settings = replace(
                settings,
                limits=limits if limits is not None else settings.limits,
                output=settings.output if output is False else output,
            )
        # Every store wait of the run, opening its session included, ends by its deadline.
        with deadline_scope(settings.limits.wall_time_s):
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
                    prompt,
                    cancel=cancel,
                    deps=deps if deps is not None else self.deps,
                    repair_report=self._repair_to_announce(target),
                    resume=resume,
                )
                async with nested(run.events()) as events:
                    async for event in events:
                        yield event
            finally:
                if owned:
                    await close_session(target)

    async def resume_stream(
        self,
        decisions: Mapping[str, Approval | bool | str],
        *,
        session: AnySession | str | None = None,
        cancel: CancelToken | None = None,
        deps: Any = None,
        boundary: RunBoundary | None = None,
    ) -> AsyncGenerator[RunEvent, None]:
        """Continue a run suspended for approval (``Outcome.SUSPENDED``) on ``session``.

        ``decisions`` maps each pending call id to a decision (``True``/``False``,
        ``"allow"``/``"deny"``/``"always"``, or an :class:`~tether.approvals.Approval`).
        Approved calls run, denied ones get an error result the model sees, and the loop
        goes on. Works in a new process: the pending calls are read from the session.
        ``boundary`` is as for :meth:`stream`.
        """
        normalised = {key: normalize_approval(value) for key, value in decisions.items()}
        loop = self._loop(None, session, cancel, deps, resume=normalised, boundary=boundary)
        async with nested(loop) as events:
            async for event in events:
                yield event

    async def resume(
        self,
        decisions: Mapping[str, Approval | bool | str],
        *,
        session: AnySession | str | None = None,
        cancel: CancelToken | None = None,
        deps: Any = None,
    ) -> RunResult:
        """:meth:`resume_stream`, returning the result carried by its ``Done``."""
        return await _result_of(
            self.resume_stream(decisions, session=session, cancel=cancel, deps=deps)
        )

    def as_tool(
        self, name: str, description: str, *, max_depth: int = DEFAULT_SUBAGENT_DEPTH
    ) -> Tool:
        """This agent as a tool of another agent (a sub-agent); see :mod:`tether.subagents`."""
        return agent_tool(self, name, description, max_depth=max_depth)

    async def run(
        self,
        prompt: Prompt,
        *,
        session: AnySession | str | None = None,
        cancel: CancelToken | None = None,
        deps: Any = None,
    ) -> RunResult:
        """Consume :meth:`stream` and return the result carried by its ``Done``."""
        return await _result_of(self.stream(prompt, session=session, cancel=cancel, deps=deps))

    def run_sync(self, prompt: Prompt, **kwargs: Any) -> RunResult:
        """:meth:`run` for scripts: starts an event loop. Not usable inside one."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.run(prompt, **kwargs))
        raise RuntimeError(
            "run_sync() cannot be called from a running event loop; use `await agent.run(...)`."
        )

    async def compact(
        self, session: AnySession | None = None, *, only_if_smaller: bool = False
    ) -> Compaction | None:
        """Compact ``session``'s history now with the agent's compaction strategy, as the
        runner does when the context fills up (forced: whatever the history's size).
        With ``only_if_smaller``, a result that is not smaller (in estimated tokens) than
        the history is not kept: the session is left as it was and the returned event
        shows ``tokens_after >= tokens_before``.

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
        kept = not only_if_smaller or outcome.tokens_after < outcome.tokens_before
        if kept:
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
        skills = self._skills()
        self._skill_tool = skills.load_tool() if len(skills) else None
        tools, tool_settings, toolsets = self._agent_tools()
        system = f"{self.system}\n\n{skills.index()}".strip() if len(skills) else self.system
        capabilities = provider.capabilities(ref.model)
        self._settings = RunSettings(
            provider=provider,
            model=ref.model,
            model_string=str(ref),
            capabilities=capabilities,
            system=system,
            tools=tools,
            tool_definitions=tuple(t.definition for t in tools.values()),
            tool_settings=tool_settings,
            parallel_tools=self.parallel_tools,
            early_dispatch=self.early_dispatch,
            early_tools=dict(self.config.early_dispatch.tools),
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
            output=self.output,
            **_answer_limits(self.config, *self._answers),
            policy=self.policy,
            approval=self.approval,
            grants=self.grants,
            toolsets=toolsets,
            resolve_tools=self._tools_named,
        )
        return self._settings

    def _strategy(self) -> Strategy | None:
        """The strategy runs follow (``None``: the plain loop, ``react``)."""
        spec = self._strategy_spec
        if spec is not None and not isinstance(spec, str):
            return spec
        name = spec or self.config.strategy.name
        if name == "react":
            return None
        factory = self.plugins.strategies.get(name, advice="Install the plugin that provides it.")
        settings = self.config.strategy.settings if spec is None else {}
        strategy: Strategy = factory(**settings)
        self._strategy_spec = strategy
        return strategy

    def _agent_tools(self) -> tuple[dict[str, Tool], dict[str, dict[str, Any]], dict[str, str]]:
        """The agent's own tools (with ``load_skill`` when it has skills), their settings
        and the toolset each came from."""
        tools, tool_settings, toolsets = self._resolve_tools()
        if self._skill_tool is not None:
            tools.setdefault(self._skill_tool.name, self._skill_tool)
        return tools, tool_settings, toolsets

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
        tools, tool_settings, toolsets = self._agent_tools()
        changes: dict[str, Any] = {
            "toolsets": toolsets,
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

    def _resolve_tools(
        self, specs: Sequence[ToolSpec] | None = None
    ) -> tuple[dict[str, Tool], dict[str, dict[str, Any]], dict[str, str]]:
        """The agent's tools by name, each tool's settings (``[tool_settings.<toolset>]``
        overlaid by ``[tool_settings.<tool>]``) and the toolset each came from."""
        resolved: dict[str, Tool] = {}
        settings: dict[str, dict[str, Any]] = {}
        toolsets: dict[str, str] = {}
        configured = self.config.tool_settings
        for spec in self._tool_specs if specs is None else specs:
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
                if group is not None:
                    toolsets[item.name] = group
                settings[item.name] = {
                    **configured.get(group or "", {}),
                    **configured.get(item.name, {}),
                }
        memory_tool = getattr(self.memory, "tool", None)
        if specs is None and isinstance(memory_tool, Tool) and memory_tool.name not in resolved:
            resolved[memory_tool.name] = memory_tool
            settings[memory_tool.name] = dict(configured.get(memory_tool.name, {}))
        return resolved, settings, toolsets

    def _tools_named(self, names: Sequence[str]) -> dict[str, Tool]:
        """Tools for tool or toolset names a loaded skill asks for; their settings and
        toolsets join the agent's. Unknown names are skipped (a skill may name tools
        another installation has)."""
        known = [n for n in names if n in self.plugins.tools]
        tools, settings, toolsets = self._resolve_tools(known)
        if self._settings is not None:
            self._settings.tool_settings.update(settings)
            self._settings.toolsets.update(toolsets)
        return tools

    def _skills(self) -> SkillSet:
        spec = self._skill_specs
        if spec is False:
            return SkillSet()
        found: dict[str, Skill] = {r.name: r.component for r in self.plugins.skills}
        for skill in discover_skills(skill_dirs(self.cwd), on_error=_log_skill_error):
            found[skill.name] = skill
        if spec is not True:
            for item in spec:
                skill = item if isinstance(item, Skill) else parse_skill(item)
                found[skill.name] = skill
        return SkillSet(found.values())

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


async def _result_of(events: AsyncGenerator[RunEvent, None]) -> RunResult:
    result: RunResult | None = None
    async for event in events:
        if type(event) is Done:
            result = event.result
    if result is None:  # the loop always ends with Done; this guards a broken contract
        raise TetherError("The run ended without a result.")
    return result


def _chosen_model(config: Config, model: str | Provider | None) -> str | Provider:
    chosen = model if model is not None else config.model
    if chosen is None:
        raise ConfigError(
            'No model configured. Pass Agent(model="provider/model") or set `model` in '
            "tether.toml (or the TETHER_MODEL environment variable)."
        )
    return chosen


def _output_spec(config: Config, output_type: Any, retries: int | None) -> OutputSpec | None:
    if output_type is None or isinstance(output_type, OutputSpec):
        return output_type
    return OutputSpec(output_type, retries=_either(retries, config.output.retries))


def _environment(env: Mapping[str, str] | None) -> dict[str, str]:
    """The variables tools pass to subprocesses, registered as secrets where they look
    like ones (so they stay out of output)."""
    values = dict(env) if env is not None else {}
    for value in secret_environment(values.items()).values():
        register_secret(value)
    return values


def _answer_limits(
    config: Config,
    stop_sequences: Sequence[str] | None,
    continuations: int | None,
    continuation_tokens: int | None,
) -> dict[str, Any]:
    """Run settings for stop sequences, max-tokens continuations and their output limit:
    the Agent's arguments, else the configured ``[output]``."""
    out = config.output
    return {
        "stop_sequences": tuple(_either(stop_sequences, out.stop_sequences)),
        "max_tokens_continuations": _either(continuations, out.max_tokens_continuations),
        "continuation_max_output_tokens": _either(
            continuation_tokens, out.continuation_max_output_tokens
        ),
    }


T = TypeVar("T")


def _either(given: T | None, configured: T) -> T:
    return configured if given is None else given


def _policy(config: Config, permissions: str | Mapping[str, str] | None) -> Policy:
    """The configured ``[permissions]`` overlaid by the Agent's ``permissions``."""
    mode, rules = config.permissions.mode, dict(config.permissions.rules)
    if isinstance(permissions, str):
        mode = permissions
    elif permissions is not None:
        rules.update(permissions)
    return Policy.build(mode, rules)


def _log_skill_error(error: Exception) -> None:
    import logging

    logging.getLogger("tether.skills").warning("Skipped a skill: %s", error)


def _as_message(prompt: Prompt) -> Message:
    """The prompt as a user message; its images checked (:func:`tether.images.check_image`
    raises :class:`~tether.errors.InvalidImageError` before anything is stored)."""
    from .images import check_image

    if isinstance(prompt, Message):
        blocks = list(prompt.content)
    elif isinstance(prompt, str):
        return Message(role="user", content=[TextBlock(text=prompt)])
    else:
        blocks = list(prompt)
        if not all(isinstance(b, TextBlock | ImageBlock) for b in blocks):
            raise TypeError("A prompt is a string, a Message, or a list of text and image blocks.")
    checked = [check_image(b) if isinstance(b, ImageBlock) else b for b in blocks]
    if isinstance(prompt, Message):
        if all(a is b for a, b in zip(checked, blocks, strict=True)):
            return prompt
        return prompt.model_copy(update={"content": checked})
    return Message(role="user", content=checked)


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
