"""Session stores written before writer leases keep working, with what they can give.

A :class:`~tether.sessions.versioned.SessionIO` gained ``claim``, ``renew``, ``release``,
``quarantine`` and ``quarantined`` (and a ``writer`` argument to ``append`` and
``replace``) when shared stores learnt writer leases. A store written against the earlier
protocol (:class:`UnleasedIO`) is wrapped in :class:`UnleasedSessionIO`, which gives it:

- **no lease**: any number of writers may open a session, and the version check alone
  refuses the later of two conflicting writes, as before;
- **a quarantine** kept through the store's own operations, in a sibling record named
  ``NAME~quarantine`` that listings leave out and removing the session removes too: an
  unparseable record is moved aside, never just deleted.

:class:`~tether.sessions.versioned.VersionedStore` wraps such a store itself and warns
once (``DeprecationWarning``) that it should implement the lease operations.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ..messages import new_id

if TYPE_CHECKING:
    from .versioned import Lease, SessionSummary, StoredRecord

__all__ = ["QUARANTINE_SUFFIX", "UnleasedIO", "UnleasedSessionIO", "adapt_unleased"]

QUARANTINE_SUFFIX = "~quarantine"
"""Appended to a session's name to name the record that keeps its quarantined lines."""


@runtime_checkable
class UnleasedIO(Protocol):
    """The raw operations of a versioned store as they were before writer leases."""

    async def load(self, name: str) -> StoredRecord | None: ...

    async def create(self, name: str, session_id: str, created_at: float) -> StoredRecord: ...

    async def append(self, name: str, expected: int, position: int, line: str) -> int: ...

    async def replace(self, name: str, expected: int, lines: Sequence[str]) -> int: ...

    async def summaries(self) -> list[SessionSummary]: ...

    async def delete(self, name: str) -> bool: ...

    async def aclose(self) -> None: ...


class UnleasedSessionIO:
    """A :class:`~tether.sessions.versioned.SessionIO` over an :class:`UnleasedIO` (see the
    module docstring for what it gives and what it cannot)."""

    def __init__(self, io: UnleasedIO) -> None:
        self.inner = io

    def __getattr__(self, name: str) -> object:
        # The store's own attributes (its path, its client) stay reachable through
        # ``VersionedStore.io``, as they were before the wrapping.
        return getattr(self.inner, name)

    async def load(self, name: str) -> StoredRecord | None:
        return await self.inner.load(name)

    async def create(self, name: str, session_id: str, created_at: float) -> StoredRecord:
        return await self.inner.create(name, session_id, created_at)

    async def claim(
        self,
        name: str,
        writer: str,
        ttl: float,
        session_id: str,
        created_at: float,
        replacing: str | None = None,
    ) -> StoredRecord | Lease:
        found = await self.inner.load(name)
        return found if found is not None else await self.inner.create(name, session_id, created_at)

    async def renew(self, name: str, writer: str, ttl: float) -> bool:
        return True

    async def release(self, name: str, writer: str) -> None:
        return None

    async def append(
        self, name: str, expected: int, position: int, line: str, writer: str | None = None
    ) -> int:
        return await self.inner.append(name, expected, position, line)

    async def replace(
        self, name: str, expected: int, lines: Sequence[str], writer: str | None = None
    ) -> int:
        return await self.inner.replace(name, expected, lines)

    async def quarantine(self, name: str, entries: Sequence[tuple[int, str]]) -> None:
        kept = name + QUARANTINE_SUFFIX
        record = await self.inner.load(kept)
        if record is None:
            record = await self.inner.create(kept, new_id(), time.time())
        await self.inner.replace(
            kept, record.version, [*record.lines, *(line for _, line in entries)]
        )

    async def quarantined(self, name: str) -> list[str]:
        record = await self.inner.load(name + QUARANTINE_SUFFIX)
        return [] if record is None else list(record.lines)

    async def summaries(self) -> list[SessionSummary]:
        return [s for s in await self.inner.summaries() if not s.name.endswith(QUARANTINE_SUFFIX)]

    async def delete(self, name: str) -> bool:
        await self.inner.delete(name + QUARANTINE_SUFFIX)
        return await self.inner.delete(name)

    async def aclose(self) -> None:
        await self.inner.aclose()


def adapt_unleased(io: object) -> object:
    """``io`` itself when it implements the lease operations, else wrapped in
    :class:`UnleasedSessionIO` with a one-time ``DeprecationWarning``."""
    if all(hasattr(io, op) for op in ("claim", "renew", "release", "quarantine", "quarantined")):
        return io
    warnings.warn(
        f"{type(io).__name__} does not implement the writer-lease operations of SessionIO "
        "(claim, renew, release, quarantine, quarantined): its sessions are opened without "
        "a lease (only the version check refuses a second writer's stale write) and "
        "quarantined records are kept in a sibling record NAME~quarantine. Implement them "
        "to give its users exclusive writers; see tether.sessions.versioned.SessionIO.",
        DeprecationWarning,
        stacklevel=3,
    )
    return UnleasedSessionIO(io)  # type: ignore[arg-type]
