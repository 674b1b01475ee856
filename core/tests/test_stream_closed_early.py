"""A consumer that stops iterating ``agent.stream()`` and closes it leaves no unanswered
tool call: the run answers open calls before ``aclose()`` returns."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import tether
from tether.config import Config
from tether.events import TextDelta, ToolEnd, ToolStart
from tether.sessions import InMemorySession, JsonlSession
from tether.testing import Reply, ScriptedProvider, assert_invariant, call


@tether.tool
async def slow(n: int) -> str:
    """Take a while."""
    await asyncio.sleep(30)
    return "done"


@tether.tool
async def quick(n: int) -> str:
    """Answer at once."""
    return f"quick {n}"


def agent(script: list[Reply], **options: object) -> tether.Agent:
    return tether.Agent(
        ScriptedProvider(script),
        tools=[slow, quick],
        config=Config(),
        **options,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("stop_at", [ToolStart, ToolEnd])
async def test_closing_the_stream_answers_parallel_calls(tmp_path: Path, stop_at: type) -> None:
    script = [
        Reply(tool_calls=[call("quick", n=1), call("slow", n=2), call("quick", n=3)]),
        Reply(text="never reached"),
    ]
    with JsonlSession(tmp_path / "s.jsonl") as session:
        stream = agent(script).stream("go", session=session)
        async for event in stream:
            if isinstance(event, stop_at):
                break
        await stream.aclose()
        messages = list(session.messages)
        assert [m.role for m in messages] == ["user", "assistant", "tool"]
        assert_invariant(messages)
        results = messages[2].tool_results
        assert [r.call_id for r in results] == [c.id for c in messages[1].tool_calls]
        assert results[1].is_error and "Interrupted" in results[1].text
    with JsonlSession(tmp_path / "s.jsonl") as reloaded:  # and it is on disk, unrepaired
        assert reloaded.repair_report is None or not reloaded.repair_report
        assert_invariant(reloaded.messages)
        assert len(reloaded.messages) == 3


async def test_closing_during_a_single_slow_call_cancels_it_and_answers_it() -> None:
    session = InMemorySession()
    stream = agent([Reply(tool_calls=[call("slow", n=7)])], parallel_tools=False).stream(
        "go", session=session
    )
    async for event in stream:
        if isinstance(event, ToolStart):
            break
    await stream.aclose()
    assert_invariant(session.messages)
    (result,) = session.messages[-1].tool_results
    assert result.is_error and "Interrupted" in result.text


async def test_closing_while_text_streams_leaves_the_history_as_it_was() -> None:
    session = InMemorySession()
    stream = agent([Reply(text="a long answer " * 20, chunk=4)]).stream("go", session=session)
    async for event in stream:
        if isinstance(event, TextDelta):
            break
    await stream.aclose()
    assert [m.role for m in session.messages] == ["user"]


async def test_closing_a_resumed_run_answers_its_calls_once() -> None:
    provider = ScriptedProvider(
        [Reply(tool_calls=[call("slow", n=1), call("quick", n=2)]), Reply(text="never")]
    )
    session = InMemorySession()
    asking = tether.Agent(
        provider, tools=[slow, quick], config=Config(), permissions={"slow": "ask"}
    )
    suspended = await asking.run("go", session=session)
    assert suspended.outcome is tether.Outcome.SUSPENDED
    stream = asking.resume_stream({suspended.pending[0].call_id: True}, session=session)
    async for event in stream:
        if isinstance(event, ToolStart):
            break
    await stream.aclose()
    await asyncio.sleep(0)  # nothing left to finalise later
    assert_invariant(session.messages)
    assert [m.role for m in session.messages] == ["user", "assistant", "tool"]
    assert any("Interrupted" in r.text for r in session.messages[2].tool_results)
