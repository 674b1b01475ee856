"""Overhead of an MCP tool call through tether against the bare SDK client.

Run: ``python bench/mcp_bench.py``. Prints one JSON line with, per transport (stdio and
streamable HTTP), µs per call of ``add(a, b)`` on the same MCP server:

- ``bare_us``: ``await client.call_tool("add", {...})`` on the SDK's ``Client``;
- ``tether_us``: the same call as an agent makes it: tether's tool executor running the
  server's tool (argument parsing, timeout, the call through tether-mcp's connection,
  the result turned into blocks and capped);
- ``ratio``: tether_us / bare_us (goal: <= 1.1).

Both paths use the same connection (the bare calls go to the very SDK ``Client`` that
tether-mcp drives, so the same server process answers both) and are measured in
alternating blocks of calls, so load on the machine affects both alike; the figures are
medians over rounds, with the client process's CPU time beside wall time. The server is
this file run with ``--server stdio`` or ``--server http``.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROUNDS = 11
CALLS = {"stdio": 200, "http": 40}
"""Calls per block: a streamable-HTTP call costs about ten times a stdio one."""


def serve(transport: str) -> None:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("bench", log_level="WARNING")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    if transport == "stdio":
        server.run("stdio")
        return
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(server.streamable_http_app(), log_level="warning")
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))


async def measure(table: dict[str, Any], calls_per_block: int) -> dict[str, Any]:

    from tether.cancel import CancelToken
    from tether.messages import ToolCallBlock
    from tether.tool_execution import ToolExecutor
    from tether_mcp.connection import ServerConnection
    from tether_mcp.settings import ServerSettings
    from tether_mcp.toolset import McpToolset

    toolset = McpToolset(ServerConnection("bench", ServerSettings.model_validate(table)))
    await toolset.refresh()
    [tool] = [t for t in toolset.tools if t.name == "bench__add"]
    executor = ToolExecutor(
        {tool.name: tool},
        session_id="bench",
        cancel=CancelToken(),
        cwd=Path.cwd(),
        env={},
        deps=None,
        settings={},
    )
    calls = [
        ToolCallBlock(id=f"c{i}", name=tool.name, arguments={"a": i, "b": 1})
        for i in range(calls_per_block)
    ]

    async def through_tether() -> None:
        for call in calls:
            result = await executor.execute(call)
            assert not result.is_error, result

    client = toolset.connection.sdk_client
    assert client is not None

    async def bare() -> None:
        for i in range(calls_per_block):
            result = await client.call_tool("add", {"a": i, "b": 1})
            assert not result.is_error

    async def timed(fn: Any) -> tuple[float, float]:
        wall, cpu = time.perf_counter(), time.process_time()
        await fn()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        return wall / calls_per_block * 1e6, cpu / calls_per_block * 1e6

    await bare()  # warm-up
    await through_tether()
    bare_us: list[tuple[float, float]] = []
    tether_us: list[tuple[float, float]] = []
    for round_ in range(ROUNDS):
        pair = (bare, through_tether) if round_ % 2 == 0 else (through_tether, bare)
        for fn in pair:
            (bare_us if fn is bare else tether_us).append(await timed(fn))
    await toolset.aclose()
    b, t = statistics.median(w for w, _ in bare_us), statistics.median(w for w, _ in tether_us)
    bc = statistics.median(c for _, c in bare_us)
    tc = statistics.median(c for _, c in tether_us)
    return {
        "calls_per_block": calls_per_block,
        "bare_us": round(b, 1),
        "tether_us": round(t, 1),
        "ratio": round(t / b, 3),
        "bare_cpu_us": round(bc, 1),
        "tether_cpu_us": round(tc, 1),
        "cpu_ratio": round(tc / bc, 3),
    }


HERE = str(Path(__file__).resolve())


def start_http_server() -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, HERE, "--server", "http"], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    return process, f"http://127.0.0.1:{int(process.stdout.readline().split()[1])}/mcp"


async def main() -> dict[str, Any]:
    here = HERE
    stdio = {"command": sys.executable, "args": [here, "--server", "stdio"]}
    print("stdio ...", file=sys.stderr)
    results = {"stdio": await measure(stdio, CALLS["stdio"])}
    process, url = await asyncio.to_thread(start_http_server)
    try:
        print("http ...", file=sys.stderr)
        results["http"] = await measure({"url": url}, CALLS["http"])
    finally:
        process.terminate()
        process.wait(timeout=10)
    return {"bench": "mcp", "rounds": ROUNDS, **results}


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--server":
        os.environ.setdefault("PYTHONUNBUFFERED", "1")
        serve(sys.argv[2])
    else:
        print(json.dumps(asyncio.run(main())))
