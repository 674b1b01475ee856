"""Events yielded by :meth:`tether.Agent.stream`, in the order things happen.

A run yields first one :class:`RunStart` (who the run is: its id, model, parent), then,
per model call, any number of :class:`TextDelta` / :class:`ThinkingDelta`
as the response streams, then one :class:`TurnEnd`; for each tool call a
:class:`ToolStart` and, later, a :class:`ToolEnd`; :class:`Retry` before a failed model
call is tried again (discard the deltas of the failed attempt, they are not in the
history); :class:`Compaction` when the history was shortened; :class:`CacheWarning` when
a long run's prompt-cache hit ratio is low; and finally exactly one :class:`Done` carrying
the :class:`~tether.result.RunResult`.

Event observers (the ``register_observers`` hook) see the same events, plus one that is
never yielded: :class:`RunAborted`, when the run ends with an exception instead of
``Done``. During an observer callback :func:`tether.observe.current_run` is the
:class:`RunStart` of the run that emitted the event (runs nest: a tool may run an agent).

Events are plain slotted dataclasses: they are created on the hot path, once per delta.
:func:`event_to_dict` gives any event as a JSON-ready object (the CLI's ``--json`` lines,
and what observers that log or export events should write).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

from .messages import StopReason, ToolResultBlock, Usage

if TYPE_CHECKING:
    from .result import RunResult

__all__ = [
    "CacheWarning",
    "Compaction",
    "Done",
    "Nested",
    "PartialOutput",
    "PlanUpdate",
    "Reflection",
    "Retry",
    "RunAborted",
    "RunEvent",
    "RunStart",
    "SessionRepaired",
    "StepEnd",
    "StepStart",
    "TextDelta",
    "ThinkingDelta",
    "ToolEnd",
    "ToolProgress",
    "ToolStart",
    "TurnEnd",
    "event_to_dict",
    "notify",
]


@dataclass(slots=True)
class RunStart:
    """A run began. Always the first event of a run.

    ``run_id`` is unique per run. A run started from inside a tool call of another run
    (a sub-agent, or any agent run by a tool) names that run and call in
    ``parent_run_id`` and ``parent_call_id``. ``model`` is ``provider/model``. ``started``
    is the wall-clock time (``time.time()``).
    """

    run_id: str
    model: str
    provider: str
    session_id: str
    started: float
    parent_run_id: str | None = None
    parent_call_id: str | None = None
    temperature: float | None = None
    max_output_tokens: int | None = None
    tools: tuple[str, ...] = ()
    prompt: str | None = None
    """The text of the run's new user message (``None`` when it has none), for observers
    that record content."""


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
    """A tool call is about to run (after its arguments were validated, or failed to).

    A call started early, while its response was still streaming (see
    :mod:`tether.early_dispatch`), is announced here too, in declared order after the
    response's ``TurnEnd``; its ``ToolEnd.duration`` counts from when it really started."""

    call_id: str
    name: str
    arguments: dict[str, Any]


@dataclass(slots=True)
class ToolProgress:
    """A running tool call reported how far it got (``ToolContext.report_progress``; an
    MCP server's ``notifications/progress``). Yielded while the call runs, between its
    ``ToolStart`` and its ``ToolEnd``."""

    call_id: str
    name: str
    progress: float
    total: float | None = None
    message: str | None = None


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
    """One model call finished.

    ``latency`` runs from the first attempt's request to the response, retries included
    (each retry was announced by a :class:`Retry` event just before);
    ``time_to_first_token`` from the successful attempt's request to its first delta
    (``None`` when nothing streamed). ``cost`` is ``None`` when the pricing is unknown.
    """

    model: str
    stop_reason: StopReason
    usage: Usage
    latency: float
    cost: float | None = None
    time_to_first_token: float | None = None


@dataclass(slots=True)
class CacheWarning:
    """A long run's prompt-cache hit ratio fell under the configured threshold.

    The cached prefix (system prompt, tools, early history) most likely changed between
    turns, so every turn pays full input price. Checked after every
    ``warn_after_turns``-th :class:`TurnEnd` (``[cache]`` in the configuration), only for
    models that support prompt caching.
    """

    hit_ratio: float
    threshold: float
    turns: int

    @property
    def message(self) -> str:
        return (
            f"Prompt-cache hit ratio is {self.hit_ratio:.0%} after {self.turns} model calls, "
            f"under {self.threshold:.0%}: the cached prefix probably changed between turns "
            "(a system prompt or tool list that is not byte-stable)."
        )


@dataclass(slots=True)
class RunAborted:
    """Seen only by observers, never yielded: the run ended with ``error`` (an exception
    that propagates to the caller, or the consumer stopped iterating) instead of ``Done``."""

    error: BaseException
    duration: float


@dataclass(slots=True)
class SessionRepaired:
    """The session was damaged (e.g. by a crash) and repaired when it was loaded.

    Yielded once, at the start of the first run on that session object. ``report`` is a
    :class:`~tether.sessions.RepairReport` saying what was changed.
    """

    report: Any


@dataclass(slots=True)
class PartialOutput:
    """The structured output parsed so far from a streamed native-JSON answer.

    ``value`` is plain JSON data (dicts, lists, ...), not yet validated: fields may be
    missing or cut short. The validated object is ``RunResult.output``.
    """

    value: Any


