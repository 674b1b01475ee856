"""Tool names within provider limits, schemas normalised, results mapped to blocks."""

from __future__ import annotations

import re

import pytest
from mcp import types

from tether.errors import ToolError
from tether.messages import ImageBlock, TextBlock
from tether_mcp.names import tool_name
from tether_mcp.results import to_blocks
from tether_mcp.schema import normalise

VALID = re.compile(r"[A-Za-z0-9_-]{1,64}")


def test_names_are_namespaced_and_kept_when_valid() -> None:
    assert tool_name("github", "create_issue") == "github__create_issue"


def test_invalid_characters_and_long_names_stay_valid_and_distinct() -> None:
    dotted = tool_name("fs", "files.read")
    assert VALID.fullmatch(dotted) and dotted.startswith("fs__files_read")
    assert dotted != tool_name("fs", "files_read")  # no collision with the literal name
    long_a = tool_name("server", "x" * 80 + "a")
    long_b = tool_name("server", "x" * 80 + "b")
    assert VALID.fullmatch(long_a) and VALID.fullmatch(long_b)
    assert len(long_a) == 64 and long_a != long_b


def test_schemas_pass_through_with_refs_inlined_and_an_object_on_top() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "where": {"$ref": "#/$defs/Place", "description": "Where to look."},
            "tree": {"$ref": "#/$defs/Node"},
            "count": {"type": "integer", "minimum": 1},
        },
        "required": ["where"],
        "$defs": {
            "Place": {"type": "object", "properties": {"city": {"type": "string"}}},
            "Node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/Node"}}},
        },
    }
    out = normalise(schema)
    assert "$schema" not in out and "$defs" not in out
    assert out["properties"]["where"] == {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "description": "Where to look.",
    }
    assert out["properties"]["tree"]["properties"]["child"] == {"type": "object"}
    assert out["properties"]["count"] == {"type": "integer", "minimum": 1}
    assert out["required"] == ["where"]
    assert "$ref" not in str(out)
    assert normalise({}) == {"type": "object", "properties": {}}
    assert schema["$defs"]  # the server's schema is not modified


def test_results_map_to_blocks_and_errors_raise() -> None:
    result = types.CallToolResult(
        content=[
            types.TextContent(type="text", text="ok"),
            types.ImageContent(type="image", data="aGk=", mime_type="image/png"),
            types.EmbeddedResource(
                type="resource",
                resource=types.BlobResourceContents(
                    uri="file:///a.bin", blob="aGk=", mime_type="application/zip"
                ),
            ),
        ],
        structured_content={"n": 1},
    )
    text, image, note = to_blocks(result)  # the text stands for the structured content
    assert text == TextBlock(text="ok")
    assert image == ImageBlock(mime_type="image/png", data="aGk=")
    assert isinstance(note, TextBlock) and "file:///a.bin" in note.text
    only_structured = types.CallToolResult(content=[], structured_content={"n": 1})
    assert to_blocks(only_structured) == [TextBlock(text='{"n": 1}')]
    image_only = types.CallToolResult(
        content=[types.ImageContent(type="image", data="aGk=", mime_type="image/png")],
        structured_content={"n": 1},
    )
    assert to_blocks(image_only) == [ImageBlock(mime_type="image/png", data="aGk=")]
    same = types.CallToolResult(
        content=[types.TextContent(type="text", text='{"n": 1}')], structured_content={"n": 1}
    )
    assert to_blocks(same) == [TextBlock(text='{"n": 1}')]  # not said twice
    wrapped = types.CallToolResult(
        content=[types.TextContent(type="text", text="5")], structured_content={"result": 5}
    )
    assert to_blocks(wrapped) == [TextBlock(text="5")]
    failed = types.CallToolResult(
        content=[types.TextContent(type="text", text="no such issue")], is_error=True
    )
    with pytest.raises(ToolError, match="no such issue"):
        to_blocks(failed)


def test_the_sdk_is_not_imported_without_configured_servers() -> None:
    import subprocess
    import sys

    code = (
        "import sys, tether\n"
        "from tether.plugins import PluginManager\n"
        "tools = PluginManager(config=tether.Config()).tools\n"
        "assert 'fs' in tools, tools.names()\n"
        "print('mcp' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "False"
