"""An HTTP server that goes away: calls end with an error result, never hang."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tether.errors import ToolError
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
