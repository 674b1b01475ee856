"""Deadlines around a model call, the same for every provider.

Provider SDKs bound each socket read (often at 600 s), not the whole call, and a server
that trickles keep-alive bytes never trips a read timeout at all. The runner therefore
wraps every provider stream in :func:`guarded_stream`, which bounds each wait for the
next event by

- the stream idle timeout (``limits.stream_idle_timeout_s``): no event for that long
  raises :class:`~tether.errors.ProviderTimeoutError`, which is retryable; and
- the run's wall-time deadline (``limits.wall_time_s``): reaching it raises
  :class:`~tether.errors.WallTimeExceeded`, which ends the run with outcome ``limit``.

Retries of one model call share a total budget (``limits.retry_budget_s``), checked by
:func:`check_retry_budget` before each wait: the backoff, or the provider's
``retry-after``, is honoured only if it fits in what is left of the budget; otherwise
the call fails with :class:`~tether.errors.RetryBudgetExceeded`.

The runner closes every nested generator it iterates (``contextlib.aclosing``), so the
innermost cleans up first: a consumer that stops iterating ``Agent.stream()`` and calls
``aclose()`` has running tools cancelled and open calls answered before it returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator, AsyncIterator
from typing import TYPE_CHECKING, TypeVar

from .errors import ProviderError, ProviderTimeoutError, RetryBudgetExceeded

if TYPE_CHECKING:
    from .guard import RunGuard
    from .provider import ModelRequest, Provider, ProviderEvent

__all__ = ["check_retry_budget", "guarded_stream", "within_deadline"]

E = TypeVar("E")


async def guarded_stream(
    provider: Provider, request: ModelRequest, guard: RunGuard
) -> AsyncGenerator[ProviderEvent, None]:
    """Yield the events of ``provider.stream(request)``, bounding each wait by ``guard``'s
    deadline and the stream idle timeout of its limits (see the module docstring).

    The provider's stream is closed when this generator ends, whichever way it ends. The
    consumer's time between events does not count against the idle timeout.
    """
    source = provider.stream(request)
    idle = guard.limits.stream_idle_timeout_s
    try:
        while True:
            left = guard.remaining()
            if left is not None and left <= 0:
                raise guard.deadline_error()
            try:
                event = await _next(source, idle, left, provider.name, guard)
            except StopAsyncIteration:
                return
            yield event
    finally:
        aclose = getattr(source, "aclose", None)
        if aclose is not None:
            with contextlib.suppress(Exception):
                await aclose()


async def _next(
    source: AsyncIterator[E], idle: float | None, left: float | None, name: str, guard: RunGuard
) -> E:
    """The next event of ``source``, waiting at most ``idle`` or ``left`` seconds."""
    wait = idle if left is None else (left if idle is None else min(idle, left))
    if wait is None:
        return await anext(source)
    timeout = asyncio.timeout(wait)
    try:
        async with timeout:
            return await anext(source)
    except TimeoutError:
        if not timeout.expired():
            raise
        if idle is not None and wait >= idle:
            raise ProviderTimeoutError(
                f"The {name} stream sent nothing for {idle:g} s (stream idle timeout). "
                "Retrying; raise limits.stream_idle_timeout_s if the model legitimately "
                "pauses this long.",
                provider=name,
            ) from None
        raise guard.deadline_error() from None


@contextlib.asynccontextmanager
async def within_deadline(guard: RunGuard) -> AsyncGenerator[None, None]:
    """Bound the body by ``guard``'s wall-time deadline: raise its ``WallTimeExceeded``
    when the deadline passes (for waits that are not streams, e.g. a compaction)."""
    try:
        async with asyncio.timeout(guard.remaining()):
            yield
    except TimeoutError:
        if not guard.expired():
            raise
        raise guard.deadline_error() from None


def check_retry_budget(
    error: ProviderError, delay: float, started: float, budget: float | None, attempts: int
) -> None:
    """Raise :class:`RetryBudgetExceeded` (from ``error``) if waiting ``delay`` seconds
    more would pass ``budget`` seconds since the model call started (``started`` is a
    ``time.perf_counter()`` value)."""
    if budget is None:
        return
    spent = time.perf_counter() - started
    if spent + delay <= budget:
        return
    asked = getattr(error, "retry_after", None)
    why = (
        f"the provider asked to wait {delay:g} s (retry-after)"
        if asked is not None
        else f"the next wait of {delay:.1f} s"
    )
    raise RetryBudgetExceeded(
        f"Gave up after {attempts} attempt(s) over {spent:.1f} s: {why} would pass the retry "
        f"budget of {budget:g} s (limits.retry_budget_s). Last error: {error}",
        provider=error.provider,
        status_code=error.status_code,
    ) from error
