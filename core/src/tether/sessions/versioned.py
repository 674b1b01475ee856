"""Sessions in stores shared by many workers, with an optimistic version check.

A store (SQLite, PostgreSQL, Redis, ...) implements only :class:`SessionIO`, the raw
operations on stored lines; :class:`VersionedStore` turns them into named
:class:`StoredSession` objects with the guarantees of the JSONL store:

- **Atomic append**: each message is one line written in one transaction (or one Redis
  script); a crash leaves it written or not, never half.
- **Repair on load**: lines that do not parse are dropped and the history goes through
  :func:`~tether.sessions.repair.repair_messages`; a writer stores the repaired history
  back (with the version check), a reader only sees it. What changed is in
  :attr:`StoredSession.repair_report`.
- **Version check**: every write names the version it expects and the store refuses it
  with :class:`~tether.errors.SessionConflictError` when another writer got there first,
  writing nothing. So two workers can never interleave one conversation: the loser
  reopens the session and sees the winner's messages.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

import pydantic

from ..errors import SessionConflictError, SessionError
from ..messages import Message, new_id
from ..scrub import scrub
from .repair import RepairReport, repair_messages
from .store import validate_session_name

__all__ = [
    "SessionIO",
    "SessionSummary",
    "StoredRecord",
    "StoredSession",
    "VersionedStore",
    "conflict",
]

_log = logging.getLogger("tether.sessions")


@dataclass(frozen=True, slots=True)
class StoredRecord:
    """A session as a store holds it: identity, version and the raw message lines."""

    id: str
    created_at: float
    version: int
    lines: list[str]


@dataclass(frozen=True, slots=True)
class SessionSummary:
    """One stored session as ``list()`` sees it, without loading its messages.

    ``messages`` counts stored lines (before any repair); ``modified`` is when the last
    write happened, if the store knows.
    """

    name: str
    messages: int
    modified: datetime | None = None


class SessionIO(Protocol):
    """The raw operations of a versioned store. Every write is atomic.

    ``append`` and ``replace`` must check, in the same transaction as the write, that the
    stored version is ``expected``; if it is not (or the session is gone) they raise
    :func:`conflict` and write nothing. They return the new version (``expected + 1``).
    """

    async def load(self, name: str) -> StoredRecord | None: ...

    async def create(self, name: str, session_id: str, created_at: float) -> StoredRecord:
        """Create an empty session; if another writer created it first, return that one."""
        ...

    async def append(self, name: str, expected: int, position: int, line: str) -> int: ...

    async def replace(self, name: str, expected: int, lines: Sequence[str]) -> int: ...

    async def summaries(self) -> list[SessionSummary]: ...

    async def delete(self, name: str) -> bool:
        """Delete the session; ``False`` if there was none."""
        ...

    async def aclose(self) -> None: ...


def conflict(name: str, expected: int, actual: int | None) -> SessionConflictError:
    """The error a store raises when a write finds another version than it expected."""
    found = "was deleted" if actual is None else f"is now at version {actual}"
    return SessionConflictError(
        f"Session {name!r} was changed by another writer (this writer had version {expected}; "
        f"the session {found}). Nothing was written. Reopen the session to continue from "
        "the other writer's messages.",
        session=name,
        expected=expected,
        actual=actual,
    )


class StoredSession:
    """A named session in a :class:`VersionedStore`; an :class:`~tether.sessions.AsyncSession`.

    Get one from :meth:`VersionedStore.open`. ``read_only`` sessions refuse writes.
    """

    def __init__(
        self,
        io: SessionIO,
        name: str,
        record: StoredRecord,
        messages: list[Message],
        report: RepairReport,
        *,
        read_only: bool,
    ) -> None:
        self._io = io
        self.name = name
        self.id = record.id
        self.created_at = record.created_at
        self._version = record.version
        self._messages = messages
        self.repair_report = report
        self.read_only = read_only
        self._closed = False

    @property
    def messages(self) -> Sequence[Message]:
        return self._messages

    @property
    def version(self) -> int:
        return self._version

    async def append(self, message: Message) -> None:
        """Store ``message`` as one line after the history this writer knows.

        :raises SessionConflictError: another writer wrote first; nothing was written.
        """
        self._writable()
        self._version = await self._io.append(
            self.name, self._version, len(self._messages), scrub(message.to_json())
        )
        self._messages.append(message)

    async def replace(self, messages: Sequence[Message]) -> None:
        """Swap the whole history in one transaction.

        :raises SessionConflictError: another writer wrote first; nothing was written.
        """
        self._writable()
        new = list(messages)
        lines = [scrub(m.to_json()) for m in new]
        self._version = await self._io.replace(self.name, self._version, lines)
        self._messages = new

    async def clear(self) -> None:
        """Forget the history, keeping the session id."""
        await self.replace([])

    async def aclose(self) -> None:
        """Forget this writer; the store (and its connections) stays open."""
        self._closed = True

    def _writable(self) -> None:
        if self.read_only:
            raise SessionError(
                f"Session {self.name!r} was opened read-only; open it without read_only=True to write."
            )
        if self._closed:
            raise SessionError(f"Session {self.name!r} is closed.")

    def __repr__(self) -> str:
        return f"<StoredSession {self.name} v{self._version} ({len(self._messages)} messages)>"


class VersionedStore:
    """Named :class:`StoredSession` objects over a :class:`SessionIO`.

    Implements the session-store protocol (:class:`~tether.sessions.SessionBackend`).
    Names follow :func:`~tether.sessions.store.validate_session_name`.
    """

    kind = "versioned"

    def __init__(self, io: SessionIO) -> None:
        self.io = io

    async def open(self, name: str, *, read_only: bool = False) -> StoredSession:
        """Load session ``name`` (creating it unless ``read_only``), repaired.

        :raises SessionError: invalid name, or ``read_only`` and no such session.
        :raises SessionConflictError: another writer changed it while the repair was
            being stored; open it again.
        """
        validate_session_name(name)
        record = await self.io.load(name)
        if record is None:
            if read_only:
                raise SessionError(f"No session named {name!r} in the {self.kind} store.")
            record = await self.io.create(name, new_id(), time.time())
        messages, report = parse_lines(record.lines)
        if report:
            _log.warning("Session %s was repaired on load: %s", name, report.summary())
            if not read_only:
                version = await self.io.replace(
                    name, record.version, [scrub(m.to_json()) for m in messages]
                )
                record = StoredRecord(record.id, record.created_at, version, [])
        return StoredSession(self.io, name, record, messages, report, read_only=read_only)

    async def exists(self, name: str) -> bool:
        return await self.io.load(validate_session_name(name)) is not None

    async def list(self) -> list[SessionSummary]:
        """Every stored session, most recently changed first."""
        summaries = await self.io.summaries()
        summaries.sort(
            key=lambda s: (s.modified or datetime.min.astimezone(), s.name), reverse=True
        )
        return summaries

    async def remove(self, name: str) -> None:
        """Delete session ``name``.

        :raises SessionError: there is no such session.
        """
        if not await self.io.delete(validate_session_name(name)):
            raise SessionError(f"No session named {name!r} in the {self.kind} store.")

    async def aclose(self) -> None:
        await self.io.aclose()

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"


_adapter: pydantic.TypeAdapter[Message] | None = None


def parse_lines(lines: Sequence[str]) -> tuple[list[Message], RepairReport]:
    """Messages from stored lines: unparseable lines dropped, the invariant restored."""
    report = RepairReport()
    parsed: list[Message] = []
    for index, line in enumerate(lines):
        try:
            parsed.append(Message.model_validate_json(line))
        except (pydantic.ValidationError, ValueError):
            report.add(
                "unparseable_line",
                "a stored message that does not parse was dropped",
                line=index + 1,
            )
    messages, repairs = repair_messages(parsed)
    report.extend(repairs)
    return messages, report
