"""Cooperative cancellation for a run."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

__all__ = ["CancelToken"]


class CancelToken:
    """Cancel a run from outside it: ``token.cancel()``, from any thread.

    The runner checks the token at every await point that matters: no new model call or
    retry starts, a streaming response or running tools are interrupted, unanswered tool
    calls get an "interrupted" error result, and the run ends with outcome
    ``cancelled``. Tools can poll :attr:`cancelled` or ``await token.wait()``. A token may
    be shared by several runs; once cancelled it stays cancelled.
    """

    __slots__ = ("_callbacks", "_waiters", "reason")

    def __init__(self) -> None:
        self.reason: str | None = None
        self._callbacks: list[tuple[asyncio.AbstractEventLoop, Callable[[], None]]] = []
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []

    @property
    def cancelled(self) -> bool:
        return self.reason is not None

    def cancel(self, reason: str = "cancelled by the caller") -> None:
        """Request cancellation. Idempotent; the first reason wins."""
        if self.reason is not None:
            return
        self.reason = reason
        for loop, callback in list(self._callbacks):
            _call_soon(loop, callback)
        for loop, event in list(self._waiters):
            _call_soon(loop, event.set)

    async def wait(self) -> None:
        """Return once :meth:`cancel` has been called."""
        if self.reason is not None:
            return
        event = asyncio.Event()
        entry = (asyncio.get_running_loop(), event)
        self._waiters.append(entry)
        try:
            await event.wait()
        finally:
            self._waiters.remove(entry)

    def on_cancel(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` on the current loop when cancelled; returns a remover."""
        entry = (asyncio.get_running_loop(), callback)
        self._callbacks.append(entry)

        def remove() -> None:
            if entry in self._callbacks:
                self._callbacks.remove(entry)

        return remove


def _call_soon(loop: asyncio.AbstractEventLoop, callback: Callable[[], None]) -> None:
    if not loop.is_closed():
        loop.call_soon_threadsafe(callback)
