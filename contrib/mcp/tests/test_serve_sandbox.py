"""``tether mcp serve`` runs the shell tool's commands in the same OS sandbox: the
server's key is unreadable in any spelling, writes land only in the workspace, and
without bubblewrap the tool refuses unless the opt-out is configured."""

from __future__ import annotations

import base64
import os
import shutil
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from tether_testing.sandbox import Sandbox

TETHER = str(Path(sys.executable).with_name("tether"))
KEY_NAME = "ACME_API_KEY"

SPELLINGS = [
    "cat /dev/fd/../../$PPID/environ",
    "ln -s /proc p; cat p/$PPID/environ",
    "find /proc/$PPID -name 'env*' -exec cat {} +",
    "awk '{print}' /proc/$PPID/environ",
    "base64 -w0 /proc/$PPID/environ",
    "tr '\\0' '\\n' < /proc/$PPID/environ | rev",
    "for p in $(seq 1 64); do cat /proc/$p/environ /proc/$p/cmdline; done",
    "env; printenv; python3 -c 'import os; print(os.environ)'",
]


def _text(result: Any) -> str:
    return "\n".join(c.text for c in result.content if c.type == "text")


def _found(canary: str, text: str) -> bool:
    reversed_lines = "\n".join(line[::-1] for line in text.splitlines())
    decoded = ""
    for line in text.splitlines()[1:]:
        try:
            decoded += base64.b64decode(line.strip() + "==").decode("utf-8", "replace")
        except ValueError:
            continue
    return canary in text or canary in reversed_lines or canary in decoded


def _params(workspace: Path, config: str, env: dict[str, str], tmp: Path) -> StdioServerParameters:
    path = tmp / "tether.toml"
    path.write_text(config)
    return StdioServerParameters(
        command=TETHER,
        args=["mcp", "serve", "--tools", "shell"],
        cwd=workspace,
        env={**env, "TETHER_CONFIG": str(path), "TETHER_DATA_DIR": str(tmp / "data")},
    )


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
async def test_served_shell_cannot_read_the_servers_key_or_write_outside(
    sandbox: Sandbox,
) -> None:
    canary = f"sk-canary-{uuid.uuid4().hex}"
    workspace = sandbox.work
    outside = sandbox.root / "outside.txt"
    (workspace / "writer.py").write_text(
        f"for p in ('inside.txt', {str(outside)!r}, {str(sandbox.home / 'h.txt')!r}):\n"
        "    try:\n        open(p, 'w').write('canary')\n    except OSError:\n        pass\n"
    )
    params = _params(workspace, "", {**os.environ, KEY_NAME: canary}, sandbox.root)
    async with Client(params) as client:
        for command in SPELLINGS:
            result = await client.call_tool("run_command", {"command": command})
            assert not _found(canary, _text(result)), (command, _text(result)[:300])
        wrote = await client.call_tool("run_command", {"command": "python3 writer.py"})
        assert _text(wrote).startswith("Exit code: 0"), _text(wrote)
    assert (workspace / "inside.txt").read_text() == "canary"
    assert not outside.exists() and not (sandbox.home / "h.txt").exists()


async def test_served_shell_refuses_without_bwrap_unless_opted_out(sandbox: Sandbox) -> None:
    bin_dir = sandbox.root / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "sh", "touch", "prlimit"):
        real = shutil.which(tool)
        if real is not None:
            (bin_dir / tool).symlink_to(real)
    env = {**os.environ, "PATH": str(bin_dir)}
    async with Client(_params(sandbox.work, "", env, sandbox.root)) as client:
        refused = await client.call_tool("run_command", {"command": "echo hi > made.txt"})
    assert refused.is_error and "Shell access refused" in _text(refused)
    assert not (sandbox.work / "made.txt").exists()
    opted_out = '[tool_settings.shell]\nsandbox = "none"\n'
    async with Client(_params(sandbox.work, opted_out, env, sandbox.root)) as client:
        ran = await client.call_tool("run_command", {"command": "echo hi > made.txt"})
    assert not ran.is_error, _text(ran)
    assert (sandbox.work / "made.txt").read_text() == "hi\n"
