"""An MCP server (the SDK's server API, over stdio) that misbehaves on purpose.

Tools: ``bad_base64`` returns an "image" whose data is not base64; ``html_image`` an
HTML page labelled ``text/html`` and ``html_png`` one labelled ``image/png``;
``mislabelled`` a real PNG labelled ``image/jpeg``. ``flood_progress(n)`` sends ``n``
progress notifications, ``flood_stderr(n)`` writes ``n`` bytes to stderr. With
``HOSTILE_DUPLICATE=1`` the server lists its tools twice.
"""

from __future__ import annotations

import base64
import os
import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ImageContent, TextContent

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
HTML = base64.b64encode(b"<!doctype html><html><script>alert(1)</script></html>").decode()


class Server(MCPServer):
    async def list_tools(self):  # type: ignore[no-untyped-def]
        tools = await super().list_tools()
        return tools + tools if os.environ.get("HOSTILE_DUPLICATE") == "1" else tools


server = Server("hostile", log_level="WARNING")
RECORD = os.environ.get("MCP_TEST_RECORD")
if RECORD:
    with open(os.path.join(RECORD, f"pid-{os.getpid()}"), "w") as f:
        f.write(str(os.getpid()))


@server.tool(structured_output=False)
def bad_base64() -> list[TextContent | ImageContent]:
    """An image whose data is not base64."""
    return [
        TextContent(type="text", text="a chart"),
        ImageContent(type="image", data="not base64 at all!!", mime_type="image/png"),
    ]


@server.tool(structured_output=False)
def html_image() -> list[ImageContent]:
    """An HTML page labelled text/html."""
    return [ImageContent(type="image", data=HTML, mime_type="text/html")]


@server.tool(structured_output=False)
def html_png() -> list[ImageContent]:
    """An HTML page labelled image/png."""
    return [ImageContent(type="image", data=HTML, mime_type="image/png")]


@server.tool(structured_output=False)
def mislabelled() -> list[ImageContent]:
    """A PNG labelled image/jpeg."""
    return [ImageContent(type="image", data=base64.b64encode(PNG).decode(), mime_type="image/jpeg")]


@server.tool()
async def flood_progress(n: int, ctx: Context) -> str:
    """Report progress n times."""
    for i in range(1, n + 1):
        await ctx.report_progress(i, n, f"item {i}")
    return f"reported {n}"


@server.tool()
def flood_stderr(n: int) -> str:
    """Write n bytes to stderr."""
    line = "noise " * 15 + "\n"
    written = 0
    while written < n:
        sys.stderr.write(line)
        written += len(line)
    sys.stderr.flush()
    return f"wrote {written}"


if __name__ == "__main__":
    server.run("stdio")
