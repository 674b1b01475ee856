"""A server's resources and prompts, for the model: two tools per server that has them.

``NAME__read_resource(uri)`` reads one resource (its description lists the resources
the server had when the tools were made, up to :data:`LISTED`); ``NAME__get_prompt(name,
arguments)`` fills in one of the server's prompts and returns its messages as text. A
server with a ``tools`` allow-list gets them only when it names them (``read_resource``,
``get_prompt``). The command line has ``tether mcp resources`` and ``tether mcp prompts``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp import types

from tether.messages import ImageBlock, TextBlock
from tether.tools import Tool

from .names import tool_name
from .results import Blocks

if TYPE_CHECKING:
    from .connection import ServerConnection

__all__ = ["LISTED", "feature_tools", "prompt_text", "resource_blocks"]

LISTED = 50
"""How many resources or prompts a tool's description names."""


def resource_blocks(result: types.ReadResourceResult) -> Blocks:
    """The contents of a read resource as blocks: text as text, images as images."""
    blocks: Blocks = []
    for item in result.contents:
        mime = item.mime_type or "application/octet-stream"
        text = getattr(item, "text", None)
        if text is not None:
            blocks.append(TextBlock(text=text))
        elif mime.startswith("image/"):
            blocks.append(ImageBlock(mime_type=mime, data=getattr(item, "blob", "")))
        else:
            blocks.append(TextBlock(text=f"[binary resource {item.uri} ({mime}) omitted]"))
    return blocks


def prompt_text(result: types.GetPromptResult) -> str:
    """A filled-in prompt as text: one ``role: text`` paragraph per message."""
    parts = []
    for message in result.messages:
        content = message.content
        kind = getattr(content, "type", None)
        text = content.text if kind == "text" else f"[{kind} content]"  # type: ignore[union-attr]
        parts.append(f"{message.role}: {text}")
    return "\n\n".join(parts)


async def feature_tools(connection: ServerConnection) -> list[Tool]:
    """The resource and prompt tools for ``connection``'s server (none if it offers
    neither). The server must be connected."""
    has_resources, has_prompts = connection.offers
    allowed = connection.settings.tools  # an allow-list must name them to get them
    if allowed is not None:
        has_resources = has_resources and "read_resource" in allowed
        has_prompts = has_prompts and "get_prompt" in allowed
    own = {t.name for t in connection.tools}  # a server tool of the same name wins
    has_resources = has_resources and "read_resource" not in own
    has_prompts = has_prompts and "get_prompt" not in own
    tools: list[Tool] = []
    if has_resources:
        resources = await connection.list_resources()
        listed = "\n".join(
            f"- {r.uri}" + (f": {r.description or r.name}" if (r.description or r.name) else "")
            for r in resources[:LISTED]
        )

        async def read_resource(uri: str) -> Blocks:
            return resource_blocks(await connection.read_resource(uri))

        tools.append(
            Tool(
                read_resource,
                name=tool_name(connection.name, "read_resource"),
                description=f"Read a resource of the MCP server `{connection.name}` by its URI."
                + (f" Resources:\n{listed}" if listed else ""),
                read_only=True,
            )
        )
    if has_prompts:
        prompts = await connection.list_prompts()
        listed = "\n".join(
            f"- {p.name}"
            + (f"({', '.join(a.name for a in p.arguments or [])})" if p.arguments else "")
            + (f": {p.description}" if p.description else "")
            for p in prompts[:LISTED]
        )

        async def get_prompt(name: str, arguments: dict[str, str] | None = None) -> str:
            return prompt_text(await connection.get_prompt(name, dict(arguments or {})))

        tools.append(
            Tool(
                get_prompt,
                name=tool_name(connection.name, "get_prompt"),
                description=f"Get a prompt of the MCP server `{connection.name}`, filled in "
                "with its arguments." + (f" Prompts:\n{listed}" if listed else ""),
                read_only=True,
            )
        )
    return tools
