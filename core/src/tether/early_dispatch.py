"""Early dispatch: starting safe tool calls while the model's response still streams.

A provider that knows a tool call is complete before the response ends says so with a
:class:`~tether.provider.ToolCallReady`. If the call's tool may start early, :meth:`ready`
starts it at once, through the run's :class:`~tether.tool_execution.ToolExecutor` (its
boundary, timeout and depth apply as to any call). When the response is complete, the
:class:`~tether.tool_execution.ToolScheduler` :meth:`claim` s the started calls that the
response contains and awaits them in place of starting them; nothing else changes:
``ToolStart``/``ToolEnd`` come after the ``TurnEnd``, and the results are written in
declared order.

A call starts early only if all of these hold:

- early dispatch is on (``Agent(early_dispatch=...)``, ``[early_dispatch] enabled``),
  tools may run in parallel, and no tool boundary (a durable run) wraps tool calls;
- its tool is known and may start early: ``[early_dispatch.tools]`` names it or its
  toolset, else the tool's own ``early`` flag, else whether it is ``read_only``; a
  ``sequential`` tool never does;
- every call before it in the response is announced and none is of a sequential tool
  (those calls run first, so the calls after them must wait as they always have);
- the approval policy allows it outright (a call a rule would ``ask`` about or ``deny``
  waits for the response, and the approval, as before);
- the run is not cancelled, past its wall time, or over its token or cost budget (or a
  budget of a run above it: see :mod:`tether.ledger`).

The rule for retries: started calls survive a failed attempt of the model call. A call
of the retried response with the same tool name and the same arguments as a started
call takes over that call (its result, or the call still running) instead of running
again; a started call that the final response does not contain where calls may start
early is cancelled if it still runs, and its result is discarded. Discarded results
never reach the history. Whatever ends the turn (an exception, cancellation, a limit, a
suspended approval) cancels the started calls nobody claimed and waits for them.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .approvals import Permission
from .messages import ToolCallBlock, ToolResultBlock
from .provider import ToolCallReady

if TYPE_CHECKING:
    from .runner import Run
    from .tool_execution import ToolExecutor

__all__ = ["EarlyDispatch", "Started", "early_dispatch"]


@dataclass(slots=True)
class Started:
    """A call started before its response ended."""

    key: str
    call: ToolCallBlock
    task: asyncio.Task[ToolResultBlock]
    began: float
    announced: bool = True
    """Announced again by the current attempt (so it is not started twice)."""


class EarlyDispatch:
    """The calls one run started early. ``enabled=False`` makes every method a no-op
    except :meth:`ready`, which then only swallows the event."""

    def __init__(self, run: Run | None, *, enabled: bool) -> None:
        self.run = run
        self.enabled = enabled
        self.started: list[Started] = []
        self._seen = 0
        self._blocked = False

    # -- while the response streams ------------------------------------------------------------
    def attempt(self) -> None:
        """A new attempt of the model call begins: its calls are announced afresh."""
        self._seen = 0
        self._blocked = False
        for entry in self.started:
            entry.announced = False

    def ready(self, event: ToolCallReady) -> None:
        """A call of the streaming response is complete: start it if it may start early."""
        if not self.enabled or self.run is None:
            return
        call = event.call
        if event.index != self._seen:
            self._blocked = True  # a call before it was not announced: its tool is unknown
        self._seen = event.index + 1
        key = call_key(call) if self.started else None
        for entry in self.started:
            if not entry.announced and entry.key == key:
                entry.announced = True  # a retried attempt asks for a call already started
                return
        run = self.run
        tool = run.executor.tools.get(call.name)
        if tool is None or self._blocked:
            return
        if tool.sequential:
            self._blocked = True
            return
        overrides = run.s.early_tools
        if not (
            _overridden(tool, call.name, overrides, run.s.toolsets)
            if overrides
            else tool.starts_early
        ):
            return
        if not self._may_start(call):
            return
        task = asyncio.ensure_future(run.executor.execute(call))
        self.started.append(Started(key or call_key(call), call, task, time.perf_counter()))

    def _may_start(self, call: ToolCallBlock) -> bool:
        """Whether the run and the approval policy let a call of an early tool start now."""
        run = self.run
        assert run is not None
        if run.cancel.cancelled or run.guard.expired():
            return False
        if run.guard.budget_error() is not None:
            return False
        gate = run.features.gate
        if gate is None:
            return True
        permission, _ = gate.decide(call)
        return permission is Permission.ALLOW

    # -- when the response is complete ---------------------------------------------------------
    async def claim(self, calls: Sequence[ToolCallBlock], first_group: int) -> dict[int, Started]:
        """The started calls answering ``calls[:first_group]`` (the calls that run first),
        by index. Every other started call is cancelled, awaited and forgotten."""
        if not self.started:
            return {}
        claimed: dict[int, Started] = {}
        free = self.started
        for index in range(first_group):
            call = calls[index]
            key = call_key(call)
            match = next((e for e in free if e.call.id == call.id and e.key == key), None)
            if match is None:
                match = next((e for e in free if e.key == key), None)
            if match is not None:
                free.remove(match)
                claimed[index] = match
        self.started = []
        await _discard(free, self.run)
        return claimed

    async def discard(self) -> None:
        """The turn ended (however it ended): cancel the started calls nobody claimed,
        wait for them and forget them. The runner calls it when :attr:`started` is set."""
        left, self.started = self.started, []
        await _discard(left, self.run)


def early_dispatch(run: Run) -> EarlyDispatch:
    """The early dispatch of ``run``: enabled when its settings allow it at all."""
    s = run.s
    enabled = (
        s.early_dispatch
        and s.parallel_tools
        and s.capabilities.parallel_tool_calls
        and s.tool_boundary is None
    )
    return EarlyDispatch(run, enabled=enabled)


def call_key(call: ToolCallBlock) -> str:
    """What makes two calls the same call: the tool's name and the exact arguments."""
    raw = call.raw_arguments
    arguments = raw if raw is not None else json.dumps(call.arguments, sort_keys=True)
    return f"{call.name}\x00{arguments}"


def _overridden(
    tool: Any, name: str, overrides: Mapping[str, bool], toolsets: Mapping[str, str]
) -> bool:
    """Whether ``tool`` may start early, the configuration's word (tool, then toolset)
    first, else the tool's own."""
    if name in overrides:
        return overrides[name]
    toolset = toolsets.get(name)
    if toolset is not None and toolset in overrides:
        return overrides[toolset]
    return bool(tool.starts_early)


async def _discard(entries: Sequence[Started], run: Run | None) -> None:
    """Cancel ``entries``' calls, wait for them, and drop the progress they reported."""
    for entry in entries:
        entry.task.cancel()
    if not entries:
        return
    await asyncio.gather(*(e.task for e in entries), return_exceptions=True)
    if run is not None:
        _forget_progress(run.executor, {e.call.id for e in entries})


def _forget_progress(executor: ToolExecutor, ids: set[str]) -> None:
    queue = executor.progress
    kept = []
    while not queue.empty():
        event = queue.get_nowait()
        if getattr(event, "call_id", None) not in ids:
            kept.append(event)
    for event in kept:
        queue.put_nowait(event)
