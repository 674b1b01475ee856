"""Permission rules: argument patterns, specificity, presets and bad rules."""

from __future__ import annotations

import pytest

from tether.approvals import Approval, Permission, Policy, normalize_approval
from tether.errors import ConfigError

SHELL = {"toolset": "shell", "order": ["command"]}


def test_a_pattern_rule_overrides_its_toolset() -> None:
    policy = Policy.build(rules={"shell": "ask", "shell(git status*)": "allow"})
    assert (
        policy.decide("run_command", {"command": "git status -s"}, **SHELL)[0] is Permission.ALLOW
    )
    permission, rule = policy.decide("run_command", {"command": "rm -rf build"}, **SHELL)
    assert permission is Permission.ASK and rule is not None and rule.text == "shell"


def test_path_patterns_match_across_directories() -> None:
    policy = Policy.build(rules={"write_file": "deny", "write_file(docs/**)": "allow"})
    order = ["path", "content"]
    assert (
        policy.decide("write_file", {"path": "docs/a/b.md", "content": "x"}, order=order)[0]
        is Permission.ALLOW
    )
    assert (
        policy.decide("write_file", {"path": "src/x.py", "content": "x"}, order=order)[0]
        is Permission.DENY
    )


def test_named_argument_patterns_and_deny_beating_allow_at_equal_specificity() -> None:
    policy = Policy.build(
        rules={"web_fetch(url=https://intra.*)": "deny", "web_fetch(https://*)": "allow"}
    )
    assert policy.decide("web_fetch", {"url": "https://intra.example"})[0] is Permission.DENY
    assert policy.decide("web_fetch", {"url": "https://example.org"})[0] is Permission.ALLOW


def test_presets() -> None:
    read_only = Policy.build("read-only")
    assert read_only.decide("read_file", {"path": "a"})[0] is Permission.ALLOW
    assert read_only.decide("write_file", {"path": "a"})[0] is Permission.DENY
    edits = Policy.build("accept-edits", {"run_command(ls*)": "allow"})
    assert edits.decide("edit_file", {"path": "a"})[0] is Permission.ALLOW
    assert edits.decide("run_command", {"command": "make"})[0] is Permission.ASK
    assert edits.decide("run_command", {"command": "ls -l"})[0] is Permission.ALLOW
    assert Policy.build().decide("anything", {})[0] is Permission.ALLOW


def test_bad_rules_and_modes_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="No permission mode named"):
        Policy.build("yolo")
    with pytest.raises(ConfigError, match="use allow, ask or deny"):
        Policy.build(rules={"shell": "maybe"})
    with pytest.raises(ConfigError, match="is not valid"):
        Policy.build(rules={"she ll(": "ask"})


def test_decisions_normalise() -> None:
    assert normalize_approval("always") == Approval(True, always=True)
    assert normalize_approval(False) == Approval(False)
    with pytest.raises(ConfigError):
        normalize_approval(3)
