"""Where a run touches the world, and how to wrap it.

A run has two effectful boundaries: a model request and a tool call. Everything else the
loop does is a deterministic function of what those two returned. A
:class:`RunBoundary` passed to :meth:`tether.Agent.stream` wraps both, which is how
tether-dbos makes a run durable without a second loop: each model request and each tool
call becomes a checkpointed step, so a restarted worker replays the loop with the
recorded results instead of calling the model or the tool again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol, TypeAlias

if TYPE_CHECKING:
    from .messages import ToolCallBlock, ToolResultBlock
    from .provider import Provider

__all__ = ["ExecuteTool", "RunBoundary", "ToolBoundary"]

ExecuteTool: TypeAlias = "Callable[[ToolCallBlock, str | None], Awaitable[ToolResultBlock]]"
"""Runs one tool call to its result (never raising for the tool's own failure); the
second argument, when not ``None``, replaces the call's idempotency key."""

ToolBoundary: TypeAlias = "Callable[[ToolCallBlock, ExecuteTool], Awaitable[ToolResultBlock]]"
"""Wraps one tool call: receives the call and the function that executes it."""


class RunBoundary(Protocol):
    """Wraps a run's model requests and tool calls (see the module docstring)."""

    def wrap_provider(self, provider: Provider) -> Provider:
        """The provider the run talks to instead of ``provider`` (model requests of the
        loop and of compaction both go through it)."""
        ...

    async def call_tool(self, call: ToolCallBlock, execute: ExecuteTool) -> ToolResultBlock:
        """Run ``call`` through ``execute`` (once, or not at all if its result is known),
        optionally with an idempotency key of the boundary's choosing."""
        ...
