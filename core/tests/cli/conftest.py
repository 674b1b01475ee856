"""Fixtures of the command-line tests.

Every test here gets :func:`cli_environment` (autouse): an isolated configuration file,
data directory and working directory, no installed plugins, and ``cli_fake_model`` (the
rule-based test model, loaded with ``-p cli_fake_model``) importable in-process and in
subprocesses. A test module tunes it by overriding the small fixtures it depends on:

- ``cli_config``: the text of the configuration file (default: empty);
- ``fake_model_key``: whether ``FAKE_MODEL_API_KEY`` is set (default: yes).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO

import pytest
from click.testing import CliRunner, Result

from tether.cli import cli

HERE = Path(__file__).parent


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
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, cli_config: str, fake_model_key: bool
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
    monkeypatch.setenv("TETHER_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.delenv("TETHER_MODEL", raising=False)
    for variable in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(variable, raising=False)
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
