"""Approval rules see what arguments mean: paths resolved against the workspace (``.``,
``..``, symlinks, case), command lines decided per invocation, unreadable lines never
allowed. Shell parsing itself is the tool plugin's (tether-tools tests it with a real
parser); here a small splitter stands in for it."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tether
from tether.approvals import Permission, Policy
from tether.config import Config
from tether.errors import ConfigError, UnreadableCommand
from tether.result import Outcome
from tether.subjects import (
    PATH,
    CommandSubject,
    Invocation,
    ResolvedPath,
    case_insensitive,
    path_matches,
    resolve_path,
)
from tether.testing import Reply, ScriptedProvider, call

FILES = {"path": PATH}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    for folder in ("secrets", "docs", "src", "docs/inner"):
        (root / folder).mkdir(parents=True)
    (root / "secrets" / "key.txt").write_text("canary")
    (root / "docs" / "link").symlink_to(root / "secrets")
    (root / "docs" / "key-link.txt").symlink_to(root / "secrets" / "key.txt")
    (root / "docs" / "escape").symlink_to(tmp_path)
    return root


def decide(policy: Policy, tool: str, root: Path, **arguments: str) -> Permission:
    return policy.decide(tool, arguments, subjects=FILES, root=root)[0]


# -- paths ------------------------------------------------------------------------------------
DENY_SECRETS = Policy.build(rules={"read_file(secrets/**)": "deny"})
DOCS_ONLY = Policy.build(rules={"write_file": "ask", "write_file(docs/**)": "allow"})


@pytest.mark.parametrize(
    "spelling",
    [
        "secrets/key.txt",
        "./secrets/key.txt",
        "docs/../secrets/key.txt",
        "secrets//key.txt",
        "secrets/./key.txt",
        "docs/link/key.txt",
        "docs/key-link.txt",
        "secrets",
        "docs/link",
    ],
)
def test_every_spelling_of_a_denied_path_is_denied(workspace: Path, spelling: str) -> None:
    assert decide(DENY_SECRETS, "read_file", workspace, path=spelling) is Permission.DENY


def test_an_absolute_spelling_inside_the_workspace_is_the_same_path(workspace: Path) -> None:
    spelling = str(workspace / "docs" / ".." / "secrets" / "key.txt")
    assert decide(DENY_SECRETS, "read_file", workspace, path=spelling) is Permission.DENY
    assert decide(DENY_SECRETS, "read_file", workspace, path="docs/inner") is Permission.ALLOW


def test_climbing_out_of_an_allowed_folder_is_not_allowed(workspace: Path) -> None:
    assert decide(DOCS_ONLY, "write_file", workspace, path="docs/notes.md") is Permission.ALLOW
    assert decide(DOCS_ONLY, "write_file", workspace, path="./docs/a/b.md") is Permission.ALLOW
    for spelling in ("docs/../src/evil.py", "docs/inner/../../src/evil.py", "src/evil.py"):
        assert decide(DOCS_ONLY, "write_file", workspace, path=spelling) is Permission.ASK


def test_a_path_that_resolves_outside_the_workspace_matches_no_allow_rule(
    workspace: Path,
) -> None:
    everything = Policy.build(rules={"write_file": "ask", "write_file(*)": "allow"})
    for spelling in ("../outside.txt", "docs/escape/outside.txt", "/etc/passwd", "~/.bashrc"):
        assert decide(everything, "write_file", workspace, path=spelling) is Permission.ASK
        assert decide(DOCS_ONLY, "write_file", workspace, path=spelling) is Permission.ASK
    # symlinks pointing into an allowed folder from outside it are judged by their target
    assert decide(everything, "write_file", workspace, path="docs/link/x") is Permission.ALLOW


def test_absolute_and_star_deny_patterns_also_see_the_real_path(workspace: Path) -> None:
    policy = Policy.build(rules={"read_file(*.pem)": "deny", "read_file(/etc/**)": "deny"})
    assert decide(policy, "read_file", workspace, path="/srv/../etc/ssl/key.pem") is Permission.DENY
    assert decide(policy, "read_file", workspace, path="../" * 30 + "etc/hosts") is Permission.DENY
    assert decide(policy, "read_file", workspace, path="docs/readme.md") is Permission.ALLOW


def test_a_nul_byte_resolves_nowhere_inside(workspace: Path) -> None:
    assert resolve_path("docs/a\x00b", workspace).inside is False
    assert decide(DOCS_ONLY, "write_file", workspace, path="docs/a\x00b") is Permission.ASK


def _decorate(parts: list[str], draw: st.DrawFn) -> str:
    """``parts`` (a path below the root) with random ``.``, ``..``, ``//`` detours."""
    out: list[str] = []
    for part in parts:
        for _ in range(draw(st.integers(0, 2))):
            out.append(draw(st.sampled_from([".", "docs/..", "src/..", "docs/inner/../.."])))
        out.append(part)
    text = "/".join(out)
    if draw(st.booleans()):
        text = "./" + text
    return text.replace("/", draw(st.sampled_from(["/", "//"])))


