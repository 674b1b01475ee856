"""``tether mcp``: inspect and debug MCP servers, and serve tether's tools over MCP.

::

    tether mcp list                         # configured servers: started, tools or why not
    tether mcp tools NAME                   # the tools of one server, as the model sees them
    tether mcp call NAME TOOL '{"a": 1}'    # call one tool, print the result
    tether mcp resources NAME [URI]         # list a server's resources, or read one
    tether mcp prompts NAME [PROMPT] ['{"arg": "v"}']   # list its prompts, or get one
    tether mcp serve --tools fs,shell       # tether's tools for other MCP clients (stdio)
    tether mcp serve --tools fs --http --port 8765
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from pathlib import Path
from typing import Any

import click

from tether_cli import CliState, fail, pass_state

__all__ = ["mcp"]


@click.group("mcp")
def mcp() -> None:
    """Model Context Protocol: inspect configured MCP servers, serve tether's tools."""


def _connection(state: CliState, name: str) -> Any:
    from .servers import configured_servers, connection

    config = state.config()
    servers = configured_servers(config)
    if name not in servers:
        known = ", ".join(servers) or "none"
        fail(f'No MCP server named "{name}" in [mcp.servers]. Configured: {known}.')
    return connection(name, servers[name], config)


@mcp.command("list")
@click.option("--json", "json_mode", is_flag=True, help="Print one JSON object.")
@pass_state
def list_servers(state: CliState, json_mode: bool) -> None:
    """Start each configured server once and show its tools, or why it is unavailable.

    Exits with status 1 if any server could not be started.
    """
    from .errors import ServerUnavailable
    from .servers import configured_servers, connection

    config = state.config()
    servers = configured_servers(config)

    async def probe() -> list[dict[str, Any]]:
        rows = []
        for name, settings in servers.items():
            conn = connection(name, settings, config)
            row: dict[str, Any] = {
                "name": name,
                "transport": settings.transport,
                "target": settings.url or " ".join([settings.command or "", *settings.args]),
            }
            try:
                await conn.ensure_started()
                row["tools"] = [t.name for t in conn.tools]
            except ServerUnavailable as exc:
                row["error"] = str(exc)
            finally:
                await conn.aclose()
            rows.append(row)
        return rows

    rows = asyncio.run(probe())
    if json_mode:
        click.echo(json.dumps({"servers": rows}, indent=2))
    elif not rows:
        click.echo("No MCP servers configured. Add [mcp.servers.NAME] to tether.toml.")
    for row in rows if not json_mode else []:
        click.echo(f"{row['name']}  ({row['transport']}: {row['target']})")
        if "error" in row:
            click.secho(f"  unavailable: {row['error']}", fg="red")
        else:
            click.echo(f"  {len(row['tools'])} tools: {', '.join(row['tools'])}")
    if any("error" in row for row in rows):
        sys.exit(1)


@mcp.command("tools")
@click.argument("name")
@click.option("--json", "json_mode", is_flag=True, help="Print the definitions as JSON.")
@pass_state
def tools(state: CliState, name: str, json_mode: bool) -> None:
    """The tools of server NAME, named and described as the model sees them."""
    from .errors import ServerUnavailable
    from .toolset import McpToolset

    toolset = McpToolset(_connection(state, name))

    async def load() -> None:
        try:
            await toolset.connection.ensure_started()
            await toolset.refresh()
        finally:
            await toolset.aclose()

    try:
        asyncio.run(load())
    except ServerUnavailable as exc:
        fail(str(exc))
    definitions = [t.definition for t in toolset.tools]
    if json_mode:
        click.echo(
            json.dumps(
                [
                    {"name": d.name, "description": d.description, "parameters": d.parameters}
                    for d in definitions
                ],
                indent=2,
            )
        )
        return
    for definition in definitions:
        click.secho(definition.name, bold=True)
        if definition.description:
            click.echo(f"  {definition.description.strip().splitlines()[0]}")
        params = definition.parameters.get("properties", {})
        required = set(definition.parameters.get("required", []))
        for param, schema in params.items():
            kind = schema.get("type", "any") if isinstance(schema, dict) else "any"
            mark = "" if param in required else "?"
            click.echo(f"    {param}{mark}: {kind}")


