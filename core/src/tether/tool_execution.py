"""Running one tool call and turning whatever happens into a tool result.

:meth:`ToolExecutor.execute` never raises for a tool's failure: an unknown tool name,
arguments that are not JSON or do not match the schema, a timeout, or an exception in
the tool all become an ``is_error`` result written for the model to act on. Only
cancellation propagates.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Mapping, MutableMapping, Sequence
from pathlib import Path
from typing import Any

import pydantic

from .arguments import prepare_arguments
from .cancel import CancelToken
from .errors import InvalidToolArguments, ToolError
from .messages import ImageBlock, Message, TextBlock, ToolCallBlock, ToolResultBlock
from .tools import Tool, ToolContext, format_validation_error, result_content

__all__ = ["INTERRUPTED", "ToolExecutor", "interrupted_result", "rehome_images"]

INTERRUPTED = "Interrupted: the run was cancelled before this tool call finished. It may or may not have taken effect."


def interrupted_result(call_id: str, why: str = INTERRUPTED) -> ToolResultBlock:
    return ToolResultBlock(call_id=call_id, content=why, is_error=True)


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
    ) -> None:
        self.tools = tools
        self.session_id = session_id
        self.cancel = cancel
        self.cwd = cwd
        self.env = env
        self.deps = deps
        self.settings = settings
        self.state: MutableMapping[str, Any] = {}

    def is_sequential(self, call: ToolCallBlock) -> bool:
        tool = self.tools.get(call.name)
        return tool is not None and tool.sequential

    async def execute(self, call: ToolCallBlock) -> ToolResultBlock:
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
        context = self._context(call, tool) if tool._context_param is not None else None
        try:
            if tool.timeout is None:
                value = await tool.call(arguments, context)
            else:
                async with asyncio.timeout(tool.timeout):
                    value = await tool.call(arguments, context)
        except TimeoutError:
            return self._error(
                call,
                f"Tool `{call.name}` timed out after {tool.timeout:g} s and was stopped. "
                "Try a smaller request, or a different approach.",
            )
        except ToolError as exc:
            return self._error(call, str(exc))
        except Exception as exc:
            return self._error(call, f"Tool `{call.name}` failed: {type(exc).__name__}: {exc}")
        return ToolResultBlock(
            call_id=call.id, content=result_content(value, tool.max_output_chars)
        )

    def _context(self, call: ToolCallBlock, tool: Tool) -> ToolContext:
        return ToolContext(
            call_id=call.id,
            tool_name=tool.name,
            session_id=self.session_id,
            idempotency_key=idempotency_key(self.session_id, call.id),
            cwd=self.cwd,
            cancel=self.cancel,
            state=self.state,
            env=self.env,
            deps=self.deps,
            settings=self.settings.get(tool.name, {}),
        )

    def _unknown_tool_message(self, name: str) -> str:
        available = ", ".join(sorted(self.tools)) or "(none)"
        return f"There is no tool named `{name}`. Available tools: {available}. Use one of these names exactly."

    @staticmethod
    def _error(call: ToolCallBlock, message: str) -> ToolResultBlock:
        return ToolResultBlock(call_id=call.id, content=message, is_error=True)


def rehome_images(
    results: Sequence[ToolResultBlock],
) -> tuple[list[ToolResultBlock], Message | None]:
    """For models that cannot see images inside tool results: move each image into one
    user message that follows the tool message, leaving a pointer in the result."""
    images: list[TextBlock | ImageBlock] = []
    moved: list[ToolResultBlock] = []
    for result in results:
        if isinstance(result.content, str) or not any(
            isinstance(b, ImageBlock) for b in result.content
        ):
            moved.append(result)
            continue
        kept: list[TextBlock | ImageBlock] = []
        count = 0
        for block in result.content:
            if isinstance(block, ImageBlock):
                count += 1
                images.append(block)
            else:
                kept.append(block)
        note = f"\n[{count} image(s) from this result are attached in the next user message]"
        kept.append(TextBlock(text=note))
        moved.append(result.model_copy(update={"content": kept}))
        images.insert(
            len(images) - count, TextBlock(text=f"Images returned by tool call {result.call_id}:")
        )
    if not images:
        return list(results), None
    return moved, Message(role="user", content=list(images))
