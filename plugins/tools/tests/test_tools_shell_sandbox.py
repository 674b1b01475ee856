"""The OS sandbox around shell commands: the harness's key is unreadable in every
spelling, nothing is written outside the workspace, the network is off, the limits bite,
and without bubblewrap shell access is refused unless the user opted out by name.

Everything runs inside the ``sandbox`` fixture (fake HOME and workspace); payloads are
canaries and sentinel files."""

from __future__ import annotations

import base64
import binascii
import codecs
import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tether.testing import call_tool
from tether.testing.sandbox import Sandbox
from tether_tools.shell import run_command
from tether_tools.shell.netproxy import HostProxy
from tether_tools.shell.sandbox import sandbox_status

pytestmark = pytest.mark.skipif(
    not sandbox_status().available, reason="bubblewrap cannot sandbox commands on this machine"
)

HARNESS = Path(__file__).with_name("shell_harness.py")
CANARY_NAME = "ACME_API_KEY"


def _text(result: Any) -> str:
    assert isinstance(result.content, str)
    return str(result.content)


# --- the key, in every spelling -----------------------------------------------------------

_ENVIRON_PATHS = [
    "/proc/$PPID/environ",
    "/proc/$PPID/cmdline",
    "/proc/self/environ",
    "/proc/$$/environ",
    "/proc/1/environ",
    "/proc/1/cmdline",
    "/proc/2/environ",
    "/dev/fd/../../$PPID/environ",
    "/proc/self/../$PPID/environ",
    "/proc/$PPID/task/$PPID/environ",
    "/proc/thread-self/../../../$PPID/environ",
    "/dev/stdin/../../../$PPID/environ",
]
_READERS: list[Callable[[str], str]] = [
    lambda p: f"cat {p}",
    lambda p: f"tr '\\0' '\\n' < {p}",
    lambda p: f"awk 'BEGIN{{RS=\"\\0\"}}{{print}}' {p}",
    lambda p: f"head -c 1000000 {p}",
    lambda p: f"dd if={p} status=none",
    lambda p: f"sed -n p {p}",
    lambda p: f"grep -a . {p}",
    lambda p: f"python3 -c 'import sys; sys.stdout.write(open(sys.argv[1]).read())' {p}",
    lambda p: f"while IFS= read -r -d '' line; do echo \"$line\"; done < {p}",
    lambda p: (
        f"find {p.rsplit('/', 1)[0]} -maxdepth 1 -name '{p.rsplit('/', 1)[1]}*' -exec cat {{}} +"
    ),
]
# (command suffix, how to undo it on the output)
_TRANSFORMS: list[tuple[str, Callable[[str], str]]] = [
    ("", lambda s: s),
    (" | tr '\\0' '\\n' | rev", lambda s: "\n".join(line[::-1] for line in s.splitlines())),
    (" | base64 -w0", lambda s: _unbase64(s)),
    (" | tr 'A-Za-z' 'N-ZA-Mn-za-m'", lambda s: codecs.decode(s, "rot13")),
    (" | od -An -c | tr -d ' \\n'", lambda s: s.replace("\\0", "")),
]
_WHOLE_COMMANDS = [
    "env",
    "printenv",
    "set",
    "export -p",
    f'echo "${CANARY_NAME}"',
    f"printenv {CANARY_NAME}",
    "python3 -c 'import os; print(dict(os.environ))'",
    "for p in $(seq 1 64); do cat /proc/$p/environ /proc/$p/cmdline; echo; done",
    "for f in /proc/[0-9]*/environ /proc/[0-9]*/task/*/environ; do cat $f; done",
    "ps eww -A",
    "cat /proc/*/cmdline",
    "grep -ra ACME /proc/[0-9]*/environ",
    "ls -la /proc/$PPID/fd/ /proc/$PPID/cwd/",
]
# The spellings reported against the plain shell tool.
REPORTED = [
    "cat /dev/fd/../../$PPID/environ",
    "ln -s /proc p; cat p/$PPID/environ",
    "find /proc/$PPID -name 'env*' -exec cat {} +",
    "awk '{print}' /proc/$PPID/environ",
    "base64 /proc/$PPID/environ",
    "tr '\\0' '\\n' < /proc/$PPID/environ | rev",
    "tr '\\0' '\\n' < /proc/$PPID/environ | base64 | rev",
]


def _unbase64(text: str) -> str:
    try:
        return base64.b64decode(text.strip() + "==", validate=False).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        return ""


