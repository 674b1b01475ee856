"""The limits of one run, checked in one place: :class:`RunGuard`.

The runner asks the guard before each model call (wall time; model calls, tokens and
cost through the run's :class:`~tether.ledger.Ledger`, which covers the whole tree of
runs), before running a response's tool calls (token and cost budgets), after them (a
loop of identical failing calls), and before waiting to retry (would the wait pass the
wall-time limit). Every check raises a :class:`~tether.errors.LimitExceeded` subclass
whose message says which limit was reached and which setting raises it.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .errors import LimitExceeded, LoopDetected, WallTimeExceeded
from .ledger import Ledger
from .messages import ToolCallBlock, ToolResultBlock

if TYPE_CHECKING:
    from .cancel import CancelScope
    from .config import LimitsConfig

__all__ = ["RunGuard"]


class RunGuard:
    """Checks one run against its :class:`~tether.config.LimitsConfig`, and through its
    :attr:`ledger` against the limits of the runs above it."""

    __slots__ = ("_failing", "_failing_count", "deadline", "ledger", "limits", "started")

    def __init__(self, limits: LimitsConfig, parent: Ledger | None = None) -> None:
        self.limits = limits
        self.ledger = Ledger(limits, parent)
        """This run's node in the tree's ledger (``parent``: the node of the run above)."""
        self.started = 0.0
        self.deadline: float | None = None
        """``time.perf_counter()`` value at which the wall-time limit passes, if any: the
        run's own or, if earlier, that of a run above it."""
        self._failing: tuple[str, str] | None = None
        self._failing_count = 0

    def start(self, run_id: str = "") -> None:
        """Start the wall clock; call once when the run starts."""
        self.started = time.perf_counter()
        self.ledger.start(run_id)
        self.deadline = self.ledger.deadline

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def remaining(self) -> float | None:
        """Seconds left before the wall-time limit (never negative), or ``None``."""
        if self.deadline is None:
            return None
        return max(self.deadline - time.perf_counter(), 0.0)

    def expired(self) -> bool:
        return self.deadline is not None and time.perf_counter() >= self.deadline

    def check_deadline(self) -> None:
        if self.expired():
            raise self.deadline_error()

    def _wall_limit(self) -> str:
        """The wall-time limit in force, for messages."""
        limit = self.ledger.deadline_limit
        if limit is None:
            return "wall-time limit"
        seconds, level = limit
        if level == 0:
            return f"wall-time limit of {seconds:g} s"
        above = "the run that started it" if level == 1 else f"the run {level} levels up"
        return f"wall-time limit of {seconds:g} s, set on {above}"

    def deadline_error(self) -> WallTimeExceeded:
        """The error for a run that reached its wall-time limit."""
        return WallTimeExceeded(
            f"The run reached its {self._wall_limit()}. "
            "Raise limits.wall_time_s if the task needs more."
        )

    def check_retry_wait(self, delay: float, error: BaseException) -> None:
        """Raise if waiting ``delay`` seconds to retry would pass the wall-time limit."""
        if self.deadline is not None and time.perf_counter() + delay > self.deadline:
            raise WallTimeExceeded(
                f"The run's {self._wall_limit()} would pass "
                f"while waiting {delay:.1f} s to retry after: {error}"
            ) from error

    def tools_timed_out(self) -> WallTimeExceeded:
        """The error for running tools that were still running when the limit passed."""
        return WallTimeExceeded(f"The run's {self._wall_limit()} passed while tools were running.")

    def model_call(self, scope: CancelScope) -> _ModelCall:
        """One model call of the run, as an async context manager: reserved in the tree's
        ledger before it starts (waiting for a turn if need be, interruptibly and no later
        than the deadline) and released when the body ends, however it ends. (A class,
        not a generator: asyncio never finalizes it on its own, out of order, when an
        abandoned stream is closed.)"""
        return _ModelCall(self, scope)

    def budget_error(self) -> LimitExceeded | None:
        """The token or cost budget used up, of this run or of a run above it, if any
        (checked before each model call and before running tools)."""
        return self.ledger.budget_error()

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


class _ModelCall:
    """What :meth:`RunGuard.model_call` returns."""

    __slots__ = ("guard", "scope")

    def __init__(self, guard: RunGuard, scope: CancelScope) -> None:
        self.guard, self.scope = guard, scope

    async def __aenter__(self) -> None:
        if self.guard.ledger.try_begin_call():  # reserved at once: no timer needed
            return
        with self.scope.interruptible():
            while True:
                try:
                    async with asyncio.timeout(self.guard.remaining()):
                        await self.guard.ledger.begin_call()
                    return
                except TimeoutError:
                    self.guard.check_deadline()  # a timer may fire a hair early: wait on

    async def __aexit__(self, *exc_info: object) -> None:
        self.guard.ledger.end_call()
