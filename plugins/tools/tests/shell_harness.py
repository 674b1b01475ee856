"""A stand-in for a harness process holding an API key, for the sandbox tests.

Started as ``python shell_harness.py CANARY`` with ``CANARY`` in its environment from
the start (so it is in ``/proc/<pid>/environ``, which a later ``setenv`` would not
change) and on its command line. Reads ``{"workspace": ..., "commands": [...]}`` as JSON
on stdin and prints, for each command, the output of three runs:

- ``tool``: through ``run_command`` exactly as a model's call runs (policy first);
- ``boundary``: straight into the OS sandbox, skipping the policy, so the boundary is
  tested on its own even for spellings the policy refuses;
- ``plain``: as a plain subprocess that inherits this process's environment, to show that
  the spelling does read the key when there is no boundary.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from tether.testing import call_tool
from tether_tools.shell import run_command
from tether_tools.shell.process import run_process
from tether_tools.shell.sandbox import (
    SandboxSettings,
    bwrap_argv,
    sandbox_environment,
    sandbox_status,
)


async def _run(workspace: Path, command: str) -> dict[str, Any]:
    result = await call_tool(run_command, {"command": command, "timeout": 60}, cwd=workspace)
    status = sandbox_status()
    argv = bwrap_argv(
        ["/bin/bash", "-c", command],
        workspace=workspace,
        cwd=workspace,
        settings=SandboxSettings(),
        status=status,
    )
    env = sandbox_environment(shell="/bin/bash", allow=(), deny=(), configured={}, explicit={})
    boundary = await run_process(argv, cwd=workspace, env=env, timeout=60, output_limit=10**6)
    plain = await run_process(
        ["/bin/bash", "-c", command],
        cwd=workspace,
        env=dict(os.environ),
        timeout=60,
        output_limit=10**6,
    )
    return {
        "tool": result.content if isinstance(result.content, str) else str(result.content),
        "boundary": boundary.output.text(),
        "plain": plain.output.text(),
    }


async def main() -> None:
    request = json.load(sys.stdin)
    workspace = Path(request["workspace"])
    results = [await _run(workspace, command) for command in request["commands"]]
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    asyncio.run(main())
