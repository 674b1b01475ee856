"""Plugin loading: one manager per Agent or CLI invocation, never a global.

The manager registers tether's built-in components first (through the same hooks as
everyone else), then any plugin objects passed in, then every entry point of the
``tether`` group. Each entry point is loaded inside its own ``try``: a plugin that fails
to import, or whose hook raises, is recorded in :attr:`PluginManager.errors` and the rest
load normally. Hooks are called lazily, the first time components of their kind are
needed, so building an agent with an explicit provider instance loads nothing.

Environment variables:

``TETHER_PLUGINS_ALLOW``
    Comma-separated entry-point or distribution names; when set, only these load.
``TETHER_PLUGINS_DENY``
    Comma-separated entry-point or distribution names that never load; also the names
    of built-in plugins to leave out (``compaction``, ``demo``, ``sessions``,
    ``strategies``: :data:`tether.builtins.PLUGINS`).
``TETHER_DISABLE_PLUGIN_AUTOLOAD``
    Any non-empty value: load no entry points at all (built-ins and explicit plugins only).

The entry points are read from the installed distributions once per process (again only
if ``sys.path`` changes; each one is imported at most once), then reused by every
manager: building an agent costs no metadata scan. :func:`forget_entry_points` makes the next manager read them again, for
an application that installs plugins while it runs.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
import threading
import traceback
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from typing import TYPE_CHECKING, Any, TypeVar

import pluggy

from . import hookspecs
from .errors import PluginLoadError
from .registry import (
    BUILTIN,
    CommandRegistrar,
    CompactionStrategyRegistrar,
    EmbedderRegistrar,
    KnowledgeBackendRegistrar,
    ObserverRegistrar,
    ProviderRegistrar,
    Registrar,
    SessionStoreRegistrar,
    SkillRegistrar,
    Source,
    StrategyRegistrar,
    ToolRegistrar,
)

if TYPE_CHECKING:
    from .config import Config

__all__ = ["ENTRY_POINT_GROUP", "PluginInfo", "PluginManager", "forget_entry_points"]

ENTRY_POINT_GROUP = "tether"
log = logging.getLogger("tether.plugins")

R = TypeVar("R", bound=Registrar[Any])

_OLD_HOOKS: dict[type[Registrar[Any]], str] = {
    KnowledgeBackendRegistrar: "register_memory_backends",
}
"""Deprecated hook names still called, after the current one, on the same registrar."""

_HOOKS: dict[type[Registrar[Any]], str] = {
    ProviderRegistrar: "register_providers",
    ToolRegistrar: "register_tools",
    KnowledgeBackendRegistrar: "register_knowledge_backends",
    CompactionStrategyRegistrar: "register_compaction_strategies",
    SessionStoreRegistrar: "register_session_stores",
    EmbedderRegistrar: "register_embedders",
    ObserverRegistrar: "register_observers",
    CommandRegistrar: "register_commands",
    SkillRegistrar: "register_skills",
    StrategyRegistrar: "register_strategies",
}


@dataclass(slots=True)
class PluginInfo:
    """One loaded (or failed) plugin, as ``tether plugins`` shows it."""

    name: str
    distribution: str
    version: str | None
    module: str
    hooks: list[str] = field(default_factory=list)
    error: str | None = None


def _names(variable: str) -> set[str] | None:
    raw = os.environ.get(variable, "").strip()
    if not raw:
        return None
    return {part.strip() for part in raw.split(",") if part.strip()}


@dataclass(slots=True)
class _EntryPoint:
    """One entry point of the ``tether`` group, read once; ``load`` imports it once."""

    entry_point: metadata.EntryPoint
    name: str
    value: str
    distribution: str
    version: str | None
    _loaded: object = None
    _error: Exception | None = None
    _done: bool = False

    def load(self) -> object:
        if not self._done:
            try:
                self._loaded = self.entry_point.load()
            except Exception as exc:
                self._error = exc
            self._done = True
        if self._error is not None:
            raise self._error
        return self._loaded


_entry_point_cache: tuple[tuple[str, ...], list[_EntryPoint]] | None = None
_entry_point_lock = threading.Lock()


def _entry_points() -> list[_EntryPoint]:
    """The group's entry points, read again only when ``sys.path`` changed."""
    global _entry_point_cache
    path = tuple(sys.path)
    with _entry_point_lock:
        if _entry_point_cache is None or _entry_point_cache[0] != path:
            found = []
            for ep in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
                dist = ep.dist.name if ep.dist is not None else "(unknown)"
                version = ep.dist.version if ep.dist is not None else None
                found.append(_EntryPoint(ep, ep.name, ep.value, dist, version))
            _entry_point_cache = (path, found)
        return _entry_point_cache[1]


