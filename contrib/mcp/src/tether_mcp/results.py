"""MCP tool results as tether tool-result content.

``text`` → a text block; ``image`` → an image block; an embedded text resource → a text
block headed by its URI; an embedded binary resource → an image block when it is an
image, else a note naming it; a resource link → a note; ``audio`` → a note (tether has no
audio blocks). One representation reaches the model: ``structuredContent`` is used (as
JSON) only when there is no other content. Servers that return both (the spec asks
them to) say the same thing twice, and the model would pay for it twice — or read an
image as base64 text.
``isError`` raises :class:`~tether.errors.ToolError`, so the model receives an
``is_error`` result with the server's text.
"""

from __future__ import annotations

import json
from typing import Any

from mcp import types

from tether.errors import ToolError
from tether.messages import ImageBlock, TextBlock

__all__ = ["to_blocks"]

Blocks = list[TextBlock | ImageBlock]


def to_blocks(result: types.CallToolResult) -> Blocks:
    """The content of ``result`` as blocks; raises ToolError when ``isError`` is set."""
    blocks: Blocks = []
    for item in result.content:
        blocks.extend(_block(item))
    structured = result.structured_content
    if structured is not None and not blocks:
        blocks.append(TextBlock(text=json.dumps(structured, ensure_ascii=False)))
    if result.is_error:
        text = "\n".join(b.text for b in blocks if isinstance(b, TextBlock)).strip()
        raise ToolError(text or "The MCP tool reported an error without a message.")
    return blocks


def _block(item: Any) -> Blocks:
    kind = getattr(item, "type", None)
    if kind == "text":
        return [TextBlock(text=item.text)]
    if kind == "image":
        return [ImageBlock(mime_type=item.mime_type, data=item.data)]
    if kind == "audio":
        return [TextBlock(text=f"[audio ({item.mime_type}) omitted: tether cannot show audio]")]
    if kind == "resource_link":
        described = f": {item.description}" if getattr(item, "description", None) else ""
        return [TextBlock(text=f"[resource {item.uri}{described}]")]
    if kind == "resource":
        resource = item.resource
        mime = resource.mime_type or "application/octet-stream"
        text = getattr(resource, "text", None)
        if text is not None:
            return [TextBlock(text=f"[resource {resource.uri} ({mime})]\n{text}")]
        if mime.startswith("image/"):
            return [ImageBlock(mime_type=mime, data=resource.blob)]
        return [TextBlock(text=f"[binary resource {resource.uri} ({mime}) omitted]")]
    return [TextBlock(text=f"[unsupported MCP content of type {kind!r} omitted]")]
