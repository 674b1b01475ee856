"""A Chroma server on loopback, for tests that use the backend over HTTP.

``chroma_server(path)`` starts ``chroma run`` (installed with chromadb, beside this
Python) on a free loopback port, waits until its heartbeat answers, yields
``(host, port)`` and stops it on exit. Start-up is bounded: a server that exits or does
not answer within ``timeout`` seconds raises ``RuntimeError``.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["chroma_server"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def chroma_server(path: Path, *, timeout: float = 60.0) -> Iterator[tuple[str, int]]:
    """A Chroma server persisting to ``path``: ``(host, port)``; stopped on exit."""
    import httpx

    chroma = Path(sys.executable).parent / "chroma"
    port = _free_port()
    process = subprocess.Popen(
        [str(chroma), "run", "--path", str(path), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
    )
    try:
        deadline = time.monotonic() + timeout
        heartbeat = f"http://127.0.0.1:{port}/api/v2/heartbeat"
        while True:
            if process.poll() is not None:
                raise RuntimeError("the chroma server exited during start-up")
            try:
                if httpx.get(heartbeat, timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"the chroma server did not answer within {timeout:g} s")
            time.sleep(0.1)
        yield "127.0.0.1", port
    finally:
        process.terminate()
        process.wait(timeout=30)
