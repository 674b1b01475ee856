"""Events yielded by :meth:`tether.Agent.stream`, in the order things happen.

A run yields, per model call, any number of :class:`TextDelta` / :class:`ThinkingDelta`
as the response streams, then one :class:`TurnEnd`; for each tool call a
:class:`ToolStart` and, later, a :class:`ToolEnd`; :class:`Retry` before a failed model
call is tried again (discard the deltas of the failed attempt, they are not in the
history); :class:`Compaction` when the history was shortened; and finally exactly one
:class:`Done` carrying the :class:`~tether.result.RunResult`.

Events are plain slotted dataclasses: they are created on the hot path, once per delta.
:func:`event_to_dict` gives any event as a JSON-ready object (the CLI's ``--json`` lines,
and what observers that log or export events should write).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

from .messages import StopReason, ToolResultBlock, Usage

if TYPE_CHECKING:
    from .result import RunResult

__all__ = [
    "Compaction",
    "Done",
    "Retry",
    "RunEvent",
    "SessionRepaired",
    "TextDelta",
    "ThinkingDelta",
    "ToolEnd",
    "ToolStart",
    "TurnEnd",
    "event_to_dict",
    "notify",
]


@dataclass(slots=True)
class TextDelta:
    """A piece of the model's visible answer, as soon as the provider sent it."""

    text: str


@dataclass(slots=True)
class ThinkingDelta:
    """A piece of the model's reasoning (empty ``text`` with a ``signature`` is allowed)."""

    text: str
    signature: str | None = None


@dataclass(slots=True)
class ToolStart:
    """A tool call is about to run (after its arguments were validated, or failed to)."""

    call_id: str
    name: str
    arguments: dict[str, Any]


@dataclass(slots=True)
class ToolEnd:
    """A tool call finished; ``result`` is exactly what the model will see."""

    call_id: str
    name: str
    result: ToolResultBlock
    duration: float
    interrupted: bool = False
    """The call did not finish: the run was cancelled or hit a limit while it ran."""

    @property
    def is_error(self) -> bool:
        return self.result.is_error


@dataclass(slots=True)
class Compaction:
    """The history was compacted by ``strategy``; token counts are estimates."""

    strategy: str
    tokens_before: int
    tokens_after: int
    messages_before: int
    messages_after: int


@dataclass(slots=True)
class Retry:
    """A model call failed with a retryable error and will be tried again after ``delay`` s.

    Deltas received during the failed attempt are not part of the history.
    """

    attempt: int
    delay: float
    error: BaseException


@dataclass(slots=True)
class TurnEnd:
    """One model call finished."""

    model: str
    stop_reason: StopReason
    usage: Usage
    latency: float
    cost: float | None = None


@dataclass(slots=True)
class SessionRepaired:
    """The session was damaged (e.g. by a crash) and repaired when it was loaded.

    Yielded once, at the start of the first run on that session object. ``report`` is a
    :class:`~tether.sessions.RepairReport` saying what was changed.
    """

    report: Any


@dataclass(slots=True)
class Done:
    """The run ended; ``result`` says how."""

    result: RunResult = field(repr=False)


RunEvent: TypeAlias = (
    TextDelta
    | ThinkingDelta
    | ToolStart
    | ToolEnd
    | Compaction
    | Retry
    | TurnEnd
    | SessionRepaired
    | Done
)


def notify(observers: Iterable[Callable[[RunEvent], None]], event: RunEvent) -> None:
    """Give ``event`` to each observer in turn. An observer that raises is logged on the
    ``tether.observers`` logger and skipped: observers never break a run."""
    for observer in observers:
        try:
            observer(event)
        except Exception:
            import logging

            logging.getLogger("tether.observers").exception("event observer %r raised", observer)


def event_to_dict(event: RunEvent) -> dict[str, Any]:
    """A JSON-ready, flat object for ``event`` whose ``type`` names the event
    (``text_delta``, ``thinking_delta``, ``tool_start``, ``tool_end``, ``compaction``,
    ``retry``, ``turn_end``, ``session_repaired``, ``done``). Errors are given as their
    message and class name. Raises :class:`TypeError` for anything that is not an event.
    """
    serialise = _SERIALISERS.get(type(event))
    if serialise is None:
        for kind, candidate in _SERIALISERS.items():
            if isinstance(event, kind):
                serialise = candidate
                break
        else:
            raise TypeError(f"Not a run event: {event!r}")
    return serialise(event)


def _error_fields(error: BaseException | None) -> dict[str, Any]:
    if error is None:
        return {"error": None, "error_type": None}
    return {"error": str(error), "error_type": type(error).__name__}


def _tool_end(event: ToolEnd) -> dict[str, Any]:
    content = event.result.content
    return {
        "type": "tool_end",
        "call_id": event.call_id,
        "name": event.name,
        "is_error": event.is_error,
        "interrupted": event.interrupted,
        "duration": event.duration,
        "content": content
        if isinstance(content, str)
        else [b.model_dump(mode="json") for b in content],
    }


def _done(event: Done) -> dict[str, Any]:
    result = event.result
    return {
        "type": "done",
        "outcome": result.outcome.value,
        "output": result.output,
        "session_id": result.session_id,
        "usage": result.usage.model_dump(mode="json"),
        "cost": result.cost,
        "turns": result.turns,
        "tool_calls": result.tool_calls,
        "tool_errors": result.tool_errors,
        "retries": result.retries,
        "stop_reason": result.stop_reason.value if result.stop_reason is not None else None,
        "duration": result.duration,
        **_error_fields(result.error),
    }


def _session_repaired(event: SessionRepaired) -> dict[str, Any]:
    summary = getattr(event.report, "summary", None)
    return {
        "type": "session_repaired",
        "summary": summary() if callable(summary) else str(event.report),
    }


_SERIALISERS: dict[type[Any], Callable[[Any], dict[str, Any]]] = {
    TextDelta: lambda e: {"type": "text_delta", "text": e.text},
    ThinkingDelta: lambda e: {"type": "thinking_delta", "text": e.text, "signature": e.signature},
    ToolStart: lambda e: {
        "type": "tool_start",
        "call_id": e.call_id,
        "name": e.name,
        "arguments": e.arguments,
    },
    ToolEnd: _tool_end,
    Compaction: lambda e: {
        "type": "compaction",
        "strategy": e.strategy,
        "tokens_before": e.tokens_before,
        "tokens_after": e.tokens_after,
        "messages_before": e.messages_before,
        "messages_after": e.messages_after,
    },
    Retry: lambda e: {
        "type": "retry",
        "attempt": e.attempt,
        "delay": e.delay,
        "error": str(e.error),
        "error_type": type(e.error).__name__,
    },
    TurnEnd: lambda e: {
        "type": "turn_end",
        "model": e.model,
        "stop_reason": e.stop_reason.value,
        "usage": e.usage.model_dump(mode="json"),
        "latency": e.latency,
        "cost": e.cost,
    },
    SessionRepaired: _session_repaired,
    Done: _done,
}
