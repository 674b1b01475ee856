"""What a tool sees of the run that called it: remaining budget, charging, events.

The runner hands every tool a :class:`RunScope` in ``ToolContext.scope``. Sub-agents
use it to check what the parent has left before they start, to add their usage to the
parent's totals, and to send their events into the parent's stream (as
:class:`~tether.events.Nested`), so one stream covers the whole tree. The budget itself
is kept for the whole tree by :mod:`tether.ledger`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from .config import LimitsConfig
    from .events import RunEvent
    from .result import RunResult

__all__ = ["Budget", "RunScope"]


@dataclass(frozen=True, slots=True)
class Budget:
    """What a run has left of each limit (``None``: unlimited)."""

    turns: int
    tokens: int | None = None
    cost_usd: float | None = None
    wall_time_s: float | None = None

    def cap(self, limits: LimitsConfig) -> LimitsConfig:
        """``limits`` lowered to this budget wherever the budget is smaller."""

        def low(own: float | None, left: float | None) -> float | None:
            if left is None:
                return own
            return left if own is None else min(own, left)

        return limits.model_copy(
            update={
                "max_turns": max(1, min(limits.max_turns, self.turns)),
                "max_total_tokens": _int(low(limits.max_total_tokens, self.tokens)),
                "max_cost_usd": low(limits.max_cost_usd, self.cost_usd),
                "wall_time_s": low(limits.wall_time_s, self.wall_time_s),
            }
        )


def _int(value: float | None) -> int | None:
    return None if value is None else max(1, int(value))


class RunScope(Protocol):
    """The calling run, as a tool sees it."""

    session_id: str

    def remaining(self) -> Budget:
        """What the run has left now."""
        ...

    def charge(self, result: RunResult) -> None:
        """Add a nested run's model calls, tokens and cost to this run's totals. A run
        of this run's tree was charged to its limits as it went; any other result (a
        model call made outside the loop) is charged to them now."""
        ...

    def emit(self, event: RunEvent) -> None:
        """Yield ``event`` from this run's stream, in order, while the tool runs."""
        ...
