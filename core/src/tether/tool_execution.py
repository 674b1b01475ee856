"""Running tool calls and turning whatever happens into tool results.

:meth:`ToolExecutor.execute` never raises for a tool's failure: an unknown tool name,
arguments that are not JSON or do not match the schema, a timeout, or an exception in
the tool all become an ``is_error`` result written for the model to act on. Only
cancellation propagates.

:class:`ToolScheduler` runs the calls of one assistant message: in groups that may run
together (sequential tools run alone), yielding ``ToolStart``/``ToolEnd`` as they happen
and filling one result slot per call, so that whatever interrupts it the caller knows
which calls were answered.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import time
from collections.abc import AsyncGenerator, Callable, Mapping, MutableMapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pydantic

from .arguments import prepare_arguments
from .boundary import ToolBoundary
from .cancel import CancelScope, CancelToken
from .depth import run_depth, tool_depth
from .errors import InvalidToolArguments, NeedsHuman, ToolError
from .events import RunEvent, ToolEnd, ToolProgress, ToolStart
from .ledger import Ledger, in_ledger
from .messages import ToolCallBlock, ToolResultBlock
from .nested_streams import nested
from .tool_results import error_result, tool_result
from .tools import DEFAULT_TIMEOUT, Tool, ToolContext, format_validation_error

if TYPE_CHECKING:
    from .early_dispatch import EarlyDispatch, Started
    from .guard import RunGuard

__all__ = [
    "DEFAULT_TOOL_TIMEOUT_S",
    "ToolExecutor",
    "ToolScheduler",
]

DEFAULT_TOOL_TIMEOUT_S = 300.0
"""Timeout of a tool call when neither the tool nor ``limits.tool_timeout_s`` sets one."""


def idempotency_key(session_id: str, call_id: str) -> str:
    """Stable for a (session, call id) pair, opaque otherwise."""
    return hashlib.sha256(f"{session_id}\x00{call_id}".encode()).hexdigest()[:32]


class ToolExecutor:
    """Runs the calls of one agent run against its tools."""

    def __init__(
        self,
        tools: Mapping[str, Tool],
        *,
        session_id: str,
        cancel: CancelToken,
        cwd: Path,
        env: Mapping[str, str],
        deps: Any,
        settings: Mapping[str, Mapping[str, Any]],
        default_timeout: float | None = DEFAULT_TOOL_TIMEOUT_S,
        boundary: ToolBoundary | None = None,
    ) -> None:
        self.tools = tools
        self.boundary = boundary
        self.default_timeout = default_timeout
        self.depth = run_depth() + 1
        """The depth of the run this executor serves (see :mod:`tether.depth`)."""
        self.session_id = session_id
        self.cancel = cancel
        self.cwd = cwd
        self.env = env
        self.deps = deps
        self.settings = settings
        self.progress: asyncio.Queue[RunEvent] = asyncio.Queue()
        """Events tools send while they run (progress, a sub-agent's nested events)."""
        self.decided: dict[str, ToolResultBlock] = {}
        """Results decided before running (denied by the approval policy), by call id."""
        self.escalation: NeedsHuman | None = None
        """The first :class:`NeedsHuman` a tool raised; the runner ends the run with it."""
        self.scope: Any = None
        """The run as tools see it (``ToolContext.scope``)."""
        self.ledger: Ledger | None = None
        """The run's node of the tree's ledger: runs a tool starts join it."""
        """Progress reported by running calls, for the scheduler to yield."""
        self.state: MutableMapping[str, Any] = {}

    def is_sequential(self, call: ToolCallBlock) -> bool:
        tool = self.tools.get(call.name)
        return tool is not None and tool.sequential

    async def execute(self, call: ToolCallBlock) -> ToolResultBlock:
        """Run ``call`` to its result, through the run's tool boundary if it has one.
        A call already decided (denied by the approval policy) is answered at once."""
        decided = self.decided.pop(call.id, None)
        if decided is not None:
            return decided
        if self.boundary is not None:
            return await self.boundary(call, self._execute)
        return await self._execute(call, None)

    async def _execute(self, call: ToolCallBlock, key: str | None) -> ToolResultBlock:
        tool = self.tools.get(call.name)
        if tool is None:
            return self._error(call, self._unknown_tool_message(call.name))
        try:
            decoded = prepare_arguments(call.arguments, call.raw_arguments, tool.parameters)
        except InvalidToolArguments as exc:
            sent = ""
            if call.raw_arguments is not None:
                sent = f" The arguments were not a valid JSON object: {call.raw_arguments[:500]!r}."
            return self._error(
                call,
                f"Tool `{call.name}` was not run: {exc}{sent} Call the tool again with a "
                f"JSON object matching this schema: {json.dumps(tool.parameters)}",
            )
        try:
            arguments = tool.validate(decoded)
        except pydantic.ValidationError as exc:
            return self._error(call, format_validation_error(tool, exc))
        context = self._context(call, tool, key) if tool._context_param is not None else None
        timeout = self.default_timeout if tool.timeout == DEFAULT_TIMEOUT else tool.timeout
        try:
            with tool_depth(self.depth), self._in_tree():
                if timeout is None:
                    value = await tool.call(arguments, context)
                else:
                    async with asyncio.timeout(float(timeout)):
                        value = await tool.call(arguments, context)
        except TimeoutError:
            return self._error(
                call,
                f"Tool `{call.name}` timed out after {float(timeout or 0):g} s and was stopped. "
                "Try a smaller request, or a different approach.",
            )
        except ToolError as exc:
            return self._error(call, _describe(exc, with_type=False))
        except NeedsHuman as exc:
            if self.escalation is None:
                self.escalation = exc
            return self._error(call, f"Stopped: a person must act first. {exc}")
        except Exception as exc:
            return self._error(call, f"Tool `{call.name}` failed: {_describe(exc)}")
        return tool_result(
            call.id,
            value,
            tool_name=tool.name,
            max_output_chars=tool.max_output_chars,
            max_image_bytes=tool.max_image_bytes,
        )

    def _in_tree(self) -> contextlib.AbstractContextManager[None]:
        """Runs started inside the tool join this run's tree (see :mod:`tether.ledger`)."""
        return in_ledger(self.ledger) if self.ledger is not None else contextlib.nullcontext()

    def _context(self, call: ToolCallBlock, tool: Tool, key: str | None = None) -> ToolContext:
        return ToolContext(
            call_id=call.id,
            tool_name=tool.name,
            session_id=self.session_id,
            idempotency_key=key or idempotency_key(self.session_id, call.id),
            cwd=self.cwd,
            cancel=self.cancel,
            state=self.state,
            env=self.env,
            deps=self.deps,
            settings=self.settings.get(tool.name, {}),
            report_progress=self._progress_reporter(call.id, tool.name),
            scope=self.scope,
        )

    def _progress_reporter(
        self, call_id: str, name: str
    ) -> Callable[[float, float | None, str | None], None]:
        def report(progress: float, total: float | None = None, message: str | None = None) -> None:
            self.progress.put_nowait(ToolProgress(call_id, name, progress, total, message))

        return report

    def may_report_progress(self, call: ToolCallBlock) -> bool:
        """Whether the call's tool receives a ToolContext (and so may report progress)."""
        tool = self.tools.get(call.name)
        return tool is not None and tool._context_param is not None

    def _unknown_tool_message(self, name: str) -> str:
        available = ", ".join(sorted(self.tools)) or "(none)"
        return f"There is no tool named `{name}`. Available tools: {available}. Use one of these names exactly."

    @staticmethod
    def _error(call: ToolCallBlock, message: str) -> ToolResultBlock:
        return error_result(call.id, message)


def _describe(exc: BaseException, *, with_type: bool = True) -> str:
    """``Type: message`` of ``exc``, even when its ``str()`` raises."""
    try:
        text = str(exc)
    except Exception:
        text = f"(its message could not be read: {type(exc).__name__}.__str__ failed)"
    return f"{type(exc).__name__}: {text}" if with_type else text


class ToolScheduler:
    """Runs the tool calls of one assistant message through a :class:`ToolExecutor`.

    With ``parallel`` (the agent allows it and the model can ask for parallel calls),
    consecutive calls to tools not marked ``sequential`` run concurrently; otherwise one at
    a time, in declared order. Waits are interruptible through ``scope`` and bounded by
    the ``guard``'s wall-time limit.
    """

    def __init__(
        self, executor: ToolExecutor, *, parallel: bool, scope: CancelScope, guard: RunGuard
    ) -> None:
        self.executor = executor
        self.parallel = parallel
        self.scope = scope
        self.guard = guard
        self.early: EarlyDispatch | None = None
        """Calls started while the response streamed, claimed by :meth:`run`."""

    async def run(
        self,
        calls: Sequence[ToolCallBlock],
        results: list[ToolResultBlock | None],
        late_ends: list[ToolEnd],
    ) -> AsyncGenerator[RunEvent, None]:
        """Run ``calls``, storing each result at its call's index in ``results``.

        If interrupted, calls that finished but were not yet reported get their
        ``ToolEnd`` appended to ``late_ends``; their results are kept. Unfinished calls
        are cancelled and their slots left ``None``. Calls started early (see
        :mod:`tether.early_dispatch`) are awaited instead of started again.
        """
        early: dict[int, Started] = {}
        if self.early is not None and self.early.started:
            early = await self.early.claim(calls, self._leading(calls))
        if (
            not early
            and len(calls) == 1
            and self.guard.deadline is None
            and not self.executor.may_report_progress(calls[0])
        ):
            call = calls[0]
            yield ToolStart(call.id, call.name, call.arguments)
            started = time.perf_counter()
            with self.scope.interruptible():
                result = await self.executor.execute(call)
            results[0] = result
            yield ToolEnd(call.id, call.name, result, time.perf_counter() - started)
            return
        for group in self.groups(calls):
            group_events = self._run_group(calls, group, results, late_ends, early)
            async with nested(group_events):
                async for event in group_events:
                    yield event

    def _leading(self, calls: Sequence[ToolCallBlock]) -> int:
        """How many calls come before the first call of a sequential tool."""
        for index, call in enumerate(calls):
            if self.executor.is_sequential(call):
                return index
        return len(calls)

    def groups(self, calls: Sequence[ToolCallBlock]) -> list[list[int]]:
        """Indices of calls that may run together, in declared order."""
        if not self.parallel:
            return [[i] for i in range(len(calls))]
        groups: list[list[int]] = []
        current: list[int] = []
        for index, call in enumerate(calls):
            if self.executor.is_sequential(call):
                if current:
                    groups.append(current)
                    current = []
                groups.append([index])
            else:
                current.append(index)
        if current:
            groups.append(current)
        return groups

    async def _run_group(
        self,
        calls: Sequence[ToolCallBlock],
        group: list[int],
        results: list[ToolResultBlock | None],
        late_ends: list[ToolEnd],
        early: Mapping[int, Started],
    ) -> AsyncGenerator[RunEvent, None]:
        started: dict[asyncio.Task[ToolResultBlock], tuple[int, float]] = {}
        progress = self.executor.progress
        listener: asyncio.Task[RunEvent] | None = None
        for index in group:
            call = calls[index]
            yield ToolStart(call.id, call.name, call.arguments)
            entry = early.get(index)
            if entry is None:
                started[asyncio.ensure_future(self.executor.execute(call))] = (
                    index,
                    time.perf_counter(),
                )
            else:
                started[entry.task] = (index, entry.began)
        pending: set[asyncio.Task[ToolResultBlock]] = set(started)
        try:
            while pending:
                if listener is None:
                    listener = asyncio.ensure_future(progress.get())
                waiting: set[asyncio.Future[Any]] = {*pending, listener}
                with self.scope.interruptible():
                    woken, _ = await asyncio.wait(
                        waiting, timeout=self.guard.remaining(), return_when=asyncio.FIRST_COMPLETED
                    )
                if not woken:
                    if not self.guard.expired():
                        continue  # a timer may fire a hair early: wait on
                    raise self.guard.tools_timed_out()
                if listener in woken:
                    yield listener.result()
                    listener = None
                while not progress.empty():  # reported before the calls that just ended
                    yield progress.get_nowait()
                done = {task for task in pending if task in woken}
                pending -= done
                for task in sorted(done, key=lambda t: started[t][0]):
                    index, began = started[task]
                    call = calls[index]
                    results[index] = result = _answering(call, task.result())
                    yield ToolEnd(call.id, call.name, result, time.perf_counter() - began)
        finally:
            if listener is not None:
                listener.cancel()
            _keep_finished(calls, started, results, late_ends)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.gather(*pending, return_exceptions=True)


def _keep_finished(
    calls: Sequence[ToolCallBlock],
    started: Mapping[asyncio.Task[ToolResultBlock], tuple[int, float]],
    results: list[ToolResultBlock | None],
    late_ends: list[ToolEnd],
) -> None:
    """Keep what finished before an interruption (reported before ``Done``)."""
    for task, (index, began) in started.items():
        if (
            results[index] is None
            and task.done()
            and not task.cancelled()
            and task.exception() is None
        ):
            call = calls[index]
            results[index] = result = _answering(call, task.result())
            late_ends.append(ToolEnd(call.id, call.name, result, time.perf_counter() - began))


def _answering(call: ToolCallBlock, result: ToolResultBlock) -> ToolResultBlock:
    """``result`` as the answer to ``call`` (a call started early in an attempt that
    failed answers the same call of the retried response, whose id is new)."""
    if result.call_id == call.id:
        return result
    return result.model_copy(update={"call_id": call.id})
