"""Events yielded by :meth:`tether.Agent.stream`, in the order things happen.

A run yields, per model call, any number of :class:`TextDelta` / :class:`ThinkingDelta`
as the response streams, then one :class:`TurnEnd`; for each tool call a
:class:`ToolStart` and, later, a :class:`ToolEnd`; :class:`Retry` before a failed model
call is tried again (discard the deltas of the failed attempt, they are not in the
history); :class:`Compaction` when the history was shortened; and finally exactly one
:class:`Done` carrying the :class:`~tether.result.RunResult`.

Events are plain slotted dataclasses: they are created on the hot path, once per delta.
"""

from __future__ import annotations

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