def forget_entry_points() -> None:
    """Read the ``tether`` entry points again when the next manager is built (after
    plugins were installed or removed while the process runs)."""
    global _entry_point_cache
    with _entry_point_lock:
        _entry_point_cache = None


class PluginManager:
    """Discovers plugins and builds component registries on demand.

    :param plugins: extra plugin objects (modules or instances with ``@hookimpl``
        functions) registered after the built-ins, e.g. from tests.
    :param entry_points: load the ``tether`` entry-point group (subject to the
        environment variables above).
    :param config: the configuration of the agent or CLI invocation this manager serves;
        registrars carry it (``registrar.config``) for plugins whose components are
        configured (MCP servers from ``[mcp.servers.*]``).
    :param hook_arguments: values offered to hook implementations by argument name, for
        specs that take more than their registrar. Hooks are always called by keyword and
        an implementation receives only the arguments it names, so a spec can gain an
        argument without breaking the plugins written before it.
    """

    def __init__(
        self,
        *,
        plugins: Iterable[object] = (),
        entry_points: bool = True,
        config: Config | None = None,
        hook_arguments: Mapping[str, object] | None = None,
    ) -> None:
        self.config = config
        self._pm = pluggy.PluginManager(hookspecs.PROJECT)
        self._pm.add_hookspecs(hookspecs)
        self._hook_arguments = dict(hook_arguments or {})
        self._sources: dict[str, Source] = {}
        self._registrars: dict[type[Registrar[Any]], Registrar[Any]] = {}
        self.plugins: list[PluginInfo] = []
        self.errors: list[PluginLoadError] = []

        from .builtins import PLUGINS

        deny = _names("TETHER_PLUGINS_DENY") or set()
        for name, builtin in PLUGINS.items():
            if name not in deny:
                self._register(builtin, name, BUILTIN.distribution, _version("tether"))
        for index, plugin in enumerate(plugins):
            name = getattr(plugin, "__name__", None) or f"{type(plugin).__name__}-{index}"
            self._register(plugin, name, "(in-process)", None)
        if entry_points and not os.environ.get("TETHER_DISABLE_PLUGIN_AUTOLOAD"):
            self._load_entry_points()

    # -- discovery ----------------------------------------------------------------------
    def _load_entry_points(self) -> None:
        allow, deny = _names("TETHER_PLUGINS_ALLOW"), _names("TETHER_PLUGINS_DENY")
        for ep in _entry_points():
            keys = {ep.name, ep.distribution}
            if (allow is not None and not keys & allow) or (deny is not None and keys & deny):
                log.debug("plugin %s from %s skipped by allow/deny list", ep.name, ep.distribution)
                continue
            try:
                module = ep.load()
            except Exception as exc:
                why = f"failed to import: {exc!r}"
                self._fail(ep.name, ep.distribution, ep.version, ep.value, why, exc)
                continue
            self._register(module, ep.name, ep.distribution, ep.version)

    def _register(self, plugin: object, name: str, distribution: str, version: str | None) -> None:
        module = getattr(plugin, "__name__", type(plugin).__name__)
        if name in self._sources:
            name = f"{distribution}:{name}"
        try:
            self._pm.register(plugin, name=name)
        except Exception as exc:
            self._fail(name, distribution, version, module, f"failed to register: {exc!r}", exc)
            return
        hooks = sorted(
            h.name
            for h in (self._pm.get_hookcallers(plugin) or [])
            if h.name.startswith("register_")
        )
        self._sources[name] = Source(name, distribution)
        self.plugins.append(PluginInfo(name, distribution, version, module, hooks))

    def _fail(
        self, name: str, dist: str, version: str | None, module: str, why: str, exc: BaseException
    ) -> None:
        message = f'Plugin "{name}" from {dist} {why}. The other plugins are unaffected.'
        log.warning(message)
        log.debug("".join(traceback.format_exception(exc)))
        error = PluginLoadError(message, plugin=name, distribution=dist)
        error.__cause__ = exc
        self.errors.append(error)
        for info in self.plugins:
            if info.name == name:
                info.error = why
                return
        self.plugins.append(PluginInfo(name, dist, version, module, error=why))

    # -- registries --------------------------------------------------------------------
    def registrar(self, kind: type[R]) -> R:
        """The registrar of ``kind``, filled by calling its hook on every plugin once."""
        existing = self._registrars.get(kind)
        if existing is not None:
            return existing  # type: ignore[return-value]
        registrar = kind()
        registrar.config = self.config
        registrar._siblings = self.registrar
        for hook_name in (_HOOKS[kind], _OLD_HOOKS.get(kind)):
            if hook_name is not None:
                self._call_hook(hook_name, registrar)
        registrar.source = BUILTIN
        self._registrars[kind] = registrar
        return registrar

    def _call_hook(self, hook_name: str, registrar: Registrar[Any]) -> None:
        """Call every implementation of ``hook_name`` with ``registrar``, each plugin's
        registrations under its own source; a plugin whose hook raises loses them."""
        hook = getattr(self._pm.hook, hook_name)
        arguments = self._arguments(hook, registrar)
        for impl in hook.get_hookimpls():
            source = self._sources[impl.plugin_name]
            registrar.source = source
            try:
                impl.function(**{name: arguments[name] for name in impl.argnames})
            except Exception as exc:
                registrar._drop_source(source)
                self._fail(
                    source.plugin,
                    source.distribution,
                    None,
                    impl.plugin.__name__ if hasattr(impl.plugin, "__name__") else "",
                    f"raised in {hook_name}: {exc!r}",
                    exc,
                )

    def _arguments(self, hook: Any, registrar: Registrar[Any]) -> dict[str, object]:
        """Every argument of ``hook``'s spec by name: the registrar for the first, then
        the manager's ``hook_arguments`` (``None`` for any it does not have)."""
        names = hook.spec.argnames if hook.spec is not None else ()
        arguments: dict[str, object] = {name: self._hook_arguments.get(name) for name in names}
        if names:
            arguments[names[0]] = registrar
        return arguments

    @property
    def providers(self) -> ProviderRegistrar:
        return self.registrar(ProviderRegistrar)

    @property
    def tools(self) -> ToolRegistrar:
        return self.registrar(ToolRegistrar)

    @property
    def knowledge_backends(self) -> KnowledgeBackendRegistrar:
        return self.registrar(KnowledgeBackendRegistrar)

    @property
    def memory_backends(self) -> KnowledgeBackendRegistrar:
        """The old name of :attr:`knowledge_backends` (deprecated; goes in tether 1.0)."""
        from .renamed import deprecation

        deprecation("PluginManager.memory_backends", "PluginManager.knowledge_backends")
        return self.knowledge_backends

    @property
    def compaction_strategies(self) -> CompactionStrategyRegistrar:
        return self.registrar(CompactionStrategyRegistrar)

    @property
    def session_stores(self) -> SessionStoreRegistrar:
        return self.registrar(SessionStoreRegistrar)

    @property
    def embedders(self) -> EmbedderRegistrar:
        return self.registrar(EmbedderRegistrar)

    @property
    def observers(self) -> ObserverRegistrar:
        return self.registrar(ObserverRegistrar)

    @property
    def commands(self) -> CommandRegistrar:
        return self.registrar(CommandRegistrar)

    @property
    def skills(self) -> SkillRegistrar:
        return self.registrar(SkillRegistrar)

    @property
    def strategies(self) -> StrategyRegistrar:
        return self.registrar(StrategyRegistrar)

    def all_registrars(self) -> list[Registrar[Any]]:
        """Every registry, filled (used by ``tether plugins``)."""
        return [self.registrar(kind) for kind in _HOOKS]


@functools.cache
def _version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None
