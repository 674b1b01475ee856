"""A real HTTP server on 127.0.0.1 for the web tool tests: routes are plain functions,
and every request that reaches it is logged, so tests can prove that nothing did."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

Route = Callable[[BaseHTTPRequestHandler], None]


@dataclass
class LocalServer:
    port: int
    routes: dict[str, Route] = field(default_factory=dict)
    requests: list[tuple[str, str, dict[str, str], bytes]] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def paths(self) -> list[str]:
        return [path for _, path, _, _ in self.requests]

    @staticmethod
    def respond(
        handler: BaseHTTPRequestHandler,
        body: bytes | str,
        *,
        status: int = 200,
        content_type: str = "text/html; charset=utf-8",
        headers: dict[str, str] | None = None,
    ) -> None:
        respond(handler, body, status=status, content_type=content_type, headers=headers)


def respond(
    handler: BaseHTTPRequestHandler,
    body: bytes | str,
    *,
    status: int = 200,
    content_type: str = "text/html; charset=utf-8",
    headers: dict[str, str] | None = None,
) -> None:
    data = body.encode() if isinstance(body, str) else body
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(data)))
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(data)


@pytest.fixture(autouse=True)
def _sandboxed(sandbox: Any) -> Any:
    """Every test here hands input to a real executor (shell, files, HTTP): each runs in
    a sandbox (fake HOME, temporary working directory, loopback-only network)."""
    return sandbox


@pytest.fixture
def local_server() -> Iterator[LocalServer]:
    state = LocalServer(port=0)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            state.requests.append((self.command, self.path, dict(self.headers.items()), body))
            route = state.routes.get(self.path.split("?", 1)[0])
            if route is None:
                respond(self, "not here", status=404, content_type="text/plain")
            else:
                route(self)

        do_GET = _handle
        do_POST = _handle

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
