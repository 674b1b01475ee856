"""Sessions in stores shared by many workers, with a writer lease and a version check.

A store (SQLite, PostgreSQL, Redis, ...) implements only :class:`SessionIO`, the raw
operations on stored lines; :class:`VersionedStore` turns them into named
:class:`StoredSession` objects with the guarantees of the JSONL store:

- **One live writer**: opening a session for writing claims its *lease* (a writer id and
  an expiry, stored with the session) in the same transaction that loads it. While a
  writer holds an unexpired lease, another writer's ``open`` is refused with
  :class:`~tether.errors.SessionLockedError` before it writes anything. The holder renews
  the lease in the background (every third of ``lease_ttl_s``) and releases it on close;
  a worker that died stops renewing, and its lease expires after ``lease_ttl_s``. A writer
  closed in this process is known dead at once, so its lease is taken over without
  waiting.
- **Repair only for the dead**: a writer repairs the history it loads (unanswered tool
  calls get an "interrupted" result) only after it holds the lease, so the calls it
  answers belong to a writer that is gone — never to a live worker's call in flight.
  Readers (``read_only``) see a repaired copy and write nothing.
- **Atomic append**: each message is one line written in one transaction (or one Redis
  script); a crash leaves it written or not, never half.
- **Quarantine, not deletion**: a stored line that does not parse is copied to the
  store's quarantine (a table or key beside the session; see
  :meth:`VersionedStore.quarantined`) before the repaired history replaces it.
- **Version check**: every write names the version it expects (and the writer's lease)
  and the store refuses it with :class:`~tether.errors.SessionConflictError` when another
  writer got there first, writing nothing.
- **Deadlines**: every store operation ends by the run's deadline
  (:mod:`tether.sessions.waits`).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import itertools
import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

import pydantic

from ..deadlines import deadline_scope, run_deadline
from ..errors import ConfigError, SessionConflictError, SessionError, SessionLockedError
from ..messages import Message, new_id
from ..scrub import scrub
from .repair import RepairReport, repair_messages
from .store import validate_session_name
from .unleased import UnleasedIO, adapt_unleased
from .waits import ENDING_GRACE_S

__all__ = [
    "DEFAULT_LEASE_TTL_S",
    "Lease",
    "SessionIO",
    "SessionSummary",
    "StoredRecord",
    "StoredSession",
    "VersionedStore",
    "conflict",
    "lease_lost",
]

_log = logging.getLogger("tether.sessions")

DEFAULT_LEASE_TTL_S = 30.0
"""How long a writer's lease lasts without renewal: a crashed worker's session is free
again after this long."""

_PROCESS = f"{os.getpid()}-{new_id()[:10]}"
"""This process's part of every writer id it hands out."""

_FIRST_PAUSE_S = 0.005
_LAST_PAUSE_S = 0.1
"""Pauses between tries of a writer waiting for a lease (doubling from the first)."""

_WRITER_NUMBERS = itertools.count(1)
"""Numbers the writers of this process: a writer id is never handed out twice."""

_LIVE_WRITERS: set[str] = set()
"""Writer ids of this process whose sessions are open: any other id of this process is
known dead, and its lease can be taken over at once."""


@dataclass(frozen=True, slots=True)
class StoredRecord:
    """A session as a store holds it: identity, version and the raw message lines."""

    id: str
    created_at: float
    version: int
    lines: list[str]


