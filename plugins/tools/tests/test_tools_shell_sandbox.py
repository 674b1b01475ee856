"""The OS sandbox around shell commands: nothing is written outside the workspace, the
home directory and the harness's processes are absent, the limits bite, and without
bubblewrap shell access is refused (loudly) unless the user opted out by name.

Everything runs inside the ``sandbox`` fixture (fake HOME and workspace); payloads are
canaries and sentinel files."""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tether.testing import call_tool
from tether_testing.sandbox import Sandbox
from tether_tools.shell import run_command
from tether_tools.shell.sandbox import sandbox_status

pytestmark = pytest.mark.skipif(
    not sandbox_status().available, reason="bubblewrap cannot sandbox commands on this machine"
)


def _text(result: Any) -> str:
    assert isinstance(result.content, str)
    return str(result.content)


# --- the file system --------------------------------------------------------------------


_WRITER = """
import os, sys
for target in sys.argv[1:]:
    try:
        with open(os.path.expanduser(target), "w") as handle:
            handle.write("canary")
        print("wrote", target)
    except OSError as exc:
        print("refused", target, type(exc).__name__)
"""


async def test_writes_land_in_the_workspace_and_nowhere_else(sandbox: Sandbox) -> None:
    # A script hides its writes from the command policy: only the OS boundary stops them.
    (sandbox.work / "writer.py").write_text(_WRITER)
    sibling = sandbox.root / "sibling"
    sibling.mkdir()
    host_tmp = Path("/tmp") / f"tether-sentinel-{uuid.uuid4().hex}"
    outside = [
        sandbox.home / "written-to-home",
        sandbox.root / "written-next-to-workspace",
        sibling / "written-to-sibling",
        host_tmp,
        Path("/usr/local") / f"tether-sentinel-{uuid.uuid4().hex}",
        Path("/etc") / f"tether-sentinel-{uuid.uuid4().hex}",
        Path("/") / f"tether-sentinel-{uuid.uuid4().hex}",
    ]
    inside = ["made-here.txt", "~/in-private-home", "/tmp/in-private-tmp"]
    command = "python3 writer.py " + " ".join([*map(str, outside), *inside])
    try:
        result = await call_tool(run_command, {"command": command}, cwd=sandbox.work)
        lines = _text(result).splitlines()
        assert lines[0] == "Exit code: 0"
        for target in outside:
            assert not target.exists(), target
        assert (sandbox.work / "made-here.txt").read_text() == "canary"
        assert {"wrote made-here.txt", "wrote /tmp/in-private-tmp"} <= set(lines)
        assert "wrote /home/sandbox/in-private-home" in lines
        for system in outside[-3:]:  # read-only: refused outright
            assert f"refused {system} OSError" in lines
        # The rest are absent from the sandbox: writes to their paths land, if anywhere,
        # in its private /tmp or home, which vanish with it.
        assert not (Path("/tmp") / "in-private-tmp").exists()
        again = await call_tool(
            run_command,
            {
                "command": "ls -A ~; ls ~/in-private-home /tmp/in-private-tmp 2>&1 | grep -c 'No such'"
            },
            cwd=sandbox.work,
        )
        assert _text(again) == "Exit code: 0\n2\n"  # a fresh, empty home and /tmp each time
    finally:
        host_tmp.unlink(missing_ok=True)


_READER = """
import sys
for target in open("targets.txt").read().split():
    try:
        with open(target) as handle:
            print("read", target, handle.read().strip())
    except OSError as exc:
        print("absent", target, type(exc).__name__)
"""


async def test_the_home_directory_and_its_secrets_are_absent(sandbox: Sandbox) -> None:
    (sandbox.work / "reader.py").write_text(_READER)
    (sandbox.home / ".ssh").mkdir()
    key = sandbox.home / ".ssh" / "id_ed25519"
    key.write_text("canary-private-key\n")
    targets = [sandbox.sentinel, key, Path("/etc/shadow"), Path("/root/.bashrc")]
    # The paths go in a file: the command policy would refuse some; the OS must too.
    (sandbox.work / "targets.txt").write_text(" ".join(map(str, targets)))
    result = await call_tool(
        run_command, {"command": "python3 reader.py; ls /etc/ssh | wc -l"}, cwd=sandbox.work
    )
    lines = _text(result).splitlines()
    assert lines[1:3] == [
        f"absent {sandbox.sentinel} FileNotFoundError",
        f"absent {key} FileNotFoundError",
    ]
    assert lines[3].startswith("absent /etc/shadow ")  # masked
    assert lines[4] == "absent /root/.bashrc FileNotFoundError"
    assert lines[5] == "0"  # host keys hidden
    assert "canary-private-key" not in _text(result)


