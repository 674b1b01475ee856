"""What a run produced: :class:`RunResult` and its :class:`Outcome`."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from .errors import TetherError
from .messages import Message, StopReason, Usage

__all__ = ["Outcome", "RunResult"]


class Outcome(StrEnum):
    """How a run ended. Only ``COMPLETED`` means the model finished its answer."""

    COMPLETED = "completed"
    """The model ended its turn (``end_turn`` or a stop sequence)."""
    MAX_TOKENS = "max_tokens"
    """The last response was cut off at the output-token limit."""
    REFUSAL = "refusal"
    """The model or the provider's safety system refused."""
    LIMIT = "limit"
    """A run limit was reached (``error`` is the :class:`~tether.errors.LimitExceeded`)."""
    CANCELLED = "cancelled"
    """The run's :class:`~tether.CancelToken` was cancelled."""


@dataclass(slots=True)
class RunResult:
    """The outcome of one run and everything it added to the session.

    ``messages`` holds the messages this run appended (the user prompt first); the full
    history is in the session. ``cost`` is ``None`` when the model's pricing is unknown.
    """

    outcome: Outcome
    output: str
    messages: list[Message]
    session_id: str
    usage: Usage = field(default_factory=Usage)
    cost: float | None = None
    turns: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    retries: int = 0
    stop_reason: StopReason | None = None
    duration: float = 0.0
    error: TetherError | None = None

    @property
    def ok(self) -> bool:
        return self.outcome is Outcome.COMPLETED

    def raise_for_outcome(self) -> RunResult:
        """Return ``self`` if the run completed, else raise the error that ended it."""
        if self.ok:
            return self
        if self.error is not None:
            raise self.error
        raise TetherError(f"The run ended with outcome {self.outcome.value!r}.")