@mcp.command("call")
@click.argument("name")
@click.argument("tool")
@click.argument("arguments", default="{}")
@pass_state
def call(state: CliState, name: str, tool: str, arguments: str) -> None:
    """Call TOOL on server NAME with ARGUMENTS (a JSON object) and print the result.

    TOOL is the server's own name for the tool. Exits with status 1 if the server
    reports an error.
    """
    from tether.errors import ToolError

    from .results import to_blocks

    try:
        parsed = json.loads(arguments)
    except ValueError as exc:
        fail(f'ARGUMENTS must be a JSON object, e.g. \'{{"path": "README.md"}}\': {exc}.')
    if not isinstance(parsed, dict):
        fail('ARGUMENTS must be a JSON object, e.g. \'{"path": "README.md"}\'.')
    conn = _connection(state, name)

    async def run() -> Any:
        try:
            async with asyncio.timeout(conn.settings.call_timeout):
                return to_blocks(await conn.call(tool, parsed))
        finally:
            await conn.aclose()

    try:
        blocks = asyncio.run(run())
    except TimeoutError:
        fail(f"`{tool}` did not finish within {conn.settings.call_timeout:g} s (call_timeout).")
    except ToolError as exc:
        fail(str(exc))
    for block in blocks:
        if block.type == "text":
            click.echo(block.text)
        else:
            size = len(block.data or "") * 3 // 4
            click.echo(f"[image {block.mime_type}, about {size} bytes]")


@mcp.command("resources")
@click.argument("name")
@click.argument("uri", required=False)
@pass_state
def resources(state: CliState, name: str, uri: str | None) -> None:
    """List the resources of server NAME, or print the contents of resource URI."""
    from tether.errors import ToolError

    from .server_features import resource_blocks

    conn = _connection(state, name)

    async def run() -> Any:
        try:
            if uri is None:
                return await conn.list_resources()
            return resource_blocks(await conn.read_resource(uri))
        finally:
            await conn.aclose()

    try:
        found = asyncio.run(run())
    except ToolError as exc:
        fail(str(exc))
    if uri is None:
        if not found:
            click.echo(f"The MCP server `{name}` offers no resources.")
        for item in found:
            about = item.description or item.name
            click.echo(f"{item.uri}  {item.mime_type or ''}".rstrip())
            if about and about != str(item.uri):
                click.echo(f"  {about.strip().splitlines()[0]}")
        return
    _print_blocks(found)


@mcp.command("prompts")
@click.argument("name")
@click.argument("prompt", required=False)
@click.argument("arguments", default="{}")
@pass_state
def prompts(state: CliState, name: str, prompt: str | None, arguments: str) -> None:
    """List the prompts of server NAME, or print PROMPT filled in with ARGUMENTS (a JSON
    object of strings)."""
    from tether.errors import ToolError

    from .server_features import prompt_text

    try:
        parsed = json.loads(arguments)
    except ValueError as exc:
        fail(f'ARGUMENTS must be a JSON object, e.g. \'{{"topic": "tests"}}\': {exc}.')
    if not isinstance(parsed, dict):
        fail('ARGUMENTS must be a JSON object, e.g. \'{"topic": "tests"}\'.')
    conn = _connection(state, name)

    async def run() -> Any:
        try:
            if prompt is None:
                return await conn.list_prompts()
            return prompt_text(
                await conn.get_prompt(prompt, {k: str(v) for k, v in parsed.items()})
            )
        finally:
            await conn.aclose()

    try:
        found = asyncio.run(run())
    except ToolError as exc:
        fail(str(exc))
    if prompt is not None:
        click.echo(found)
        return
    if not found:
        click.echo(f"The MCP server `{name}` offers no prompts.")
    for item in found:
        names = ", ".join(a.name + ("" if a.required else "?") for a in item.arguments or [])
        click.secho(f"{item.name}({names})", bold=True)
        if item.description:
            click.echo(f"  {item.description.strip().splitlines()[0]}")


