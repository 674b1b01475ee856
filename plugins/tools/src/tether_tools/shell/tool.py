"""``run_command``: the shell tool."""

from __future__ import annotations

import shutil
import signal
from pathlib import Path

from tether.errors import ConfigError, ToolError
from tether.subjects import PATH, CommandSubject
from tether.tools import ToolContext, tool

from ..fs.workspace import Workspace
from ..settings import get_bool, get_int, get_number, get_str, get_str_list, get_str_map
from .environment import child_environment
from .invocations import split_command
from .launch import run_sandboxed
from .policy import CommandPolicy
from .process import run_process
from .sandbox import SandboxSettings, sandbox_environment

__all__ = ["run_command"]

DEFAULT_TIMEOUT = 120.0
DEFAULT_MAX_TIMEOUT = 600.0
DEFAULT_MAX_OUTPUT_BYTES = 30_000


@tool(
    sequential=True,
    max_output_chars=None,
    subjects={"command": CommandSubject(split_command), "workdir": PATH},
)
async def run_command(
    command: str,
    ctx: ToolContext,
    workdir: str = ".",
    timeout: float | None = None,  # noqa: ASYNC109 - an argument the model sets for the command
) -> str:
    """Run a shell command in the workspace and return its exit code and output.

    Use it to run tests, builds, linters, git and other command-line programs. Prefer the
    file tools for reading, writing and searching files. The command runs with bash (or
    sh), no input (anything that waits for a keyboard gets end-of-file), and a time limit;
    when it passes, the command and everything it started are killed. Background jobs
    are stopped when the command ends. Long output keeps its beginning and its end. A
    policy refuses destructive or exfiltrating commands (deleting / or ~, formatting
    disks, `curl ... | sh`, reading ~/.ssh, writing to /etc, sudo) before anything runs,
    and says why. Commands run in an OS sandbox: only the workspace is writable, the
    home directory and /tmp are empty and private, the network is off unless configured,
    and CPU time, memory and processes are limited.

    Example: {"command": "python -m pytest -q tests/test_api.py", "timeout": 300}

    Output: `Exit code: 0` on the first line, then the combined stdout and stderr.

    Args:
        command: The shell command line, e.g. "git status --short".
        workdir: Folder to run in, relative to the workspace root.
        timeout: Seconds before the command is killed; defaults to the configured limit.
    """
    settings = ctx.settings
    decision = CommandPolicy.from_settings(settings).check(command)
    if not decision.allowed:
        raise ToolError(f"Blocked by the command policy; nothing was run. {decision.reason}")
    default_timeout = get_number(settings, "shell", "timeout", DEFAULT_TIMEOUT)
    max_timeout = get_number(
        settings, "shell", "max_timeout", max(DEFAULT_MAX_TIMEOUT, default_timeout)
    )
    if timeout is not None and timeout <= 0:
        raise ToolError("timeout must be a positive number of seconds.")
    limit = min(timeout if timeout is not None else default_timeout, max_timeout)
    workspace = Workspace.from_context(ctx)
    cwd = workspace.resolve(workdir, kind="dir")
    sandbox = SandboxSettings.from_settings(settings)
    shell = _shell(get_str(settings, "shell", "shell"))
    argv = [shell, "-c", command]
    allow = get_str_list(settings, "shell", "env_allow")
    deny = get_str_list(settings, "shell", "env_deny")
    configured = get_str_map(settings, "shell", "env")
    output_limit = get_int(settings, "shell", "max_output_bytes", DEFAULT_MAX_OUTPUT_BYTES)
    if sandbox.mode == "none":
        env = child_environment(
            inherit=get_bool(settings, "shell", "inherit_env", True),
            allow=allow,
            deny=deny,
            configured=configured,
            explicit=ctx.env,
        )
        result = await run_process(argv, cwd=cwd, env=env, timeout=limit, output_limit=output_limit)
    else:
        env = sandbox_environment(
            shell=shell, allow=allow, deny=deny, configured=configured, explicit=ctx.env
        )
        result = await run_sandboxed(
            argv,
            workspace=workspace.root,
            cwd=cwd,
            settings=sandbox,
            env=env,
            timeout=limit,
            output_limit=output_limit,
        )
    output = result.output.text()
    if result.timed_out:
        raise ToolError(
            f"The command timed out after {limit:g} s; it and every process it started were killed.\n"
            f"Output before the timeout:\n{output}".rstrip()
        )
    line = _status_line(result.exit_code, sandboxed=sandbox.mode != "none")
    return f"{line}\n{output}" if output else f"{line}\n(no output)"


_SIGNAL_HINTS = {
    signal.SIGXCPU: "the CPU time limit was reached",
    signal.SIGKILL: "SIGKILL, e.g. the hard CPU time limit",
    signal.SIGSEGV: "SIGSEGV, e.g. the memory limit",
}


def _status_line(code: int | None, *, sandboxed: bool) -> str:
    """``Exit code: N``, or which signal ended the command. The sandbox reports a command
    killed by signal S as exit status 128 + S, as a shell does; the line names S."""
    if code is None or code < 0:
        return f"Killed by signal {-(code or 0)}"
    if sandboxed and code > 128 and (code - 128) in signal.valid_signals():
        sig = signal.Signals(code - 128)
        return f"Exit code: {code} (killed by {sig.name}: {_SIGNAL_HINTS.get(sig, sig.name)})"
    return f"Exit code: {code}"


def _shell(configured: str | None) -> str:
    if configured:
        path = shutil.which(configured)
        if path is None:
            raise ConfigError(
                f"[tool_settings.shell] shell = {configured!r} was not found. Set it to an installed shell."
            )
        return path
    return shutil.which("bash") or str(Path("/bin/sh"))
