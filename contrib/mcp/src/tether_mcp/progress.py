"""An MCP server's progress notifications for one call, coalesced.

A server may send progress as often as it likes (one per item of a 200,000-item job);
each would become a :class:`~tether.events.ToolProgress` event for every consumer and
observer of the run. :class:`CoalescedProgress` passes on at most
:data:`MAX_PER_SECOND` reports per second per call: a report that arrives sooner after
the last one passed on is held, replaced by any newer one, and passed on when the
interval is over. When the call ends, :meth:`CoalescedProgress.finish` passes on the
report still held, so the last report is always delivered.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

__all__ = ["MAX_PER_SECOND", "CoalescedProgress"]

MAX_PER_SECOND = 4
"""Progress reports passed on per second, per call."""

Report = tuple[float, float | None, str | None]


class CoalescedProgress:
    """Coalesces the progress reports of one call into ``report`` (see the module
    docstring). Use :meth:`__call__` as the SDK's progress callback, and call
    :meth:`finish` once the call has ended, whichever way."""

    def __init__(
        self,
        report: Callable[[float, float | None, str | None], None],
        *,
        per_second: float = MAX_PER_SECOND,
    ) -> None:
        self._report = report
        self._interval = 1.0 / per_second
        self._last = -float("inf")
        self._held: Report | None = None
        self._timer: asyncio.TimerHandle | None = None

    async def __call__(self, value: float, total: float | None, message: str | None) -> None:
        now = time.monotonic()
        if now - self._last >= self._interval and self._timer is None:
            self._pass_on((value, total, message), now)
            return
        self._held = (value, total, message)
        if self._timer is None:
            delay = max(0.0, self._last + self._interval - now)
            self._timer = asyncio.get_running_loop().call_later(delay, self._flush)

    def finish(self) -> None:
        """Pass on the report still held, if any, and stop the timer."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._held is not None:
            held, self._held = self._held, None
            self._pass_on(held, time.monotonic())

    def _flush(self) -> None:
        self._timer = None
        if self._held is not None:
            held, self._held = self._held, None
            self._pass_on(held, time.monotonic())

    def _pass_on(self, report: Report, now: float) -> None:
        self._last = now
        self._report(*report)
