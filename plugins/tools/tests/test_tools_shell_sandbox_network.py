"""The sandbox's network: off by default (not even the host's loopback), the whole
network with ``network = "on"``, and only listed hosts with ``network_allow``, through
the proxy outside the sandbox.

Everything runs inside the ``sandbox`` fixture; servers listen on loopback only."""

from __future__ import annotations

import shutil
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tether.testing import call_tool
from tether_testing.sandbox import Sandbox
from tether_tools.shell import run_command
from tether_tools.shell.netproxy import HostProxy
from tether_tools.shell.sandbox import sandbox_status

pytestmark = pytest.mark.skipif(
    not sandbox_status().available, reason="bubblewrap cannot sandbox commands on this machine"
)


def _text(result: Any) -> str:
    assert isinstance(result.content, str)
    return str(result.content)


# --- the network ------------------------------------------------------------------------


@pytest.fixture
def listener() -> Iterator[int]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


_CONNECT = (
    'python3 -c \'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 5); '
    'print("connected")\' {port} 2>&1 | tail -1'
)


async def test_network_is_off_by_default_and_on_when_configured(
    sandbox: Sandbox, listener: int
) -> None:
    command = _CONNECT.format(port=listener)
    off = await call_tool(run_command, {"command": command}, cwd=sandbox.work)
    assert "connected" not in _text(off).splitlines()[-1]
    assert "Connection refused" in _text(off) or "unreachable" in _text(off)
    on = await call_tool(
        run_command, {"command": command}, cwd=sandbox.work, settings={"network": "on"}
    )
    assert _text(on).splitlines()[-1] == "connected"


# --- per-host network access through the proxy ------------------------------------------


@pytest.fixture
def web_servers() -> Iterator[tuple[int, int]]:
    """Two loopback HTTP servers answering with their own names."""
    servers = []
    for name in (b"allowed-server", b"other-server"):

        class Handler(BaseHTTPRequestHandler):
            body = name

            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Length", str(len(self.body)))
                self.end_headers()
                self.wfile.write(self.body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
    try:
        yield servers[0].server_address[1], servers[1].server_address[1]
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()


_FETCH = """
import http.client, os, sys, urllib.request
port = int(sys.argv[1])
try:  # plain http:// through the proxy (HTTP_PROXY)
    print("get", urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10).read().decode())
except Exception as exc:
    print("get", type(exc).__name__, exc)
try:  # CONNECT, as HTTPS clients do
    conn = http.client.HTTPConnection("127.0.0.1", 3128, timeout=10)
    conn.set_tunnel("127.0.0.1", port)
    conn.request("GET", "/")
    print("connect", conn.getresponse().read().decode())
except Exception as exc:
    print("connect", type(exc).__name__, exc)
try:  # around the proxy
    import socket
    socket.create_connection(("127.0.0.1", port), 5)
    print("direct connected")
except OSError as exc:
    print("direct", type(exc).__name__)
"""


async def test_network_allow_reaches_listed_hosts_only_through_the_proxy(
    sandbox: Sandbox, web_servers: tuple[int, int]
) -> None:
    allowed, other = web_servers
    (sandbox.work / "fetch.py").write_text(_FETCH)
    settings = {"network_allow": [f"127.0.0.1:{allowed}"]}
    ok = await call_tool(
        run_command, {"command": f"python3 fetch.py {allowed}"}, cwd=sandbox.work, settings=settings
    )
    assert _text(ok).splitlines()[1:] == [
        "get allowed-server",
        "connect allowed-server",
        "direct ConnectionRefusedError",
    ]
    refused = await call_tool(
        run_command, {"command": f"python3 fetch.py {other}"}, cwd=sandbox.work, settings=settings
    )
    lines = _text(refused).splitlines()[1:]
    assert (
        lines[0]
        == f"get HTTPError HTTP Error 403: 127.0.0.1:{other} is not in the sandbox's network_allow list"
    )
    assert lines[1].startswith("connect OSError Tunnel connection failed: 403")
    assert lines[2] == "direct ConnectionRefusedError"
    assert "other-server" not in _text(refused)


async def test_network_allow_entries_are_checked(sandbox: Sandbox) -> None:
    both = await call_tool(
        run_command,
        {"command": "true"},
        cwd=sandbox.work,
        settings={"network": "on", "network_allow": ["pypi.org"]},
    )
    assert both.is_error and 'network = "on" opens the whole network' in _text(both)
    bad = await call_tool(
        run_command,
        {"command": "true"},
        cwd=sandbox.work,
        settings={"network_allow": ["pypi.org:https"]},
    )
    assert bad.is_error and "network_allow entry 'pypi.org:https' is not a host name" in _text(bad)


def test_allow_rules_match_host_globs_and_ports() -> None:
    proxy = HostProxy(["pypi.org", "*.github.com", "localhost:8080"])
    try:
        assert proxy.allowed("pypi.org", 443) and proxy.allowed("PyPI.org", 80)
        assert not proxy.allowed("pypi.org", 22)
        assert not proxy.allowed("pypi.org.evil.com", 443)
        assert proxy.allowed("api.github.com", 443) and not proxy.allowed("github.com", 443)
        assert proxy.allowed("localhost", 8080) and not proxy.allowed("localhost", 443)
    finally:
        shutil.rmtree(proxy.directory)
