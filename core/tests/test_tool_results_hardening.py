"""Tool results cannot crash a run, caps bound whole results, hung sync tools cannot
starve healthy ones, every tool has a default timeout, and nesting has a limit."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path
from typing import Any

import pytest

import tether
import tether.depth
from tether.config import Config, LimitsConfig
from tether.errors import DepthExceeded, ToolError
from tether.messages import ImageBlock, Message, TextBlock
from tether.result import Outcome
from tether.sessions import InMemorySession, JsonlSession
from tether.sync_tools import SyncToolRunner
from tether.testing import Reply, ScriptedProvider, assert_invariant, call
from tether.tool_results import tool_result


def run_one(tool: tether.Tool, session: Any = None, **agent_options: Any) -> Message:
    """Run one call of ``tool`` (no arguments) and return the tool message."""
    provider = ScriptedProvider([Reply(tool_calls=[call(tool.name)]), Reply(text="done")])
    session = session if session is not None else InMemorySession()
    agent = tether.Agent(provider, tools=[tool], config=Config(), **agent_options)
    result = agent.run_sync("go", session=session)
    assert result.outcome is Outcome.COMPLETED, result.error
    assert_invariant(session.messages)
    return session.messages[2]


class Unprintable:
    def __str__(self) -> str:
        raise ValueError("no text for you")


def test_a_result_whose_str_raises_becomes_an_error_result() -> None:
    @tether.tool
    def weird() -> object:
        """Return something unprintable."""
        return Unprintable()

    (result,) = run_one(weird).tool_results
    assert result.is_error
    assert "could not be turned into text" in result.text and "no text for you" in result.text


def test_an_exception_whose_str_raises_is_reported_not_raised() -> None:
    class Broken(Exception):
        def __str__(self) -> str:
            raise RuntimeError("boom")

    @tether.tool
    def fails() -> str:
        """Fail badly."""
        raise Broken()

    (result,) = run_one(fails).tool_results
    assert result.is_error and "Broken" in result.text


def test_undecodable_file_names_give_an_error_result_and_a_loadable_session(
    tmp_path: Path,
) -> None:
    name = os.fsdecode(b"report-\xff.txt")  # a lone surrogate, as Python reads such names

    @tether.tool
    def list_names() -> list[str]:
        """List names."""
        return ["ok.txt", name]

    path = tmp_path / "s.jsonl"
    with JsonlSession(path) as session:
        (result,) = run_one(list_names, session=session).tool_results
    assert result.is_error and "not valid Unicode" in result.text
    assert "report-\\udcff.txt" in result.text and "ok.txt" in result.text
    with JsonlSession(path) as reloaded:
        assert reloaded.messages[2].tool_results[0].text == result.text


def test_the_output_cap_bounds_all_text_blocks_together() -> None:
    @tether.tool(max_output_chars=1000)
    def many_blocks() -> list[TextBlock]:
        """Many blocks."""
        return [TextBlock(text=f"block {i} " + "x" * 200) for i in range(500)]

    (result,) = run_one(many_blocks).tool_results
    assert not result.is_error
    total = sum(len(b.text) for b in result.content if isinstance(b, TextBlock))
    assert total < 1200
    assert "block 0 " in result.text and "block 499 " in result.text and "omitted" in result.text


def test_images_over_the_budget_are_replaced_by_a_note() -> None:
    big = ImageBlock.from_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 3_000_000)
    small = ImageBlock.from_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 100)

    @tether.tool(max_image_bytes=1_000_000)
    def screenshot() -> list[TextBlock | ImageBlock]:
        """Take screenshots."""
        return [TextBlock(text="here"), big, small]

    (result,) = run_one(screenshot).tool_results
    assert isinstance(result.content, list)
    images = [b for b in result.content if isinstance(b, ImageBlock)]
    assert images == [small]
    assert "image omitted" in result.text and "2.9 MB" in result.text


def test_plain_values_still_serialise() -> None:
    assert tool_result("c", {"a": [1, 2]}, tool_name="t").text == '{"a": [1, 2]}'
    assert tool_result("c", None, tool_name="t").text == ""


# -- sync tools and timeouts -----------------------------------------------------------------
async def test_hung_sync_calls_do_not_starve_healthy_ones() -> None:
    runner = SyncToolRunner(max_workers=2)
    release = threading.Event()
    try:
        for _ in range(4):  # twice as many hung calls as workers
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(0.05):
                    await runner.run(release.wait)
        assert runner.abandoned == 4
        assert await runner.run(lambda: 42) == 42  # not stuck behind the hung calls
    finally:
        release.set()


async def test_too_many_hung_calls_are_refused_with_a_tool_error() -> None:
    runner = SyncToolRunner(max_workers=1, max_abandoned=1)
    release, entered = threading.Event(), threading.Event()

    def hang() -> None:
        entered.set()
        release.wait()

    try:
        call = asyncio.ensure_future(runner.run(hang))
        assert await asyncio.to_thread(entered.wait, 30)  # running in its thread: it hangs
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        with pytest.raises(ToolError, match="hung"):
            await runner.run(lambda: 1)
    finally:
        release.set()


def test_a_hung_sync_tool_times_out_by_default_and_run_sync_returns() -> None:
    release = threading.Event()
    entered = threading.Event()

    @tether.tool
    def hang() -> str:
        """Hang until released."""
        entered.set()
        release.wait(60)
        return "late"

    try:
        message = run_one(hang, limits=LimitsConfig(tool_timeout_s=0.1))
        (result,) = message.tool_results
        assert entered.is_set()
        assert result.is_error and "timed out after 0.1 s" in result.text
        assert not release.is_set()  # run_sync returned while the tool still hangs
    finally:
        release.set()


def test_timeout_none_turns_the_default_off_for_one_tool() -> None:
    @tether.tool(timeout=None)
    def slow() -> str:
        """Slow but fine."""
        threading.Event().wait(0.3)
        return "finished"

    (result,) = run_one(slow, limits=LimitsConfig(tool_timeout_s=0.05)).tool_results
    assert not result.is_error and result.text == "finished"


# -- nesting ---------------------------------------------------------------------------------
def delegating_agent(max_depth: int, depths: list[int]) -> tether.Agent:
    """An agent whose model always delegates once to a tool that runs the same agent."""

    def handler(request: Any) -> Reply:
        last = request.messages[-1]
        if last.role == "tool":
            return Reply(text=f"answer: {last.tool_results[0].text[:300]}")
        return Reply(tool_calls=[call("delegate", question="why?")])

    @tether.tool
    async def delegate(question: str) -> str:
        """Ask a sub-agent."""
        depths.append(tether.depth.run_depth())
        result = await agent.run(question)
        return result.output

    agent = tether.Agent(
        ScriptedProvider(handler=handler),
        tools=[delegate],
        config=Config(),
        limits=LimitsConfig(max_run_depth=max_depth),
    )
    return agent


async def test_nesting_deeper_than_the_limit_is_a_clear_error_for_the_model() -> None:
    depths: list[int] = []
    result = await delegating_agent(3, depths).run("start")
    assert result.outcome is Outcome.COMPLETED
    assert depths == [1, 2, 3]
    assert "deeper than the limit of 3" in result.output
    assert "DepthExceeded" in result.output


async def test_a_run_outside_tools_has_depth_zero_around_it() -> None:
    assert tether.depth.run_depth() == 0
    with tether.depth.tool_depth(5), pytest.raises(DepthExceeded) as info:
        tether.depth.check_run_depth(5)
    assert info.value.depth == 6 and info.value.limit == "depth"
    assert info.value.max_depth == 5  # a caller can tell how deep it may go
    assert tether.depth.run_depth() == 0
    with tether.depth.tool_depth(4):  # exactly at the limit: allowed
        assert tether.depth.check_run_depth(5) == 5
    assert tether.depth.check_run_depth() == 1  # the default limit allows a first run


def test_secret_values_of_the_agents_env_are_redacted_from_tool_output() -> None:
    @tether.tool
    def show_env(ctx: tether.ToolContext) -> str:
        """Print the environment a subprocess would get."""
        return " ".join(f"{k}={v}" for k, v in ctx.env.items())

    (result,) = run_one(
        show_env, env={"DEPLOY_TOKEN": "zq-deploy-4412-abcdef", "MODE": "fast"}
    ).tool_results
    assert result.text == "DEPLOY_TOKEN=*** MODE=fast"
