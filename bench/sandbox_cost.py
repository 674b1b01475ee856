"""What the shell tool's OS sandbox costs per command: wall time of one ``run_command``
call of ``true`` (and of a short ``ls | wc``) through the tool, sandboxed (bubblewrap,
the default) and unsandboxed (``sandbox = "none"``), median of N calls each, taken in
alternation so machine load hits both alike; and the ratio.

Run: ``python bench/sandbox_cost.py [N]`` (default N = 200). Prints one JSON line.
Needs ``bwrap`` (Debian package ``bubblewrap``) able to create namespaces.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tether.testing import call_tool
from tether_tools.shell import run_command
from tether_tools.shell.sandbox import sandbox_status

MODES: dict[str, dict[str, Any]] = {"sandboxed": {}, "unsandboxed": {"sandbox": "none"}}
COMMANDS = {"true": "true", "ls_wc": "ls -la /usr/bin | wc -l"}


async def one_call(command: str, settings: dict[str, Any], cwd: Path) -> float:
    start = time.perf_counter()
    result = await call_tool(run_command, {"command": command}, cwd=cwd, settings=settings)
    elapsed = time.perf_counter() - start
    assert not result.is_error, result.content
    return elapsed


async def measure(n: int, cwd: Path) -> dict[str, Any]:
    out: dict[str, Any] = {"n": n}
    for label, command in COMMANDS.items():
        samples: dict[str, list[float]] = {mode: [] for mode in MODES}
        for settings in MODES.values():  # warm-up
            await one_call(command, settings, cwd)
        for i in range(n):
            for mode, settings in MODES.items():
                samples[mode].append(await one_call(command, settings, cwd))
            if i % 50 == 0:
                print(f"{label}: {i}/{n}", file=sys.stderr)
        medians = {mode: statistics.median(values) * 1e3 for mode, values in samples.items()}
        out[label] = {
            "sandboxed_ms": round(medians["sandboxed"], 2),
            "unsandboxed_ms": round(medians["unsandboxed"], 2),
            "added_ms": round(medians["sandboxed"] - medians["unsandboxed"], 2),
            "ratio": round(medians["sandboxed"] / medians["unsandboxed"], 2),
        }
    return out


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    status = sandbox_status()
    if not status.available:
        print(json.dumps({"skipped": status.reason}))
        return
    with tempfile.TemporaryDirectory() as directory:
        print(json.dumps(asyncio.run(measure(n, Path(directory)))))


if __name__ == "__main__":
    main()