def _print_blocks(blocks: Any) -> None:
    for block in blocks:
        if block.type == "text":
            click.echo(block.text)
        else:
            size = len(block.data or "") * 3 // 4
            click.echo(f"[image {block.mime_type}, about {size} bytes]")


@mcp.command("serve")
@click.option(
    "--tools",
    "tool_names",
    metavar="NAMES",
    help="Comma-separated toolsets or tools to expose (default: `tools` from tether.toml).",
)
@click.option("--http", "http", is_flag=True, help="Serve streamable HTTP instead of stdio.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8765, show_default=True, help="Port (0: any free port).")
@click.option(
    "--root",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="Workspace root of the tools (default: the current directory).",
)
@pass_state
def serve(
    state: CliState, tool_names: str | None, http: bool, host: str, port: int, root: Path | None
) -> None:
    """Expose tether's registered tools as an MCP server, with their policies.

    Over stdio (the default) an MCP client starts `tether mcp serve` itself; with --http
    the server listens until interrupted and prints its URL.
    """
    from .serve import ToolServer, select_tools

    config = state.config()
    names = [n.strip() for n in (tool_names or "").split(",") if n.strip()] or list(config.tools)
    if not names:
        fail("Nothing to serve: pass --tools fs,shell or set `tools` in tether.toml.")
    tools, settings = select_tools(state.plugin_manager(), config, names)
    server = ToolServer(
        tools,
        settings,
        root=(root or Path.cwd()).resolve(),
        default_timeout=config.limits.tool_timeout_s,
    )
    if not http:
        asyncio.run(server.serve_stdio())
        return

    def ready(url: str) -> None:
        click.echo(f"Serving {len(tools)} tools over MCP at {url}", err=True)
        click.echo(url)
        sys.stdout.flush()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(server.serve_http(host, port, ready))


@mcp.command("login")
@click.argument("name")
@pass_state
def login(state: CliState, name: str) -> None:
    """Sign in to HTTP server NAME with OAuth (it needs `oauth = true`) and keep the tokens.

    Opens the authorization page in a browser and waits for its redirect. Tokens are kept
    owner-only in the data directory and refreshed as needed.
    """
    from .errors import ServerUnavailable
    from .oauth import SIGN_IN_TIMEOUT, token_path

    conn = _connection(state, name)
    if not conn.settings.oauth:
        fail(f"[mcp.servers.{name}] does not use OAuth: set `oauth = true` (HTTP servers only).")
    conn.settings = conn.settings.model_copy(
        update={"startup_timeout": SIGN_IN_TIMEOUT + conn.settings.startup_timeout}
    )

    async def sign_in() -> None:
        try:
            await conn.ensure_started()
        finally:
            await conn.aclose()

    try:
        asyncio.run(sign_in())
    except ServerUnavailable as exc:
        fail(str(exc))
    assert conn.oauth_dir is not None
    click.echo(f"Signed in to {name}; tokens kept in {token_path(conn.oauth_dir, name)}.")


@mcp.command("logout")
@click.argument("name")
@pass_state
def logout(state: CliState, name: str) -> None:
    """Forget the OAuth tokens of server NAME."""
    from .oauth import token_path

    conn = _connection(state, name)
    assert conn.oauth_dir is not None
    path = token_path(conn.oauth_dir, name)
    if path.exists():
        path.unlink()
        click.echo(f"Removed the tokens of {name}.")
    else:
        click.echo(f"No tokens kept for {name}.")
