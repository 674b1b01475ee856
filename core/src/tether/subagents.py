"""Sub-agents: an :class:`~tether.Agent` offered to another agent as a tool.

::

    researcher = tether.Agent("openai/gpt-5-mini", system="You research.", tools=["web"])
    writer = tether.Agent(
        "anthropic/claude-sonnet-4-6",
        tools=[researcher.as_tool("research", "Research a question on the web.")],
    )

The sub-agent runs on the same loop as any agent, in an isolated context (a fresh
in-memory session holding only the task), with its own system prompt, model, tools and
limits. It draws from what the calling run has left: its model calls, tokens and cost
are charged to the caller's ledger as they happen, shared with every other sub-agent of
the tree (parallel ones included), and its deadline is never later than the caller's
(see :mod:`tether.ledger`). A call made when the caller has nothing left is refused
before the sub-agent starts. It returns its final text, or
its structured output as JSON. Its events reach the caller's stream wrapped in
:class:`~tether.events.Nested`, between the calling tool's ``ToolStart`` and ``ToolEnd``.
Several sub-agent calls in one response run in parallel like any tools. Cancelling the
caller cancels the sub-agent; nesting deeper than ``max_depth`` runs is refused with an
error result the model sees.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .cancel import CancelToken
from .depth import check_run_depth
from .errors import DepthExceeded, ToolError
from .events import Done, Nested, RunEvent
from .messages import Message
from .result import Outcome, RunResult
from .sessions import InMemorySession
from .tools import Tool, ToolContext

if TYPE_CHECKING:
    from .agent import Agent

__all__ = ["DEFAULT_SUBAGENT_DEPTH", "agent_tool"]

DEFAULT_SUBAGENT_DEPTH = 2
"""Runs in a chain of agents calling agents, counting the outermost: 2 allows sub-agents
but not sub-sub-agents."""


def agent_tool(
    agent: Agent,
    name: str,
    description: str,
    *,
    max_depth: int = DEFAULT_SUBAGENT_DEPTH,
) -> Tool:
    """A tool whose call runs ``agent`` on the task the model gives it.

    See :meth:`tether.Agent.as_tool` and the module docstring.
    """

    async def run_subagent(task: str, ctx: ToolContext) -> str:
        """Run the sub-agent.

        Args:
            task: Everything the sub-agent needs to know: it sees nothing else of this conversation.
        """
        try:
            check_run_depth(max_depth)
        except DepthExceeded as exc:
            raise ToolError(
                f"`{name}` cannot run here: {exc} Do this part of the task yourself."
            ) from None
        scope = ctx.scope
        _check_budget(scope, name)
        cancel = CancelToken()
        unlink = _link(ctx.cancel, cancel)

        async def consume() -> RunResult:
            result: RunResult | None = None
            loop = agent._loop(Message.user(task), InMemorySession(), cancel, ctx.deps)
            async with contextlib.aclosing(loop) as events:
                async for event in events:
                    if type(event) is Done:
                        result = event.result
                    if scope is not None:
                        scope.emit(_nest(ctx.call_id, name, event))
            assert result is not None
            return result

        child = asyncio.ensure_future(consume())
        try:
            result = await asyncio.shield(child)
        except asyncio.CancelledError:
            cancel.cancel("parent cancelled")
            child.cancel()
            await asyncio.gather(child, return_exceptions=True)
            raise
        finally:
            unlink()
        if scope is not None:
            scope.charge(result)
        return _answer(name, result)

    return AgentTool(run_subagent, name=name, description=description)


class AgentTool(Tool):
    """A sub-agent tool: its events reach the calling run's stream while it runs."""

    __slots__ = ()
    emits_events = True


def _link(parent: CancelToken, child: CancelToken) -> Callable[[], None]:
    """Cancel ``child`` when ``parent`` is cancelled (now or later); returns the unlink."""

    def cancel() -> None:
        child.cancel(parent.reason or "parent cancelled")

    if parent.cancelled:
        cancel()
    return parent.on_cancel(cancel)


def _check_budget(scope: Any, name: str) -> None:
    """Refuse to start the sub-agent if the calling run has nothing left to give it."""
    if scope is None:
        return
    budget = scope.remaining()
    exhausted = budget.turns <= 0 or any(
        left is not None and left <= 0
        for left in (budget.tokens, budget.cost_usd, budget.wall_time_s)
    )
    if exhausted:
        raise ToolError(
            f"`{name}` was not started: this run has no budget left for it. "
            "Finish the task with what you have."
        )


def _nest(call_id: str, agent: str, event: RunEvent) -> Nested:
    if type(event) is Nested:
        return Nested((call_id, *event.path), event.agent, event.event)
    return Nested((call_id,), agent, event)


def _answer(name: str, result: RunResult) -> str:
    if result.outcome is Outcome.COMPLETED:
        if isinstance(result.output, str):
            return result.output
        return json.dumps(_plain(result.output), ensure_ascii=False)
    why = str(result.error) if result.error is not None else result.outcome.value
    partial = f" Its last text: {result.text[:2000]}" if result.text else ""
    raise ToolError(f"Sub-agent `{name}` did not finish ({result.outcome.value}): {why}.{partial}")


def _plain(value: Any) -> Any:
    import pydantic

    return pydantic.TypeAdapter(type(value)).dump_python(value, mode="json")
