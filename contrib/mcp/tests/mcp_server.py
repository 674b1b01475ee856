"""A real MCP server for the tests, written with the SDK's server API.

``python mcp_server.py stdio`` serves over stdin/stdout; ``python mcp_server.py http``
binds 127.0.0.1 on an ephemeral port, prints ``PORT <n>`` and serves streamable HTTP.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import socket
import sys
from typing import TypedDict

from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import EmbeddedResource, TextContent, TextResourceContents

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


class Server(MCPServer):
    """Notes when a client has listed the tools again after `grow` added one."""

    grown = False
    relisted: asyncio.Event | None = None

    async def list_tools(self):  # type: ignore[no-untyped-def]
        tools = await super().list_tools()
        if self.grown and self.relisted is not None:
            self.relisted.set()
        return tools


server = Server("testserver", log_level="WARNING")
RECORD = os.environ.get("MCP_TEST_RECORD")
"""A directory where the server notes its pid and the calls it saw cancelled."""


def _note(what: str) -> None:
    if RECORD:
        with open(os.path.join(RECORD, f"{what}-{os.getpid()}"), "w") as f:
            f.write(str(os.getpid()))


_note("pid")


class Forecast(TypedDict):
    city: str
    high_c: int
    sky: str


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@server.tool()
def forecast(city: str) -> Forecast:
    """Tomorrow's forecast for a city."""
    return Forecast(city=city, high_c=21, sky="clear")


@server.tool()
def picture() -> Image:
    """A one-pixel PNG."""
    return Image(data=PNG, format="png")


@server.tool(structured_output=False)
def document() -> list[TextContent | EmbeddedResource]:
    """A text resource embedded in the result."""
    return [
        TextContent(type="text", text="Here is the file:"),
        EmbeddedResource(
            type="resource",
            resource=TextResourceContents(
                uri="file:///notes.txt", mime_type="text/plain", text="remember the milk"
            ),
        ),
    ]


@server.tool()
def fail(reason: str) -> str:
    """Always fails."""
    raise ToolError(f"refused: {reason}")


@server.tool()
async def slow(seconds: float, ctx: Context) -> str:
    """Sleep, reporting progress."""
    await ctx.report_progress(0, seconds, "starting")
    try:
        await asyncio.sleep(seconds)
    except BaseException:
        _note("cancelled")
        raise
    return "done"


@server.tool()
def crash() -> str:
    """The server process dies in the middle of this call."""
    os._exit(3)


def late(word: str) -> str:
    """A tool that exists only after `grow` ran."""
    return word.upper()


@server.tool()
async def grow(ctx: Context) -> str:
    """Add the tool `late`, tell the client the tool list changed, and answer once the
    client has listed the tools again (or after 10 s), so tests need no timing."""
    if not server.grown:
        server.add_tool(late)
        server.grown = True
    server.relisted = asyncio.Event()
    await ctx.notify_tools_changed()
    await ctx.session.send_tool_list_changed()
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(10):
            await server.relisted.wait()
    return "added late"


class Verifier:
    """Accepts one bearer token: what an OAuth-protected server does with a valid one."""

    async def verify_token(self, token: str) -> AccessToken | None:
        if token != "good-token":
            return None
        return AccessToken(token=token, client_id="tether", scopes=[])


def secured(url: str) -> MCPServer:
    """A server that only answers requests carrying the bearer token ``good-token``."""
    app = MCPServer(
        "secured",
        log_level="WARNING",
        token_verifier=Verifier(),
        auth=AuthSettings(issuer_url="http://127.0.0.1:9/", resource_server_url=url),
    )
    app.add_tool(echo)
    return app


def main() -> None:
    transport = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if transport == "stdio":
        server.run("stdio")
        return
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", int(os.environ.get("MCP_TEST_PORT", "0"))))
    sock.listen(128)
    port = sock.getsockname()[1]
    print(f"PORT {port}", flush=True)
    if transport == "http-auth":
        app = secured(f"http://127.0.0.1:{port}/mcp").streamable_http_app()
    else:
        app = server.streamable_http_app()
    config = uvicorn.Config(app, log_level="warning")
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))


if __name__ == "__main__":
    main()
