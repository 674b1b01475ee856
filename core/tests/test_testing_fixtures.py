"""The pytest fixtures a plugin author uses, exercised the way they would use them."""

from __future__ import annotations

from pathlib import Path

import tether
from tether.testing import Reply, call


@tether.tool
def save_note(ctx: tether.ToolContext, name: str, text: str) -> str:
    """Save a note in the working directory."""
    (ctx.cwd / f"{name}.txt").write_text(text)
    return f"saved {name}"


async def test_call_tool_runs_in_tmp_path(call_tool, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    result = await call_tool(save_note, {"name": "a", "text": "hello"})
    assert result.text == "saved a" and (tmp_path / "a.txt").read_text() == "hello"
    bad = await call_tool(save_note, {"name": "a"})
    assert bad.is_error and "text: Field required" in bad.text


async def test_make_agent_scripts_a_model_that_uses_the_tool(make_agent, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    agent, provider = make_agent(
        [Reply(tool_calls=[call("save_note", name="todo", text="buy milk")]), Reply(text="Saved.")],
        tools=[save_note],
    )
    result = await agent.run("Remember to buy milk")
    assert result.output == "Saved." and (tmp_path / "todo.txt").read_text() == "buy milk"
    assert provider.requests[0].tools[0].name == "save_note"


async def test_scripted_provider_fixture_queues_replies(scripted_provider) -> None:  # type: ignore[no-untyped-def]
    scripted_provider.queue(Reply(text="one"), Reply(text="two"))
    agent = tether.Agent(scripted_provider, config=tether.Config())
    assert (await agent.run("a")).output == "one"
    assert (await agent.run("b")).output == "two"
    assert scripted_provider.remaining == 0
