"""The tether entry point of tether-mcp: MCP servers as toolsets, and ``tether mcp``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import tether

if TYPE_CHECKING:
    from tether.registry import CommandRegistrar, ToolRegistrar


@tether.hookimpl
def register_tools(tools: ToolRegistrar) -> None:
    """One toolset per ``[mcp.servers.NAME]`` (enable it as ``tools = ["NAME"]``).

    Without an ``[mcp]`` table nothing is imported: the SDK loads only when a server is
    configured."""
    from tether.config import load_config

    config = tools.config if tools.config is not None else load_config()
    if not config.section("mcp"):
        return
    from .servers import toolsets

    for toolset in toolsets(config):
        tools.add(toolset)


@tether.hookimpl
def register_commands(commands: CommandRegistrar) -> None:
    from .cli import mcp

    commands.add(mcp)
