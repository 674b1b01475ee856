"""Approval rules over the real tools: ``run_command`` rules match every program the parsed
line runs, file rules match resolved paths. Spellings are generated (hypothesis) around a
denied program or path, each checked to be valid bash first; none gets through, and
nothing the parser cannot read is allowed. The end-to-end tests run an Agent in the
sandbox with sentinel files as the payload."""

from __future__ import annotations

import itertools
import os
import shlex
import signal
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tether
from tether.approvals import ApprovalRequest, Permission, Policy
from tether.config import Config
from tether.errors import UnreadableCommand
from tether.result import Outcome
from tether.testing import Reply, ScriptedProvider, call
from tether_testing.sandbox import Sandbox
from tether_tools.plugin import FS, SHELL
from tether_tools.shell import run_command
from tether_tools.shell.invocations import split_command

GIT_OK = Policy.build(rules={"shell": "ask", "run_command(git status*)": "allow"})
NO_TOUCH = Policy.build(rules={"run_command(touch *)": "deny"})
ALL_SHELL = Policy.build(rules={"shell": "allow"})


def verdict(policy: Policy, line: str) -> Permission:
    return policy.decide(
        "run_command", {"command": line}, toolset="shell", subjects=run_command.subjects
    )[0]


def bash_accepts(line: str) -> bool:
    checked = subprocess.run(["bash", "-n", "-c", line], capture_output=True, timeout=10)
    return checked.returncode == 0


# -- the spellings that got through raw-string rules --------------------------------------------
@pytest.mark.parametrize(
    "line",
    [
        "git status; touch X",
        "git status $(touch X)",
        "git status\ntouch X",
        "git status `touch X`",
        "git status && touch X",
        "git status || touch X",
        "git status | touch X",
        "git status & touch X",
        "git status <(touch X)",
        "git status > $(touch X)",
        "git status; bash -c 'touch X'",
        "git status\n\n  touch X",
    ],
)
def test_an_allowed_prefix_does_not_carry_the_rest_of_the_line(line: str) -> None:
    assert verdict(GIT_OK, line) is Permission.ASK


def test_the_allowed_command_alone_still_runs_without_asking() -> None:
    for line in ("git status", "git status --short", "  git status", "(git status)"):
        assert verdict(GIT_OK, line) is Permission.ALLOW, line
    assert verdict(GIT_OK, "git status; git status -s") is Permission.ALLOW
    assert verdict(GIT_OK, "env git status") is Permission.ALLOW
    # ... but not where a wrapper moves it: `rm -rf build` in / is another command
    assert verdict(GIT_OK, "env -C / git status") is Permission.ASK


@pytest.mark.parametrize(
    "line",
    [
        " touch X",
        "/usr/bin/touch X",
        "env touch X",
        "echo; touch X",
        "\ttouch X",
        "/bin/touch X",
        "../../usr/bin/touch X",
        "\\touch X",
        "t''ouch X",
        '"touch" X',
        "$'touch' X",
        "env -i FOO=1 touch X",
        "FOO=1 touch X",
        "nice -n 5 touch X",
        "nohup touch X",
        "timeout -s KILL 5 touch X",
        "time touch X",
        "command touch X",
        "exec touch X",
        "sudo -u root touch X",
        "stdbuf -o0 touch X",
        "echo X | xargs touch",
        "find . -name x -exec touch {} +",
        "bash -c 'touch X'",
        'sh -c "echo; touch X"',
        "eval 'touch X'",
        "env -S 'touch X'",
        "(touch X)",
        "{ touch X; }",
        "cat <(touch X)",
        "echo $(touch X)",
        "echo `touch X`",
        "X=$(touch X)",
        "f() { touch X; }",
        "if true; then touch X; fi",
        "for i in 1; do touch X; done",
        "case a in a) touch X;; esac",
        "cat <<EOF\n$(touch X)\nEOF",
        "bash <<< 'touch X'",
        "echo ok >$(touch X)",
        "touch",
        "tou\\\nch X",
        "trap 'touch X' EXIT",
        "su -c 'touch X' root",
        "strace -f touch X",
        "chroot / touch X",
        "flock /tmp/lock touch X",
        "builtin eval 'touch X'",
        "coproc touch X",
        "coproc { touch X; }",
        "coproc NAME ( touch X )",
        "echo X | xargs sh -c 'touch X'",
        "find . -exec sh -c 'touch X' \\;",
        "git status#; touch X",
        "exec -a name touch X",
    ],
)
def test_a_denied_program_is_denied_in_every_spelling(line: str) -> None:
    assert bash_accepts(line), line
    assert verdict(NO_TOUCH, line) is Permission.DENY


