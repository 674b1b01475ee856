"""The README's commands, run in order, as a new user would: a fresh home directory (no
configuration, no data, no sessions), no API keys, every workspace package installed.

A real provider needs a key, so the real model the README names is swapped for the
key-free ``demo/echo`` it shows first, and ``KEY=...`` prefixes are dropped. ``uv run
--all-packages --all-extras tether`` becomes the ``tether`` script of the environment the
tests run in (the environment that command creates), and installing uv is skipped.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TETHER = Path(sys.executable).with_name("tether")
REAL_MODEL = "anthropic/claude-sonnet-4-5"
CONSOLE_BLOCK = re.compile(r"```console\n(.*?)```", re.S)
UV_RUN = ["uv", "run", "--all-packages", "--all-extras", "tether"]


def readme_commands() -> list[str]:
    """Every ``$`` line of the console blocks before "Use it from Python"."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    text = text[: text.index("## Use it from Python")]
    return [
        line[2:]
        for block in CONSOLE_BLOCK.findall(text)
        for line in block.splitlines()
        if line.startswith("$ ")
    ]


def translate(command: str) -> list[str] | None:
    """The argv to run for a README line, or ``None`` for installing uv."""
    words = shlex.split(command, comments=True)
    if words == ["python3", "-m", "pip", "install", "uv"]:
        return None
    while words and re.fullmatch(r"[A-Z_]+_API_KEY=.*", words[0]):
        words = words[1:]
    if words[:2] == ["python3", "-m"]:
        words = words[2:]
    if words[: len(UV_RUN)] == UV_RUN:
        words = ["tether", *words[len(UV_RUN) :]]
    assert words[0] == "tether", f"a README command this test cannot run: {command!r}"
    return [str(TETHER), *(("demo/echo" if w == REAL_MODEL else w) for w in words[1:])]


@pytest.fixture
def fresh_environment(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("TETHER_") and not key.endswith("_API_KEY")
    }
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_STATE_HOME=str(home / ".local" / "state"),
    )
    return env


def test_the_readme_commands_run_in_order_on_a_fresh_environment_with_the_demo_model(
    fresh_environment: dict[str, str],
) -> None:
    commands = readme_commands()
    assert any("-m demo/echo" in c for c in commands), "the first run must need no key"
    assert any(REAL_MODEL in c for c in commands), "the real provider command must be shown"
    ran = []
    for command in commands:
        argv = translate(command)
        if argv is None:
            continue
        chat = argv[1] == "chat"
        proc = subprocess.run(
            argv,
            cwd=ROOT,
            env=fresh_environment,
            input="Hello\n" if chat else "",
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert proc.returncode == 0, f"{command}\n{proc.stdout}\n{proc.stderr}"
        assert "Traceback" not in proc.stderr and "Error" not in proc.stderr, proc.stderr
        if re.search(r"\b[a-z_]+=\S", command.split("#")[0]):  # a tool named, key=value
            assert "read_file returned: " in proc.stdout, (command, proc.stdout)
        elif argv[1] == "run" or chat:
            assert "Echo: " in proc.stdout, (command, proc.stdout)
        ran.append(argv[1:3])
    assert ran[0] == ["run", "-m"] and ["plugins"] in [r[:1] for r in ran]
    assert len(ran) == len(commands) - 1