@st.composite
def secret_spellings(draw: st.DrawFn) -> str:
    via = draw(st.sampled_from([["secrets"], ["docs", "link"]]))
    leaf = draw(st.sampled_from([["key.txt"], ["missing.txt"], ["deep", "x.txt"], []]))
    if via == ["docs", "link"] and draw(st.booleans()):
        return _decorate(["docs", "key-link.txt"], draw)
    return _decorate([*via, *leaf], draw)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(spelling=secret_spellings())
def test_no_decoration_of_a_denied_path_escapes_the_rule(workspace: Path, spelling: str) -> None:
    assert decide(DENY_SECRETS, "read_file", workspace, path=spelling) is Permission.DENY


@st.composite
def leaving_docs(draw: st.DrawFn) -> str:
    target = draw(st.sampled_from([["src", "evil.py"], ["secrets", "key.txt"], ["evil.py"]]))
    prefix = draw(st.sampled_from(["docs/", "./docs/", "docs/inner/", "docs//"]))
    climbs = "../" * (prefix.count("/") - (1 if prefix.startswith("./") else 0))
    if prefix == "docs//":
        climbs = "../"
    return prefix + climbs + _decorate(target, draw)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(spelling=leaving_docs())
def test_no_path_that_leaves_docs_is_allowed_by_a_docs_rule(workspace: Path, spelling: str) -> None:
    resolved = resolve_path(spelling, workspace)
    assert resolved.relative is None or not resolved.relative.startswith("docs")
    assert decide(DOCS_ONLY, "write_file", workspace, path=spelling) is Permission.ASK


def test_case_folds_on_a_case_insensitive_file_system() -> None:
    folded = ResolvedPath("Secrets/Key.TXT", "/ws/Secrets/Key.TXT", folded=True)
    assert path_matches("secrets/**", folded, allow=False)
    exact = ResolvedPath("Secrets/Key.TXT", "/ws/Secrets/Key.TXT", folded=False)
    assert not path_matches("secrets/**", exact, allow=False)


def test_case_sensitivity_is_read_from_the_file_system(tmp_path: Path) -> None:
    folder = tmp_path / "Probe"
    folder.mkdir()
    expected = (tmp_path / "pROBE").exists()
    assert case_insensitive(str(folder)) is expected


# -- commands -----------------------------------------------------------------------------------
def _split(line: str) -> Sequence[Invocation]:
    """A stand-in splitter: ``;`` separates commands, ``?`` is unreadable."""
    if "?" in line:
        raise UnreadableCommand("a question mark")
    found = []
    for piece in line.split(";"):
        words = piece.split()
        if words:
            found.append(Invocation(words[0], tuple(words[1:])))
    return found


SHELL = {"command": CommandSubject(_split)}
GIT_OK = Policy.build(rules={"run_command": "ask", "run_command(git status*)": "allow"})
NO_TOUCH = Policy.build(rules={"run_command(touch *)": "deny"})


def run(policy: Policy, command: str) -> Permission:
    return policy.decide("run_command", {"command": command}, subjects=SHELL)[0]


def test_an_allow_rule_must_cover_every_invocation() -> None:
    assert run(GIT_OK, "git status") is Permission.ALLOW
    assert run(GIT_OK, "git status -s; git status") is Permission.ALLOW
    assert run(GIT_OK, "git status; touch X") is Permission.ASK
    assert run(GIT_OK, "echo; git status") is Permission.ASK


def test_a_deny_rule_matches_any_invocation_by_any_name() -> None:
    for line in ("touch X", "echo; touch X", "/usr/bin/touch X", "  touch   X", "touch"):
        assert run(NO_TOUCH, line) is Permission.DENY, line
    assert run(NO_TOUCH, "echo touch") is Permission.ALLOW


def test_an_allow_rule_matches_the_program_as_written() -> None:
    assert run(GIT_OK, "/tmp/evil/git status") is Permission.ASK
    env = Invocation("git", ("status",), env=("GIT_DIR=/x",))
    policy = Policy.build(rules={"run_command": "ask", "run_command(git status*)": "allow"})
    decided = policy.decide(
        "run_command", {"command": "x"}, subjects={"command": CommandSubject(lambda _: [env])}
    )
    assert decided[0] is Permission.ASK


def test_an_allow_rule_covers_redirections_only_when_it_names_them() -> None:
    redirected = Invocation("git", ("status",), redirects=(">/home/u/.bashrc",))
    subject = {"command": CommandSubject(lambda _: [redirected])}
    for rules, expected in (
        ({"run_command": "ask", "run_command(git status*)": "allow"}, Permission.ASK),
        ({"run_command": "ask", "run_command(git status >*)": "allow"}, Permission.ALLOW),
        ({"run_command": "ask", "run_command(git status > /home/*)": "allow"}, Permission.ALLOW),
    ):
        decided = Policy.build(rules=rules).decide(
            "run_command", {"command": "x"}, subjects=subject
        )
        assert decided[0] is expected


