"""The :class:`Session` protocol."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from ..messages import Message

__all__ = ["Session"]


@runtime_checkable
class Session(Protocol):
    """A conversation's history.

    ``messages`` is the current history, oldest first; callers must not mutate it.
    ``append`` must make the message durable (as far as the store promises) before it
    returns; ``replace`` swaps the whole history atomically: a reader sees the old or the
    new history, never a mix. Implementations keep the invariant of
    :mod:`tether.messages` only as far as callers do; :func:`repair_messages` restores it.
    """

    id: str

    @property
    def messages(self) -> Sequence[Message]: ...

    def append(self, message: Message) -> None: ...

    def replace(self, messages: Sequence[Message]) -> None: ...

    def close(self) -> None: ...
