"""web_fetch refuses every IANA special-purpose block, and connects to the address it
checked: a name that resolves to something else a moment later (DNS rebinding) cannot
redirect the request."""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tether.testing import call_tool
from tether_tools.web import classify, web_fetch

SPECIAL = [
    "192.0.0.1",
    "192.0.0.9",
    "192.0.0.10",
    "192.0.0.170",
    "192.0.2.10",
    "192.31.196.1",
    "192.52.193.1",
    "192.88.99.1",
    "192.175.48.1",
    "198.18.0.1",
    "198.51.100.7",
    "203.0.113.9",
    "240.0.0.1",
    "255.255.255.255",
    "64:ff9b:1::1",
    "100::1",
    "2001:2::1",
    "2001:db8::1",
    "2620:4f:8000::1",
    "3fff::1",
    "5f00::1",
]


@pytest.mark.parametrize("address", SPECIAL)
def test_every_special_purpose_block_is_refused(address: str) -> None:
    assert classify(ipaddress.ip_address(address)) is not None


@pytest.mark.parametrize("address", ["192.0.0.9", "192.31.196.1", "2620:4f:8000::1"])
async def test_a_special_purpose_address_is_refused_before_any_connection(
    address: str, sandbox: Any
) -> None:
    host = f"[{address}]" if ":" in address else address
    result = await call_tool(web_fetch, {"url": f"http://{host}/"})
    assert result.is_error
    assert "IANA special-purpose address" in str(result.content)
    assert sandbox.refused == []  # refused by web_fetch itself, not by the test sandbox


class _Recorder(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    hits: list[str]
    body: bytes

    def do_GET(self) -> None:
        self.hits.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def two_servers() -> Iterator[tuple[tuple[int, list[str]], tuple[int, list[str]]]]:
    """An allowed server on 127.0.0.1 and a "target" on 127.0.0.2, on the same port, so a
    rebound connection would really reach the target; each records the paths it saw."""
    servers: list[tuple[int, list[str]]] = []
    made = []
    port = 0
    for address, body in (("127.0.0.1", b"public page"), ("127.0.0.2", b"internal secret")):
        hits: list[str] = []
        handler = type("Handler", (_Recorder,), {"hits": hits, "body": body})
        server = ThreadingHTTPServer((address, port), handler)
        port = server.server_address[1]
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        made.append((server, thread))
        servers.append((port, hits))
    try:
        yield servers[0], servers[1]
    finally:
        for server, thread in made:
            server.shutdown()
            server.server_close()
            thread.join()


async def test_dns_rebinding_between_check_and_connect_cannot_switch_the_address(
    two_servers: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    (port, allowed_hits), (_, target_hits) = two_servers
    answers = iter(["127.0.0.1"])  # the first answer passes the check; later ones rebind
    lookups: list[str] = []
    sandboxed = socket.getaddrinfo

    def rebinding(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host != "rebind.test":
            return sandboxed(host, *args, **kwargs)
        lookups.append(host)
        address = next(answers, "127.0.0.2")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    result = await call_tool(
        web_fetch,
        {"url": f"http://rebind.test:{port}/page"},
        settings={"allow_private_hosts": ["127.0.0.1"]},
    )
    assert not result.is_error, result.content
    assert "public page" in str(result.content)
    assert allowed_hits == ["/page"]
    assert target_hits == []
    assert lookups == ["rebind.test"]  # resolved once, for the check; never again
