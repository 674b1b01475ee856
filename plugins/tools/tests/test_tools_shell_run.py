"""run_command against real subprocesses: process groups, timeouts, output caps, stdin,
environment."""

from __future__ import annotations

import asyncio
import fcntl
import os
from pathlib import Path

import pytest

from tether.testing import call_tool
from tether_tools.shell import run_command


def _text(result: object) -> str:
    content = result.content
    assert isinstance(content, str)
    return content


async def test_exit_code_and_combined_output(tmp_path: Path) -> None:
    result = await call_tool(
        run_command, {"command": "echo out; echo err >&2; exit 3"}, cwd=tmp_path
    )
    assert not result.is_error
    assert _text(result) == "Exit code: 3\nout\nerr\n"


async def test_blocked_command_runs_nothing(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("precious")
    result = await call_tool(
        run_command, {"command": "touch ran.txt && rm -rf ~ && rm keep.txt"}, cwd=tmp_path
    )
    assert result.is_error
    assert _text(result).startswith(
        "Blocked by the command policy; nothing was run. `rm -rf ~` is blocked"
    )
    assert not (tmp_path / "ran.txt").exists()
    assert (tmp_path / "keep.txt").read_text() == "precious"


async def test_configured_deny_rule_is_enforced(tmp_path: Path) -> None:
    result = await call_tool(
        run_command,
        {"command": "touch made.txt; git push"},
        cwd=tmp_path,
        settings={"deny": ["git push"]},
    )
    assert result.is_error and "deny rule `git push`" in _text(result)
    assert not (tmp_path / "made.txt").exists()


MODES = [pytest.param({}, id="sandboxed"), pytest.param({"sandbox": "none"}, id="unsandboxed")]


def _lock_is_free(path: Path) -> bool:
    """Whether no process holds ``path`` locked: a lock dies with its holder, so this
    sees a process inside the sandbox's own PID namespace as well as one outside."""
    with path.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(handle, fcntl.LOCK_UN)
        return True


# Starts a process that holds held.lock and ignores SIGTERM, and returns once it holds it.
HOLD_LOCK = (
    "flock held.lock sh -c 'trap \"\" TERM; touch held.ready; exec sleep 300' "
    ">/dev/null 2>&1 & while [ ! -e held.ready ]; do sleep 0.01; done"
)


@pytest.mark.parametrize("mode", MODES)
async def test_timeout_kills_the_whole_group_including_a_grandchild_that_ignores_sigterm(
    tmp_path: Path, mode: dict[str, str]
) -> None:
    command = f"echo started; ({HOLD_LOCK}; trap '' TERM; sleep 300)"
    result = await call_tool(
        run_command, {"command": command, "timeout": 3}, cwd=tmp_path, settings=mode
    )
    assert result.is_error
    text = _text(result)
    assert text.startswith(
        "The command timed out after 3 s; it and every process it started were killed."
    )
    assert "started" in text
    assert (tmp_path / "held.ready").exists()
    assert _lock_is_free(tmp_path / "held.lock")


@pytest.mark.parametrize("mode", MODES)
async def test_background_jobs_do_not_outlive_the_command(
    tmp_path: Path, mode: dict[str, str]
) -> None:
    result = await call_tool(
        run_command, {"command": f"{HOLD_LOCK}; echo done"}, cwd=tmp_path, settings=mode
    )
    assert _text(result) == "Exit code: 0\ndone\n"
    assert _lock_is_free(tmp_path / "held.lock")


@pytest.mark.parametrize("mode", MODES)
async def test_cancelling_the_call_kills_the_group(tmp_path: Path, mode: dict[str, str]) -> None:
    fifo = tmp_path / "ready"
    os.mkfifo(fifo)
    task = asyncio.ensure_future(
        call_tool(
            run_command,
            {"command": f"{HOLD_LOCK}; echo go > ready; wait"},
            cwd=tmp_path,
            settings=mode,
        )
    )
    assert await asyncio.to_thread(fifo.read_text) == "go\n"
    assert not _lock_is_free(tmp_path / "held.lock")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert _lock_is_free(tmp_path / "held.lock")


async def test_output_flood_keeps_head_and_tail_with_a_marker(tmp_path: Path) -> None:
    result = await call_tool(
        run_command, {"command": "seq 1 1000000"}, cwd=tmp_path, settings={"max_output_bytes": 3000}
    )
    text = _text(result)
    lines = text.splitlines()
    assert lines[:3] == ["Exit code: 0", "1", "2"]
    assert lines[-1] == "1000000"
    assert "bytes of output omitted" in text
    assert len(text) < 3300


async def test_command_gets_no_stdin(tmp_path: Path) -> None:
    result = await call_tool(
        run_command, {"command": 'read answer; echo "got:[$answer]"; cat'}, cwd=tmp_path
    )
    assert _text(result) == "Exit code: 0\ngot:[]\n"


async def test_environment_values_with_shell_syntax_are_passed_literally(tmp_path: Path) -> None:
    tricky = "$(touch pwned1) `touch pwned2`; touch pwned3 && echo 'x' | sh"
    result = await call_tool(
        run_command,
        {"command": 'printf "%s\\n" "$GREETING" "$FROM_CONFIG"'},
        cwd=tmp_path,
        env={"GREETING": tricky},
        settings={"env": {"FROM_CONFIG": "${HOME:?} $((1+1)) \\n"}},
    )
    assert _text(result) == f"Exit code: 0\n{tricky}\n${{HOME:?}} $((1+1)) \\n\n"
    assert os.listdir(tmp_path) == []


async def test_secrets_in_the_harness_environment_are_not_inherited(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACME_API_KEY", "sk-live-123")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_456")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-789")
    monkeypatch.setenv("PLAIN_SETTING", "visible")
    before = dict(os.environ)
    unsandboxed = {"sandbox": "none"}
    result = await call_tool(run_command, {"command": "env"}, cwd=tmp_path, settings=unsandboxed)
    text = _text(result)
    assert "PLAIN_SETTING=visible" in text
    for secret in ("sk-live-123", "ghp_456", "aws-789"):
        assert secret not in text
    assert dict(os.environ) == before

    allowed = await call_tool(
        run_command,
        {"command": "env"},
        cwd=tmp_path,
        settings={**unsandboxed, "env_allow": ["GITHUB_TOKEN"]},
    )
    assert "GITHUB_TOKEN=ghp_456" in _text(allowed)
    assert "sk-live-123" not in _text(allowed)


async def test_inherit_env_false_passes_only_a_minimal_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PLAIN_SETTING", "visible")
    result = await call_tool(
        run_command,
        {"command": 'echo "[$PLAIN_SETTING]"; command -v ls >/dev/null && echo has-path'},
        cwd=tmp_path,
        settings={"inherit_env": False},
    )
    assert _text(result) == "Exit code: 0\n[]\nhas-path\n"


async def test_workdir_is_confined_to_the_workspace(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    inside = await call_tool(run_command, {"command": "pwd", "workdir": "sub"}, cwd=tmp_path)
    assert _text(inside).splitlines()[1] == str((tmp_path / "sub").resolve())
    outside = await call_tool(run_command, {"command": "touch x", "workdir": ".."}, cwd=tmp_path)
    assert outside.is_error and "climbs out of the workspace" in _text(outside)
    assert not (tmp_path.parent / "x").exists()


async def test_requested_timeout_is_capped_by_max_timeout(tmp_path: Path) -> None:
    result = await call_tool(
        run_command,
        {"command": "sleep 30", "timeout": 1000},
        cwd=tmp_path,
        settings={"max_timeout": 1},
    )
    assert result.is_error and "timed out after 1 s" in _text(result)
