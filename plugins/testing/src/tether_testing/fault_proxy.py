"""``FaultProxy``: a TCP proxy on loopback that injects network faults, for testing what
a store (or any client) does when its server stalls, crawls or goes away.

::

    from tether_testing.fault_proxy import FaultProxy

    with FaultProxy("127.0.0.1", 5432) as proxy:
        dsn = f"postgresql://postgres@127.0.0.1:{proxy.port}/test"
        ...                 # traffic passes through
        proxy.stall()       # bytes stop flowing both ways; connections stay open
        proxy.slow(0.2)     # every chunk waits 0.2 s each way
        proxy.heal()        # back to passing traffic (held bytes are delivered)
        proxy.cut()         # every open connection is reset, as by a server restart

The proxy runs its own event loop in a daemon thread, so it keeps working while the
test's loop is busy, and it can be driven from sync or async code, or from inside a tool
of a running agent. It only listens on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Literal

__all__ = ["FaultProxy"]

Mode = Literal["pass", "stall", "slow"]

_CHUNK = 65536


class FaultProxy:
    """A loopback TCP proxy to ``host:port`` with stall, slow and cut faults."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.port = 0
        """The port the proxy listens on (set by :meth:`start`)."""
        self.mode: Mode = "pass"
        self.delay = 0.0
        self.accepted = 0
        """Connections accepted so far."""
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None
        self._flowing: asyncio.Event | None = None
        self._links: set[tuple[asyncio.StreamWriter, asyncio.StreamWriter]] = set()
        self._handlers: set[asyncio.Task[None]] = set()

    # -- control (any thread) ---------------------------------------------------------------
    def start(self) -> FaultProxy:
        """Start listening on a free loopback port."""
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._listen(), self._loop).result(timeout=10)
        return self

    def stall(self) -> None:
        """Hold every byte in both directions, on open and new connections alike."""
        self._call(self._set, "stall", 0.0)

    def slow(self, delay: float) -> None:
        """Pass traffic, but hold each chunk ``delay`` seconds first."""
        self._call(self._set, "slow", delay)

    def heal(self) -> None:
        """Pass traffic normally again."""
        self._call(self._set, "pass", 0.0)

    def cut(self) -> None:
        """Reset every open connection (both sides), as a server restart would; new
        connections are accepted as before."""
        self._call(self._cut)

    def close(self) -> None:
        """Cut everything, stop listening and stop the thread."""
        if not self._thread.is_alive():
            return
        asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _call(self, function: object, *args: object) -> None:
        async def run() -> None:
            function(*args)  # type: ignore[operator]

        asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout=10)

    # -- the proxy (its own loop) -----------------------------------------------------------
    async def _listen(self) -> None:
        self._flowing = asyncio.Event()
        self._flowing.set()
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    def _set(self, mode: Mode, delay: float) -> None:
        assert self._flowing is not None
        self.mode, self.delay = mode, delay
        if mode == "stall":
            self._flowing.clear()
        else:
            self._flowing.set()

    def _cut(self) -> None:
        for client, upstream in list(self._links):
            for writer in (client, upstream):
                writer.transport.abort()
        self._links.clear()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        task = asyncio.current_task()
        if task is not None:
            self._handlers.add(task)
            task.add_done_callback(self._handlers.discard)
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        link = (writer, up_writer)
        self._links.add(link)
        try:
            await asyncio.gather(self._pump(reader, up_writer), self._pump(up_reader, writer))
        finally:
            self._links.discard(link)
            for side in link:
                side.transport.abort()

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        assert self._flowing is not None
        with contextlib.suppress(OSError, asyncio.CancelledError):
            while True:
                await self._flowing.wait()
                data = await reader.read(_CHUNK)
                if not data:
                    break
                await self._flowing.wait()  # a stall that began while reading holds it
                if self.mode == "slow" and self.delay > 0:
                    await asyncio.sleep(self.delay)
                writer.write(data)
                await writer.drain()
        with contextlib.suppress(OSError):
            if writer.can_write_eof():
                writer.write_eof()

    async def _shutdown(self) -> None:
        self._cut()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        assert self._flowing is not None
        self._flowing.set()
        handlers = set(self._handlers)
        for handler in handlers:
            handler.cancel()
        if handlers:
            await asyncio.wait(handlers, timeout=5)
