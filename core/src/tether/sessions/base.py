"""The :class:`Session` and :class:`AsyncSession` protocols."""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Iterator, Sequence
from typing import Protocol, runtime_checkable

from ..errors import SessionBusyError
from ..messages import Message

__all__ = [
    "AnySession",
    "AsyncSession",
    "Session",
    "append_message",
    "close_session",
    "is_async_session",
    "one_run_at_a_time",
    "replace_messages",
]


@runtime_checkable
class Session(Protocol):
    """A conversation's history.

    ``messages`` is the current history, oldest first; callers must not mutate it.
    ``append`` must make the message durable (as far as the store promises) before it
    returns; ``replace`` swaps the whole history atomically: a reader sees the old or the
    new history, never a mix. Implementations keep the invariant of
    :mod:`tether.messages` only as far as callers do; :func:`repair_messages` restores it.

    A session that blocks on the disk or the network may also define ``async def
    append_async(message)`` and ``async def replace_async(messages)`` with the same
    contracts; the runner then uses them, so its event loop never waits on I/O.
    """

    id: str

    @property
    def messages(self) -> Sequence[Message]: ...

    def append(self, message: Message) -> None: ...

    def replace(self, messages: Sequence[Message]) -> None: ...

    def close(self) -> None: ...


@runtime_checkable
class AsyncSession(Protocol):
    """A session kept in a networked store (PostgreSQL, Redis, ...): the same contract as
    :class:`Session`, with writes that are awaited so they never block the event loop.

    ``messages`` is the history as this writer knows it (loaded on open, extended by its
    own writes). ``version`` counts the writes the store has accepted; every write states
    the version it expects, and a write that finds another one raises
    :class:`~tether.errors.SessionConflictError` and changes nothing, so two workers never
    interleave one conversation. The runner accepts both kinds of session.
    """

    id: str

    @property
    def messages(self) -> Sequence[Message]: ...

    @property
    def version(self) -> int: ...

    async def append(self, message: Message) -> None: ...

    async def replace(self, messages: Sequence[Message]) -> None: ...

    async def aclose(self) -> None: ...


AnySession = Session | AsyncSession


def is_async_session(session: object) -> bool:
    """Whether ``session`` writes through coroutines (an :class:`AsyncSession`)."""
    return inspect.iscoroutinefunction(getattr(session, "append", None))


async def append_message(session: AnySession, message: Message) -> None:
    """Append ``message`` to either kind of session; through ``append_async`` when a
    blocking session offers it (:class:`~tether.sessions.JsonlSession` does its disk work
    on a thread then), so the event loop never waits on the disk."""
    append_async = getattr(session, "append_async", None)
    if append_async is not None:
        await append_async(message)
        return
    result = session.append(message)
    if inspect.isawaitable(result):
        await result


async def replace_messages(session: AnySession, messages: Sequence[Message]) -> None:
    """Replace the history of either kind of session (through ``replace_async`` when a
    blocking session offers it)."""
    replace_async = getattr(session, "replace_async", None)
    if replace_async is not None:
        await replace_async(messages)
        return
    result = session.replace(messages)
    if inspect.isawaitable(result):
        await result


async def close_session(session: object) -> None:
    """Close either kind of session (``aclose`` if it has one, else ``close``)."""
    aclose = getattr(session, "aclose", None)
    if aclose is not None:
        await aclose()
        return
    close = getattr(session, "close", None)
    if close is not None:
        close()


_IN_USE: set[int] = set()
"""``id()`` of every session a run is using right now."""


@contextlib.contextmanager
def one_run_at_a_time(session: object) -> Iterator[None]:
    """Mark ``session`` as used by a run for the duration of the block.

    :raises SessionBusyError: another run is using it: two runs on one history would each
        send requests with the other's half-finished turns in them.
    """
    key = id(session)
    if key in _IN_USE:
        raise SessionBusyError(
            f"Session {getattr(session, 'id', '?')} is already in use by another run. Runs on "
            "one session must take turns (await the first one), or give each concurrent run "
            "its own session."
        )
    _IN_USE.add(key)
    try:
        yield
    finally:
        _IN_USE.discard(key)
