"""The session of a durable run: loaded once by a checkpointed step, written by steps.

Replaying a workflow re-executes the loop, so every session write must be a step too:
a replayed write returns its recorded version instead of writing again. The history the
loop starts from is the one the first step recorded, so a replay sees exactly what the
first execution saw. Each write also carries the version it expects (the store's
optimistic check); when a worker died between the store's commit and DBOS recording the
step, the re-executed step finds its own write already there and accepts it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dbos import DBOS

from tether.errors import ConfigError
from tether.messages import Message
from tether.sessions import RepairReport, SessionBackend, close_session
from tether.sessions.versioned import SessionIO, VersionedStore

from .journal import Journal

__all__ = ["DurableSession", "open_durable_session", "session_io"]


@dataclass(frozen=True, slots=True)
class _Loaded:
    id: str
    version: int
    lines: list[str]
    report: RepairReport


def _io(store: SessionBackend) -> SessionIO:
    if not isinstance(store, VersionedStore):
        raise ConfigError(
            f"Durable runs need a session store that many workers can share with version "
            f"checks (sqlite, postgres, redis), not {type(store).__name__}. Set "
            '[sessions] store = "postgres" (or "redis"; "sqlite" for one machine).'
        )
    return store.io


def session_io(store: SessionBackend) -> SessionIO:
    """The raw operations of ``store``, which must be a versioned one."""
    return _io(store)


async def open_durable_session(
    store: SessionBackend, name: str, journal: Journal
) -> DurableSession:
    """Load (and repair) session ``name`` once per run; replays get the recorded copy."""
    _io(store)

    async def load() -> _Loaded:
        session = await store.open(name)
        try:
            return _Loaded(
                session.id,
                getattr(session, "version", 0),
                [m.to_json() for m in session.messages],
                getattr(session, "repair_report", None) or RepairReport(),
            )
        finally:
            await close_session(session)

    executed = False

    async def opening() -> _Loaded:
        nonlocal executed
        executed = True
        return await load()

    loaded = await DBOS.run_step_async({"name": "tether.session.open"}, opening)
    journal.live = executed
    messages = [Message.from_json(line) for line in loaded.lines]
    return DurableSession(journal, name, loaded.id, loaded.version, messages, loaded.report)


class DurableSession:
    """An :class:`~tether.sessions.AsyncSession` for a durable run: its history is the
    one the opening step recorded plus the run's own messages; writes go to the run's
    :class:`~tether_dbos.journal.Journal` and reach the store in the next step."""

    def __init__(
        self,
        journal: Journal,
        name: str,
        session_id: str,
        version: int,
        messages: list[Message],
        report: RepairReport,
    ) -> None:
        self._journal = journal
        self.name = name
        self.id = session_id
        self._version = version
        self._messages = messages
        self.repair_report = report

    @property
    def messages(self) -> Sequence[Message]:
        return self._messages

    @property
    def version(self) -> int:
        return self._version

    async def append(self, message: Message) -> None:
        self._journal.append(self._version, len(self._messages), message)
        self._version += 1
        self._messages.append(message)

    async def replace(self, messages: Sequence[Message]) -> None:
        new = list(messages)
        self._journal.replace(self._version, new)
        self._version += 1
        self._messages = new

    async def aclose(self) -> None:
        return None
