"""``tether mcp serve``: tether's registered tools as an MCP server.

Calls go through tether's own :class:`~tether.tool_execution.ToolExecutor`, exactly as in
an agent run: arguments are parsed strictly and validated against the tool's schema,
``[tool_settings.*]`` apply (the shell's allow and deny rules, for instance), tools see
the workspace root as their working directory (file tools refuse paths outside it), and
every failure, refusal or timeout becomes an MCP result with ``isError`` set and the
reason as text. Cancelling a request (``notifications/cancelled``) cancels the call.
"""

from __future__ import annotations

import itertools
import socket
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from mcp import types

from tether import PluginManager
from tether.config import Config
from tether.tools import Tool

from .errors import McpConfigError

__all__ = ["ToolServer", "select_tools"]


def select_tools(
    manager: PluginManager, config: Config, names: Sequence[str]
) -> tuple[dict[str, Tool], dict[str, dict[str, Any]]]:
    """The tools of the named toolsets (or single tools), and each tool's settings
    (``[tool_settings.<toolset>]`` overlaid by ``[tool_settings.<tool>]``)."""
    registry = manager.tools
    tools: dict[str, Tool] = {}
    settings: dict[str, dict[str, Any]] = {}
    for name in names:
        if name not in registry:
            near = registry.near(name)
            hint = f" Did you mean {', '.join(near)}?" if near else ""
            raise McpConfigError(
                f'No tool or toolset named "{name}".{hint} Registered: '
                f"{', '.join(registry.names()) or 'none'}."
            )
        toolset = registry.get(name)
        if toolset.dynamic:
            raise McpConfigError(
                f'"{name}" is a toolset whose tools are only known at run time (an MCP server); '
                "serve tether's own tools, and point MCP clients at that server directly."
            )
        for tool in toolset:
            tools[tool.name] = tool
            settings[tool.name] = {
                **config.tool_settings.get(name, {}),
                **config.tool_settings.get(tool.name, {}),
            }
    return tools, settings


class ToolServer:
    """An MCP server (the SDK's low-level ``Server``) answering with tether tools.

    :param root: the workspace root the tools work in (their ``ToolContext.cwd``).
    """

    def __init__(
        self,
        tools: dict[str, Tool],
        settings: dict[str, dict[str, Any]],
        *,
        root: Path,
        default_timeout: float | None = None,
    ) -> None:
        from mcp.server.lowlevel import Server

        from tether import CancelToken
        from tether.tool_execution import DEFAULT_TOOL_TIMEOUT_S, ToolExecutor

        self.tools = tools
        self.executor = ToolExecutor(
            tools,
            session_id="mcp-serve",
            cancel=CancelToken(),
            cwd=root,
            env={},
            deps=None,
            settings=settings,
            default_timeout=default_timeout or DEFAULT_TOOL_TIMEOUT_S,
        )
        self._ids = itertools.count(1)
        self.server: Any = Server(
            "tether",
            version=_version(),
            instructions="Tools of the tether agent harness, with their policies.",
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )

    async def _list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(name=t.name, description=t.description, input_schema=t.parameters)
                for t in self.tools.values()
            ]
        )

    async def _call_tool(
        self, ctx: Any, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        from tether.messages import ToolCallBlock

        call = ToolCallBlock(
            id=f"mcp_{next(self._ids)}", name=params.name, arguments=dict(params.arguments or {})
        )
        result = await self.executor.execute(call)
        return types.CallToolResult(content=_content(result.content), is_error=result.is_error)

    async def serve_stdio(self) -> None:
        """Serve one client over this process's stdin and stdout."""
        from mcp.server.stdio import stdio_server

        async with stdio_server() as (read, write):
            await self.server.run(read, write, self.server.create_initialization_options())

    async def serve_http(
        self, host: str, port: int, on_ready: Callable[[str], None] | None = None
    ) -> None:
        """Serve streamable HTTP at ``http://host:port/mcp`` until cancelled (Ctrl-C)."""
        import uvicorn

        sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
        bound = sock.getsockname()[1]
        app = self.server.streamable_http_app(host=host)
        config = uvicorn.Config(app, log_level="warning", lifespan="on")
        if on_ready is not None:
            shown = f"[{host}]" if ":" in host else host
            on_ready(f"http://{shown}:{bound}/mcp")
        await uvicorn.Server(config).serve(sockets=[sock])


def _content(content: Any) -> list[types.TextContent | types.ImageContent]:
    from tether.messages import ImageBlock

    if isinstance(content, str):
        return [types.TextContent(type="text", text=content)]
    out: list[types.TextContent | types.ImageContent] = []
    for block in content:
        if isinstance(block, ImageBlock) and block.data is not None:
            out.append(types.ImageContent(type="image", data=block.data, mime_type=block.mime_type))
        elif isinstance(block, ImageBlock):
            out.append(types.TextContent(type="text", text=f"[image at {block.url}]"))
        else:
            out.append(types.TextContent(type="text", text=block.text))
    return out


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tether-mcp")
    except PackageNotFoundError:
        return "0"
