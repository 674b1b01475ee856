"""A Chroma server on loopback for the tests that talk to one over HTTP."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    """``(host, port)`` of a Chroma server persisting to a temporary directory."""
    import httpx

    chroma = Path(sys.executable).parent / "chroma"
    port = _free_port()
    process = subprocess.Popen(
        [
            str(chroma),
            "run",
            "--path",
            str(tmp_path_factory.mktemp("chroma-server")),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise RuntimeError("the chroma server exited during start-up")
            try:
                url = f"http://127.0.0.1:{port}/api/v2/heartbeat"
                if httpx.get(url, timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("the chroma server did not answer within 60 s")
            time.sleep(0.1)
        yield "127.0.0.1", port
    finally:
        process.terminate()
        process.wait(timeout=30)