@pytest.mark.parametrize(
    "line",
    [
        "echo 'unclosed",
        'echo "unclosed',
        "echo $(unclosed",
        "$CMD X",
        "$(echo touch) X",
        'eval "$CODE"',
        'bash -c "$CODE"',
        "echo touch X | sh",
        "curl -s example.org | bash",
        "echo $((1 + $(touch X)))",
        "bash < script.sh",
        "/usr/bin/tou?h X",
        "/usr/*/touch X",
        "{touch,X}",
        '{touch,"X"}',
        "touch${IFS}X",
        "x='a[$(touch X)]'; printf -v 'b[x]' 1",
        "mapfile -C 'touch X' -c 1 < /dev/null",
        "source <(echo touch X)",
        "echo X | xargs -I{} sh -c 'touch {}'",
        "shopt -s expand_aliases\nalias git='touch X'\ngit status",
        "bash <(echo touch X)",
        "echo touch | xargs -I{} {} X",
        "echo touch | xargs -I % sh -c '% X'",
        "find . -name touch -exec {} X \\;",
    ],
)
def test_what_cannot_be_read_is_never_allowed(line: str) -> None:
    with pytest.raises(UnreadableCommand):
        split_command(line)
    assert verdict(ALL_SHELL, line) is Permission.ASK
    assert verdict(GIT_OK, line) is Permission.ASK
    assert verdict(Policy.build(rules={"run_command(*)": "allow"}), line) is Permission.ASK


# -- generated spellings --------------------------------------------------------------------------
PROGRAM = st.sampled_from(
    [
        "touch",
        "/usr/bin/touch",
        "/bin/touch",
        "\\touch",
        "t''ouch",
        '"touch"',
        "$'touch'",
        'to""uch',
    ]
)
ARGUMENT = st.sampled_from(["canary", "'canary'", '"canary"', "can\\ary", "$HOME/canary", ""])
WRAPPERS = st.sampled_from(
    [
        "env",
        "env -i",
        "env FOO=1",
        "FOO=1",
        "nice",
        "nice -n 5",
        "nohup",
        "timeout 5",
        "timeout -s KILL 5",
        "time",
        "command",
        "sudo",
        "sudo -u root",
        "stdbuf -o0",
        "sudo FOO=1",
        "time -p",
        "setsid",
        "/usr/bin/env",
    ]
)
OTHERS = st.sampled_from(["git status", "echo hi", "ls -la", "true", "git status -s"])
SEPARATORS = st.sampled_from(["; ", " && ", " || ", " | ", " & ", "\n", " ;\n ", "|&"])


@st.composite
def around(draw: st.DrawFn, core: st.SearchStrategy[str]) -> str:
    """``core`` wrapped in random substitutions, subshells, groups, shells and lists."""
    text = draw(core)
    for _ in range(draw(st.integers(0, 3))):
        shape = draw(
            st.sampled_from(
                ["$(%s)", "( %s )", "{ %s; }", "<(%s)", "bash -c %s", "sh -c %s", "eval %s", "`%s`"]
            )
        )
        if shape == "`%s`" and "`" in text:
            continue
        if shape in ("bash -c %s", "sh -c %s", "eval %s"):
            text = shape % shlex.quote(text)
        elif shape in ("$(%s)", "<(%s)", "`%s`"):
            text = "echo " + shape % text
        else:
            text = shape % text
    before = draw(st.lists(OTHERS, max_size=2))
    after = draw(st.lists(OTHERS, max_size=2))
    pieces = [*before, text, *after]
    line = pieces[0]
    for piece in pieces[1:]:
        line += draw(SEPARATORS) + piece
    return draw(st.sampled_from(["", " ", "\t"])) + line


