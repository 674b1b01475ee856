"""Approvals in the loop: allow / ask / deny, callbacks, "always", and suspending a run
for approval, then resuming it — in the same process and in a new one."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import tether
from tether.approvals import Approval, ApprovalRequest
from tether.config import Config
from tether.errors import TetherError
from tether.events import ToolEnd, ToolStart
from tether.result import Outcome
from tether.sessions import InMemorySession, JsonlSession
from tether.testing import Reply, ScriptedProvider, assert_invariant, call

RAN: list[str] = []


@tether.tool
def run_command(command: str) -> str:
    """Run a shell command."""
    RAN.append(command)
    return f"ran {command}"


@tether.tool
def read_file(path: str) -> str:
    """Read a file."""
    RAN.append(f"read {path}")
    return "contents"


@pytest.fixture(autouse=True)
def _reset() -> None:
    RAN.clear()


def agent(provider: ScriptedProvider, **kwargs: object) -> tether.Agent:
    return tether.Agent(
        provider,
        tools=[run_command, read_file],
        config=Config(),
        permissions={"run_command": "ask", "run_command(git status*)": "allow"},
        **kwargs,  # type: ignore[arg-type]
    )


def two_commands() -> list[Reply]:
    return [
        Reply(
            tool_calls=[
                call("run_command", command="git status"),
                call("run_command", command="rm -rf build"),
            ]
        ),
        Reply(text="Done."),
    ]


async def test_a_denied_call_becomes_an_error_result_with_the_reason() -> None:
    asked: list[ApprovalRequest] = []

    def approve(request: ApprovalRequest) -> Approval:
        asked.append(request)
        return Approval.no("not on Fridays")

    provider = ScriptedProvider(two_commands())
    session = InMemorySession()
    events = [
        e async for e in agent(provider, approval=approve).stream("clean up", session=session)
    ]
    result = events[-1].result  # type: ignore[union-attr]
    assert result.outcome is Outcome.COMPLETED
    assert RAN == ["git status"]  # the pattern rule let this one through without asking
    assert [(r.tool, r.subject, r.rule) for r in asked] == [
        ("run_command", "rm -rf build", "run_command")
    ]
    denied = session.messages[2].tool_results[1]
    assert denied.is_error and "Denied by the user. Reason: not on Fridays" in denied.text
    # the denial is visible in the stream like any tool call, and the model saw it
    ends = [e for e in events if isinstance(e, ToolEnd)]
    assert sorted((e.result.text[:3], e.is_error) for e in ends) == [("Den", True), ("ran", False)]
    assert "not on Fridays" in provider.requests[1].messages[-1].tool_results[1].text
    assert_invariant(session.messages)


async def test_async_callbacks_and_always_for_the_session() -> None:
    asked: list[str] = []

    async def approve(request: ApprovalRequest) -> str:
        asked.append(request.call_id)
        return "always"

    provider = ScriptedProvider(
        [
            Reply(tool_calls=[call("run_command", command="make")]),
            Reply(tool_calls=[call("run_command", command="make test")]),
            Reply(text="Built."),
        ]
    )
    result = await agent(provider, approval=approve).run("build")
    assert result.ok and RAN == ["make", "make test"]
    assert len(asked) == 1


async def test_deny_rules_and_read_only_mode_never_ask() -> None:
    def approve(request: ApprovalRequest) -> bool:
        raise AssertionError("must not be asked")

    provider = ScriptedProvider(
        [
            Reply(tool_calls=[call("read_file", path="a.txt"), call("run_command", command="ls")]),
            Reply(text="ok"),
        ]
    )
    ro = tether.Agent(
        provider,
        tools=[run_command, read_file],
        config=Config(),
        permissions="read-only",
        approval=approve,
    )
    result = await ro.run("look")
    assert RAN == ["read a.txt"]
    assert "Denied by the permission rule `*`" in result.messages[2].tool_results[1].text


async def test_configured_permissions_apply() -> None:
    config = Config.model_validate({"permissions": {"rules": {"run_command": "deny"}}})
    provider = ScriptedProvider(
        [Reply(tool_calls=[call("run_command", command="ls")]), Reply(text="ok")]
    )
    result = await tether.Agent(provider, tools=[run_command], config=config).run("x")
    assert RAN == [] and result.messages[2].tool_results[0].is_error


async def test_without_a_callback_the_run_suspends_and_resumes(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    provider = ScriptedProvider(two_commands())
    session = JsonlSession(path)
    events = [e async for e in agent(provider).stream("clean up", session=session)]
    result = events[-1].result  # type: ignore[union-attr]
    assert result.outcome is Outcome.SUSPENDED
    assert [(p.tool, p.arguments) for p in result.pending] == [
        ("run_command", {"command": "rm -rf build"})
    ]
    assert RAN == [] and not any(isinstance(e, ToolStart) for e in events)  # nothing ran yet
    assert_invariant(session.messages)
    assert session.messages[-1].tool_results[1].text.startswith("Not run yet")
    session.close()

    session = JsonlSession(path)  # reloaded, as another process would
    resumed = await agent(provider).resume({result.pending[0].call_id: True}, session=session)
    assert resumed.outcome is Outcome.COMPLETED and resumed.output == "Done."
    assert sorted(RAN) == ["git status", "rm -rf build"]  # they ran in parallel
    assert [m.role for m in session.messages] == ["user", "assistant", "tool", "assistant"]
    assert [r.text for r in session.messages[2].tool_results] == [
        "ran git status",
        "ran rm -rf build",
    ]
    assert_invariant(session.messages)
    session.close()


async def test_resume_needs_a_decision_for_every_pending_call_and_something_to_resume() -> None:
    provider = ScriptedProvider(two_commands())
    session = InMemorySession()
    result = await agent(provider).run("clean up", session=session)
    with pytest.raises(TetherError, match="No decision for the waiting call"):
        await agent(provider).resume({}, session=session)
    with pytest.raises(TetherError, match="nothing to resume"):
        await agent(provider).resume({"x": True}, session=InMemorySession())
    denied = await agent(provider).resume({result.pending[0].call_id: "deny"}, session=session)
    assert denied.ok and RAN == ["git status"]
    assert "Denied by the user" in session.messages[2].tool_results[1].text


SCRIPT = textwrap.dedent(
    """
    import asyncio, json, sys
    from pathlib import Path
    import tether
    from tether.config import Config
    from tether.sessions import JsonlSession
    from tether.testing import Reply, ScriptedProvider, call

    phase, session_path, target = sys.argv[1], sys.argv[2], Path(sys.argv[3])

    @tether.tool
    def delete_file(path: str) -> str:
        "Delete a file."
        Path(path).unlink()
        return f"deleted {path}"

    def agent(replies):
        return tether.Agent(ScriptedProvider(replies), tools=[delete_file], config=Config(),
                            permissions={"delete_file": "ask"})

    async def main():
        session = JsonlSession(session_path)
        if phase == "start":
            result = await agent([Reply(text="Deleting.", tool_calls=[call("delete_file", path=str(target))])]).run(
                "delete the file", session=session)
        else:
            decisions = json.loads(sys.argv[4])
            result = await agent([Reply(text="The file is gone.")]).resume(decisions, session=session)
        print(json.dumps({"outcome": result.outcome.value, "output": result.text,
                          "pending": [p.call_id for p in result.pending]}))
    asyncio.run(main())
    """
)


def test_a_suspended_run_is_resumed_by_a_new_process(tmp_path: Path) -> None:
    script = tmp_path / "approve.py"
    script.write_text(SCRIPT, encoding="utf-8")
    target = tmp_path / "victim.txt"
    target.write_text("x", encoding="utf-8")
    session_path = tmp_path / "run.jsonl"

    def phase(*args: str) -> dict[str, object]:
        done = subprocess.run(
            [sys.executable, str(script), *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]

    first = phase("start", str(session_path), str(target))
    assert first["outcome"] == "suspended" and target.exists()
    history = [json.loads(line) for line in session_path.read_text(encoding="utf-8").splitlines()]
    roles = [m["role"] for m in history if "role" in m]
    assert roles == ["user", "assistant", "tool"]  # a valid history on disk while waiting

    second = phase(
        "resume", str(session_path), str(target), json.dumps({first["pending"][0]: True})
    )  # type: ignore[index]
    assert second == {"outcome": "completed", "output": "The file is gone.", "pending": []}
    assert not target.exists()
    session = JsonlSession(session_path)
    assert [m.role for m in session.messages] == ["user", "assistant", "tool", "assistant"]
    assert session.messages[2].tool_results[0].text.startswith("deleted")
    assert_invariant(session.messages)
    assert getattr(session, "repair_report", None) is None or not session.repair_report.changed  # type: ignore[attr-defined]
    session.close()
