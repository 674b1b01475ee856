"""What a run produced: :class:`RunResult` and its :class:`Outcome`."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from .errors import TetherError
from .messages import Message, StopReason, Usage

if TYPE_CHECKING:
    from .events import CacheWarning
    from .provider import CostBreakdown

__all__ = ["Outcome", "PendingCall", "RunResult", "cache_hit_ratio", "low_cache_warning"]


def cache_hit_ratio(usage: Usage) -> float | None:
    """``cache_read_tokens / input_tokens`` (input tokens include cached ones), or ``None``
    when there were no input tokens."""
    if usage.input_tokens <= 0:
        return None
    return min(usage.cache_read_tokens / usage.input_tokens, 1.0)


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
    SUSPENDED = "suspended"
    """Tool calls wait for approval; ``pending`` lists them. Continue with
    :meth:`tether.Agent.resume`, in this process or another."""
    NEEDS_HUMAN = "needs_human"
    """A tool raised :class:`~tether.errors.NeedsHuman`; ``error.user_message`` says why."""
    INVALID_OUTPUT = "invalid_output"
    """The answer did not match ``output_type`` after the allowed retries."""


@dataclass(frozen=True, slots=True)
class PendingCall:
    """A tool call a suspended run is waiting to have approved or denied."""

    call_id: str
    tool: str
    arguments: dict[str, Any]
    rule: str | None = None
    """The permission rule that asked for approval."""


@dataclass(slots=True)
class RunResult:
    """The outcome of one run and everything it added to the session.

    ``messages`` holds the messages this run appended (the user prompt first); the full
    history is in the session. ``cost`` is ``None`` when the model's pricing is unknown;
    otherwise ``cost_breakdown`` splits it into input, output, cache-read and cache-write
    dollars (from the model catalogue's prices). ``run_id`` is the id of the run's
    :class:`~tether.events.RunStart` (and of its entry in the local run log).
    ``output`` is the final answer's text, or the validated object when the agent has an
    ``output_type`` (``None`` if the run ended without a valid one); ``text`` is always
    the text. ``pending`` lists the calls a suspended run waits on.
    """

    outcome: Outcome
    output: Any
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
    cost_breakdown: CostBreakdown | None = None
    run_id: str = ""
    text: str = ""
    pending: list[PendingCall] = field(default_factory=list)

    @property
    def cache_hit_ratio(self) -> float | None:
        """Share of the run's input tokens read from the provider's prompt cache
        (``None`` when no input tokens were reported)."""
        return cache_hit_ratio(self.usage)

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


def low_cache_warning(
    usage: Usage, turns: int, setting: tuple[float, int] | None
) -> CacheWarning | None:
    """A :class:`~tether.events.CacheWarning` when a run that made ``turns`` model calls
    using ``usage`` caches too little, per ``setting`` = (threshold, every): checked each
    time ``turns`` reaches a multiple of ``every``, so a long run that keeps missing is
    reminded every ``every`` calls. ``None`` (the model has no prompt cache, or the
    warning is off) never warns."""
    if setting is None:
        return None
    threshold, every = setting
    ratio = cache_hit_ratio(usage)
    if turns % every or ratio is None or ratio >= threshold:
        return None
    from .events import CacheWarning

    return CacheWarning(hit_ratio=ratio, threshold=threshold, turns=turns)