def test_an_unreadable_line_is_never_allowed() -> None:
    assert run(GIT_OK, "git status ?") is Permission.ASK
    assert run(Policy.build(rules={"run_command": "allow"}), "git status ?") is Permission.ASK
    assert run(Policy.build(rules={"*": "allow"}), "?") is Permission.ASK
    deny = Policy.build(rules={"run_command(*touch*)": "deny", "run_command": "allow"})
    assert run(deny, "touch ?") is Permission.DENY
    # a policy with no rule about the tool has nothing to say about it
    assert run(Policy.build(rules={"read_file": "deny"}), "?") is Permission.ALLOW


WORDS = st.sampled_from(["git status", "ls -la", "echo hi", "make", "git status -s"])


@given(before=st.lists(WORDS, max_size=3), after=st.lists(WORDS, max_size=3))
def test_a_denied_program_anywhere_denies_the_line(before: list[str], after: list[str]) -> None:
    line = "; ".join([*before, "touch canary", *after])
    assert run(NO_TOUCH, line) is Permission.DENY


@given(commands=st.lists(WORDS, min_size=1, max_size=4))
def test_allow_holds_exactly_when_every_command_is_covered(commands: list[str]) -> None:
    expected = all(c.startswith("git status") for c in commands)
    verdict = run(GIT_OK, "; ".join(commands))
    assert verdict is (Permission.ALLOW if expected else Permission.ASK)


# -- declaring subjects -------------------------------------------------------------------------
def test_a_subject_for_a_missing_parameter_is_a_config_error() -> None:
    def read(path: str) -> str:
        """Read."""
        return path

    with pytest.raises(ConfigError, match=r"'file'.*not among its parameters"):
        tether.tool(subjects={"file": PATH})(read)


def test_the_agent_resolves_paths_against_its_working_directory(workspace: Path) -> None:
    read: list[str] = []

    @tether.tool(subjects={"path": PATH})
    def read_file(path: str = "secrets") -> str:
        """Read a file."""
        read.append(path)
        return "contents"

    model = ScriptedProvider(
        [
            Reply(
                tool_calls=[
                    call("read_file", path="docs/../secrets/key.txt"),
                    call("read_file", path="docs/link/key.txt"),
                    call("read_file"),
                    call("read_file", path="docs/inner"),
                ]
            ),
            Reply(text="done"),
        ]
    )
    agent = tether.Agent(
        model,
        tools=[read_file],
        config=Config(),
        permissions={"read_file(secrets/**)": "deny"},
        cwd=workspace,
    )
    result = agent.run_sync("read")
    assert result.outcome is Outcome.COMPLETED
    assert read == ["docs/inner"]
    denied = [r for r in result.messages[2].tool_results if r.is_error]
    assert len(denied) == 3 and all("read_file(secrets/**)" in r.text for r in denied)


def test_os_path_spellings_agree_with_the_resolver(workspace: Path) -> None:
    for spelling in ("docs/link/key.txt", "docs/../secrets", "./docs/inner/.."):
        real = os.path.realpath(workspace / spelling)
        assert resolve_path(spelling, workspace).absolute == real


@st.composite
def symlink_chains(draw: st.DrawFn) -> tuple[list[tuple[str, str, bool]], str]:
    """Links (where, name, absolute target?) chained towards ``secrets``, and the leaf
    reached through the first one."""
    length = draw(st.integers(1, 3))
    places = [draw(st.sampled_from(["", "docs", "docs/inner", "src"])) for _ in range(length)]
    links = [(place, f"hop{i}", draw(st.booleans())) for i, place in enumerate(places)]
    leaf = draw(st.sampled_from(["key.txt", "missing.txt", ""]))
    return links, leaf


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(chain=symlink_chains(), data=st.data())
def test_a_chain_of_symlinks_into_a_denied_folder_is_denied(
    tmp_path_factory: pytest.TempPathFactory,
    chain: tuple[list[tuple[str, str, bool]], str],
    data: st.DataObject,
) -> None:
    root = tmp_path_factory.mktemp("ws")
    for folder in ("secrets", "docs/inner", "src"):
        (root / folder).mkdir(parents=True)
    (root / "secrets" / "key.txt").write_text("canary")
    links, leaf = chain
    target = root / "secrets"
    for place, name, absolute in reversed(links):
        link = root / place / name
        link.symlink_to(target if absolute else os.path.relpath(target, link.parent))
        target = link
    first_place, first_name, _ = links[0]
    parts = [p for p in first_place.split("/") if p] + [first_name] + ([leaf] if leaf else [])
    spelling = _decorate(parts, data.draw)
    assert decide(DENY_SECRETS, "read_file", root, path=spelling) is Permission.DENY
    writes = Policy.build(rules={"write_file": "ask", "write_file(docs/**)": "allow"})
    if first_place.startswith("docs"):
        # a link inside docs/ that leads out of it is not covered by docs/**
        assert decide(writes, "write_file", root, path=spelling) is Permission.ASK
