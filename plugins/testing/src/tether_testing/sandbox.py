"""A sandbox for tests that hand hostile input to real executors.

A test that sends ``rm -rf ~`` through the real shell tool to show that it is refused
runs it for real the day the policy regresses; a test that fetches
``http://169.254.169.254/`` connects for real the day the SSRF guard does. Inside
:func:`enter_sandbox` such a regression can only hurt the sandbox:

- ``HOME`` (and the XDG directories) point into a fresh temporary directory, holding a
  sentinel file; the working directory is another one. If ``HOME`` still resolves to the
  user's real home directory after that, the test fails before anything runs;
- name resolution answers only for loopback names and addresses, and sockets refuse to
  connect anywhere but loopback (and to local Unix sockets), so nothing leaves the machine;
- when the test ends, a missing sentinel fails it: something deleted the (fake) home.

Child processes inherit ``HOME`` and the working directory, not the network guard: tests
of the shell tool must not need the network. Refused connections are also appended to the
file named by ``TETHER_SANDBOX_NETWORK_LOG``, when set, so a test running the suite in a
subprocess can see them.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

__all__ = ["Sandbox", "SandboxEscape", "enter_sandbox", "real_home_directories"]

SENTINEL_TEXT = "If this file is gone, a test deleted its home directory.\n"
_LOOPBACK_NAMES = {"localhost", "localhost.", "ip6-localhost", "ip6-loopback"}


class SandboxEscape(OSError):
    """A test tried to reach something outside its sandbox (a non-loopback host)."""


def real_home_directories() -> set[Path]:
    """The user's real home directory, by every account of it (the password database and
    ``HOME`` as the process started)."""
    homes: set[Path] = set()
    if _STARTING_HOME:
        homes.add(Path(_STARTING_HOME).resolve())
    try:
        import pwd

        homes.add(Path(pwd.getpwuid(os.getuid()).pw_dir).resolve())
    except (ImportError, KeyError):  # pragma: no cover - not POSIX, or no passwd entry
        pass
    return homes


_STARTING_HOME = os.environ.get("HOME") or os.environ.get("USERPROFILE")


@dataclass
class Sandbox:
    """Where a sandboxed test lives: ``home`` (the fake home, with ``sentinel``), ``work``
    (its working directory), and every non-loopback destination it tried (``refused``)."""

    root: Path
    home: Path
    work: Path
    sentinel: Path
    refused: list[str] = field(default_factory=list)

    def contains(self, path: Path) -> bool:
        real = Path(os.path.realpath(path))
        return real == self.root or real.is_relative_to(self.root)


def _is_loopback(host: Any) -> bool:
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if not isinstance(host, str):
        return False
    text = host.strip("[]").split("%", 1)[0]
    if text.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(text).is_loopback
    except ValueError:
        return False


def _guard_network(monkeypatch: pytest.MonkeyPatch, sandbox: Sandbox) -> None:
    real_getaddrinfo = socket.getaddrinfo
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    log = os.environ.get("TETHER_SANDBOX_NETWORK_LOG")

    def refuse(what: str) -> SandboxEscape:
        sandbox.refused.append(what)
        if log:
            with open(log, "a", encoding="utf-8") as handle:
                handle.write(what + "\n")
        return SandboxEscape(f"sandboxed test tried to reach {what}; only loopback is reachable")

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host is None or _is_loopback(host):
            infos = real_getaddrinfo(host, *args, **kwargs)
            return [info for info in infos if _is_loopback(info[4][0])]
        sandbox.refused.append(f"name {host}")
        if log:
            with open(log, "a", encoding="utf-8") as handle:
                handle.write(f"name {host}\n")
        raise socket.gaierror(socket.EAI_NONAME, f"sandbox: {host} does not resolve in tests")

    def check(sock: socket.socket, address: Any) -> None:
        if sock.family == getattr(socket, "AF_UNIX", None):
            return
        host = address[0] if isinstance(address, tuple) else address
        if not _is_loopback(host):
            raise refuse(f"address {host}")

    def connect(self: socket.socket, address: Any) -> None:
        check(self, address)
        real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        check(self, address)
        return real_connect_ex(self, address)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)


def enter_sandbox(monkeypatch: pytest.MonkeyPatch, root: Path) -> Sandbox:
    """Move the test into a sandbox under ``root`` (undone by ``monkeypatch``).

    :raises pytest.fail.Exception: ``HOME`` still resolves to a real home directory.
    """
    root = Path(os.path.realpath(root))
    home = root / "home"
    work = root / "work"
    home.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    sentinel = home / "sentinel.txt"
    sentinel.write_text(SENTINEL_TEXT)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("USERPROFILE", str(home))
    for name, sub in (
        ("XDG_CONFIG_HOME", ".config"),
        ("XDG_DATA_HOME", ".local/share"),
        ("XDG_CACHE_HOME", ".cache"),
        ("XDG_STATE_HOME", ".local/state"),
    ):
        monkeypatch.setenv(name, str(home / sub))
    monkeypatch.chdir(work)
    resolved = Path(os.path.expanduser("~")).resolve()
    if resolved in real_home_directories() or not resolved.is_relative_to(root):
        pytest.fail(
            f"The sandbox could not move HOME away from the real home directory ({resolved}); "
            "refusing to run a test that hands hostile input to a real executor."
        )
    sandbox = Sandbox(root=root, home=home, work=work, sentinel=sentinel)
    _guard_network(monkeypatch, sandbox)
    return sandbox


def sandbox_fixture(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Sandbox]:
    """The body of the ``sandbox`` fixture: enter, run the test, check the sentinel."""
    sandbox = enter_sandbox(monkeypatch, tmp_path_factory.mktemp("sandbox"))
    yield sandbox
    if not sandbox.sentinel.exists():
        pytest.fail(
            f"The test deleted {sandbox.sentinel} in its (fake) home directory: outside the "
            "sandbox this would have been the real home directory."
        )
