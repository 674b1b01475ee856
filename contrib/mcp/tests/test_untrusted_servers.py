"""What a misbehaving MCP server sends is checked before it reaches a session (a real
server subprocess, ``hostile_mcp_server.py``, over stdio)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import tether
from tether.errors import InvalidRequestError
from tether.messages import ImageBlock, Message, ToolResultBlock
from tether.provider import ModelRequest
from tether.testing import Reply, ScriptedProvider, call

HOSTILE = Path(__file__).with_name("hostile_mcp_server.py")


def hostile_table(record: Path, **env: str) -> dict[str, Any]:
    return {
        "command": sys.executable,
        "args": [str(HOSTILE)],
        "env": {"MCP_TEST_RECORD": str(record), **env},
        "restart_backoff": 0,
    }


def images_in(messages: list[Message]) -> list[ImageBlock]:
    found = []
    for message in messages:
        for block in message.content:
            if isinstance(block, ImageBlock):
                found.append(block)
            elif isinstance(block, ToolResultBlock) and isinstance(block.content, list):
                found.extend(b for b in block.content if isinstance(b, ImageBlock))
    return found


def picky(request: ModelRequest) -> Reply:
    """A model that, like a real provider, rejects a request carrying an image that is
    not what its type says; otherwise it calls the tool the user names, then answers."""
    from tether.images import sniff_image_type

    for image in images_in(request.messages):
        raw = __import__("base64").b64decode(image.data or "", validate=True)
        if sniff_image_type(raw) != image.mime_type:
            raise InvalidRequestError("Could not process image", provider="picky")
    last = request.messages[-1]
    if last.role == "tool":
        return Reply(text="seen")
    return Reply(tool_calls=[call(f"bad__{last.text}")])


async def test_bad_images_from_a_server_become_error_results_and_the_session_lives_on(
    record: Path, make_config: Any
) -> None:
    agent = tether.Agent(
        ScriptedProvider(handler=picky),
        tools=["bad"],
        config=make_config(bad=hostile_table(record)),
    )
    session = tether.InMemorySession()
    try:
        outcomes = {}
        for tool in ("bad_base64", "html_image", "html_png", "mislabelled"):
            result = await agent.run(tool, session=session)
            assert result.outcome.value == "completed", (tool, result.error)
            [answer] = [r for m in result.messages if m.role == "tool" for r in m.tool_results]
            outcomes[tool] = answer
        after = await agent.run("mislabelled", session=session)  # later requests still work
    finally:
        await agent.aclose()
    assert after.outcome.value == "completed"
    for tool in ("bad_base64", "html_image", "html_png"):
        answer = outcomes[tool]
        assert answer.is_error, tool
        assert "image rejected" in answer.text, answer.text
    assert "not valid base64" in outcomes["bad_base64"].text
    assert "a chart" in outcomes["bad_base64"].text  # the rest of the result is kept
    assert "'text/html'" in outcomes["html_image"].text
    assert not outcomes["mislabelled"].is_error
    stored = images_in(session.messages)
    assert [image.mime_type for image in stored] == ["image/png", "image/png"]
