"""Errors of tether-mcp, rooted in :class:`tether.errors.TetherError`."""

from __future__ import annotations

from tether.errors import ConfigError, TetherError

__all__ = ["McpConfigError", "McpError", "ServerUnavailable"]


class McpError(TetherError):
    """Something went wrong talking to an MCP server."""


class McpConfigError(ConfigError):
    """An ``[mcp.servers.*]`` table is invalid."""


class ServerUnavailable(McpError):
    """An MCP server could not be started or reached (it is run without)."""

    def __init__(self, message: str, *, server: str) -> None:
        super().__init__(message)
        self.server = server
