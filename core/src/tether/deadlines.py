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

Waits that are not model calls — a session store's connect, query or lock wait — read
the run's deadline from :func:`run_deadline`, set for the whole run (opening its session
included) by :func:`deadline_scope`, and give up by then (see
:mod:`tether.sessions.waits`).

The runner closes every nested generator it iterates (``contextlib.aclosing``), so the
innermost cleans up first: a consumer that stops iterating ``Agent.stream()`` and calls
``aclose()`` has running tools cancelled and open calls answered before it returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import time
from collections.abc import AsyncGenerator, Iterator
from typing import TYPE_CHECKING, Any, cast

from .errors import ProviderError, ProviderTimeoutError, RetryBudgetExceeded, WallTimeExceeded
from .nested_streams import nested, untracked

if TYPE_CHECKING:
    from .guard import RunGuard
    from .provider import ModelCapabilities, ModelRequest, ModelResponse, Provider, ProviderEvent

__all__ = [
    "GuardedProvider",
    "check_retry_budget",
    "deadline_scope",
    "guarded_provider",
    "guarded_stream",
    "run_deadline",
    "within_deadline",
]


async def guarded_stream(
    provider: Provider, request: ModelRequest, guard: RunGuard
) -> AsyncGenerator[ProviderEvent, None]:
    """Yield the events of ``provider.stream(request)``, bounding each wait by ``guard``'s
    deadline and the stream idle timeout of its limits (see the module docstring).

    The provider's stream is closed when this generator ends, whichever way it ends. The
    consumer's time between events does not count against the idle timeout. One timer
    per stream watches the waits (an event costs two attribute writes, not a timeout).
    """
    source = untracked(provider.stream(request))
    watch = _Watchdog(guard, provider.name)
    try:
        while True:
            if watch.expired:
                raise guard.deadline_error()
            watch.waiting = True
            watch.last = watch.loop.time()
            try:
                event = await anext(source)
            except StopAsyncIteration:
                return
            except asyncio.CancelledError:
                error = watch.claim()
                if error is None:
                    raise
                raise error from None
            finally:
                watch.waiting = False
            yield event
    finally:
        watch.stop()
        aclose = getattr(source, "aclose", None)
        if aclose is not None:
            with contextlib.suppress(Exception):
                await aclose()


class _Watchdog:
    """Cancels the task waiting in a stream when it waited ``idle`` seconds for one event,
    or when the run's deadline passes; :meth:`claim` turns that cancellation into the
    error to raise."""

    __slots__ = (
        "_cancelling",
        "_fired",
        "_guard",
        "_handle",
        "_idle",
        "_name",
        "_task",
        "_until",
        "expired",
        "last",
        "loop",
        "waiting",
    )

    def __init__(self, guard: RunGuard, name: str) -> None:
        self.loop = asyncio.get_running_loop()
        self._task = asyncio.current_task()
        self._cancelling = self._task.cancelling() if self._task is not None else 0
        self._guard = guard
        self._name = name
        self._idle = guard.limits.stream_idle_timeout_s
        left = guard.remaining()
        self._until = None if left is None else self.loop.time() + left
        self._fired: BaseException | None = None
        self.expired = False
        self.waiting = False
        self.last = self.loop.time()
        self._handle: asyncio.TimerHandle | None = None
        self._schedule(self.loop.time())

    def _schedule(self, now: float) -> None:
        due = self._until
        if self._idle is not None:
            due = now + self._idle if due is None else min(due, now + self._idle)
        if due is not None and self._task is not None:
            self._handle = self.loop.call_at(due, self._check)

    def _check(self) -> None:
        now = self.loop.time()
        if self._until is not None and now >= self._until:
            self._fire(self._guard.deadline_error())
        elif self.waiting and self._idle is not None and now - self.last >= self._idle:
            self._fire(
                ProviderTimeoutError(
                    f"The {self._name} stream sent nothing for {self._idle:g} s (stream idle "
                    "timeout). Retrying; raise limits.stream_idle_timeout_s if the model "
                    "legitimately pauses this long.",
                    provider=self._name,
                )
            )
        else:
            self._schedule(self.last if self.waiting else now)

    def _fire(self, error: BaseException) -> None:
        self._handle = None
        if isinstance(error, WallTimeExceeded):
            self.expired = True  # also raised at the next wait, if the consumer has control now
        if self.waiting and self._task is not None and not self._task.done():
            self._fired = error
            self._task.cancel("tether: stream deadline")

    def claim(self) -> BaseException | None:
        """The error to raise for the cancellation that just arrived, if the watchdog
        caused it (and nobody else also cancelled the task)."""
        error, self._fired = self._fired, None
        if error is None or self._task is None:
            return None
        if self._task.uncancel() > self._cancelling:
            return None
        return error

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None


class GuardedProvider:
    """``provider`` with every stream bounded like the run's own model calls (idle
    timeout, wall-time deadline); handed to compaction strategies, whose summary calls
    would otherwise wait as long as the SDK lets them. Everything else is delegated."""

    def __init__(self, provider: Provider, guard: RunGuard) -> None:
        self._provider = provider
        self._guard = guard
        self.name = provider.name

    def __getattr__(self, name: str) -> Any:
        return getattr(self._provider, name)

    def stream(self, request: ModelRequest) -> AsyncGenerator[ProviderEvent, None]:
        return guarded_stream(self._provider, request, self._guard)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        from .provider import ModelResponse

        response: ModelResponse | None = None
        async with nested(self.stream(request)) as events:
            async for event in events:
                if isinstance(event, ModelResponse):
                    response = event
        if response is None:
            raise ProviderError(
                f"{self.name}: the stream ended without a response", provider=self.name
            )
        return response

    def capabilities(self, model: str) -> ModelCapabilities:
        return self._provider.capabilities(model)


def guarded_provider(provider: Provider, guard: RunGuard) -> Provider:
    """:class:`GuardedProvider` for ``provider``, typed as the provider it stands for."""
    return cast("Provider", GuardedProvider(provider, guard))


@contextlib.asynccontextmanager
async def within_deadline(guard: RunGuard) -> AsyncGenerator[None, None]:
    """Bound the body by ``guard``'s wall-time deadline: raise its ``WallTimeExceeded``
    when the deadline passes (for waits that are not streams, e.g. a compaction)."""
    if guard.deadline is None:
        yield
        return
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


_RUN_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "tether_run_deadline", default=None
)


def run_deadline() -> float | None:
    """The ``time.monotonic()`` value by which the current run must end, or ``None``
    outside a run or for a run without ``limits.wall_time_s``."""
    return _RUN_DEADLINE.get()


@contextlib.contextmanager
def deadline_scope(seconds: float | None) -> Iterator[float | None]:
    """Within the block (and tasks started in it), :func:`run_deadline` is ``seconds``
    from now, or the enclosing scope's deadline when that is earlier (a run inside a tool
    never outlives its caller). ``None`` keeps the enclosing deadline. Yields it."""
    outer = _RUN_DEADLINE.get()
    deadline = outer
    if seconds is not None:
        mine = time.monotonic() + seconds
        deadline = mine if outer is None else min(outer, mine)
    token = _RUN_DEADLINE.set(deadline)
    try:
        yield deadline
    finally:
        try:
            _RUN_DEADLINE.reset(token)
        except ValueError:  # closed from another context (a generator finalised late)
            _RUN_DEADLINE.set(outer)
