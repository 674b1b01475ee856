"""An HTTP server that goes away: calls end with an error result, never hang."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import tether
from tether.errors import ToolError
from tether.events import Done, ToolProgress
from tether.testing import Reply, ScriptedProvider, call
from tether_mcp.connection import ServerConnection
from tether_mcp.settings import ServerSettings

GONE = r"MCP server `h` (stopped|could not be started)|connection to the MCP server `h`"


def connect(url: str) -> ServerConnection:
    return ServerConnection("h", ServerSettings(url=url, restart_backoff=0, startup_timeout=5))


async def test_a_server_that_dies_during_a_call(http_server: Any, record: Path) -> None:
    connection = connect(http_server.url)
    running = asyncio.Event()

    async def progress(value: float, total: float | None, message: str | None) -> None:
        running.set()

    try:
        call = asyncio.ensure_future(connection.call("slow", {"seconds": 60}, progress=progress))
        async with asyncio.timeout(30):
            await running.wait()
        http_server.close()
        with pytest.raises(ToolError, match=GONE):
            async with asyncio.timeout(30):
                await call
    finally:
        await connection.aclose()


async def test_a_server_that_died_between_calls(http_server: Any, record: Path) -> None:
    connection = connect(http_server.url)
    try:
        assert not (await connection.call("add", {"a": 1, "b": 2})).is_error
        http_server.close()
        with pytest.raises(ToolError, match=GONE):
            async with asyncio.timeout(30):
                await connection.call("add", {"a": 1, "b": 2})
        with pytest.raises(ToolError, match="could not be started"):  # it is still gone
            async with asyncio.timeout(30):
                await connection.call("add", {"a": 1, "b": 2})
    finally:
        await connection.aclose()


async def test_an_agent_recovers_when_the_server_is_back_on_its_port(
    make_config: Any, start_http_server: Any
) -> None:
    first = start_http_server()
    table = {"url": first.url, "restart_backoff": 0, "startup_timeout": 5}
    model = ScriptedProvider(
        [
            Reply(tool_calls=[call("h__slow", seconds=60)]),
            Reply(text="lost"),
            Reply(tool_calls=[call("h__add", a=2, b=3)]),
            Reply(text="back"),
        ]
    )
    agent = tether.Agent(model, tools=["h"], config=make_config(h=table))
    lost = None
    try:
        async with asyncio.timeout(60):
            async for event in agent.stream("slow"):
                if isinstance(event, ToolProgress):  # the call is running on the server
                    first.process.kill()  # killed, not shut down
                if isinstance(event, Done):
                    lost = event.result
            start_http_server(port=first.port)  # the server is back
            back = await agent.run("add")
    finally:
        await agent.aclose()
    assert lost is not None and lost.output == "lost"
    [interrupted] = [r for m in lost.messages if m.role == "tool" for r in m.tool_results]
    assert interrupted.is_error and "MCP server `h`" in interrupted.text
    [added] = [r for m in back.messages if m.role == "tool" for r in m.tool_results]
    assert not added.is_error and added.text.startswith("5")
    assert back.output == "back"
