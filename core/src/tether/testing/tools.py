"""Calling a tool the way the runner does, without a model."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..cancel import CancelToken
from ..messages import ToolCallBlock, ToolResultBlock
from ..tool_execution import ToolExecutor, idempotency_key
from ..tools import Tool, ToolContext, as_tool

__all__ = ["call_tool", "make_tool_context"]


def make_tool_context(
    tool_name: str = "tool",
    *,
    cwd: str | Path = ".",
    call_id: str = "call_1",
    session_id: str = "test-session",
    env: Mapping[str, str] | None = None,
    settings: Mapping[str, Any] | None = None,
    deps: Any = None,
) -> ToolContext:
    """A :class:`ToolContext` as the runner would build it."""
    return ToolContext(
        call_id=call_id,
        tool_name=tool_name,
        session_id=session_id,
        idempotency_key=idempotency_key(session_id, call_id),
        cwd=Path(cwd),
        cancel=CancelToken(),
        env=dict(env or {}),
        settings=dict(settings or {}),
        deps=deps,
    )


async def call_tool(
    tool: Tool | Any,
    arguments: Mapping[str, Any] | str,
    *,
    cwd: str | Path = ".",
    env: Mapping[str, str] | None = None,
    settings: Mapping[str, Any] | None = None,
    deps: Any = None,
) -> ToolResultBlock:
    """Run ``tool`` on ``arguments`` (a mapping, or raw text the model might send) exactly
    as the runner would: validation, timeout, output cap and error reporting included.
    Returns the :class:`ToolResultBlock` the model would see."""
    resolved = as_tool(tool)
    if isinstance(arguments, str):
        call = ToolCallBlock(id="call_1", name=resolved.name, raw_arguments=arguments)
    else:
        call = ToolCallBlock(id="call_1", name=resolved.name, arguments=dict(arguments))
    executor = ToolExecutor(
        {resolved.name: resolved},
        session_id="test-session",
        cancel=CancelToken(),
        cwd=Path(cwd),
        env=dict(env or {}),
        deps=deps,
        settings={resolved.name: dict(settings or {})},
    )
    return await executor.execute(call)
