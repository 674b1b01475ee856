"""Fixtures of the command-line tests.

Every test here gets :func:`cli_environment` (autouse): an isolated configuration file,
data directory and working directory, no installed plugins, and ``cli_fake_model`` (the
rule-based test model, loaded with ``-p cli_fake_model``) importable in-process and in
subprocesses. A test module tunes it by overriding the small fixtures it depends on:

- ``cli_config``: the text of the configuration file (default: empty);
- ``fake_model_key``: whether ``FAKE_MODEL_API_KEY`` is set (default: yes).
"""

from __future__ import annotations

import fcntl
import os
import pty
import queue
import re
import struct
import subprocess
import termios
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

import pytest
from click.testing import CliRunner, Result

from tether_cli import cli

HERE = Path(__file__).parent


@pytest.fixture(autouse=True)
def fresh_secret_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each CLI test starts with no secrets remembered from earlier tests: the registry is
    process-wide by design, and a key another test registered must not redact this
    test's expected output."""
    from tether import scrub

    monkeypatch.setattr(scrub, "_registered", set())
    monkeypatch.setattr(scrub, "_cache", ((-1, None), (frozenset(), ())))


@pytest.fixture
def cli_config() -> str:
    """The configuration file's text; override in a module to change it."""
    return ""


@pytest.fixture
def fake_model_key() -> bool:
    """Whether the fake model's key is set; override in a module to change it."""
    return True


@pytest.fixture(autouse=True)
def cli_environment(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    cli_config: str,
    fake_model_key: bool,
    offline: Callable[..., None],
) -> Path:
    """No user config, no installed plugins, no provider keys, no TETHER_MODEL; the fake
    model and ``tmp_path`` importable; ``tmp_path`` the working directory."""
    config = tmp_path / "tether-test.toml"
    config.write_text(cli_config)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("TETHER_CONFIG", str(config))
    monkeypatch.setenv("TETHER_DATA_DIR", str(tmp_path / "data"))
    offline(plugins=(), config=False)
    if fake_model_key:
        monkeypatch.setenv("FAKE_MODEL_API_KEY", "test-key")
    else:
        monkeypatch.delenv("FAKE_MODEL_API_KEY", raising=False)
    monkeypatch.syspath_prepend(str(HERE))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", f"{HERE}:{tmp_path}")
    monkeypatch.chdir(tmp_path)
    return tmp_path


Invoke = Callable[..., Result]


@pytest.fixture
def invoke() -> Invoke:
    """``invoke(*args, input=None, env=None)``: run ``tether ARGS`` in-process with
    click's runner (stdout is not a terminal); exceptions propagate."""

    def run(*args: str, input: str | None = None, env: dict[str, str] | None = None) -> Result:
        return CliRunner().invoke(cli, list(args), input=input, env=env, catch_exceptions=False)

    return run


class LineReader:
    """Reads a subprocess pipe line by line on a thread, so the test can wait for a line
    without racing the pipe's buffering; fails if nothing matching arrives in a minute."""

    def __init__(self, stream: IO[str]) -> None:
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream: IO[str]) -> None:
        for line in iter(stream.readline, ""):
            self.lines.put(line)
        self.lines.put(None)

    def wait_for(self, marker: str) -> None:
        while True:
            line = self.lines.get(timeout=60)
            assert line is not None, f"the process ended before printing {marker!r}: {self.seen}"
            self.seen.append(line)
            if marker in line:
                return

    def rest(self) -> str:
        """Everything after the lines already seen, up to the end of the stream."""
        tail = []
        while (line := self.lines.get(timeout=60)) is not None:
            tail.append(line)
        return "".join(tail)


@pytest.fixture
def line_reader() -> type[LineReader]:
    """:class:`LineReader`, for tests that watch a subprocess's output as it arrives."""
    return LineReader


_CSI = re.compile(r"\x1b\[([0-9;?]*)([A-Za-z])")


