"""Running one command inside the OS sandbox, with its per-host proxy when configured."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Mapping
from pathlib import Path

from tether.errors import ToolError

from .netproxy import HostProxy, bridge_python, proxy_environment
from .process import CommandResult, run_process, until_process_gone
from .sandbox import SandboxSettings, bwrap_argv, refusal_message, sandbox_status

__all__ = ["run_sandboxed"]


async def run_sandboxed(
    argv: list[str],
    *,
    workspace: Path,
    cwd: Path,
    settings: SandboxSettings,
    env: Mapping[str, str],
    timeout: float,  # noqa: ASYNC109 - the kill deadline of the child, not of this await
    output_limit: int,
) -> CommandResult:
    """Run ``argv`` under bubblewrap with the environment ``env`` (already allow-listed).

    :raises ToolError: the sandbox is unavailable here (nothing runs), or
        ``network_allow`` is set and no system ``python3`` can run the bridge.
    """
    status = await asyncio.to_thread(sandbox_status)
    if not status.available:
        raise ToolError(refusal_message(status))
    if not settings.network_allow:
        wrapped = bwrap_argv(argv, workspace=workspace, cwd=cwd, settings=settings, status=status)
        return await _run(wrapped, cwd=cwd, env=env, timeout=timeout, output_limit=output_limit)
    python = bridge_python()
    if python is None:
        raise ToolError(
            "network_allow needs the system's python3 (under /usr) to bridge the sandbox to "
            'its proxy, and none was found: install python3, or set network = "on".'
        )
    proxy = HostProxy(settings.network_allow)
    await proxy.start()
    try:
        wrapped = bwrap_argv(
            argv,
            workspace=workspace,
            cwd=cwd,
            settings=settings,
            status=status,
            proxy=(proxy.directory, python),
        )
        return await _run(
            wrapped,
            cwd=cwd,
            env={**env, **proxy_environment()},
            timeout=timeout,
            output_limit=output_limit,
        )
    finally:
        await proxy.aclose()


async def _run(
    argv: list[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,  # noqa: ASYNC109 - the kill deadline of the child, not of this await
    output_limit: int,
) -> CommandResult:
    """Run a ``bwrap`` command line, and return only once the whole sandbox is gone.

    ``bwrap`` exits as soon as the command has, while its init (pid 1 of the sandbox)
    is still ending the processes left behind; ``--info-fd`` tells us that init's pid,
    and waiting for it means no background job of the command outlives the call.
    """
    info_read, info_write = os.pipe()
    try:
        wrapped = [argv[0], "--info-fd", str(info_write), *argv[1:]]
        try:
            return await run_process(
                wrapped,
                cwd=cwd,
                env=env,
                timeout=timeout,
                output_limit=output_limit,
                pass_fds=(info_write,),
            )
        finally:
            os.close(info_write)
            info_write = -1
            init = _sandbox_init(info_read)
            if init is not None:
                await until_process_gone(init)
    finally:
        os.close(info_read)
        if info_write != -1:
            os.close(info_write)


def _sandbox_init(info_read: int) -> int | None:
    """The host pid of the sandbox's init, from what ``bwrap`` wrote to ``--info-fd``."""
    os.set_blocking(info_read, False)
    try:
        text = os.read(info_read, 65536).decode("utf-8", "replace")
    except OSError:
        return None
    try:
        pid = json.JSONDecoder().raw_decode(text.lstrip())[0].get("child-pid")
    except (ValueError, AttributeError):
        return None
    return pid if isinstance(pid, int) and pid > 1 else None