async def test_read_only_paths_are_visible_but_not_writable(sandbox: Sandbox) -> None:
    shared = sandbox.root / "toolchain"
    shared.mkdir()
    (shared / "tool.txt").write_text("shared\n")
    result = await call_tool(
        run_command,
        {
            "command": f"cat {shared}/tool.txt; (echo x > {shared}/tool.txt) 2>/dev/null || echo refused"
        },
        cwd=sandbox.work,
        settings={"read_only_paths": [str(shared)]},
    )
    assert _text(result).splitlines()[1:] == ["shared", "refused"]
    assert (shared / "tool.txt").read_text() == "shared\n"


async def test_read_only_paths_inside_and_around_the_workspace(sandbox: Sandbox) -> None:
    hooks = sandbox.work / ".git" / "hooks"
    hooks.mkdir(parents=True)
    command = (
        "(echo planted > .git/hooks/pre-commit) 2>/dev/null || echo hooks-refused; "
        "echo ok > made.txt && echo workspace-writable"
    )
    result = await call_tool(
        run_command,
        {"command": command},
        cwd=sandbox.work,
        # the whole sandbox root read-only (it holds the workspace), and the hooks too
        settings={"read_only_paths": [str(sandbox.root), ".git/hooks"]},
    )
    assert _text(result).splitlines()[1:] == ["hooks-refused", "workspace-writable"]
    assert not (hooks / "pre-commit").exists()
    assert (sandbox.work / "made.txt").read_text() == "ok\n"


async def test_processes_of_the_harness_are_invisible(sandbox: Sandbox) -> None:
    result = await call_tool(
        run_command, {"command": "ls /proc | grep -c '^[0-9]'; echo $PPID"}, cwd=sandbox.work
    )
    count, ppid = _text(result).splitlines()[1:]
    assert int(count) <= 4  # the sandbox's init, the shell and its two children
    assert ppid == "1"


async def test_commands_have_no_capabilities_and_cannot_nest_namespaces(sandbox: Sandbox) -> None:
    command = (
        "grep -E '^Cap(Eff|Prm|Bnd):' /proc/self/status; "
        "unshare --user --map-root-user true 2>/dev/null && echo nested || echo no-nesting; "
        "hostname"
    )
    result = await call_tool(run_command, {"command": command}, cwd=sandbox.work)
    assert _text(result).splitlines()[1:] == [
        "CapPrm:\t0000000000000000",
        "CapEff:\t0000000000000000",
        "CapBnd:\t0000000000000000",
        "no-nesting",
        "sandbox",
    ]


_HOLDER = """
import asyncio, sys
from pathlib import Path
from tether.testing import call_tool
from tether_tools.shell import run_command
command = "flock held.lock sh -c 'touch held.ready; exec sleep 300'"
asyncio.run(call_tool(run_command, {"command": command, "timeout": 300}, cwd=Path(sys.argv[1])))
"""


def test_the_sandbox_dies_with_the_harness(sandbox: Sandbox) -> None:
    harness = subprocess.Popen([sys.executable, "-c", _HOLDER, str(sandbox.work)])
    try:
        deadline = time.monotonic() + 60
        while not (sandbox.work / "held.ready").exists():
            assert harness.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
        assert not _lock_is_free(sandbox.work / "held.lock")
        harness.kill()  # no clean-up code runs: only --die-with-parent ends the sandbox
        harness.wait(timeout=30)
        deadline = time.monotonic() + 30
        while not _lock_is_free(sandbox.work / "held.lock"):
            assert time.monotonic() < deadline, "the sandbox outlived the harness"
            time.sleep(0.02)
    finally:
        harness.kill()
        harness.wait(timeout=30)


def _lock_is_free(path: Path) -> bool:
    with path.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(handle, fcntl.LOCK_UN)
        return True


# --- limits -----------------------------------------------------------------------------


async def test_limits_are_set_and_cannot_be_raised(sandbox: Sandbox) -> None:
    result = await call_tool(
        run_command,
        {"command": "ulimit -t; ulimit -v; ulimit -u; ulimit -t 1000 2>/dev/null || echo kept"},
        cwd=sandbox.work,
        settings={"cpu_seconds": 30, "max_memory_mb": 512, "max_processes": 64},
    )
    assert _text(result).splitlines()[1:] == ["30", str(512 * 1024), "64", "kept"]


async def test_a_cpu_burner_is_stopped_by_the_cpu_limit(sandbox: Sandbox) -> None:
    result = await call_tool(
        run_command,
        {"command": "python3 -c 'while 1: pass'", "timeout": 120},
        cwd=sandbox.work,
        settings={"cpu_seconds": 1},
    )
    assert _text(result).splitlines()[0] == (
        "Exit code: 152 (killed by SIGXCPU: the CPU time limit was reached)"
    )


async def test_memory_beyond_the_limit_is_refused(sandbox: Sandbox) -> None:
    # 1 GiB of address space, mapped but never touched: costs the machine nothing.
    command = (
        "python3 -c 'import mmap; m = mmap.mmap(-1, 1 << 30); print(\"mapped\")' 2>&1 | tail -1"
    )
    small = await call_tool(
        run_command, {"command": command}, cwd=sandbox.work, settings={"max_memory_mb": 256}
    )
    assert _text(small) == "Exit code: 0\nOSError: [Errno 12] Cannot allocate memory\n"
    big = await call_tool(
        run_command, {"command": command}, cwd=sandbox.work, settings={"max_memory_mb": 4096}
    )
    assert _text(big) == "Exit code: 0\nmapped\n"


