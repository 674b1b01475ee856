"""Per-host network access for sandboxed commands: an HTTP proxy outside the sandbox.

A sandbox with ``network_allow`` set has no network of its own (``--unshare-net``). The
harness runs :class:`HostProxy` on a Unix socket that is mounted into the sandbox; a small
bridge inside (:data:`BRIDGE`, run by the system's ``python3``) listens on the sandbox's
own ``127.0.0.1:3128`` and carries each connection to that socket, and ``HTTP_PROXY`` /
``HTTPS_PROXY`` point programs at it (curl, pip, git, npm, urllib, requests all honour
them). The proxy answers ``CONNECT host:port`` (HTTPS and any TLS protocol) and plain
``http://`` requests, and only for hosts matching the allow-list; every other request
gets ``403`` and nothing is connected. A program that ignores the proxy variables has no
route out at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlsplit

from tether.errors import ConfigError

__all__ = [
    "BRIDGE",
    "PROXY_PORT",
    "SOCKET_DIR",
    "HostProxy",
    "bridge_python",
    "parse_allow",
    "proxy_environment",
]

PROXY_PORT = 3128
SOCKET_DIR = "/run/tether-proxy"
HEADER_LIMIT = 64 * 1024
CONNECT_TIMEOUT = 30.0
_DEFAULT_PORTS = (80, 443)

BRIDGE = """
import os, socket, sys, threading
path, port = sys.argv[1], int(sys.argv[2])
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", port))
server.listen(64)
if os.fork():
    os._exit(0)
def pipe(a, b):
    try:
        while True:
            data = a.recv(65536)
            if not data:
                break
            b.sendall(data)
    except OSError:
        pass
    finally:
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
def serve(client):
    upstream = socket.socket(socket.AF_UNIX)
    try:
        upstream.connect(path)
    except OSError:
        client.close()
        return
    threading.Thread(target=pipe, args=(client, upstream), daemon=True).start()
    pipe(upstream, client)
while True:
    conn, _ = server.accept()
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
"""
"""The bridge run inside the sandbox: it forks into the background once it listens, so
the command starts only when the proxy is reachable."""


def parse_allow(entries: Sequence[str]) -> list[tuple[str, tuple[int, ...]]]:
    """``["pypi.org", "*.github.com", "localhost:8080"]`` as (host glob, ports) pairs;
    an entry without a port allows ports 80 and 443."""
    rules: list[tuple[str, tuple[int, ...]]] = []
    for entry in entries:
        text = entry.strip().lower()
        host, colon, port = text.rpartition(":")
        if not colon:
            host, port = text, ""
        if not host or ":" in host or (colon and not port.isdigit()):
            raise ConfigError(
                f"[tool_settings.shell] network_allow entry {entry!r} is not a host name or "
                "glob with an optional port, like 'pypi.org', '*.github.com' or 'localhost:8080'."
            )
        rules.append((host, (int(port),) if port else _DEFAULT_PORTS))
    return rules


def proxy_environment() -> dict[str, str]:
    """The variables that point programs in the sandbox at the bridge."""
    url = f"http://127.0.0.1:{PROXY_PORT}"
    names = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy")
    return {**dict.fromkeys(names, url), "NO_PROXY": "", "no_proxy": ""}


def bridge_python() -> str | None:
    """The system ``python3`` the bridge runs with (it must be visible in the sandbox),
    or None."""
    found = shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin")
    if found is None:
        return None
    real = os.path.realpath(found)
    return real if real.startswith(("/usr/", "/bin/")) else None


class HostProxy:
    """The proxy for one command: :meth:`start` it, mount :attr:`directory` at
    ``/run/tether-proxy`` in the sandbox, :meth:`aclose` it when the command has ended."""

    def __init__(self, allow: Sequence[str]) -> None:
        self.rules = parse_allow(allow)
        self.directory = Path(tempfile.mkdtemp(prefix="tether-proxy-"))
        self.refused: list[str] = []
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def socket_path(self) -> Path:
        return self.directory / "proxy.sock"

    def allowed(self, host: str, port: int) -> bool:
        host = host.lower().strip("[]")
        return any(fnmatch.fnmatchcase(host, glob) and port in ports for glob, ports in self.rules)

    async def start(self) -> None:
        self._server = await asyncio.start_unix_server(self._handle, path=str(self.socket_path))

    async def aclose(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(5):
                    await self._server.wait_closed()
        shutil.rmtree(self.directory, ignore_errors=True)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            await self._serve(reader, writer)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            pass
        finally:
            if task is not None:
                self._tasks.discard(task)
            writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        async with asyncio.timeout(CONNECT_TIMEOUT):
            head = await reader.readuntil(b"\r\n\r\n")
        if len(head) > HEADER_LIMIT:
            return await _answer(writer, 431, "request headers too large")
        request_line, _, rest = head.decode("latin-1").partition("\r\n")
        method, target, version = [*request_line.split(" "), "", "", ""][:3]
        if method.upper() == "CONNECT":
            host, _, port_text = target.rpartition(":")
            forward = b""
        else:
            url = urlsplit(target)
            if url.scheme != "http" or not url.hostname:
                return await _answer(writer, 400, "only CONNECT and http:// requests")
            host, port_text = url.hostname, str(url.port or 80)
            path = (url.path or "/") + (f"?{url.query}" if url.query else "")
            headers = [
                line
                for line in rest.split("\r\n")
                if line and not line.lower().startswith(("proxy-", "connection:"))
            ]
            forward = "\r\n".join(
                [f"{method} {path} {version}", *headers, "Connection: close", "", ""]
            ).encode("latin-1")
        if not port_text.isdigit() or not self.allowed(host, int(port_text)):
            self.refused.append(f"{host}:{port_text}")
            return await _answer(
                writer,
                403,
                f"{host}:{port_text} is not in the sandbox's network_allow list",
            )
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT):
                up_reader, up_writer = await asyncio.open_connection(
                    host.strip("[]"), int(port_text)
                )
        except (OSError, TimeoutError) as exc:
            return await _answer(writer, 502, f"could not connect to {host}:{port_text}: {exc}")
        try:
            if forward:
                up_writer.write(forward)
            else:
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
                await writer.drain()
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        finally:
            up_writer.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except OSError:
        pass


async def _answer(writer: asyncio.StreamWriter, status: int, reason: str) -> None:
    body = f"tether sandbox proxy: {reason}\n".encode()
    writer.write(
        f"HTTP/1.1 {status} {reason[:60]}\r\nContent-Type: text/plain\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode("latin-1")
        + body
    )
    await writer.drain()