@dataclass(slots=True)
class Nested:
    """An event of a sub-agent's run, surfacing in the parent's stream.

    ``path`` holds the ids of the tool calls that started each sub-agent, outermost
    first: ``("call_1",)`` for a child of this run, ``("call_1", "call_7")`` for a
    grandchild. ``agent`` is the name of the sub-agent tool that produced ``event``.
    The child's events arrive in order, between the parent's ``ToolStart`` and
    ``ToolEnd`` of ``path[0]``.
    """

    path: tuple[str, ...]
    agent: str
    event: RunEvent

    @property
    def call_id(self) -> str:
        """The tool call of this run that started the sub-agent."""
        return self.path[0]

    @property
    def depth(self) -> int:
        return len(self.path)


@dataclass(slots=True)
class PlanUpdate:
    """A strategy made (or, after a failed step, remade) its plan: ``steps`` from the
    current step on; ``reason`` says why it was remade (``None`` for the first plan)."""

    steps: list[str]
    reason: str | None = None


@dataclass(slots=True)
class StepStart:
    """A plan's step ``index`` (0-based, counting done steps) starts."""

    index: int
    step: str


@dataclass(slots=True)
class StepEnd:
    """A plan's step ended; ``ok`` is false when it failed, ``summary`` says how."""

    index: int
    step: str
    ok: bool
    summary: str


@dataclass(slots=True)
class Reflection:
    """An attempt was judged failed; ``text`` is the reflection given to the next one."""

    attempt: int
    feedback: str
    text: str


@dataclass(slots=True)
class Done:
    """The run ended; ``result`` says how."""

    result: RunResult = field(repr=False)


RunEvent: TypeAlias = (
    RunStart
    | TextDelta
    | ThinkingDelta
    | ToolStart
    | ToolProgress
    | ToolEnd
    | Compaction
    | Retry
    | TurnEnd
    | SessionRepaired
    | CacheWarning
    | RunAborted
    | PartialOutput
    | Nested
    | PlanUpdate
    | StepStart
    | StepEnd
    | Reflection
    | Done
)


def notify(observers: Iterable[Callable[[RunEvent], None]], event: RunEvent) -> None:
    """Give ``event`` to each observer in turn. An observer that raises is logged on the
    ``tether.observers`` logger and skipped: observers never break a run."""
    for observer in observers:
        try:
            observer(event)
        except Exception:
            observer_failed(observer)


def observer_failed(observer: Callable[[RunEvent], None]) -> None:
    """Log the exception being handled, raised by ``observer``, on ``tether.observers``."""
    import logging

    logging.getLogger("tether.observers").exception("event observer %r raised", observer)


def event_to_dict(event: RunEvent) -> dict[str, Any]:
    """A JSON-ready, flat object for ``event`` whose ``type`` names the event
    (``run_start``, ``text_delta``, ``thinking_delta``, ``tool_start``, ``tool_progress``,
    ``tool_end``, ``compaction``, ``retry``, ``turn_end``, ``cache_warning``,
    ``session_repaired``, ``run_aborted``, ``partial_output``, ``nested`` (a sub-agent's
    event under ``event``), ``done``). Errors are given as their
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
        "output": _jsonable(result.output),
        "session_id": result.session_id,
        "usage": result.usage.model_dump(mode="json"),
        "cost": result.cost,
        "cost_breakdown": asdict(result.cost_breakdown)
        if result.cost_breakdown is not None
        else None,
        "cache_hit_ratio": result.cache_hit_ratio,
        "run_id": result.run_id,
        "turns": result.turns,
        "tool_calls": result.tool_calls,
        "tool_errors": result.tool_errors,
        "retries": result.retries,
        "stop_reason": result.stop_reason.value if result.stop_reason is not None else None,
        "duration": result.duration,
        **_error_fields(result.error),
        **({"pending": [_jsonable(p) for p in result.pending]} if result.pending else {}),
    }


def _jsonable(value: Any) -> Any:
    """Plain JSON data for any value pydantic can serialise (models, dataclasses, ...)."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    import pydantic_core

    return pydantic_core.to_jsonable_python(value)


def _nested(event: Nested) -> dict[str, Any]:
    return {
        "type": "nested",
        "path": list(event.path),
        "agent": event.agent,
        "event": event_to_dict(event.event),
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
    ToolProgress: lambda e: {
        "type": "tool_progress",
        "call_id": e.call_id,
        "name": e.name,
        "progress": e.progress,
        "total": e.total,
        "message": e.message,
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
        "time_to_first_token": e.time_to_first_token,
        "cost": e.cost,
    },
    RunStart: lambda e: {"type": "run_start", **asdict(e)},
    CacheWarning: lambda e: {
        "type": "cache_warning",
        "hit_ratio": e.hit_ratio,
        "threshold": e.threshold,
        "turns": e.turns,
        "message": e.message,
    },
    RunAborted: lambda e: {"type": "run_aborted", "duration": e.duration, **_error_fields(e.error)},
    SessionRepaired: _session_repaired,
    PartialOutput: lambda e: {"type": "partial_output", "value": _jsonable(e.value)},
    PlanUpdate: lambda e: {"type": "plan_update", "steps": list(e.steps), "reason": e.reason},
    StepStart: lambda e: {"type": "step_start", "index": e.index, "step": e.step},
    StepEnd: lambda e: {
        "type": "step_end",
        "index": e.index,
        "step": e.step,
        "ok": e.ok,
        "summary": e.summary,
    },
    Reflection: lambda e: {
        "type": "reflection",
        "attempt": e.attempt,
        "feedback": e.feedback,
        "text": e.text,
    },
    Nested: _nested,
    Done: _done,
}
