"""The configured servers of one agent or CLI invocation."""

from __future__ import annotations

from pathlib import Path

from tether.config import Config, data_dir, load_config

from .client_features import ClientFeatures
from .connection import ServerConnection
from .settings import ServerSettings, parse_servers
from .toolset import McpToolset

__all__ = ["configured_servers", "connection", "mcp_dir", "toolsets"]


def configured_servers(config: Config | None) -> dict[str, ServerSettings]:
    """Every enabled ``[mcp.servers.NAME]`` of ``config`` (loaded when ``None``)."""
    config = config if config is not None else load_config()
    servers = parse_servers(config.section("mcp"))
    return {name: s for name, s in servers.items() if s.enabled}


def mcp_dir(config: Config | None) -> Path:
    """``<data dir>/mcp``: server logs and OAuth tokens."""
    return data_dir(config) / "mcp"


def connection(name: str, settings: ServerSettings, config: Config | None) -> ServerConnection:
    base = mcp_dir(config)
    features = ClientFeatures(sampling=settings.sampling, config=config)
    return ServerConnection(
        name, settings, log_dir=base / "logs", oauth_dir=base / "oauth", features=features
    )


def toolsets(config: Config | None) -> list[McpToolset]:
    """A fresh (not yet started) toolset per configured server."""
    return [
        McpToolset(connection(name, settings, config))
        for name, settings in configured_servers(config).items()
    ]
