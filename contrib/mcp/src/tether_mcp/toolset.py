"""An MCP server as a tether toolset: its tools, namespaced, kept up to date, and its
resources and prompts as two more tools (:mod:`tether_mcp.server_features`)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from mcp import types

from tether.errors import ToolError
from tether.tools import Tool, ToolContext, Toolset

from .connection import ServerConnection
from .errors import ServerUnavailable
from .names import tool_name
from .progress import CoalescedProgress
from .results import to_blocks
from .schema import normalise
from .server_features import feature_tools

__all__ = ["McpTool", "McpToolset"]

log = logging.getLogger("tether.mcp")


class McpTool(Tool):
    """One tool of an MCP server. Arguments are checked by the server (its schema is
    passed to the model as is, normalised); the result becomes tether blocks."""

    __slots__ = ("connection", "remote_name")

    def __init__(self, connection: ServerConnection, remote: types.Tool) -> None:
        super().__init__(
            _remote,
            name=tool_name(connection.name, remote.name),
            description=remote.description or remote.title or "",
            timeout=connection.settings.call_timeout,
        )
        self.connection = connection
        self.remote_name = remote.name
        self.parameters = normalise(remote.input_schema)
        self._context_param = "context"  # for report_progress

    def __repr__(self) -> str:
        return f"<McpTool {self.name} ({self.connection.name}: {self.remote_name})>"

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        return dict(arguments)

    async def call(self, arguments: Mapping[str, Any], context: ToolContext | None) -> Any:
        report = context.report_progress if context is not None else None
        progress = CoalescedProgress(report) if report is not None else None
        try:
            result = await self.connection.call(
                self.remote_name,
                dict(arguments),
                progress=progress,
                cwd=context.cwd if context is not None else None,
            )
        finally:
            if progress is not None:
                progress.finish()
        return to_blocks(result)


async def _remote() -> None:
    """Stands in for the function of a tool that runs on an MCP server."""


class McpToolset(Toolset):
    """The tools of one MCP server, named ``SERVER__tool``.

    Dynamic: the server starts at the first :meth:`refresh` (before the first model call
    of a run), the tools are listed again when the server announces a change, and a
    server that cannot start leaves the toolset empty with :attr:`problem` set, so the
    agent runs without it. The connection is shared by every run of the agent.
    """

    dynamic = True

    def __init__(self, connection: ServerConnection) -> None:
        super().__init__(connection.name, [], description=f"MCP server {connection.name}")
        self.connection = connection
        self._listing = 0
        self._extras: list[Tool] | None = None
        """The resource and prompt tools (:mod:`tether_mcp.server_features`), once made."""

    async def refresh(self) -> None:
        connection = self.connection
        try:
            if not connection.connected:
                if connection.backing_off and self.problem is not None:
                    return  # failed to start a moment ago: not again on every turn
                await connection.ensure_started()
            elif connection.stale:
                await connection.relist()
            else:
                await asyncio.sleep(0)  # let a change notification already received land
                if connection.stale:
                    await connection.relist()
        except ServerUnavailable as exc:
            if self.problem != connection.problem or self.tools:
                log.warning("%s The agent runs without its tools.", exc)
            self.problem = connection.problem or str(exc)
            if self.tools:
                self.tools = []
                self.version += 1
            self._listing = -1  # offer the tools again once the server is back
            return
        self.problem = None
        if self._extras is None:
            try:
                self._extras = await feature_tools(connection)
            except ToolError as exc:
                log.warning("MCP server %s: %s", connection.name, exc)
                self._extras = []
            self._listing = -1
        if connection.listing != self._listing:
            self._listing = connection.listing
            self._update(connection.tools)

    def _update(self, remote: list[types.Tool]) -> None:
        """New tool objects for new or changed tools; known ones keep their place."""
        current = {t.remote_name: t for t in self.tools if isinstance(t, McpTool)}
        fresh: list[Tool] = []
        for item in remote:
            known = current.get(item.name)
            if known is not None and known.parameters == normalise(item.input_schema):
                known.description = item.description or item.title or ""
                fresh.append(known)
            else:
                fresh.append(McpTool(self.connection, item))
        fresh.extend(self._extras or [])
        order = {t.name: i for i, t in enumerate(self.tools)}
        fresh.sort(key=lambda t: order.get(t.name, len(order)))  # new tools go last
        self.tools = fresh
        self.version += 1

    async def aclose(self) -> None:
        await self.connection.aclose()
