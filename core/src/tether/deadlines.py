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
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import TypeVar

from .errors import ProviderError, ProviderTimeoutError, RetryBudgetExceeded

__all__ = ["check_retry_budget", "guarded_stream"]

E = TypeVar("E")


async def guarded_stream(
    source: AsyncIterator[E],
    *,
    idle_timeout: float | None,
    remaining: Callable[[], float | None],
    on_deadline: Callable[[], BaseException],
    provider: str,
) -> AsyncGenerator[E, None]:
    """Yield ``source``'s events, bounding each wait (see the module docstring).

    ``remaining()`` gives the seconds left before the run's deadline (``None``: none);
    ``on_deadline()`` builds the error raised when it passes. ``source`` is closed when
    this generator ends, whichever way it ends. The consumer's time between events does
    not count against the idle timeout.
    """
    loop = asyncio.get_running_loop()
    try:
        while True:
            left = remaining()
            if left is not None and left <= 0:
                raise on_deadline()
            wait = _shortest(idle_timeout, left)
            if wait is None:
                try:
                    event = await anext(source)
                except StopAsyncIteration:
                    return
            else:
                timeout = asyncio.timeout_at(loop.time() + wait)
                try:
                    async with timeout:
                        event = await anext(source)
                except StopAsyncIteration:
                    return
                except TimeoutError:
                    if not timeout.expired():
                        raise
                    if idle_timeout is not None and wait >= idle_timeout:
                        raise ProviderTimeoutError(
                            f"The {provider} stream sent nothing for {idle_timeout:g} s (stream "
                            "idle timeout). Retrying; raise limits.stream_idle_timeout_s if the "
                            "model legitimately pauses this long.",
                            provider=provider,
                        ) from None
                    raise on_deadline() from None
            yield event
    finally:
        aclose = getattr(source, "aclose", None)
        if aclose is not None:
            with contextlib.suppress(Exception):
                await aclose()


def check_retry_budget(
    error: ProviderError, *, delay: float, started: float, budget: float | None, attempts: int
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


def _shortest(a: float | None, b: float | None) -> float | None:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)