def _undo_all(text: str) -> str:
    """Every decoding a spelling here might have applied, joined: the canary is in the
    output in any of them iff it is in here."""
    decoded = []
    for body in (text, text.split("\n", 1)[-1]):  # with and without the status line
        decoded += [undo(body) for _, undo in _TRANSFORMS]
        decoded.append(_unbase64("".join(line[::-1] for line in body.splitlines())))
    return "\n".join(decoded)


@st.composite
def spellings(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["path", "path", "path", "whole"]))
    suffix, _ = draw(st.sampled_from(_TRANSFORMS))
    if kind == "whole":
        return f"{{ {draw(st.sampled_from(_WHOLE_COMMANDS))}; }} 2>/dev/null{suffix}"
    path = draw(st.sampled_from(_ENVIRON_PATHS))
    if draw(st.booleans()) and path.startswith("/proc/"):
        link = draw(st.sampled_from(["p", "q.d", ".hidden"]))
        prefix, path = f"ln -sfn /proc {link}; ", link + path.removeprefix("/proc")
    else:
        prefix = ""
    reader = draw(st.sampled_from(_READERS))
    return f"{prefix}{{ {reader(path)}; }} 2>/dev/null{suffix}"


def _harness(workspace: Path, commands: list[str], canary: str) -> list[dict[str, str]]:
    """Run ``commands`` from a harness process holding ``canary`` in its environment and
    on its command line (see ``shell_harness.py``)."""
    env = {**os.environ, CANARY_NAME: canary}
    done = subprocess.run(
        [sys.executable, str(HARNESS), canary],
        input=json.dumps({"workspace": str(workspace), "commands": commands}),
        capture_output=True,
        text=True,
        env=env,
        cwd=workspace,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results: list[dict[str, str]] = json.loads(done.stdout)
    return results


def _check(commands: list[str], results: list[dict[str, str]], canary: str) -> None:
    for command, result in zip(commands, results, strict=True):
        for way in ("tool", "boundary"):
            assert canary not in _undo_all(result[way]), (way, command, result[way][:500])


def test_the_reported_spellings_read_the_key_without_the_sandbox_and_not_with_it(
    sandbox: Sandbox,
) -> None:
    canary = f"sk-canary-{uuid.uuid4().hex}"
    results = _harness(sandbox.work, REPORTED, canary)
    _check(REPORTED, results, canary)
    for command, result in zip(REPORTED, results, strict=True):
        # The same spelling, without the boundary, does find the key: the test has teeth.
        assert canary in _undo_all(result["plain"]), command


@settings(
    max_examples=4,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # shrinking reruns the harness
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(commands=st.lists(spellings(), min_size=25, max_size=25, unique=True))
def test_no_generated_spelling_reads_the_key(sandbox: Sandbox, commands: list[str]) -> None:
    canary = f"sk-canary-{uuid.uuid4().hex}"
    results = _harness(sandbox.work, commands, canary)
    _check(commands, results, canary)
    ppid_readers = [
        (c, r)
        for c, r in zip(commands, results, strict=True)
        if "$PPID/environ" in c and not any(w in c for w in ("find", "task", "/dev/stdin"))
    ]
    for command, result in ppid_readers:
        assert canary in _undo_all(result["plain"]), (command, result["plain"][:300])


def test_every_whole_command_spelling_in_full(sandbox: Sandbox) -> None:
    canary = f"sk-canary-{uuid.uuid4().hex}"
    commands = [f"{{ {c}; }} 2>/dev/null" for c in _WHOLE_COMMANDS]
    _check(commands, _harness(sandbox.work, commands, canary), canary)


async def test_the_environment_is_an_allow_list(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PLAIN_SETTING", "not-inherited")
    monkeypatch.setenv("LANG", "C.UTF-8")
    result = await call_tool(
        run_command,
        {"command": "env | sort"},
        cwd=sandbox.work,
        env={"FROM_APP": "app"},
        settings={"env": {"FROM_CONFIG": "config"}, "env_allow": ["PLAIN_*"]},
    )
    names = {line.split("=", 1)[0] for line in _text(result).splitlines()[1:]}
    assert names <= {
        "PATH",
        "LANG",
        "TERM",
        "TZ",
        "USER",
        "LOGNAME",
        "HOME",
        "TMPDIR",
        "SHELL",
        "PWD",
        "SHLVL",
        "_",
        "OLDPWD",
        "PLAIN_SETTING",
        "FROM_APP",
        "FROM_CONFIG",
    } | {n for n in names if n.startswith("LC_")}
    assert {"FROM_APP", "FROM_CONFIG", "PLAIN_SETTING", "HOME"} <= names
    without = await call_tool(run_command, {"command": "env"}, cwd=sandbox.work)
    assert "PLAIN_SETTING" not in _text(without)
    assert "HOME=/home/sandbox\n" in _text(without)


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


# --- the network ------------------------------------------------------------------------


@pytest.fixture
def listener() -> Iterator[int]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


_CONNECT = (
    'python3 -c \'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 5); '
    'print("connected")\' {port} 2>&1 | tail -1'
)


async def test_network_is_off_by_default_and_on_when_configured(
    sandbox: Sandbox, listener: int
) -> None:
    command = _CONNECT.format(port=listener)
    off = await call_tool(run_command, {"command": command}, cwd=sandbox.work)
    assert "connected" not in _text(off).splitlines()[-1]
    assert "Connection refused" in _text(off) or "unreachable" in _text(off)
    on = await call_tool(
        run_command, {"command": command}, cwd=sandbox.work, settings={"network": "on"}
    )
    assert _text(on).splitlines()[-1] == "connected"


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


# --- per-host network access through the proxy ------------------------------------------


@pytest.fixture
def web_servers() -> Iterator[tuple[int, int]]:
    """Two loopback HTTP servers answering with their own names."""
    servers = []
    for name in (b"allowed-server", b"other-server"):

        class Handler(BaseHTTPRequestHandler):
            body = name

            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Length", str(len(self.body)))
                self.end_headers()
                self.wfile.write(self.body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
    try:
        yield servers[0].server_address[1], servers[1].server_address[1]
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()


_FETCH = """
import http.client, os, sys, urllib.request
port = int(sys.argv[1])
try:  # plain http:// through the proxy (HTTP_PROXY)
    print("get", urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10).read().decode())
except Exception as exc:
    print("get", type(exc).__name__, exc)
try:  # CONNECT, as HTTPS clients do
    conn = http.client.HTTPConnection("127.0.0.1", 3128, timeout=10)
    conn.set_tunnel("127.0.0.1", port)
    conn.request("GET", "/")
    print("connect", conn.getresponse().read().decode())
except Exception as exc:
    print("connect", type(exc).__name__, exc)
try:  # around the proxy
    import socket
    socket.create_connection(("127.0.0.1", port), 5)
    print("direct connected")
except OSError as exc:
    print("direct", type(exc).__name__)
"""


async def test_network_allow_reaches_listed_hosts_only_through_the_proxy(
    sandbox: Sandbox, web_servers: tuple[int, int]
) -> None:
    allowed, other = web_servers
    (sandbox.work / "fetch.py").write_text(_FETCH)
    settings = {"network_allow": [f"127.0.0.1:{allowed}"]}
    ok = await call_tool(
        run_command, {"command": f"python3 fetch.py {allowed}"}, cwd=sandbox.work, settings=settings
    )
    assert _text(ok).splitlines()[1:] == [
        "get allowed-server",
        "connect allowed-server",
        "direct ConnectionRefusedError",
    ]
    refused = await call_tool(
        run_command, {"command": f"python3 fetch.py {other}"}, cwd=sandbox.work, settings=settings
    )
    lines = _text(refused).splitlines()[1:]
    assert (
        lines[0]
        == f"get HTTPError HTTP Error 403: 127.0.0.1:{other} is not in the sandbox's network_allow list"
    )
    assert lines[1].startswith("connect OSError Tunnel connection failed: 403")
    assert lines[2] == "direct ConnectionRefusedError"
    assert "other-server" not in _text(refused)


async def test_network_allow_entries_are_checked(sandbox: Sandbox) -> None:
    both = await call_tool(
        run_command,
        {"command": "true"},
        cwd=sandbox.work,
        settings={"network": "on", "network_allow": ["pypi.org"]},
    )
    assert both.is_error and 'network = "on" opens the whole network' in _text(both)
    bad = await call_tool(
        run_command,
        {"command": "true"},
        cwd=sandbox.work,
        settings={"network_allow": ["pypi.org:https"]},
    )
    assert bad.is_error and "network_allow entry 'pypi.org:https' is not a host name" in _text(bad)


def test_allow_rules_match_host_globs_and_ports() -> None:
    proxy = HostProxy(["pypi.org", "*.github.com", "localhost:8080"])
    try:
        assert proxy.allowed("pypi.org", 443) and proxy.allowed("PyPI.org", 80)
        assert not proxy.allowed("pypi.org", 22)
        assert not proxy.allowed("pypi.org.evil.com", 443)
        assert proxy.allowed("api.github.com", 443) and not proxy.allowed("github.com", 443)
        assert proxy.allowed("localhost", 8080) and not proxy.allowed("localhost", 443)
    finally:
        shutil.rmtree(proxy.directory)
