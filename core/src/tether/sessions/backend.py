"""Session stores: where named sessions live, chosen in the configuration.

::

    [sessions]
    store = "postgres"                        # "jsonl" (default), "sqlite", "postgres", "redis"
    settings = { dsn_env = "TETHER_POSTGRES_DSN" }

A store is registered by a plugin through the ``register_session_stores`` hook as a
factory taking the ``settings`` as keyword arguments (plus ``data_dir``, where a
file-based store keeps its files) and returning a :class:`SessionBackend`. The
:class:`~tether.Agent` (``Agent(session="name")``) and the CLI (``--session NAME``) open
sessions through it; :func:`open_session_backend` is how.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from .base import AnySession
from .jsonl import JsonlSession
from .store import SessionStore
from .versioned import SessionSummary

if TYPE_CHECKING:
    from ..config import Config
    from ..plugins import PluginManager

__all__ = ["JsonlBackend", "SessionBackend", "open_session_backend", "session_backend_factory"]


@runtime_checkable
class SessionBackend(Protocol):
    """Named sessions in one place (a directory, a database, a Redis server).

    ``open`` returns a :class:`~tether.sessions.Session` or an
    :class:`~tether.sessions.AsyncSession`, repaired, created if missing unless
    ``read_only``. A second writer of one session is either refused when it opens it
    (:class:`~tether.errors.SessionLockedError`, the JSONL store's file lock) or when it
    writes after the first one did (:class:`~tether.errors.SessionConflictError`).
    :class:`tether.testing.SessionStoreContract` checks all of this for any store.
    """

    async def open(self, name: str, *, read_only: bool = False) -> AnySession: ...

    async def exists(self, name: str) -> bool: ...

    async def list(self) -> list[SessionSummary]: ...

    async def remove(self, name: str) -> None: ...

    async def aclose(self) -> None: ...


class JsonlBackend:
    """The default store: :class:`~tether.sessions.SessionStore` (one JSONL file per
    session in ``<data dir>/sessions``) behind the :class:`SessionBackend` protocol.

    :param root: the directory (default ``<data_dir>/sessions``).
    :param durable: ``fsync`` every append (default).
    """

    def __init__(
        self, root: str | None = None, *, data_dir: str | None = None, durable: bool = True
    ) -> None:
        if root is None and data_dir is not None:
            from pathlib import Path

            root = str(Path(data_dir) / "sessions")
        self.files = SessionStore(root)
        self.durable = durable

    async def open(self, name: str, *, read_only: bool = False) -> JsonlSession:
        return await asyncio.to_thread(
            self.files.open, name, durable=self.durable, read_only=read_only
        )

    async def exists(self, name: str) -> bool:
        return self.files.exists(name)

    async def list(self) -> list[SessionSummary]:
        infos = await asyncio.to_thread(self.files.list)
        return [SessionSummary(i.name, i.messages, i.modified.astimezone(UTC)) for i in infos]

    async def remove(self, name: str) -> None:
        await asyncio.to_thread(self.files.remove, name)

    async def aclose(self) -> None:
        return None

    def __repr__(self) -> str:
        return f"<JsonlBackend {self.files.root}>"


def session_backend_factory(config: Config, plugins: PluginManager) -> Callable[[], Any]:
    """The configured store's factory bound to its settings (not called yet).

    :raises ConfigError: no plugin registers the configured store.
    """
    from ..config import data_dir

    name = config.sessions.store
    factory = plugins.session_stores.get(
        name,
        advice=f"Install the plugin that provides it (tether-{name}) or change [sessions] store.",
    )
    settings = dict(config.sessions.settings)
    settings.setdefault("data_dir", str(data_dir(config)))

    def make() -> Any:
        return factory(**settings)

    return make


def open_session_backend(config: Config, plugins: PluginManager) -> SessionBackend:
    """The session store ``[sessions] store`` names, made with its settings."""
    backend: SessionBackend = session_backend_factory(config, plugins)()
    return backend
