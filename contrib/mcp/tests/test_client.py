"""MCP servers as toolsets of an agent, against real servers over stdio and HTTP."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest

import tether
from tether.cancel import CancelToken
from tether.events import Done, ToolProgress
from tether.messages import ImageBlock, ToolResultBlock
from tether.testing import Reply, ScriptedProvider, call


def results(result: tether.RunResult) -> list[ToolResultBlock]:
    return [r for m in result.messages if m.role == "tool" for r in m.tool_results]


async def run(agent: tether.Agent, prompt: str = "go") -> tether.RunResult:
    try:
        return await agent.run(prompt)
    finally:
        await agent.aclose()


@pytest.fixture
def agent_for(make_config: Any) -> Any:
    """``agent_for(script, tools, NAME=table, ...)``: a scripted agent and its model."""

    def build(
        script: list[Reply], tools: list[str], **servers: Any
    ) -> tuple[tether.Agent, ScriptedProvider]:
        model = ScriptedProvider(script)
        return tether.Agent(model, tools=tools, config=make_config(**servers)), model

    return build


async def test_tools_are_discovered_called_and_their_results_become_blocks(
    agent_for: Any, server_table: dict[str, Any]
) -> None:
    agent, model = agent_for(
        [
            Reply(tool_calls=[call("calc__add", a=2, b=3)]),
            Reply(text="five"),
            Reply(
                tool_calls=[
                    call("calc__picture"),
                    call("calc__forecast", city="Oslo"),
                    call("calc__document"),
                    call("calc__fail", reason="no"),
                ]
            ),
            Reply(text="done"),
        ],
        ["calc"],
        calc=server_table,
    )
    try:
        first = await agent.run("add")
        second = await agent.run("the rest")
    finally:
        await agent.aclose()

    assert first.output == "five"
    offered = {d.name: d for d in model.requests[0].tools}
    assert {"calc__add", "calc__echo", "calc__forecast", "calc__picture"} <= set(offered)
    schema = offered["calc__add"].parameters
    assert schema["type"] == "object"
    assert schema["properties"]["a"]["type"] == "integer"
    assert schema["required"] == ["a", "b"]
    assert offered["calc__add"].description == "Add two integers."
    [answer] = results(first)
    assert not answer.is_error
    assert answer.text == "5"

    picture, forecast, document, failure = results(second)
    assert isinstance(picture.content, list)
    [image] = picture.content
    assert isinstance(image, ImageBlock) and image.mime_type == "image/png" and image.data
    assert '"high_c": 21' in forecast.text.replace("\n", "").replace("  ", " ")
    assert "file:///notes.txt" in document.text and "remember the milk" in document.text
    assert failure.is_error and "refused: no" in failure.text


async def test_a_tool_added_mid_run_is_offered_from_the_next_turn(
    agent_for: Any, server_table: dict[str, Any]
) -> None:
    agent, model = agent_for(
        [
            Reply(tool_calls=[call("s__grow")]),
            Reply(tool_calls=[call("s__late", word="hi")]),
            Reply(text="ok"),
        ],
        ["s"],
        s=server_table,
    )
    result = await run(agent)
    first, second = ([d.name for d in r.tools] for r in model.requests[:2])
    assert "s__late" not in first
    assert second == [*first, "s__late"]  # appended: the cached prefix stays the same
    _, late = results(result)
    assert not late.is_error and late.text.startswith("HI")


async def test_a_server_killed_mid_call_gives_an_error_then_recovers(
    agent_for: Any, stdio_table: Any, record: Path
) -> None:
    agent, _ = agent_for(
        [
            Reply(tool_calls=[call("s__crash")]),
            Reply(tool_calls=[call("s__add", a=1, b=1)]),
            Reply(text="recovered"),
        ],
        ["s"],
        s=stdio_table(),
    )
    result = await run(agent)
    crashed, added = results(result)
    assert crashed.is_error and "stopped while running `crash`" in crashed.text
    assert not added.is_error and added.text.startswith("2")
    assert result.output == "recovered"
    assert started(record) == 2  # the server was started again


async def test_a_slow_tool_hits_its_timeout_and_the_server_is_told(
    agent_for: Any, stdio_table: Any, record: Path
) -> None:
    agent, _ = agent_for(
        [
            Reply(tool_calls=[call("s__slow", seconds=60)]),
            Reply(tool_calls=[call("s__echo", text="still here")]),
            Reply(text="ok"),
        ],
        ["s"],
        s=stdio_table(call_timeout=1),
    )
    result = await run(agent)
    slow, echo = results(result)
    assert slow.is_error and "timed out after 1 s" in slow.text
    assert echo.text.startswith("still here")
    assert _wait_for(lambda: list(record.glob("cancelled-*")))  # notifications/cancelled arrived


async def test_a_server_that_never_starts_is_reported_and_the_agent_runs_without_it(
    agent_for: Any, stdio_table: Any, record: Path
) -> None:
    silent = {
        "command": sys.executable,
        "args": ["-c", "import time; time.sleep(60)"],
        "startup_timeout": 1,
    }
    missing = {"command": str(record / "no-such-server")}
    agent, model = agent_for(
        [Reply(tool_calls=[call("good__echo", text="hi")]), Reply(text="fine")],
        ["silent", "missing", "good"],
        silent=silent,
        missing=missing,
        good=stdio_table(tools=["echo", "not-on-the-server"]),
    )
    try:
        result = await agent.run("go")
        offered = {d.name for d in model.requests[0].tools}
        assert offered == {"good__echo"}  # the working server, through its allow-list
        assert result.output == "fine"
        toolsets = {t.name: t for t in (agent.plugins.tools.get(n) for n in ("silent", "missing"))}
        assert "did not answer within 1 s" in (toolsets["silent"].problem or "")
        assert "could not be started" in (toolsets["missing"].problem or "")
    finally:
        await agent.aclose()


async def test_servers_are_shared_by_runs_and_stopped_with_the_agent(
    agent_for: Any, stdio_table: Any, record: Path, running: Any
) -> None:
    agent, _ = agent_for(
        [
            Reply(tool_calls=[call("s__echo", text="a")]),
            Reply(text="one"),
            Reply(tool_calls=[call("s__echo", text="b")]),
            Reply(text="two"),
        ],
        ["s"],
        s=stdio_table(),
    )
    assert started(record) == 0  # lazy: nothing started yet
    try:
        assert (await agent.run("1")).output == "one"
        assert (await agent.run("2")).output == "two"
        assert started(record) == 1
    finally:
        await agent.aclose()
    assert _wait_for(lambda: not running())


def started(record: Path) -> int:
    """How many test server processes have been started."""
    return len(list(record.glob("pid-*")))


def _wait_for(condition: Any, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return bool(condition())


async def test_progress_becomes_events_and_cancelling_a_run_cancels_the_call(
    agent_for: Any, stdio_table: Any, record: Path
) -> None:
    agent, _ = agent_for(
        [
            Reply(tool_calls=[call("s__slow", seconds=0.2)]),
            Reply(text="ok"),
            Reply(tool_calls=[call("s__slow", seconds=60)]),
            Reply(text="never"),
        ],
        ["s"],
        s=stdio_table(),
    )
    token = CancelToken()
    outcome = None
    try:
        events = [event async for event in agent.stream("slow, briefly")]
        async for event in agent.stream("slow, for a minute", cancel=token):
            if isinstance(event, ToolProgress):  # the call is running on the server
                token.cancel("the user pressed Ctrl-C")
            if isinstance(event, Done):
                outcome = event.result
    finally:
        await agent.aclose()

    kinds = [type(e).__name__ for e in events]
    progress = [e for e in events if isinstance(e, ToolProgress)]
    assert progress and progress[0].name == "s__slow"
    assert (progress[0].progress, progress[0].total, progress[0].message) == (0, 0.2, "starting")
    assert kinds.index("ToolStart") < kinds.index("ToolProgress") < kinds.index("ToolEnd")

    assert outcome is not None and outcome.outcome.value == "cancelled"
    [interrupted] = results(outcome)
    assert interrupted.is_error and "Interrupted" in interrupted.text
    assert _wait_for(lambda: list(record.glob("cancelled-*")))  # notifications/cancelled arrived