@dataclass(frozen=True, slots=True)
class Lease:
    """Who holds a session's writer lease, and for how many more seconds."""

    writer: str
    expires_in: float


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
    stored version is ``expected`` and, when ``writer`` is given, that ``writer`` holds
    the lease; if not (or the session is gone) they raise :func:`conflict` (or
    :func:`lease_lost`) and write nothing. They return the new version (``expected + 1``).

    ``claim`` creates the session if missing and takes its lease for ``writer`` for
    ``ttl`` seconds (by the store's clock) when it is free, expired, already ``writer``'s,
    or held by ``replacing``; it returns the record, or the live :class:`Lease` of the
    writer holding it (and changes nothing). ``renew`` extends ``writer``'s lease and
    returns ``False`` if it no longer holds it; ``release`` gives it up.

    ``quarantine`` copies unparseable lines (with their 0-based positions) to where the
    store keeps them; ``quarantined`` returns them, oldest first. Every operation ends by
    the run's deadline (:func:`tether.sessions.waits.bounded`).
    """

    async def load(self, name: str) -> StoredRecord | None: ...

    async def create(self, name: str, session_id: str, created_at: float) -> StoredRecord:
        """Create an empty session; if another writer created it first, return that one."""
        ...

    async def claim(
        self,
        name: str,
        writer: str,
        ttl: float,
        session_id: str,
        created_at: float,
        replacing: str | None = None,
    ) -> StoredRecord | Lease: ...

    async def renew(self, name: str, writer: str, ttl: float) -> bool: ...

    async def release(self, name: str, writer: str) -> None: ...

    async def append(
        self, name: str, expected: int, position: int, line: str, writer: str | None = None
    ) -> int: ...

    async def replace(
        self, name: str, expected: int, lines: Sequence[str], writer: str | None = None
    ) -> int: ...

    async def quarantine(self, name: str, entries: Sequence[tuple[int, str]]) -> None: ...

    async def quarantined(self, name: str) -> list[str]: ...

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


def lease_lost(name: str, expected: int) -> SessionConflictError:
    """The error for a write by a writer whose lease another writer has taken over."""
    return SessionConflictError(
        f"Session {name!r} is no longer this writer's: its lease expired (it was not renewed "
        "in time) and another writer took the session over. Nothing was written. Reopen the "
        "session to continue from the other writer's messages.",
        session=name,
        expected=expected,
    )


def locked(name: str, kind: str, lease: Lease) -> SessionLockedError:
    """The error for an ``open`` refused because another live writer holds the lease."""
    return SessionLockedError(
        f"Session {name!r} in the {kind} store is in use by another writer (its lease runs "
        f"{max(lease.expires_in, 0.0):.0f} s more and is renewed while that writer is alive). "
        "Nothing was written. Try again when it is done, or open it read-only to look."
    )


class StoredSession:
    """A named session in a :class:`VersionedStore`; an :class:`~tether.sessions.AsyncSession`.

    Get one from :meth:`VersionedStore.open`. ``read_only`` sessions refuse writes. A
    writer holds the session's lease until :meth:`aclose`.
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
        writer: str | None = None,
        lease_ttl_s: float = DEFAULT_LEASE_TTL_S,
    ) -> None:
        self._io = io
        self.name = name
        self.id = record.id
        self.created_at = record.created_at
        self._version = record.version
        self._messages = messages
        self.repair_report = report
        self.read_only = read_only
        self.writer = writer
        """This writer's lease id (``None`` for a reader)."""
        self._ttl = lease_ttl_s
        self._closed = False
        self._heartbeat: asyncio.Task[None] | None = None
        if writer is not None:
            _LIVE_WRITERS.add(writer)
            # A context of its own: the heartbeat outlives the run that opened the session
            # and must not inherit that run's deadline.
            self._heartbeat = asyncio.get_running_loop().create_task(
                self._renew_forever(), context=contextvars.Context()
            )

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
            self.name, self._version, len(self._messages), scrub(message.to_json()), self.writer
        )
        self._messages.append(message)

    async def replace(self, messages: Sequence[Message]) -> None:
        """Swap the whole history in one transaction.

        :raises SessionConflictError: another writer wrote first; nothing was written.
        """
        self._writable()
        new = list(messages)
        lines = [scrub(m.to_json()) for m in new]
        self._version = await self._io.replace(self.name, self._version, lines, self.writer)
        self._messages = new

    async def clear(self) -> None:
        """Forget the history, keeping the session id."""
        await self.replace([])

    async def aclose(self) -> None:
        """Release this writer's lease; the store (and its connections) stays open.

        Never waits past the run's deadline: if the store cannot be reached, the lease is
        left to expire (or to be taken over by this process's next writer)."""
        if self._closed:
            return
        self._closed = True
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            with contextlib.suppress(BaseException):
                await self._heartbeat
        if self.writer is not None:
            _LIVE_WRITERS.discard(self.writer)
            # A moment of its own, even after the run's deadline passed: a lease left behind
            # would keep other processes out until it expires.
            release = asyncio.get_running_loop().create_task(
                self._release(), context=contextvars.Context()
            )
            await release

    async def _release(self) -> None:
        assert self.writer is not None
        with deadline_scope(ENDING_GRACE_S):
            try:
                await self._io.release(self.name, self.writer)
            except SessionError as exc:
                _log.warning("Session %s: could not release its lease: %s", self.name, exc)

    async def _renew_forever(self) -> None:
        assert self.writer is not None
        while True:
            await asyncio.sleep(self._ttl / 3)
            try:
                if not await self._io.renew(self.name, self.writer, self._ttl):
                    _log.warning("Session %s: this writer's lease was taken over.", self.name)
                    return
            except SessionError as exc:
                _log.warning("Session %s: could not renew its lease: %s", self.name, exc)

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

    :param lease_ttl_s: how long a writer's lease lasts without renewal.
    :param lease_wait_s: how long ``open`` waits for another live writer to finish before
        refusing (never past the run's deadline); 0 (the default) refuses at once.
    """

    kind = "versioned"

    def __init__(
        self,
        io: SessionIO | UnleasedIO,
        *,
        lease_ttl_s: float = DEFAULT_LEASE_TTL_S,
        lease_wait_s: float = 0.0,
    ) -> None:
        if not lease_ttl_s > 0 or not lease_wait_s >= 0:
            raise ConfigError(
                "[sessions] settings.lease_ttl_s must be positive and lease_wait_s at least 0 "
                f"(seconds), got {lease_ttl_s!r} and {lease_wait_s!r}."
            )
        self.io: SessionIO = adapt_unleased(io)  # type: ignore[assignment]
        self.lease_ttl_s = float(lease_ttl_s)
        self.lease_wait_s = float(lease_wait_s)

    async def open(self, name: str, *, read_only: bool = False) -> StoredSession:
        """Load session ``name`` (creating it unless ``read_only``), repaired.

        A writer first claims the session's lease (see the module docstring).

        :raises SessionError: invalid name, or ``read_only`` and no such session.
        :raises SessionLockedError: another live writer has the session open (and did not
            close it within ``lease_wait_s``).
        :raises SessionTimeoutError: the store did not answer in time.
        """
        validate_session_name(name)
        if read_only:
            found = await self.io.load(name)
            if found is None:
                raise SessionError(f"No session named {name!r} in the {self.kind} store.")
            messages, report, _ = parse_lines(found.lines)
            return StoredSession(self.io, name, found, messages, report, read_only=True)
        writer = f"{_PROCESS}-{next(_WRITER_NUMBERS)}"
        record = await self._claim(name, writer)
        try:
            messages, report, damaged = parse_lines(record.lines)
            if report:
                _log.warning("Session %s was repaired on load: %s", name, report.summary())
                if damaged:
                    await self.io.quarantine(name, damaged)
                    report.add(
                        "kept_original",
                        f"{len(damaged)} unparseable record(s) kept in the store's quarantine "
                        "(VersionedStore.quarantined)",
                    )
                version = await self.io.replace(
                    name, record.version, [scrub(m.to_json()) for m in messages], writer
                )
                record = StoredRecord(record.id, record.created_at, version, [])
        except BaseException:
            with contextlib.suppress(Exception):
                await self.io.release(name, writer)
            raise
        return StoredSession(
            self.io, name, record, messages, report, read_only=False, writer=writer,
            lease_ttl_s=self.lease_ttl_s,
        )  # fmt: skip

    async def _claim(self, name: str, writer: str) -> StoredRecord:
        """Take the lease, waiting up to ``lease_wait_s`` (and the run's deadline) for a
        live writer to finish."""
        until = time.monotonic() + self.lease_wait_s
        deadline = run_deadline()
        if deadline is not None:
            until = min(until, deadline)
        pause = _FIRST_PAUSE_S
        while True:
            claimed = await self.io.claim(name, writer, self.lease_ttl_s, new_id(), time.time())
            if isinstance(claimed, Lease) and _known_dead(claimed.writer):
                claimed = await self.io.claim(
                    name, writer, self.lease_ttl_s, new_id(), time.time(), replacing=claimed.writer
                )
            if not isinstance(claimed, Lease):
                return claimed
            left = until - time.monotonic()
            if left <= 0:
                raise locked(name, self.kind, claimed)
            await asyncio.sleep(min(pause, left, max(claimed.expires_in, 0.0) + 0.001))
            pause = min(pause * 2, _LAST_PAUSE_S)

    async def exists(self, name: str) -> bool:
        return await self.io.load(validate_session_name(name)) is not None

    async def quarantined(self, name: str) -> list[str]:
        """The records of session ``name`` that did not parse and were moved aside when a
        writer opened it, oldest first, exactly as they were stored."""
        return await self.io.quarantined(validate_session_name(name))

    async def list(self) -> list[SessionSummary]:
        """Every stored session, most recently changed first."""
        summaries = await self.io.summaries()
        summaries.sort(
            key=lambda s: (s.modified or datetime.min.replace(tzinfo=UTC), s.name), reverse=True
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


def _known_dead(writer: str) -> bool:
    """Whether ``writer`` was handed out by this process and its session is closed."""
    return writer.startswith(f"{_PROCESS}-") and writer not in _LIVE_WRITERS


def parse_lines(lines: Sequence[str]) -> tuple[list[Message], RepairReport, list[tuple[int, str]]]:
    """Messages from stored lines, with the invariant restored; what was changed; and the
    lines that did not parse (0-based position, line), which were left out."""
    report = RepairReport()
    parsed: list[Message] = []
    damaged: list[tuple[int, str]] = []
    for index, line in enumerate(lines):
        try:
            parsed.append(Message.model_validate_json(line))
        except (pydantic.ValidationError, ValueError):
            damaged.append((index, line))
            report.add(
                "unparseable_line",
                "a stored message that does not parse was left out",
                line=index + 1,
            )
    messages, repairs = repair_messages(parsed)
    report.extend(repairs)
    return messages, report, damaged