@st.composite
def touch_commands(draw: st.DrawFn) -> str:
    wrappers = draw(st.lists(WRAPPERS, max_size=3))
    argument = draw(ARGUMENT)
    return " ".join([*wrappers, draw(PROGRAM), argument]).strip()


@settings(max_examples=300, deadline=None)
@given(line=around(touch_commands()))
def test_no_generated_spelling_of_a_denied_program_gets_through(line: str) -> None:
    assert bash_accepts(line), line
    try:
        split_command(line)
    except UnreadableCommand:  # e.g. ``$(( touch x ))``: arithmetic, or is it?
        assert verdict(NO_TOUCH, line) is Permission.ASK
    else:
        assert verdict(NO_TOUCH, line) is Permission.DENY
    assert verdict(GIT_OK, line) is not Permission.ALLOW


@st.composite
def git_status_lines(draw: st.DrawFn) -> tuple[str, bool]:
    """A composition of commands and whether every one of them is a ``git status``."""
    commands = draw(st.lists(OTHERS, min_size=1, max_size=4))
    separators = [draw(SEPARATORS) for _ in commands[1:]]
    line = commands[0]
    for separator, command in zip(separators, commands[1:], strict=True):
        line += separator + command
    if draw(st.booleans()):
        line = f"( {line} )"
    return line, all(c.startswith("git status") for c in commands)


@settings(max_examples=200, deadline=None)
@given(case=git_status_lines())
def test_an_allow_rule_covers_a_line_exactly_when_it_covers_every_command(
    case: tuple[str, bool],
) -> None:
    line, only_git_status = case
    assert bash_accepts(line), line
    expected = Permission.ALLOW if only_git_status else Permission.ASK
    assert verdict(GIT_OK, line) is expected


@settings(max_examples=200, deadline=None)
@given(line=around(st.sampled_from(["echo hi", "touch canary", "rm -f canary"])))
def test_an_allow_rule_never_covers_a_line_with_anything_else(line: str) -> None:
    assert verdict(GIT_OK, line) is Permission.ASK


# -- end to end: an agent, the real tools, the sandbox ---------------------------------------
RULES = {
    "shell": "ask",
    "run_command(echo *)": "allow",
    "run_command(touch *)": "deny",
    "write_file": "ask",
    "write_file(docs/**)": "allow",
    "read_file(secrets/**)": "deny",
}


@pytest.fixture
def workspace(sandbox: Sandbox) -> Path:
    work = sandbox.work
    (work / "docs").mkdir()
    (work / "src").mkdir()
    (work / "secrets").mkdir()
    (work / "secrets" / "key.txt").write_text("canary-secret")
    (work / "docs" / "link").symlink_to(work / "secrets")
    return work


BYPASSES = [
    call("run_command", "b0", command="echo ok; mkdir sentinel-a"),
    call("run_command", "b1", command="echo ok $(mkdir sentinel-b)"),
    call("run_command", "b2", command="/usr/bin/touch sentinel-c"),
    call("run_command", "b3", command="env touch sentinel-d"),
    call("write_file", "b4", path="docs/../src/evil.py", content="print('evil')"),
    call("read_file", "b5", path="docs/link/key.txt"),
    call("read_file", "b6", path="./secrets/key.txt"),
    call("write_file", "b7", path="docs/notes.md", content="fine"),
    call("run_command", "b8", command="echo allowed"),
]


def _agent(model: ScriptedProvider, workspace: Path, **kwargs: object) -> tether.Agent:
    return tether.Agent(
        model,
        tools=[FS, SHELL],
        config=Config(),
        permissions=RULES,
        cwd=workspace,
        **kwargs,  # type: ignore[arg-type]
    )


def _nothing_bypassed(workspace: Path) -> None:
    for name in ("sentinel-a", "sentinel-b", "sentinel-c", "sentinel-d"):
        assert not (workspace / name).exists(), name
    assert not (workspace / "src" / "evil.py").exists()


