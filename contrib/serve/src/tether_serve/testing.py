"""Helpers for testing an app built with :func:`tether_serve.create_app`: serve it with
uvicorn on an ephemeral loopback port in a background thread, and parse SSE bodies."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

import uvicorn
from starlette.applications import Starlette

__all__ = ["LiveServer", "parse_sse", "serve_in_thread"]

T = TypeVar("T")


@dataclass
class LiveServer:
    """A running server: ``url``, the app's ``server`` state, and its event loop."""

    url: str
    app: Starlette
    loop: asyncio.AbstractEventLoop
    _uvicorn: uvicorn.Server = field(repr=False)
    _thread: threading.Thread = field(repr=False)

    @property
    def server(self) -> Any:
        return self.app.state.server

    def call(self, coroutine: Coroutine[Any, Any, T], timeout: float = 30.0) -> T:
        """Run ``coroutine`` on the server's loop and return its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def stop(self, timeout: float = 15.0) -> None:
        self._uvicorn.should_exit = True
        self._thread.join(timeout)


def serve_in_thread(app: Starlette, *, start_timeout: float = 10.0) -> LiveServer:
    """Start uvicorn serving ``app`` on ``127.0.0.1`` and a free port; call ``stop()``."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    loop = asyncio.new_event_loop()
    started = threading.Event()

    async def main() -> None:
        task = asyncio.ensure_future(server.serve(sockets=[sock]))
        while not server.started and not task.done():  # noqa: ASYNC110 (uvicorn has only a flag)
            await asyncio.sleep(0.01)
        started.set()
        await task

    def run() -> None:
        try:
            loop.run_until_complete(main())
        finally:
            started.set()
            loop.close()

    thread = threading.Thread(target=run, name="tether-serve-test", daemon=True)
    thread.start()
    if not started.wait(start_timeout) or not server.started:
        raise RuntimeError(f"uvicorn did not start within {start_timeout} s")
    return LiveServer(f"http://127.0.0.1:{port}", app, loop, server, thread)


def parse_sse(text: str) -> list[dict[str, str]]:
    """An SSE body as its frames, ``{"id"?, "event"?, "data"}`` each (comments dropped)."""
    frames = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        frame: dict[str, str] = {}
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            frame[name] = value[1:] if value.startswith(" ") else value
        if frame:
            frames.append(frame)
    return frames
