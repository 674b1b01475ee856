"""Bounded waits for session stores: every wait ends by the run's deadline.

A store operation (connect, query, lock wait, Redis command) gets :func:`wait_budget`:
the store's own timeout for one operation, or what is left of the run's wall time
(:func:`tether.deadlines.run_deadline`) when that is less. :func:`bounded` runs the
operation within it and, when time runs out or the caller is cancelled, first calls the
store's ``abort`` (which drops the connection without talking to the server, so nothing
waits on a stalled socket), then cancels the operation: a cancelled run returns at once.
Running out of time raises :class:`~tether.errors.SessionTimeoutError`, or
:class:`~tether.errors.SessionDeadlineExceeded` when the run's deadline was the limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

from ..deadlines import deadline_scope, run_deadline
from ..errors import SessionDeadlineExceeded, SessionTimeoutError

__all__ = ["ENDING_GRACE_S", "WaitBudget", "bounded", "ending_grace", "wait_budget"]

T = TypeVar("T")

ENDING_GRACE_S = 0.5
"""How long a run that is ending (cancelled, failed, out of time) may still wait on its
session store, to answer its open tool calls or release its lease."""

_CLEANUP_S = 0.5
"""How long an abandoned operation may take to unwind after its connection was dropped."""


@dataclass(frozen=True, slots=True)
class WaitBudget:
    """Seconds one store operation may take, and whether the run's deadline set them."""

    seconds: float
    by_run: bool

    def error(self, store: str, operation: str) -> SessionTimeoutError:
        """The error for an operation that used up this budget."""
        if self.by_run:
            return SessionDeadlineExceeded(
                f"The {store} session store did not finish {operation} before the run's "
                "wall-time limit (limits.wall_time_s); the operation was abandoned. Check the "
                "store's health, or raise limits.wall_time_s if it is just slow.",
                store=store,
                operation=operation,
                waited=self.seconds,
            )
        return SessionTimeoutError(
            f"The {store} session store did not finish {operation} within {self.seconds:g} s; "
            "the operation was abandoned. Check that the server is up and not overloaded, or "
            "raise [sessions] settings.timeout_s.",
            store=store,
            operation=operation,
            waited=self.seconds,
        )


def ending_grace() -> contextlib.AbstractContextManager[float | None]:
    """Within the block, store waits end :data:`ENDING_GRACE_S` from now (or by the run's
    deadline, if that is earlier): for the last writes of a run that is ending."""
    return deadline_scope(ENDING_GRACE_S)


def wait_budget(timeout_s: float) -> WaitBudget:
    """The budget of one operation: ``timeout_s``, or the run's time left if less."""
    deadline = run_deadline()
    if deadline is not None:
        left = deadline - time.monotonic()
        if left < timeout_s:
            return WaitBudget(max(left, 0.0), True)
    return WaitBudget(timeout_s, False)


async def bounded(
    operation: Coroutine[Any, Any, T],
    budget: WaitBudget,
    *,
    store: str,
    what: str,
    abort: Callable[[], Awaitable[None]] | None = None,
) -> T:
    """Await ``operation`` for at most ``budget.seconds``.

    On timeout or cancellation of the caller, ``abort`` runs first (it must not wait on
    the network), then the operation is cancelled and given a moment to unwind.

    :raises SessionTimeoutError: the budget ran out (``SessionDeadlineExceeded`` when it
        was the run's deadline).
    """
    if budget.seconds <= 0:
        operation.close()
        raise budget.error(store, what)
    task = asyncio.ensure_future(operation)
    try:
        done, _ = await asyncio.wait((task,), timeout=budget.seconds)
    except BaseException:
        await _abandon(task, abort)
        raise
    if not done:
        await _abandon(task, abort)
        if task.done() and not task.cancelled() and task.exception() is None:
            return task.result()  # it finished while being abandoned
        raise budget.error(store, what)
    return task.result()


async def _abandon(task: asyncio.Future[Any], abort: Callable[[], Awaitable[None]] | None) -> None:
    if abort is not None and not task.done():
        with contextlib.suppress(Exception):
            await abort()
    task.cancel()
    with contextlib.suppress(BaseException):
        await asyncio.wait((task,), timeout=_CLEANUP_S)
    if task.done() and not task.cancelled():
        task.exception()  # retrieved: never "exception was never retrieved"
