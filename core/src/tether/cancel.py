"""Cooperative cancellation for a run."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from .errors import RunCancelled

__all__ = ["CancelScope", "CancelToken"]


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


class CancelScope:
    """Lets a :class:`CancelToken` interrupt one task, but only inside :meth:`interruptible`.

    A run awaits many things; only some of them (a model stream, a retry's sleep, running
    tools, a compaction) may be cut short by the token. Wrap those awaits in
    ``with scope.interruptible():``; a cancel that arrives there cancels the task (the
    await raises :class:`asyncio.CancelledError`), and a cancel that arrives elsewhere is
    noticed at the next check instead. Use the scope itself as a context manager around
    the whole run to register and remove the token's callback.
    """

    __slots__ = ("_armed", "_remove", "_task", "token")

    def __init__(self, token: CancelToken) -> None:
        self.token = token
        self._task: asyncio.Task[Any] | None = None
        self._armed = False
        self._remove: Callable[[], None] | None = None

    @property
    def task(self) -> asyncio.Task[Any] | None:
        """The task the scope interrupts (the one that entered it)."""
        return self._task

    def __enter__(self) -> CancelScope:
        self._task = asyncio.current_task()
        self._remove = self.token.on_cancel(self._on_cancel)
        return self

    def __exit__(self, *exc: object) -> None:
        self._armed = False
        if self._remove is not None:
            self._remove()
            self._remove = None

    def check(self) -> None:
        """Raise :class:`~tether.errors.RunCancelled` if the token is cancelled."""
        if self.token.reason is not None:
            raise RunCancelled(self.token.reason)

    def interruptible(self) -> AbstractContextManager[None]:
        """Let a cancel interrupt the body; raise at once if already cancelled."""
        return _Interruptible(self)

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Inside :meth:`interruptible`: not interruptible while the body runs (e.g. while
        a generator yields to its consumer); on leaving it normally, check and re-arm."""
        self.pause()
        yield
        self.resume()

    def pause(self) -> None:
        """Inside :meth:`interruptible`: not interruptible until :meth:`resume`. The two
        calls are :meth:`paused` without a context manager, for per-event paths (a
        generator yielding each streamed delta to its consumer)."""
        self._armed = False

    def resume(self) -> None:
        """After :meth:`pause`: raise if the token was cancelled meanwhile, else re-arm."""
        if self.token.reason is not None:
            raise RunCancelled(self.token.reason)
        self._armed = True

    def _on_cancel(self) -> None:
        task = self._task
        if self._armed and task is not None and not task.done():
            task.cancel("tether: cancel token")


class _Interruptible:
    """:meth:`CancelScope.interruptible` as a plain object: entered several times per
    model round trip, where a generator-based context manager costs several times more."""

    __slots__ = ("scope",)

    def __init__(self, scope: CancelScope) -> None:
        self.scope = scope

    def __enter__(self) -> None:
        self.scope.check()
        self.scope._armed = True

    def __exit__(self, *exc: object) -> None:
        self.scope._armed = False


def _call_soon(loop: asyncio.AbstractEventLoop, callback: Callable[[], None]) -> None:
    if not loop.is_closed():
        loop.call_soon_threadsafe(callback)