def test_an_agent_asked_with_bypass_spellings_runs_none_of_them(workspace: Path) -> None:
    asked: list[ApprovalRequest] = []

    def approve(request: ApprovalRequest) -> bool:
        asked.append(request)
        return False

    model = ScriptedProvider([Reply(tool_calls=BYPASSES), Reply(text="done")])
    result = _agent(model, workspace, approval=approve).run_sync("try everything")
    assert result.outcome is Outcome.COMPLETED
    _nothing_bypassed(workspace)
    assert sorted(r.subject or "" for r in asked) == [
        "docs/../src/evil.py",
        "echo ok $(mkdir sentinel-b)",
        "echo ok; mkdir sentinel-a",
    ]
    results = result.messages[2].tool_results
    texts = [r.text for r in results]
    assert all("Denied by the user" in t for t in (texts[0], texts[1], texts[4]))
    assert "run_command(touch *)" in texts[2] and "run_command(touch *)" in texts[3]
    assert "read_file(secrets/**)" in texts[5] and "read_file(secrets/**)" in texts[6]
    assert "canary-secret" not in "".join(texts)
    assert (workspace / "docs" / "notes.md").read_text() == "fine"
    assert not results[8].is_error and "allowed" in texts[8]


def test_without_anyone_to_ask_the_run_suspends_and_nothing_runs(workspace: Path) -> None:
    model = ScriptedProvider([Reply(tool_calls=BYPASSES[:5])])
    result = _agent(model, workspace).run_sync("try")
    assert result.outcome is Outcome.SUSPENDED
    assert sorted(p.call_id for p in result.pending) == ["b0", "b1", "b4"]
    _nothing_bypassed(workspace)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(line=around(touch_commands()))
def test_generated_spellings_through_an_agent_never_touch_the_canary(
    sandbox: Sandbox, workspace: Path, line: str
) -> None:
    model = ScriptedProvider(
        [Reply(tool_calls=[call("run_command", command=line)]), Reply(text="ok")]
    )
    result = _agent(model, workspace, approval=lambda _: False).run_sync("go")
    assert result.outcome is Outcome.COMPLETED
    assert not (workspace / "canary").exists()
    assert not (sandbox.home / "canary").exists()


def test_an_allow_rule_does_not_cover_a_redirection_it_does_not_name() -> None:
    assert verdict(GIT_OK, "git status > ~/.bashrc") is Permission.ASK
    assert verdict(GIT_OK, "git status 2>&1") is Permission.ALLOW
    assert verdict(GIT_OK, "git status >/dev/null") is Permission.ALLOW
    logging = Policy.build(rules={"shell": "ask", "run_command(git status >*.log)": "allow"})
    assert verdict(logging, "git status > status.log") is Permission.ALLOW
    assert verdict(logging, "git status > status.log; touch X") is Permission.ASK


def test_a_glob_in_a_path_to_a_program_really_finds_it(tmp_path: Path) -> None:
    # why a pattern in the program's place is unreadable: bash expands it first
    subprocess.run(["bash", "-c", "/usr/bin/tou?h X; {touch,Y}"], cwd=tmp_path, timeout=10)
    assert (tmp_path / "X").exists() and (tmp_path / "Y").exists()


# -- the shell tool's own allow setting -------------------------------------------------------
def test_a_shell_allow_setting_does_not_carry_the_rest_of_the_line() -> None:
    from tether_tools.shell import check_command

    assert check_command("git status -s", allow=["git status*"]).allowed
    decision = check_command("git status; rm -rf ~", allow=["git status*"])
    assert not decision.allowed and "home directory" in decision.reason


@pytest.mark.parametrize(
    "line",
    [
        "x='a[$(touch X)]'; echo $((x))",
        "x='a[$(touch X)]'; (( x ))",
        "x='a[$(touch X)]'; [[ x -eq 1 ]]",
        "x='a[$(touch X)]'; let x",
        "x='a[$(touch X)]'; declare -i y=x",
        "x='a[$(touch X)]'; echo ${b[x]}",
        "x='a[$(touch X)]'; b[x]=1",
    ],
)
def test_arithmetic_that_evaluates_a_variable_is_never_allowed(line: str, tmp_path: Path) -> None:
    # bash really runs the command hidden in the variable (checked in a scratch folder)
    subprocess.run(["bash", "-c", line], cwd=tmp_path, capture_output=True, timeout=10)
    assert (tmp_path / "X").exists(), line
    assert verdict(NO_TOUCH, line) is not Permission.ALLOW
    assert verdict(ALL_SHELL, line) is Permission.ASK


