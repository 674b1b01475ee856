"""Running one command inside the OS sandbox, with its per-host proxy when configured."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path

from tether.errors import ToolError

from .netproxy import HostProxy, bridge_python, proxy_environment
from .process import CommandResult, run_process
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
        return await run_process(
            wrapped, cwd=cwd, env=env, timeout=timeout, output_limit=output_limit
        )
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
        return await run_process(
            wrapped,
            cwd=cwd,
            env={**env, **proxy_environment()},
            timeout=timeout,
            output_limit=output_limit,
        )
    finally:
        await proxy.aclose()