def screen_lines(raw: str, columns: int | None = None) -> list[str]:
    """What a terminal shows after ``raw`` was written to it: carriage returns, line
    erasing and cursor-up redraws applied, when ``columns`` is given a character written
    past the last column wrapping to the next line (as a VT100 does), colours and other escapes
    dropped, trailing spaces and empty last lines removed. Enough for rich's live
    redraws."""
    lines = [""]
    row = col = 0
    position = 0
    while position < len(raw):
        match = _CSI.match(raw, position)
        if match is not None:
            params, command = match.groups()
            if command == "A":
                row = max(0, row - int(params or 1))
            elif command == "K":
                lines[row] = "" if params == "2" else lines[row][:col]
            elif command == "G":
                col = int(params or 1) - 1
            position = match.end()
            continue
        char = raw[position]
        position += 1
        if char == "\r":
            col = 0
        elif char == "\n":
            row += 1
            col = 0
            if row == len(lines):
                lines.append("")
        elif char < " " or char == "\x7f":  # other controls print nothing
            continue
        else:
            if columns is not None and col >= columns:  # the cursor waited at the last column: wrap
                row += 1
                col = 0
                if row == len(lines):
                    lines.append("")
            line = lines[row].ljust(col)
            lines[row] = line[:col] + char + line[col + 1 :]
            col += 1
    result = [line.rstrip() for line in lines]
    while result and not result[-1]:
        result.pop()
    return result


@pytest.fixture
def screen() -> Callable[..., list[str]]:
    """:func:`screen_lines`: the lines a terminal shows after some output."""
    return screen_lines


class Terminal:
    """A process attached to a pseudo-terminal, as a user's shell would start it: stdin,
    stdout and stderr are the terminal, which is its controlling terminal (so Ctrl-C typed
    as ``\x03`` sends SIGINT to it). Output is collected on a thread."""

    def __init__(self, argv: list[str], *, columns: int = 80) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
        env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
        env.update(TERM="xterm-256color", COLUMNS=str(columns), LINES="24")
        self.process = subprocess.Popen(
            argv,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            start_new_session=True,
            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
        )
        os.close(slave)
        self.master = master
        self._raw = bytearray()
        self._changed = threading.Condition()
        self._done = False
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                chunk = b""
            with self._changed:
                if not chunk:
                    self._done = True
                    self._changed.notify_all()
                    return
                self._raw += chunk
                self._changed.notify_all()
            if b"\x1b[6n" in chunk:  # a cursor position request: answer as a terminal does
                os.write(self.master, b"\x1b[1;1R")

    @property
    def output(self) -> str:
        with self._changed:
            return self._raw.decode("utf-8", "replace")

    def expect(self, marker: str, *, after: int = 0) -> int:
        """Wait until ``marker`` appears in the output (at or after offset ``after``);
        returns the offset just past it. Fails after a minute or at end of output."""
        with self._changed:
            while True:
                text = self._raw.decode("utf-8", "replace")
                found = text.find(marker, after)
                if found >= 0:
                    return found + len(marker)
                assert not self._done, f"ended before {marker!r} appeared:\n{text}"
                assert self._changed.wait(timeout=60), f"no {marker!r} in a minute:\n{text}"

    def send(self, text: str) -> None:
        os.write(self.master, text.encode())

    def wait(self) -> int:
        """The exit status, once the process ended and its output is read."""
        status = self.process.wait(timeout=60)
        with self._changed:
            while not self._done:
                assert self._changed.wait(timeout=60), "the terminal was never closed"
        return status

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=60)
        os.close(self.master)


@pytest.fixture
def terminal() -> Iterator[Callable[..., Terminal]]:
    """``terminal(*argv)``: start ``argv`` in a pseudo-terminal (killed at the end)."""
    started: list[Terminal] = []

    def start(*argv: str, columns: int = 80) -> Terminal:
        started.append(Terminal(list(argv), columns=columns))
        return started[-1]

    yield start
    for term in started:
        term.close()