@pytest.mark.parametrize(
    "line",
    [
        "/usr/bin/tou?h X",
        "{touch,X}",
        "strace -f touch X",
        "shopt -s expand_aliases\nalias g='touch X'\ng",
        "trap 'touch X' EXIT",
        "x='a[$(touch X)]'; echo $((x))",
    ],
)
def test_the_shell_deny_setting_holds_where_the_approval_rules_do(line: str) -> None:
    from tether_tools.shell import check_command

    assert not check_command(line, deny=["touch *"]).allowed
    assert check_command("git status", deny=["touch *"]).allowed


@settings(max_examples=150, deadline=None)
@given(line=around(touch_commands()))
def test_no_generated_spelling_passes_the_shell_deny_setting(line: str) -> None:
    from tether_tools.shell import check_command

    assert not check_command(line, deny=["touch *"]).allowed


# -- the reader agrees with bash -------------------------------------------------------------
STUBS = ("touch", "git", "ls", "mkdir", "cat", "hello")


_RUNTIME = ("$", "*", "?", "{", "<(")
"""What in a read argument stands for text only known when the line runs."""


@pytest.fixture
def stub_path(sandbox: Sandbox) -> Path:
    """A folder of stand-in programs that only log their name and arguments (one write
    per call, fields split by US, records by RS), first on PATH."""
    folder = sandbox.root / "stubs"
    folder.mkdir(exist_ok=True)
    for name in STUBS:
        stub = folder / name
        stub.write_text(
            f'#!/bin/bash\nrecord="{name}"\n'
            'for a in "$@"; do record+=$\'\\x1f\'"$a"; done\n'
            'printf \'%s\\x1e\' "$record" >> "$RAN_LOG"\n'
        )
        stub.chmod(0o755)
    return folder


