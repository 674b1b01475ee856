"""The harness's API key is unreadable from the sandbox in every spelling: the reported
ones, more generated with hypothesis (readers x paths to the parent's, pid 1..N's and its
own environ and cmdline, symlinks to /proc, /dev/fd/.., find -exec, output through rev,
base64, rot13, od), and whole-environment dumps. Each spelling also runs without the
sandbox, to show that it does read the key there.

Runs inside the ``sandbox`` fixture (fake HOME and workspace); the payload is a canary."""

from __future__ import annotations

import base64
import binascii
import codecs
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tether.testing import call_tool
from tether_testing.sandbox import Sandbox
from tether_tools.shell import run_command
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
