"""The sandbox every tool test runs in really holds: HOME, the working directory and the
network are the test's own, before any hostile input reaches a real executor."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
from pathlib import Path

import pytest

from tether_testing.sandbox import Sandbox, SandboxEscape, enter_sandbox, real_home_directories


def test_home_and_working_directory_are_inside_the_sandbox(sandbox: Sandbox) -> None:
    assert sandbox.contains(Path.home())
    assert sandbox.contains(Path.cwd())
    assert Path.home().resolve() not in real_home_directories()
    assert sandbox.sentinel.is_file()
    # A child process (what the shell tool starts) expands ~ to the same fake home.
    out = subprocess.run(
        ["sh", "-c", "echo ~; pwd"], capture_output=True, text=True, check=True, timeout=30
    )
    home, cwd = out.stdout.split()
    assert sandbox.contains(Path(home)) and sandbox.contains(Path(cwd))


def test_a_sandbox_that_cannot_move_home_fails_before_anything_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tether_testing.sandbox as module

    # As if the fake home were the real one: the sandbox must refuse to go on.
    monkeypatch.setattr(
        module, "real_home_directories", lambda: {(tmp_path / "inner" / "home").resolve()}
    )
    with pytest.raises(pytest.fail.Exception, match="could not move HOME"):
        enter_sandbox(monkeypatch, tmp_path / "inner")


def test_only_loopback_names_resolve(sandbox: Sandbox) -> None:
    with pytest.raises(socket.gaierror):
        socket.getaddrinfo("example.com", 443)
    assert all(info[4][0] in ("127.0.0.1", "::1") for info in socket.getaddrinfo("localhost", 80))
    assert "name example.com" in sandbox.refused


def test_connections_leave_only_for_loopback(sandbox: Sandbox) -> None:
    for address in ("169.254.169.254", "192.0.2.1", "::ffff:10.0.0.1"):
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as sock, pytest.raises(SandboxEscape):
            sock.connect((address, 80))
    assert sandbox.refused == [
        f"address {a}" for a in ("169.254.169.254", "192.0.2.1", "::ffff:10.0.0.1")
    ]


async def test_asyncio_connections_are_guarded_too(sandbox: Sandbox) -> None:
    with pytest.raises(OSError):
        await asyncio.open_connection("169.254.169.254", 80)
    with pytest.raises(OSError):
        await asyncio.open_connection("metadata.google.internal", 80)
    assert "address 169.254.169.254" in sandbox.refused
    assert os.environ["HOME"] == str(sandbox.home)
