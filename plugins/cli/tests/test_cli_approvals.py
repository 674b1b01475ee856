"""``tether approvals``: the calls a suspended run of a session waits on, listed, approved
or denied (which resumes the run), and a new ``run`` on such a session refused clearly."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from tether.sessions import load_session_file
from tether.testing import assert_invariant

TOOLS = ["-m", "composed/composed-m", "--tools", "remove,helper"]
PLUGIN = ["-p", "cli_compose_model"]
Invoke = Callable[..., Result]


@pytest.fixture
def cli_config() -> str:
    return '[permissions.rules]\nremove = "ask"\n'


def _suspend(invoke: Invoke, name: str) -> None:
    result = invoke(*PLUGIN, "run", *TOOLS, "-s", name, "delete build/a")
    assert result.exit_code == 1
    assert "waiting for approval of: remove (call_1)" in result.stderr
    assert f"tether approvals approve -s {name}" in result.stderr


def test_a_new_run_on_a_session_with_waiting_calls_says_so(invoke: Invoke) -> None:
    _suspend(invoke, "held")
    again = invoke(*PLUGIN, "run", *TOOLS, "-s", "held", "something else")
    assert again.exit_code == 1
    assert 'Session "held" has a run waiting for approval of: remove (call_1)' in again.stderr
    assert "tether approvals list -s held" in again.stderr


def test_approvals_list_shows_the_waiting_calls(invoke: Invoke) -> None:
    _suspend(invoke, "listed")
    listed = invoke(*PLUGIN, "approvals", "list", "-s", "listed")
    assert listed.exit_code == 0, listed.stderr
    assert 'call_1  remove({"path": "build/a"})' in listed.stdout
    empty = invoke(*PLUGIN, "approvals", "list", "-s", "nothing-here")
    assert "There is no session" in empty.stderr


def test_approve_runs_the_call_and_resumes_the_run(invoke: Invoke, cli_environment: Path) -> None:
    _suspend(invoke, "ok")
    resumed = invoke(*PLUGIN, "approvals", "approve", "-s", "ok", *TOOLS)
    assert resumed.exit_code == 0, resumed.stderr
    assert "removed build/a" in resumed.stdout
    messages = load_session_file(cli_environment / "data" / "sessions" / "ok.jsonl").messages
    assert_invariant(messages)
    assert invoke(*PLUGIN, "approvals", "list", "-s", "ok").stdout.startswith("Nothing waits")
    after = invoke(*PLUGIN, "run", *TOOLS, "-s", "ok", "thanks")
    assert "waiting for approval" not in after.stderr


def test_deny_refuses_the_call_and_the_model_sees_it(invoke: Invoke) -> None:
    _suspend(invoke, "no")
    resumed = invoke(*PLUGIN, "approvals", "deny", "-s", "no", "call_1", *TOOLS)
    assert resumed.exit_code == 0, resumed.stderr
    assert "Denied" in resumed.stdout and "removed build/a" not in resumed.stdout


def test_a_call_id_that_does_not_wait_is_refused(invoke: Invoke) -> None:
    _suspend(invoke, "wrong")
    result = invoke(*PLUGIN, "approvals", "approve", "-s", "wrong", "call_9", *TOOLS)
    assert result.exit_code == 1
    assert "No waiting call call_9" in result.stderr and "waiting: call_1" in result.stderr