async def test_output_is_capped_inside_the_sandbox(sandbox: Sandbox) -> None:
    result = await call_tool(
        run_command,
        {"command": "seq 1 1000000"},
        cwd=sandbox.work,
        settings={"max_output_bytes": 3000},
    )
    text = _text(result)
    assert text.splitlines()[:3] == ["Exit code: 0", "1", "2"]
    assert text.splitlines()[-1] == "1000000" and "bytes of output omitted" in text
    assert len(text) < 3300


# --- without bubblewrap -----------------------------------------------------------------


@pytest.fixture
def fresh_status() -> Iterator[None]:
    sandbox_status.cache_clear()
    yield
    sandbox_status.cache_clear()


def _path_with(sandbox: Sandbox, bwrap_script: str | None) -> str:
    """A PATH with the system's tools but, instead of the real bwrap, ``bwrap_script``
    (or none at all)."""
    bin_dir = sandbox.root / "bin"
    bin_dir.mkdir(exist_ok=True)
    for tool in ("bash", "sh", "prlimit", "true", "touch"):
        real = shutil.which(tool)
        assert real is not None
        (bin_dir / tool).symlink_to(real)
    if bwrap_script is not None:
        fake = bin_dir / "bwrap"
        fake.write_text(bwrap_script)
        fake.chmod(0o755)
    return str(bin_dir)


@pytest.mark.usefixtures("fresh_status")
async def test_without_bwrap_shell_access_is_refused_loudly(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("PATH", _path_with(sandbox, None))
    with caplog.at_level(logging.WARNING, logger="tether.tools.shell"):
        first = await call_tool(run_command, {"command": "touch ran.txt"}, cwd=sandbox.work)
        second = await call_tool(run_command, {"command": "touch ran.txt"}, cwd=sandbox.work)
    for result in (first, second):
        assert result.is_error
        assert _text(result).startswith("Shell access refused; nothing was run.")
        assert "bubblewrap (`bwrap`) is not installed" in _text(result)
        assert "apt-get install bubblewrap" in _text(result)
        assert 'sandbox = "none"' in _text(result)
    assert not (sandbox.work / "ran.txt").exists()
    warnings = [r for r in caplog.records if "sandbox is unavailable" in r.getMessage()]
    assert len(warnings) == 1

    opted_out = await call_tool(
        run_command, {"command": "touch ran.txt"}, cwd=sandbox.work, settings={"sandbox": "none"}
    )
    assert not opted_out.is_error and (sandbox.work / "ran.txt").exists()


@pytest.mark.usefixtures("fresh_status")
async def test_a_bwrap_that_cannot_create_namespaces_is_refused(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = (
        "#!/bin/sh\n"
        'case "$1" in --help) echo usage; exit 0;; esac\n'
        "echo 'bwrap: No permissions to create new namespace' >&2; exit 1\n"
    )
    monkeypatch.setenv("PATH", _path_with(sandbox, script))
    result = await call_tool(run_command, {"command": "touch ran.txt"}, cwd=sandbox.work)
    assert result.is_error
    assert "cannot create namespaces here (bwrap: No permissions" in _text(result)
    assert not (sandbox.work / "ran.txt").exists()


async def test_a_misspelt_sandbox_mode_is_a_configuration_error(sandbox: Sandbox) -> None:
    result = await call_tool(
        run_command, {"command": "true"}, cwd=sandbox.work, settings={"sandbox": "off"}
    )
    assert result.is_error
    assert '[tool_settings.shell] sandbox must be one of "bwrap", "none"' in _text(result)


def test_tether_plugins_and_startup_say_when_the_sandbox_is_missing(sandbox: Sandbox) -> None:
    tether = str(Path(sys.executable).with_name("tether"))
    env = {**os.environ, "PATH": _path_with(sandbox, None)}
    done = subprocess.run(
        [tether, "plugins"], capture_output=True, text=True, env=env, timeout=120, check=True
    )
    shell_row = next(line for line in done.stdout.splitlines() if line.split()[:1] == ["shell"])
    assert "unavailable: no OS sandbox: bubblewrap (`bwrap`) is not installed" in shell_row
    assert 'sandbox = "none"' in shell_row
    assert done.stderr.count("warning: The shell tool's OS sandbox is unavailable") == 1

    present = subprocess.run(
        [tether, "plugins"], capture_output=True, text=True, timeout=120, check=True
    )
    shell_row = next(line for line in present.stdout.splitlines() if line.split()[:1] == ["shell"])
    assert shell_row.split()[-1] == "run_command" and "sandbox" not in present.stderr
