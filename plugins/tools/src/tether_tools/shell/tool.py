"""``run_command``: the shell tool."""

from __future__ import annotations

import shutil
from pathlib import Path

from tether.errors import ConfigError, ToolError
from tether.subjects import PATH, CommandSubject
from tether.tools import ToolContext, tool

from ..fs.workspace import Workspace
from ..settings import get_bool, get_int, get_number, get_str, get_str_list, get_str_map
from .environment import child_environment
from .invocations import split_command
from .policy import CommandPolicy
from .process import run_process

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
    and says why.

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
    cwd = Workspace.from_context(ctx).resolve(workdir, kind="dir")
    env = child_environment(
        inherit=get_bool(settings, "shell", "inherit_env", True),
        allow=get_str_list(settings, "shell", "env_allow"),
        deny=get_str_list(settings, "shell", "env_deny"),
        configured=get_str_map(settings, "shell", "env"),
        explicit=ctx.env,
    )
    result = await run_process(
        [_shell(get_str(settings, "shell", "shell")), "-c", command],
        cwd=cwd,
        env=env,
        timeout=limit,
        output_limit=get_int(settings, "shell", "max_output_bytes", DEFAULT_MAX_OUTPUT_BYTES),
    )
    output = result.output.text()
    if result.timed_out:
        raise ToolError(
            f"The command timed out after {limit:g} s; it and every process it started were killed.\n"
            f"Output before the timeout:\n{output}".rstrip()
        )
    code = result.exit_code
    status = (
        f"Exit code: {code}"
        if code is not None and code >= 0
        else f"Killed by signal {-(code or 0)}"
    )
    return f"{status}\n{output}" if output else f"{status}\n(no output)"


def _shell(configured: str | None) -> str:
    if configured:
        path = shutil.which(configured)
        if path is None:
            raise ConfigError(
                f"[tool_settings.shell] shell = {configured!r} was not found. Set it to an installed shell."
            )
        return path
    return shutil.which("bash") or str(Path("/bin/sh"))
