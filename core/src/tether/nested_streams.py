"""Async generators nested inside a run, closed only by the generator that iterates them.

A run is a chain of async generators (the agent's stream, the run's events, a turn, a
model call, the tool scheduler, ...), each closing the next one with
:func:`contextlib.aclosing`. asyncio tracks every async generator it sees iterated, and
closes each on its own when it is garbage collected unclosed or when ``asyncio.run``
ends (``shutdown_asyncgens``). For a stream its consumer abandoned (stopped iterating
without ``aclose()``), that closes the links of one chain concurrently: a link being
closed by the link above it is "already running" when asyncio closes it again, and
the ``RuntimeError`` surfaces as "Task exception was never retrieved" or "an error
occurred during closing of asynchronous generator".

:func:`nested` hides a nested generator from asyncio's tracking and gives it a
finalizer that does nothing, so only the generator that iterates it closes it (in order,
through ``aclosing``); the outermost generator, the one handed to the caller, stays
tracked, so an abandoned stream is still closed, once, from the top.
"""

from __future__ import annotations

import contextlib
import inspect
import sys
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any, TypeVar

__all__ = ["nested", "untracked"]

T = TypeVar("T")


def untracked(stream: AsyncIterator[T]) -> AsyncIterator[T]:
    """``stream`` itself; if it is an async generator not yet iterated, the event loop
    will neither track nor finalize it: its owner must close it. (One already iterated
    keeps the hooks it got then.)"""
    if inspect.isasyncgen(stream):
        hooks = sys.get_asyncgen_hooks()
        sys.set_asyncgen_hooks(firstiter=None, finalizer=_left_to_owner)
        try:
            generator: Any = stream
            opener = generator.asend(None)  # initialises its hooks; never awaited
            del opener
        finally:
            sys.set_asyncgen_hooks(*hooks)
    return stream


def _left_to_owner(stream: object) -> None:
    """The finalizer of an untracked generator: nothing. The garbage collector calls it
    for every link of an abandoned chain at once; the outermost link's own (asyncio's)
    finalizer closes the chain, in order. Without a finalizer Python would close the link
    on the spot, where it cannot await its cleanup."""


def nested(stream: AsyncGenerator[T, None]) -> contextlib.aclosing[AsyncGenerator[T, None]]:
    """``contextlib.aclosing(stream)`` for a generator nested in a run: see the module
    docstring."""
    untracked(stream)
    return contextlib.aclosing(stream)
