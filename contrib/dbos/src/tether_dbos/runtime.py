"""What a worker process keeps between runs: its configuration, session store and agents."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from tether import Agent, PluginManager
from tether.config import Config, LimitsConfig
from tether.errors import ConfigError
from tether.sessions import SessionBackend, open_session_backend

from .settings import DbosSettings
from .spec import RunSpec

if TYPE_CHECKING:
    from .takeover import Heartbeat

__all__ = ["WorkerRuntime", "current", "install", "load_factory"]

_current: WorkerRuntime | None = None


class WorkerRuntime:
    """Per-process state of a worker. Agents are built once per distinct spec shape and
    reused (their provider clients live across runs); the session store is opened on
    the first run, on the worker's event loop."""

    def __init__(
        self, config: Config, settings: DbosSettings, *, plugins: Sequence[object] = ()
    ) -> None:
        self.config = config
        self.settings = settings
        self.plugin_objects = list(plugins)
        self.plugins = PluginManager(plugins=self.plugin_objects)
        self._store: SessionBackend | None = None
        self.heartbeat: Heartbeat | None = None
        self._agents: dict[tuple[Any, ...], Agent] = {}

    def store(self) -> SessionBackend:
        if self._store is None:
            self._store = open_session_backend(self.config, self.plugins)
        return self._store

    def agent(self, spec: RunSpec) -> Agent:
        key = (
            spec.agent,
            spec.model,
            spec.system,
            tuple(spec.tools or ()),
            repr(sorted(spec.limits.items())),
        )
        agent = self._agents.get(key)
        if agent is None:
            agent = self._build(spec)
            self._agents[key] = agent
        return agent

    def _build(self, spec: RunSpec) -> Agent:
        if spec.agent is not None:
            agent = load_factory(spec.agent)(self.config)
            if not isinstance(agent, Agent):
                raise ConfigError(
                    f"The agent factory {spec.agent} returned {type(agent).__name__}, not a tether.Agent."
                )
        else:
            agent = Agent(
                spec.model,
                system=spec.system,
                tools=spec.tools,
                config=self.config,
                plugins=self.plugin_objects,
            )
        if spec.limits:
            agent.limits = LimitsConfig.model_validate({**agent.limits.model_dump(), **spec.limits})
        return agent

    async def aclose(self) -> None:
        for agent in self._agents.values():
            await agent.aclose()
        self._agents.clear()
        if self._store is not None:
            await self._store.aclose()
            self._store = None


def load_factory(path: str) -> Callable[[Config], Any]:
    """The function named by ``"package.module:function"``."""
    module_name, _, attribute = path.partition(":")
    if not module_name or not attribute:
        raise ConfigError(f'An agent factory is "package.module:function", not {path!r}.')
    try:
        module = importlib.import_module(module_name)
        factory = getattr(module, attribute)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(
            f"Cannot load the agent factory {path}: {exc}. Is the module importable on the worker?"
        ) from exc
    if not callable(factory):
        raise ConfigError(f"The agent factory {path} is not callable.")
    result: Callable[[Config], Any] = factory
    return result


def install(runtime: WorkerRuntime) -> None:
    global _current
    _current = runtime


def current() -> WorkerRuntime:
    if _current is None:
        raise ConfigError(
            "This process is not a tether worker (call tether_dbos.start_worker first)."
        )
    return _current
