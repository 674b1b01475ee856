"""What a misbehaving MCP server sends is checked before it reaches a session (a real
server subprocess, ``hostile_mcp_server.py``, over stdio)."""

from __future__ import annotations

import asyncio
import base64
import sys
import threading
import time
from pathlib import Path
from typing import Any

import tether
from tether.errors import InvalidRequestError
from tether.events import ToolEnd, ToolProgress
from tether.images import sniff_image_type
from tether.messages import ImageBlock, Message, ToolResultBlock
from tether.provider import ModelRequest
from tether.testing import Reply, ScriptedProvider, call

HOSTILE = Path(__file__).with_name("hostile_mcp_server.py")


def hostile_table(record: Path, **env: str) -> dict[str, Any]:
    return {
        "command": sys.executable,
        "args": [str(HOSTILE)],
        "env": {"MCP_TEST_RECORD": str(record), **env},
        "restart_backoff": 0,
    }


def images_in(messages: list[Message]) -> list[ImageBlock]:
    found = []
    for message in messages:
        for block in message.content:
            if isinstance(block, ImageBlock):
                found.append(block)
            elif isinstance(block, ToolResultBlock) and isinstance(block.content, list):
                found.extend(b for b in block.content if isinstance(b, ImageBlock))
    return found


def picky(request: ModelRequest) -> Reply:
    """A model that, like a real provider, rejects a request carrying an image that is
    not what its type says; otherwise it calls the tool the user names, then answers."""
    for image in images_in(request.messages):
        raw = base64.b64decode(image.data or "", validate=True)
        if sniff_image_type(raw) != image.mime_type:
            raise InvalidRequestError("Could not process image", provider="picky")
    last = request.messages[-1]
    if last.role == "tool":
        return Reply(text="seen")
    return Reply(tool_calls=[call(f"bad__{last.text}")])


async def test_bad_images_from_a_server_become_error_results_and_the_session_lives_on(
    record: Path, make_config: Any
) -> None:
    agent = tether.Agent(
        ScriptedProvider(handler=picky),
        tools=["bad"],
        config=make_config(bad=hostile_table(record)),
    )
    session = tether.InMemorySession()
    try:
        outcomes = {}
        for tool in ("bad_base64", "html_image", "html_png", "mislabelled"):
            result = await agent.run(tool, session=session)
            assert result.outcome.value == "completed", (tool, result.error)
            [answer] = [r for m in result.messages if m.role == "tool" for r in m.tool_results]
            outcomes[tool] = answer
        after = await agent.run("mislabelled", session=session)  # later requests still work
    finally:
        await agent.aclose()
    assert after.outcome.value == "completed"
    for tool in ("bad_base64", "html_image", "html_png"):
        answer = outcomes[tool]
        assert answer.is_error, tool
        assert "image rejected" in answer.text, answer.text
    assert "not valid base64" in outcomes["bad_base64"].text
    assert "a chart" in outcomes["bad_base64"].text  # the rest of the result is kept
    assert "'text/html'" in outcomes["html_image"].text
    assert not outcomes["mislabelled"].is_error
    stored = images_in(session.messages)
    assert [image.mime_type for image in stored] == ["image/png", "image/png"]


def run_agent(agent: tether.Agent, prompt: str = "go") -> list[Any]:
    """The events of one run, the agent closed afterwards."""

    async def collect() -> list[Any]:
        try:
            return [event async for event in agent.stream(prompt)]
        finally:
            await agent.aclose()

    return asyncio.run(collect())


def test_a_tool_listed_twice_is_offered_once_with_one_warning(
    record: Path, make_config: Any, caplog: Any
) -> None:
    model = ScriptedProvider(
        [Reply(tool_calls=[call("dup__mislabelled")]), Reply(text="one tool, one answer")] * 2
    )
    agent = tether.Agent(
        model, tools=["dup"], config=make_config(dup=hostile_table(record, HOSTILE_DUPLICATE="1"))
    )

    async def twice() -> list[tether.RunResult]:
        try:
            return [await agent.run("one"), await agent.run("two")]
        finally:
            await agent.aclose()

    with caplog.at_level("WARNING", logger="tether.mcp"):
        first, second = asyncio.run(twice())
    assert first.outcome.value == "completed" and second.outcome.value == "completed"
    names = [d.name for d in model.requests[0].tools]
    assert len(names) == len(set(names)) and "dup__mislabelled" in names
    warnings = [r for r in caplog.records if "more than once" in r.getMessage()]
    assert len({r.getMessage() for r in warnings}) == len(warnings)  # each name once
    assert any("'mislabelled'" in r.getMessage() for r in warnings)


def test_a_flood_of_progress_becomes_a_few_events_ending_with_the_last(
    record: Path, make_config: Any
) -> None:
    total = 5_000
    model = ScriptedProvider(
        [Reply(tool_calls=[call("bad__flood_progress", n=total)]), Reply(text="done")]
    )
    agent = tether.Agent(model, tools=["bad"], config=make_config(bad=hostile_table(record)))
    began = time.monotonic()
    events = run_agent(agent)
    elapsed = time.monotonic() - began
    progress = [e for e in events if isinstance(e, ToolProgress)]
    [end] = [e for e in events if isinstance(e, ToolEnd)]
    assert f"reported {total}" in end.result.text
    assert progress, "no progress reached the run"
    assert len(progress) <= 4 * elapsed + 2  # at most a few per second, not one per report
    assert progress[-1].progress == total and progress[-1].message == f"item {total}"
    assert events.index(progress[-1]) < events.index(end)


def test_a_servers_stderr_log_is_capped_and_rotated(
    record: Path, make_config: Any, tmp_path: Path
) -> None:
    model = ScriptedProvider(
        [Reply(tool_calls=[call("noisy__flood_stderr", n=300_000)]), Reply(text="done")]
    )
    table = {**hostile_table(record), "log_max_bytes": 8192}
    agent = tether.Agent(model, tools=["noisy"], config=make_config(noisy=table))
    events = run_agent(agent)
    assert events[-1].result.outcome.value == "completed"
    logs = tmp_path / "data" / "mcp" / "logs"
    for thread in threading.enumerate():  # the copy ends just after the server exits
        if thread.name == "tether-mcp-log noisy.log":
            thread.join(timeout=30)
    current, rotated = logs / "noisy.log", logs / "noisy.log.1"
    assert rotated.exists(), sorted(p.name for p in logs.iterdir())
    assert current.stat().st_size <= 8192 + 4096
    assert rotated.stat().st_size <= 8192 + 4096
    assert "noise" in rotated.read_text(encoding="utf-8")
    assert not (logs / "noisy.log.2").exists()