def ran_by_bash(line: str, stubs: Path, scratch: Path) -> list[tuple[str, ...]]:
    """The stand-in programs bash really runs for ``line`` (in a scratch folder), each as
    its argv."""
    log = scratch / "ran.log"
    env = {
        "PATH": f"{stubs}:/usr/bin:/bin",
        "RAN_LOG": str(log),
        "HOME": str(scratch),
        "FUNCNEST": "20",
    }
    process = subprocess.Popen(
        ["bash", "-c", line],
        cwd=scratch,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        pytest.fail(f"{line!r} did not finish in 10 s")
    if not log.exists():
        return []
    return [tuple(record.split("\x1f")) for record in log.read_text().split("\x1e") if record]


PROGRAMS = st.sampled_from(
    ["touch a", "git status", "ls -l", "mkdir -p d", "cat /dev/null", "hello"]
)


@st.composite
def random_lines(draw: st.DrawFn) -> str:
    wrappers = draw(st.lists(WRAPPERS.filter(lambda w: "sudo" not in w), max_size=2))
    return " ".join([*wrappers, draw(PROGRAMS)])


def _spelled(name: str) -> st.SearchStrategy[str]:
    """``name`` in the quoting forms bash reads as the same word."""
    head, tail = name[0], name[1:]
    return st.sampled_from(
        [
            name,
            f"\\{name}",
            f"'{name}'",
            f'"{name}"',
            f"$'{name}'",
            f"{head}''{tail}",
            f'{head}""{tail}',
        ]
    )


SIMPLE = st.builds(
    lambda program, args: f"{program}{args}",
    st.sampled_from(STUBS).flatmap(_spelled),
    st.sampled_from(["", " a", " 'a b'", " -x"]),
)


_COUNTER = itertools.count()
NAMES = st.builds(lambda: f"fn_{next(_COUNTER)}")
"""Names for generated functions and aliases, never the same twice (so none calls itself,
even while hypothesis shrinks an example)."""


def _compose(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    lists = st.builds(
        lambda first, rest: first + "".join(f"{sep}{cmd}" for sep, cmd in rest),
        inner,
        st.lists(st.tuples(SEPARATORS, inner), max_size=2),
    )
    return st.one_of(
        st.builds(lambda w, c: f"{w} {c}", WRAPPERS.filter(lambda w: "sudo" not in w), inner),
        lists.map(lambda c: f"( {c} )"),
        lists.map(lambda c: f"{{ {c}; }}"),
        lists.map(lambda c: f"echo $( {c} )"),
        lists.map(lambda c: f"cat <( {c} )"),
        lists.map(lambda c: f"bash -c {shlex.quote(c)}"),
        lists.map(lambda c: f"eval {shlex.quote(c)}"),
        lists.map(lambda c: f"bash <<< {shlex.quote(c)}"),
        st.builds(lambda c, f: f"{f}() {{ {c}; }}; {f}", lists, NAMES),
        lists.map(lambda c: f"if true; then {c}; fi"),
        lists.map(lambda c: f"for i in 1; do {c}; done"),
        lists.map(lambda c: f"case x in x) {c};; esac"),
        lists.map(lambda c: f"X=$({c})"),
        lists.map(lambda c: f"echo a > $({c})"),
        lists.map(lambda c: f"cat <<EOF\n$({c})\nEOF"),
        lists.map(lambda c: f"echo a | xargs -I{{}} sh -c {shlex.quote(c)}"),
        lists.map(lambda c: f"trap {shlex.quote(c)} EXIT"),
        lists.map(lambda c: f"echo {shlex.quote(c)} | bash"),
        lists.map(lambda c: f"source <(echo {shlex.quote(c)})"),
        lists.map(lambda c: f"bash <(echo {shlex.quote(c)})"),
        lists.map(lambda c: f"echo a | xargs -I{{}} sh -c {shlex.quote(c + '; {} a')}"),
        lists.map(lambda c: f"echo $(({c}) )"),
        lists.map(lambda c: f"echo ${{u:-$({c})}}"),
        lists.map(lambda c: f"! {c}"),
        lists.map(lambda c: f"coproc {{ {c}; }}"),
        st.builds(lambda c, f: f"coproc {f} ( {c} )", lists, NAMES),
        lists.map(lambda c: f'echo "$( {c} )"'),
        lists.map(lambda c: f"case x in y) :;; *) {c};; esac"),
        lists.map(lambda c: f"{{ {c}; }} 2>&1"),
        lists.map(lambda c: f"echo a | while read l; do {c}; done"),
        st.builds(lambda c, f: f"function {f} {{ {c}; }}; {f}", lists, NAMES),
        st.builds(
            lambda c, f: f"shopt -s expand_aliases\nalias {f}={shlex.quote(c)}\n{f}", lists, NAMES
        ),
        st.sampled_from(STUBS).map(lambda n: f"echo {n} | xargs -I{{}} {{}} a"),
        st.sampled_from(STUBS).map(lambda n: f"echo {n} | xargs -I % sh -c '% a'"),
    )


SHAPES = st.recursive(SIMPLE, _compose, max_leaves=6)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(line=st.one_of(around(random_lines()), SHAPES))
def test_every_program_bash_runs_is_one_the_reader_names(
    stub_path: Path, tmp_path_factory: pytest.TempPathFactory, line: str
) -> None:
    try:
        invocations = split_command(line)
    except UnreadableCommand:
        return  # never allowed: nothing to compare
    for name, *args in ran_by_bash(line, stub_path, tmp_path_factory.mktemp("scratch")):
        read = [i for i in invocations if i.name == name]
        assert read, f"{line!r} ran {name}, which the reader did not name"
        # the arguments too, where the reader could know them (no expansion left)
        assert any(
            list(i.args) == args or any(m in a for a in i.args for m in _RUNTIME) for i in read
        ), f"{line!r} ran {[name, *args]}; the reader saw {[i.args for i in read]}"
