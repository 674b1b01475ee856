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

from tether.errors import ConfigError, SessionConflictError
from tether.messages import Message
from tether.sessions import SessionBackend, close_session
from tether.sessions.repair import RepairReport
from tether.sessions.versioned import SessionIO, VersionedStore

__all__ = ["DurableSession", "open_durable_session"]


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


async def open_durable_session(store: SessionBackend, name: str) -> DurableSession:
    """Load (and repair) session ``name`` once per run; replays get the recorded copy."""
    io = _io(store)

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

    loaded = await DBOS.run_step_async({"name": "tether.session.open"}, load)
    messages = [Message.from_json(line) for line in loaded.lines]
    return DurableSession(io, name, loaded.id, loaded.version, messages, loaded.report)


class DurableSession:
    """An :class:`~tether.sessions.AsyncSession` whose writes are DBOS steps."""

    def __init__(
        self,
        io: SessionIO,
        name: str,
        session_id: str,
        version: int,
        messages: list[Message],
        report: RepairReport,
    ) -> None:
        self._io = io
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
        line = message.to_json()
        expected, position = self._version, len(self._messages)

        async def write() -> int:
            try:
                return await self._io.append(self.name, expected, position, line)
            except SessionConflictError:
                if await self._written(expected, [*self._stored_prefix(position), line]):
                    return expected + 1
                raise

        self._version = await DBOS.run_step_async({"name": "tether.session.append"}, write)
        self._messages.append(message)

    async def replace(self, messages: Sequence[Message]) -> None:
        new = list(messages)
        lines = [m.to_json() for m in new]
        expected = self._version

        async def write() -> int:
            try:
                return await self._io.replace(self.name, expected, lines)
            except SessionConflictError:
                if await self._written(expected, lines):
                    return expected + 1
                raise

        self._version = await DBOS.run_step_async({"name": "tether.session.replace"}, write)
        self._messages = new

    async def aclose(self) -> None:
        return None

    def _stored_prefix(self, position: int) -> list[str]:
        return [m.to_json() for m in self._messages[:position]]

    async def _written(self, expected: int, lines: list[str]) -> bool:
        """Whether the store already holds exactly this write at ``expected + 1``: the
        step ran before, and its worker died after the commit."""
        record = await self._io.load(self.name)
        if record is None or record.version != expected + 1 or len(record.lines) != len(lines):
            return False
        return all(_same(a, b) for a, b in zip(record.lines, lines, strict=True))


def _same(stored: str, ours: str) -> bool:
    """Same message, ignoring its id and timestamp (a re-executed step builds the tool
    message anew)."""
    if stored == ours:
        return True
    a, b = Message.from_json(stored), Message.from_json(ours)
    return a.role == b.role and a.content == b.content
