"""The limits of one run, checked in one place: :class:`RunGuard`.

The runner asks the guard before each model call (turns, wall time), before running a
response's tool calls (token and cost budgets), after them (a loop of identical failing
calls), and before waiting to retry (would the wait pass the wall-time limit). Every
check raises a :class:`~tether.errors.LimitExceeded` subclass whose message says which
limit was reached and which setting raises it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .errors import (
    CostBudgetExceeded,
    LimitExceeded,
    LoopDetected,
    MaxTurnsExceeded,
    TokenBudgetExceeded,
    WallTimeExceeded,
)
from .messages import ToolCallBlock, ToolResultBlock

if TYPE_CHECKING:
    from .config import LimitsConfig

__all__ = ["RunGuard"]


class RunGuard:
    """Checks one run against its :class:`~tether.config.LimitsConfig`."""

    __slots__ = ("_failing", "_failing_count", "deadline", "limits", "started")

    def __init__(self, limits: LimitsConfig) -> None:
        self.limits = limits
        self.started = 0.0
        self.deadline: float | None = None
        """``time.perf_counter()`` value at which the wall-time limit passes, if any."""
        self._failing: tuple[str, str] | None = None
        self._failing_count = 0

    def start(self) -> None:
        """Start the wall clock; call once when the run starts."""
        self.started = time.perf_counter()
        if self.limits.wall_time_s is not None:
            self.deadline = self.started + self.limits.wall_time_s

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def remaining(self) -> float | None:
        """Seconds left before the wall-time limit (never negative), or ``None``."""
        if self.deadline is None:
            return None
        return max(self.deadline - time.perf_counter(), 0.0)

    def expired(self) -> bool:
        return self.deadline is not None and time.perf_counter() >= self.deadline

    def check_turns(self, turns: int) -> None:
        if turns >= self.limits.max_turns:
            raise MaxTurnsExceeded(
                f"The run reached its limit of {self.limits.max_turns} model calls. "
                "Raise limits.max_turns if the task needs more."
            )

    def check_deadline(self) -> None:
        if self.expired():
            raise self.deadline_error()

    def deadline_error(self) -> WallTimeExceeded:
        """The error for a run that reached its wall-time limit."""
        return WallTimeExceeded(
            f"The run reached its wall-time limit of {self.limits.wall_time_s:g} s. "
            "Raise limits.wall_time_s if the task needs more."
        )

    def check_retry_wait(self, delay: float, error: BaseException) -> None:
        """Raise if waiting ``delay`` seconds to retry would pass the wall-time limit."""
        if self.deadline is not None and time.perf_counter() + delay > self.deadline:
            raise WallTimeExceeded(
                f"The run's wall-time limit of {self.limits.wall_time_s:g} s would pass "
                f"while waiting {delay:.1f} s to retry after: {error}"
            ) from error

    def tools_timed_out(self) -> WallTimeExceeded:
        """The error for running tools that were still running when the limit passed."""
        return WallTimeExceeded(
            f"The run's wall-time limit of {self.limits.wall_time_s:g} s passed while tools were running."
        )

    def budget_error(self, total_tokens: int, cost: float | None) -> LimitExceeded | None:
        """The budget the run has used up, if any (checked before running tools)."""
        limits = self.limits
        if limits.max_total_tokens is not None and total_tokens >= limits.max_total_tokens:
            return TokenBudgetExceeded(
                f"The run used {total_tokens} tokens, reaching its budget of {limits.max_total_tokens}. "
                "Raise limits.max_total_tokens to allow more."
            )
        if limits.max_cost_usd is not None and cost is not None and cost >= limits.max_cost_usd:
            return CostBudgetExceeded(
                f"The run cost ${cost:.4f}, reaching its budget of ${limits.max_cost_usd:.4f}. "
                "Raise limits.max_cost_usd to allow more."
            )
        return None

    def check_loop(
        self, calls: Sequence[ToolCallBlock], results: Sequence[ToolResultBlock]
    ) -> None:
        """Raise :class:`~tether.errors.LoopDetected` once the same call (name and
        arguments) has failed ``limits.loop_threshold`` times in a row."""
        for call, result in zip(calls, results, strict=False):
            if not result.is_error:
                self._failing, self._failing_count = None, 0
                continue
            signature = (call.name, json.dumps(call.arguments, sort_keys=True, default=str))
            if signature == self._failing:
                self._failing_count += 1
            else:
                self._failing, self._failing_count = signature, 1
            if self._failing_count >= self.limits.loop_threshold:
                raise LoopDetected(
                    f"The model called `{call.name}` with the same arguments {self._failing_count} times "
                    f"in a row and it failed every time (last error: {result.text[:200]!r}). "
                    "The run was stopped to avoid a loop."
                )
