"""The documented way to see demo/echo call a tool works where users read it: the
README, the getting-started page and ``tether run --help`` show a command naming the
tool with ``key=value`` arguments, and running it calls the tool (not just an echo)."""

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
DEMO_TOOL_COMMAND = re.compile(r'tether run -m demo/echo --tools \S+ "[^"]*\w=[^"]*"')


def _help_text() -> str:
    return subprocess.run(
        [str(TETHER), "run", "--help"], capture_output=True, text=True, check=True, timeout=60
    ).stdout


def _documented() -> dict[str, list[str]]:
    return {
        "README.md": DEMO_TOOL_COMMAND.findall((ROOT / "README.md").read_text()),
        "docs/getting-started.md": DEMO_TOOL_COMMAND.findall(
            (ROOT / "docs" / "getting-started.md").read_text()
        ),
        "tether run --help": DEMO_TOOL_COMMAND.findall(_help_text()),
    }


def test_each_place_shows_how_demo_echo_calls_a_tool() -> None:
    assert {where: bool(found) for where, found in _documented().items()} == {
        "README.md": True,
        "docs/getting-started.md": True,
        "tether run --help": True,
    }


@pytest.mark.parametrize("command", sorted({c for found in _documented().values() for c in found}))
def test_the_documented_demo_command_calls_the_tool(command: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TETHER_")}
    env.update(
        HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "c"), XDG_DATA_HOME=str(tmp_path / "d")
    )
    argv = [str(TETHER), *shlex.split(command)[1:]]
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    tool = shlex.split(command)[-1].split()[0]
    assert f"{tool} returned: " in proc.stdout and "Echo:" not in proc.stdout, proc.stdout
