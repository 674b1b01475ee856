"""What event observers can learn beyond the event itself, and where tool bodies run.

Observers (the ``register_observers`` hook) receive bare events. Two context variables
tell them the rest:

- :func:`current_run` — during an observer callback, the :class:`~tether.events.RunStart`
  of the run that emitted the event. Runs interleave (a tool may run another agent while
  sibling tools run in parallel), so this is how an observer files an event under its run.
- :func:`current_tool_call` — inside a tool's body, which run and call it belongs to. A
  run started there records them as its parent (``RunStart.parent_run_id`` /
  ``parent_call_id``), which is how sub-agent runs nest under the call that started them.

An observer may name the event types it takes in an ``observed_events`` attribute (a
collection of event classes): it is then called for those only, and every other event
costs the run one set lookup for it. Without the attribute it takes every event; a run
without observers hands its events to nobody and pays nothing for observation. An
observer that keeps state per run names :class:`~tether.events.RunAborted` beside
:class:`~tether.events.Done`: a run left by an exception ends with the former.

An observer object may also define ``tool_scope(call: ToolCallInfo)`` returning a context
manager (or ``None``); the core enters it around the tool's body, in the task that runs
the tool, so whatever the observer makes current there (a tracing span) is seen by code
the tool calls (an instrumented HTTP client propagating trace context).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from contextvars import ContextVar
from dataclasses import dataclass
from types import FunctionType, MethodType
from typing import TYPE_CHECKING, Any, TypeVar

from .errors import PluginError
from .events import Done, RunAborted, observer_failed
from .messages import new_id
from .nested_streams import nested
from .tool_execution import ToolExecutor

if TYPE_CHECKING:
    from .events import RunStart
    from .messages import ToolCallBlock, ToolResultBlock
    from .run_settings import RunSettings

__all__ = [
    "ObservedToolExecutor",
    "RunObservation",
    "ToolCallInfo",
    "current_run",
    "current_tool_call",
    "new_run_id",
    "observed_events",
    "run_start",
]

T = TypeVar("T")

_CURRENT_RUN: ContextVar[RunStart | None] = ContextVar("tether_current_run", default=None)
_CURRENT_CALL: ContextVar[ToolCallInfo | None] = ContextVar("tether_tool_call", default=None)


@dataclass(frozen=True, slots=True)
class ToolCallInfo:
    """A tool call being executed: the run it belongs to, its call id and tool name."""

    run_id: str
    call_id: str
    name: str


def current_run() -> RunStart | None:
    """The run whose event is being observed (``None`` outside observer callbacks)."""
    return _CURRENT_RUN.get()


def current_tool_call() -> ToolCallInfo | None:
    """The tool call whose body is running (``None`` outside tool bodies)."""
    return _CURRENT_CALL.get()


def new_run_id() -> str:
    """A unique run id: 20 random hex digits (``tether`` shows and accepts the first 12),
    drawn like message ids (:func:`tether.messages.new_id`), without a system call."""
    return new_id()[:20]


def run_start(settings: RunSettings, session_id: str, prompt: str | None = None) -> RunStart:
    """The :class:`~tether.events.RunStart` of a new run with ``settings``: a fresh id, and
    the run and call of the tool body it starts in, if any."""
    import time

    from .events import RunStart

    parent = current_tool_call()
    return RunStart(
        run_id=new_run_id(),
        model=settings.model_string,
        provider=settings.provider.name,
        session_id=session_id,
        started=time.time(),
        parent_run_id=parent.run_id if parent is not None else None,
        parent_call_id=parent.call_id if parent is not None else None,
        temperature=settings.temperature,
        max_output_tokens=settings.max_output_tokens,
        tools=tuple(settings.tools),
        prompt=prompt,
    )


class RunObservation:
    """Hands one run's events to its observers (with :func:`current_run` set), and, used
    as a context manager around the run, a :class:`~tether.events.RunAborted` when the run
    is left by an exception (or the consumer stopped iterating) before ``Done``."""

    __slots__ = ("_by_kind", "_calls", "done", "elapsed", "kinds", "observers", "start")

    def __init__(
        self,
        start: RunStart,
        observers: Sequence[Callable[[Any], None]],
        elapsed: Callable[[], float],
    ) -> None:
        self.start = start
        self.observers = observers
        self._calls = tuple(
            (_direct_call(observer), observed_events(observer)) for observer in observers
        )
        self._by_kind: dict[type, tuple[Callable[[Any], None], ...]] = {}
        self.kinds: frozenset[type] | None = _union(named for _, named in self._calls)
        """The event types any observer of the run takes (``None``: every type). The
        runner hands :meth:`notify` only these: an event nobody named costs one set lookup."""
        self.elapsed = elapsed
        self.done = False

    def notify(self, event: Any) -> None:
        """Give ``event`` to each observer that takes its type, in turn, while
        :func:`current_run` is this run's start. An observer that raises is logged on the
        ``tether.observers`` logger and skipped: observers never break a run
        (:func:`tether.events.notify`, inlined: this runs for every event of every
        observed run)."""
        kind = type(event)
        calls = self._by_kind.get(kind)
        if calls is None:
            calls = self._by_kind[kind] = tuple(
                call for call, named in self._calls if named is None or kind in named
            )
        if calls:
            token = _CURRENT_RUN.set(self.start)
            try:
                for observer in calls:
                    try:
                        observer(event)
                    except Exception:
                        observer_failed(observer)
            finally:
                _CURRENT_RUN.reset(token)
        if kind is Done:
            self.done = True

    async def observe(self, events: AsyncGenerator[Any, None]) -> AsyncGenerator[Any, None]:
        """Yield the run's ``events`` (closed with it), each first handed to the observers
        that take its type, and :class:`~tether.events.RunAborted` to them if the run is
        left early. A run refused before its :class:`~tether.events.RunStart` (its session
        in use) is not observed."""
        notify, kinds = self.notify, self.kinds
        async with nested(events):
            start = await anext(events)
            with self:
                if kinds is None or type(start) in kinds:
                    notify(start)
                yield start
                async for event in events:
                    if kinds is None or type(event) in kinds:
                        notify(event)
                    yield event

    def __enter__(self) -> RunObservation:
        return self

    def __exit__(self, kind: Any, error: BaseException | None, tb: Any) -> None:
        if error is not None and self.observers and not self.done:
            self.notify(RunAborted(error, self.elapsed()))


def observed_events(observer: object) -> frozenset[type] | None:
    """The event types ``observer`` takes: its ``observed_events`` attribute, if it has
    one (``None``: every event). An observer that names its events is not called, and
    costs the run almost nothing, for the others (a tracer that ignores text deltas)."""
    named = getattr(observer, "observed_events", None)
    if named is None:
        return None
    if isinstance(named, (type, str)) or not all(isinstance(kind, type) for kind in named):
        raise PluginError(
            f"Observer {observer!r} has observed_events={named!r}: expected a collection "
            "of event classes, e.g. (tether.events.ToolStart, tether.events.ToolEnd), or "
            "no such attribute to take every event."
        )
    return frozenset(named)


def _union(named: Iterable[frozenset[type] | None]) -> frozenset[type] | None:
    kinds: set[type] = set()
    for one in named:
        if one is None:
            return None
        kinds |= one
    return frozenset(kinds)


def _direct_call(observer: Callable[[Any], None]) -> Callable[[Any], None]:
    """What to call to notify ``observer``: the bound ``__call__`` of an instance of a
    class defining it in Python (calling that skips the lookup each call of the instance
    makes), else ``observer`` itself."""
    call: object = type(observer).__call__
    if isinstance(call, FunctionType):
        return MethodType(call, observer)
    return observer


def tool_scopes(observers: Sequence[Any]) -> tuple[Callable[[ToolCallInfo], Any], ...]:
    """The ``tool_scope`` methods of the observers that define one."""
    scopes = (getattr(observer, "tool_scope", None) for observer in observers)
    return tuple(scope for scope in scopes if callable(scope))


async def in_tool_scope(
    info: ToolCallInfo,
    scopes: Sequence[Callable[[ToolCallInfo], AbstractContextManager[Any] | None]],
    body: Callable[[], Awaitable[T]],
) -> T:
    """Await ``body()`` with :func:`current_tool_call` set to ``info`` and every observer
    scope entered (a scope that fails to enter is skipped: observers never break tools)."""
    token = _CURRENT_CALL.set(info)
    try:
        if not scopes:
            return await body()
        if len(scopes) == 1:
            try:
                manager = scopes[0](info)
            except Exception:
                _scope_failed(scopes[0])
                manager = None
            if manager is None:
                return await body()
            with manager:
                return await body()
        with _entered(info, scopes):
            return await body()
    finally:
        _CURRENT_CALL.reset(token)


def _scope_failed(scope: Callable[[ToolCallInfo], Any]) -> None:
    import logging

    logging.getLogger("tether.observers").exception("tool scope of observer %r raised", scope)


@contextlib.contextmanager
def _entered(
    info: ToolCallInfo,
    scopes: Sequence[Callable[[ToolCallInfo], AbstractContextManager[Any] | None]],
) -> Iterator[None]:
    with contextlib.ExitStack() as stack:
        for scope in scopes:
            try:
                manager = scope(info)
                if manager is not None:
                    stack.enter_context(manager)
            except Exception:
                _scope_failed(scope)
        yield


class ObservedToolExecutor(ToolExecutor):
    """A :class:`~tether.tool_execution.ToolExecutor` that runs each call with
    :func:`current_tool_call` set (so runs the tool starts nest under it) and the
    observers' tool scopes entered. Call :meth:`observe` before the first call."""

    run_id = ""
    scopes: tuple[Callable[[ToolCallInfo], Any], ...] = ()

    def observe(self, run_id: str, observers: Sequence[Any]) -> None:
        self.run_id = run_id
        self.scopes = tool_scopes(observers)

    async def execute(self, call: ToolCallBlock) -> ToolResultBlock:
        info = ToolCallInfo(self.run_id, call.id, call.name)
        run_call = super().execute
        return await in_tool_scope(info, self.scopes, lambda: run_call(call))
