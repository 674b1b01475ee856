"""Real MCP servers (the SDK's server API, in subprocesses) for the tether-mcp tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tether.config import Config, parse_config

SERVER = Path(__file__).with_name("mcp_server.py")


@pytest.fixture
def record(tmp_path: Path) -> Iterator[Path]:
    """Where test servers note their pids; at teardown every one must have exited."""
    directory = tmp_path / "record"
    directory.mkdir()
    yield directory
    deadline = time.monotonic() + 10
    alive = _alive(directory)
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = _alive(directory)
    for pid in alive:
        os.kill(pid, signal.SIGKILL)
    assert not alive, f"MCP server processes left running: {alive}"


def _alive(directory: Path) -> list[int]:
    pids = []
    for file in directory.glob("pid-*"):
        pid = int(file.name.removeprefix("pid-"))
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        try:  # a zombie (exited, not yet reaped by its parent) counts as gone
            state = Path(f"/proc/{pid}/stat").read_text().split()[2]
        except OSError:
            state = ""
        if state != "Z":
            pids.append(pid)
    return pids


@pytest.fixture
def stdio_table(record: Path) -> Any:
    """``stdio_table(**extra)``: the test server's table, started over stdio."""
    return lambda **extra: _stdio_table(record, **extra)


@pytest.fixture
def running(record: Path) -> Any:
    """``running()``: pids of test servers still running."""
    return lambda: _alive(record)


@pytest.fixture
def make_config(tmp_path: Path) -> Any:
    """``make_config(NAME=table, ...)``: a Config with these MCP servers."""
    return lambda **servers: _make_config(tmp_path, **servers)


def _stdio_table(record: Path, **extra: Any) -> dict[str, Any]:
    return {
        "command": sys.executable,
        "args": [str(SERVER), "stdio"],
        "env": {"MCP_TEST_RECORD": str(record)},
        "restart_backoff": 0,
        **extra,
    }


class HttpServer:
    def __init__(self, record: Path, mode: str = "http", port: int = 0) -> None:
        env = {**os.environ, "MCP_TEST_RECORD": str(record), "MCP_TEST_PORT": str(port)}
        self.process = subprocess.Popen(
            [sys.executable, str(SERVER), mode], stdout=subprocess.PIPE, env=env, text=True
        )
        assert self.process.stdout is not None
        line = _readline(self.process, timeout=30)
        assert line.startswith("PORT "), line
        self.port = int(line.split()[1])
        self.url = f"http://127.0.0.1:{self.port}/mcp"

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        if self.process.stdout is not None:
            self.process.stdout.close()


def _readline(process: subprocess.Popen[str], timeout: float) -> str:
    import selectors

    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if not selector.select(timeout):
            process.kill()
            process.wait(timeout=10)
            raise TimeoutError("the MCP test server did not report its port")
    return process.stdout.readline()


@pytest.fixture
def http_server(record: Path) -> Iterator[HttpServer]:
    server = HttpServer(record)
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def start_http_server(record: Path) -> Iterator[Any]:
    """``start_http_server(port=0)``: an HTTP test server (on ``port`` if given), stopped
    at the end of the test."""
    servers: list[HttpServer] = []

    def start(port: int = 0) -> HttpServer:
        servers.append(HttpServer(record, port=port))
        return servers[-1]

    try:
        yield start
    finally:
        for server in servers:
            server.close()


@pytest.fixture
def secured_server(record: Path) -> Iterator[HttpServer]:
    """An HTTP server that only accepts the bearer token ``good-token``."""
    server = HttpServer(record, "http-auth")
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(params=["stdio", "http"])
def server_table(request: pytest.FixtureRequest, record: Path) -> Iterator[dict[str, Any]]:
    """The test server's ``[mcp.servers.*]`` table, over each transport."""
    if request.param == "stdio":
        yield _stdio_table(record)
        return
    server = HttpServer(record)
    try:
        yield {"url": server.url, "restart_backoff": 0}
    finally:
        server.close()


def _make_config(tmp_path: Path, **servers: dict[str, Any]) -> Config:
    return parse_config({"mcp": {"servers": servers}, "data_dir": str(tmp_path / "data")})
