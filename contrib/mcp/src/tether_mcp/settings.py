"""``[mcp.servers.NAME]`` tables of ``tether.toml``: one MCP server each.

::

    [mcp.servers.files]                  # stdio: tether starts the command
    command = "npx"
    args = ["-y", "@modelcontextprotocol/server-filesystem", "."]
    env = { LOG_LEVEL = "warn" }
    tools = ["read_file", "list_directory"]   # allow-list (default: every tool)

    [mcp.servers.tracker]                # streamable HTTP
    url = "https://mcp.example.com/mcp"
    headers = { Authorization = "Bearer ${TRACKER_TOKEN}" }   # ${VAR} read from the environment
    oauth = true                         # or sign in with OAuth (tokens kept in the data dir)
    call_timeout = 60
    sampling = "ask"                     # may the server use the model? ask | allow | deny

Values of ``env`` and ``headers`` may name environment variables as ``${VAR}`` so that
secrets stay out of the file.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .errors import McpConfigError

__all__ = ["ServerSettings", "parse_servers"]

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class ServerSettings(BaseModel):
    """One MCP server: ``command`` (stdio) or ``url`` (streamable HTTP), not both."""

    model_config = ConfigDict(extra="forbid")

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: Path | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    oauth: bool = False
    oauth_redirect_port: int = Field(
        33418, ge=1, le=65535, description="Loopback port the OAuth sign-in redirects to."
    )
    oauth_scope: str | None = None
    tools: list[str] | None = Field(None, description="Allow-list of the server's tool names.")
    startup_timeout: float = Field(30.0, gt=0, description="Seconds to connect and list tools.")
    call_timeout: float | None = Field(120.0, gt=0, description="Seconds per tool call.")
    restart_backoff: float = Field(
        0.5, ge=0, description="First wait before restarting a crashed server; doubles, to 30 s."
    )
    enabled: bool = True
    log_max_bytes: int = Field(
        1_048_576,
        ge=4096,
        description="Bytes of a stdio server's stderr log (NAME.log) before it is rotated "
        "to NAME.log.1; at most twice this is kept.",
    )
    sampling: Literal["ask", "allow", "deny"] = Field(
        "ask", description="Whether the server may ask the agent's model for completions."
    )

    @model_validator(mode="after")
    def _one_transport(self) -> ServerSettings:
        if (self.command is None) == (self.url is None):
            raise ValueError("give either `command` (a stdio server) or `url` (streamable HTTP)")
        if self.oauth and self.url is None:
            raise ValueError("`oauth` applies to HTTP servers (`url`), not to stdio ones")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ValueError(f"`url` must start with http:// or https://, got {self.url!r}")
        return self

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "http"

    def resolved_env(self) -> dict[str, str]:
        """``env`` with ``${VAR}`` references filled in from the environment."""
        return {key: _expand(value, f"env.{key}") for key, value in self.env.items()}

    def resolved_headers(self) -> dict[str, str]:
        """``headers`` with ``${VAR}`` references filled in from the environment."""
        return {key: _expand(value, f"headers.{key}") for key, value in self.headers.items()}


def _expand(value: str, where: str) -> str:
    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in os.environ:
            raise McpConfigError(
                f"{where} refers to ${{{name}}}, which is not set. Export {name} or remove the reference."
            )
        return os.environ[name]

    return _VAR.sub(one, value)


def parse_servers(section: Mapping[str, Any]) -> dict[str, ServerSettings]:
    """The servers of an ``[mcp]`` table, by name; raises :class:`McpConfigError`."""
    unknown = set(section) - {"servers"}
    if unknown:
        raise McpConfigError(
            f"[mcp] has unknown keys: {', '.join(sorted(unknown))}. Servers go in [mcp.servers.NAME]."
        )
    servers: dict[str, ServerSettings] = {}
    for name, table in (section.get("servers") or {}).items():
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,32}", name):
            raise McpConfigError(
                f"MCP server name {name!r} is not valid: use 1-32 letters, digits, '_' or '-'."
            )
        if not isinstance(table, Mapping):
            raise McpConfigError(f"[mcp.servers.{name}] must be a table.")
        try:
            servers[name] = ServerSettings.model_validate(dict(table))
        except ValidationError as exc:
            problems = []
            for err in exc.errors(include_url=False):
                key = ".".join(str(p) for p in err["loc"])
                problems.append(
                    f"unknown key '{key}'"
                    if err["type"] == "extra_forbidden"
                    else (
                        f"'{key}': {err['msg']}"
                        if key
                        else err["msg"].removeprefix("Value error, ")
                    )
                )
            raise McpConfigError(f"[mcp.servers.{name}]: " + "; ".join(problems) + ".") from None
    return servers
